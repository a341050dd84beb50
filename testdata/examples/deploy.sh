#!/bin/sh
# A deploy for the README's examples: it only says what it does. With
# CRASH=1 the runner dies mid-deploy: the script kills its idemkey.
echo "deploying $1 with key $IDEMPOTENCY_KEY (attempt $IDEMPOTENCY_ATTEMPT)"
if [ "${CRASH:-}" = 1 ]; then kill -9 "$PPID"; exit 0; fi
echo "release v42 is live on $1"
