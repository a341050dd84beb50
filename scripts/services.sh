#!/usr/bin/env bash
# services.sh — find or install what the tests run against: PostgreSQL
# (Debian package postgresql) and redis-server (Debian package
# redis-server) for the ledger's store tests, curl (the run tests reach
# their owner with it), and the npm packages that the
# MCP and owner tests drive (every testdata/npm/*/package.json, installed
# with `npm ci` from its committed package-lock.json).
#
#   bash scripts/services.sh
#
# It starts no long-lived server: the tests start their own, on free
# loopback ports in temporary directories, and stop them afterwards. When a
# server is missing and this runs as root, it installs it with apt-get
# (running apt-get update first); otherwise it says what to install and
# exits non-zero. It prints one line per server naming the binaries found.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { echo "services: $*" >&2; }

# The logs of this run (apt-get, npm) go to a directory of its own, so that
# two runs never write one file; it is removed when the run succeeds and
# kept, named in the message, when it fails.
logdir=$(mktemp -d "${TMPDIR:-/tmp}/idemkey-services.XXXXXX")
trap 'status=$?; ((status == 0)) && rm -rf "$logdir"; exit $status' EXIT

pg_bindir() {
	local d
	for d in "${IDEMKEY_PG_BINDIR:-}" /usr/lib/postgresql/*/bin /usr/local/pgsql/bin /usr/local/bin /usr/bin; do
		[[ -n $d && -x $d/initdb && -x $d/postgres ]] && { echo "$d"; return 0; }
	done
	if command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then
		dirname "$(command -v initdb)"
		return 0
	fi
	return 1
}

redis_bin() {
	local p
	for p in "${IDEMKEY_REDIS_SERVER:-}" "$(command -v redis-server 2>/dev/null || true)" /usr/bin/redis-server /usr/local/bin/redis-server; do
		[[ -n $p && -x $p ]] && { echo "$p"; return 0; }
	done
	return 1
}

missing=()
pg_bindir >/dev/null || missing+=(postgresql)
redis_bin >/dev/null || missing+=(redis-server)
# redis-cli (Debian's redis-tools) joins the tests' Redis Clusters.
command -v redis-cli >/dev/null 2>&1 || [[ -x $(dirname "$(redis_bin 2>/dev/null || echo /nonexistent/x)")/redis-cli ]] || missing+=(redis-tools)
command -v curl >/dev/null 2>&1 || missing+=(curl)

if ((${#missing[@]})); then
	if [[ $(id -u) -ne 0 ]]; then
		say "missing: ${missing[*]}; install them (apt-get install -y ${missing[*]}) or run this as root"
		exit 1
	fi
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y --no-install-recommends "${missing[@]}" >"$logdir/apt.log" 2>&1; then
		apt-get update >>"$logdir/apt.log" 2>&1 || true
		if ! apt-get install -y --no-install-recommends "${missing[@]}" >>"$logdir/apt.log" 2>&1; then
			tail -20 "$logdir/apt.log" >&2
			say "apt-get install ${missing[*]} failed (log: $logdir/apt.log)"
			exit 1
		fi
	fi
	# The Debian packages start system-wide servers; the tests do not use
	# them (they start their own on free ports), so leave them as they are.
fi

bindir=$(pg_bindir) || { say "postgresql still not found"; exit 1; }
redis=$(redis_bin) || { say "redis-server still not found"; exit 1; }

# initdb refuses to run as root: the tests run the cluster as the postgres
# user (created by the Debian package) when they are root.
if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
	say "running as root but there is no postgres user (the postgresql package creates it)"
	exit 1
fi

say "postgresql: $("$bindir/postgres" --version) ($bindir)"
say "redis: $("$redis" --version | awk '{print $1, $2, $3}') ($redis; redis-cli: $(command -v redis-cli || echo "$(dirname "$redis")/redis-cli"))"

# The npm packages the MCP and owner tests use: real MCP clients and
# servers, real idempotency middleware. Each directory under testdata/npm
# holds a package.json and its package-lock.json; `npm ci` installs exactly
# what the lock names, into that directory's node_modules (ignored by git).
if [[ -d testdata/npm ]]; then
	if ! command -v npm >/dev/null 2>&1; then
		say "npm not found: the MCP and owner tests need Node.js and npm (apt-get install -y nodejs npm)"
		exit 1
	fi
	for pkg in testdata/npm/*/package.json; do
		[[ -e $pkg ]] || continue
		dir=$(dirname "$pkg")
		if [[ -f $dir/node_modules/.package-lock.json && $dir/node_modules/.package-lock.json -nt $dir/package-lock.json ]]; then
			say "npm: $dir up to date"
		elif ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$logdir/npm.log" 2>&1); then
			tail -20 "$logdir/npm.log" >&2
			say "npm ci in $dir failed (log: $logdir/npm.log)"
			exit 1
		else
			say "npm: $dir installed"
		fi
		# A directory with a bundle.mjs bundles the modules its tests load
		# (see that file) into node_modules/.idemkey-bundle.
		manifest=$dir/node_modules/.idemkey-bundle/manifest.json
		if [[ -f $dir/bundle.mjs && ! ($manifest -nt $dir/bundle.mjs && $manifest -nt $dir/node_modules/.package-lock.json) ]]; then
			if ! (cd "$dir" && node bundle.mjs >"$logdir/bundle.log" 2>&1); then
				tail -20 "$logdir/bundle.log" >&2
				say "bundling in $dir failed (log: $logdir/bundle.log)"
				exit 1
			fi
			say "npm: $dir bundled"
		fi
	done
fi

# The Go test modules under testdata (the official Go MCP SDK's client and
# server that the MCP tests build): their modules, as their go.sum names
# them, into the module cache.
for mod in testdata/*/go.mod; do
	[[ -e $mod ]] || continue
	dir=$(dirname "$mod")
	if ! (cd "$dir" && go mod download >"$logdir/gomod.log" 2>&1); then
		tail -20 "$logdir/gomod.log" >&2
		say "go mod download in $dir failed (log: $logdir/gomod.log)"
		exit 1
	fi
	say "go: $dir modules downloaded"
done
