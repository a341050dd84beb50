#!/bin/sh
# deploy.sh ENV: a stand-in for a deploy step, for the README's run
# example. It touches nothing but deploy.log here. Its first attempt kills
# the idemkey that runs it (a runner dying mid-deploy), so that attempt's
# outcome is unknown; later attempts succeed.
env=${1:-staging}
echo "deploying $env with key $IDEMPOTENCY_KEY (attempt $IDEMPOTENCY_ATTEMPT)"
echo "attempt $IDEMPOTENCY_ATTEMPT" >> deploy.log
if [ "$IDEMPOTENCY_ATTEMPT" = 1 ]; then
	sleep 1 # the deploy under way, its first line out
	kill -KILL "$PPID"
	exit 1
fi
echo "release v42 is live on $env"
