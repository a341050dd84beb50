#!/usr/bin/env bash
# test.sh — the README's test command: installs (or finds) the servers the
# ledger's store tests run against, then runs every test.
#
#   bash scripts/test.sh [go test flags…]
#
# The tests start their own PostgreSQL and Redis servers on free loopback
# ports and stop them afterwards; scripts/services.sh only makes sure the
# binaries are there. With CI=true a missing server fails its tests
# instead of skipping them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/services.sh
go test -timeout 40m "$@" ./...
