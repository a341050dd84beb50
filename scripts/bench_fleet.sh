#!/usr/bin/env bash
# bench_fleet.sh — idemkey run on shared ledgers (PostgreSQL and Redis) on
# loopback, against the bare command. Run by scripts/bench.sh (its fleet
# section), or alone:
#
#   bash scripts/bench_fleet.sh
#
# Starts its own servers on free 127.0.0.1 ports in a temporary directory
# (PostgreSQL with its default durability: fsync on, synchronous_commit on;
# redis-server with appendonly yes, appendfsync always, as the README asks
# of a ledger) and stops them on exit. Then, for each store:
#   - per step: `idemkey run --task t-N --tool x -- true` on a fresh key
#     (connecting, the claim, the command, the completion) against `true`
#     alone, with `idemkey key` on a small call as the process's own
#     start-up cost; the median over STEPS runs, and the median of a
#     replay. With BASE, the runs of both binaries and of `true` alone are
#     interleaved, so that a drifting load weighs on each alike;
#   - throughput: 16 workers (xargs -P16), DISTINCT steps on distinct keys
#     (with BASE, in 4 batches per binary, in turns);
#   (and the same on a second Redis with appendfsync everysec, to show what
#   the fsync per write costs);
#   - contention: 64 workers started at once on one key whose command
#     sleeps 0.5 s: the wall time until all have exited, how many ran
#     the command (must be 1) and how the others ended.
#   - round trips (with strace): the writes idemkey makes on its TCP socket
#     for a fresh step and for a replay (each write is one request the
#     process then waits for: connecting included), which do not depend
#     on the machine's load.
#   - WAL flushes per fresh step on PostgreSQL (pg_stat_wal's wal_sync
#     over 40 fresh steps, the WAL writer's own included): the
#     claim waits for one, the completion for none (it commits with
#     synchronous_commit off).
#   - with pgbouncer installed (Debian's pgbouncer; optional), PostgreSQL
#     also through PgBouncer in transaction mode: no backend fork per
#     idemkey process, and warm catalog caches.
#   - scaling (scripts/bench_fleet.sh scale runs only this part): claims
#     + completions per second on fresh keys with 1, 8 and 32 concurrent
#     workers, as processes (`idemkey run -- true` under xargs -P) and as
#     goroutines of one process through the library (BenchmarkFleet in
#     derive/ledger/stores), on SQLite; PostgreSQL alone, and as a primary
#     with a synchronous standby (pg_basebackup -R,
#     synchronous_standby_names '*'); Redis alone, with a replica
#     (replicas=1 where this build takes it), and a Redis Cluster of 3
#     primaries (redis-server --cluster-enabled yes, redis-cli --cluster
#     create). A configuration the binary refuses is skipped, saying why.
#     Beside them, the round trip of one trivial request on an open
#     connection to each server (SELECT 1, PING): a single worker's ceiling
#     is about one step per two round trips, plus a flush where the store
#     makes one.
# Environment: STEPS (default 200), DISTINCT (default 1000), SCALE_STEPS
# (default 400: steps per process measurement), KEEP=1 keeps the
# directory, BASE=PATH also measures another idemkey binary (an older
# build) on the same servers, side by side, in rows marked "(base)".
# Needs postgresql and redis-server (scripts/services.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STEPS=${STEPS:-200}
DISTINCT=${DISTINCT:-1000}
SCALE_STEPS=${SCALE_STEPS:-400}
mode=${1:-all}
case $mode in all | steps | scale) ;; *)
	echo "usage: bench_fleet.sh [all|steps|scale]" >&2
	exit 2
	;;
esac
say() { echo "bench_fleet: $*" >&2; }

bash "$root/scripts/services.sh" >/dev/null 2>&1 || {
	say "postgresql or redis-server missing: run bash scripts/services.sh"
	exit 1
}
pgbin=
for d in "${IDEMKEY_PG_BINDIR:-}" /usr/lib/postgresql/*/bin; do
	[[ -n $d && -x $d/initdb ]] && { pgbin=$d; break; }
done
[[ -n $pgbin ]] || pgbin=$(dirname "$(readlink -f "$(command -v initdb)")")
redis=$(command -v redis-server || echo /usr/bin/redis-server)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idemkey-bench-fleet.XXXXXX")
chmod 755 "$tmp"
pg_pid= redis_pid= redis2_pid=
extra_pids=()
cleanup() {
	# The postmaster's and pgbouncer's own pids (runuser in between does
	# not pass signals).
	local pm d
	pm=$(head -1 "$tmp/pg/pgbouncer.pid" 2>/dev/null || true)
	[[ -n $pm ]] && kill -INT "$pm" 2>/dev/null || true
	for d in "$tmp/pg/data" "$tmp/pgha/primary" "$tmp/pgha/standby"; do
		pm=$(head -1 "$d/postmaster.pid" 2>/dev/null || true)
		[[ -n $pm ]] && kill -INT "$pm" 2>/dev/null || true
	done
	[[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null || true
	[[ -n $redis2_pid ]] && kill "$redis2_pid" 2>/dev/null || true
	for pm in "${extra_pids[@]}"; do kill "$pm" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ ${KEEP:-} == 1 ]]; then say "keeping $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

free_port() {
	local p
	for ((p = 20000 + RANDOM % 20000; ; p++)); do
		(echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return; }
	done
}

# as_pg CMD…: run as the postgres user when root (initdb refuses root).
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

mkdir -p "$tmp/pg"
[[ $(id -u) -eq 0 ]] && chown postgres "$tmp/pg"
as_pg "$pgbin/initdb" -D "$tmp/pg/data" -U postgres --auth=trust -E UTF8 --no-locale >"$tmp/initdb.log" 2>&1
pg_port=$(free_port)
as_pg "$pgbin/postgres" -D "$tmp/pg/data" -p "$pg_port" -k "$tmp/pg" -c listen_addresses=127.0.0.1 \
	-c max_connections=200 >"$tmp/pg/log" 2>&1 &
pg_pid=$!
redis_port=$(free_port)
mkdir -p "$tmp/redis"
"$redis" --port "$redis_port" --bind 127.0.0.1 --dir "$tmp/redis" --save "" --appendonly yes \
	--appendfsync always --daemonize no >"$tmp/redis/log" 2>&1 &
redis_pid=$!
# A second Redis with appendfsync everysec: the cost without an fsync per
# write (a crash can lose about a second of the ledger's writes).
redis2_port=$(free_port)
mkdir -p "$tmp/redis2"
"$redis" --port "$redis2_port" --bind 127.0.0.1 --dir "$tmp/redis2" --save "" --appendonly yes \
	--appendfsync everysec --daemonize no >"$tmp/redis2/log" 2>&1 &
redis2_pid=$!
for _ in $(seq 100); do
	"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" && (echo >/dev/tcp/127.0.0.1/$redis_port) 2>/dev/null && break
	sleep 0.1
done
"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pg_port" || { cat "$tmp/pg/log" >&2; exit 1; }

# PgBouncer in transaction mode in front of it, when installed.
pgb_port=
if pgb=$(command -v pgbouncer || ls /usr/sbin/pgbouncer 2>/dev/null); then
	pgb_port=$(free_port)
	cat >"$tmp/pg/pgbouncer.ini" <<EOF
[databases]
postgres = host=127.0.0.1 port=$pg_port dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $pgb_port
unix_socket_dir =
auth_type = trust
auth_file = $tmp/pg/pgbouncer.users
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
pidfile = $tmp/pg/pgbouncer.pid
logfile = $tmp/pg/pgbouncer.log
EOF
	echo '"postgres" ""' >"$tmp/pg/pgbouncer.users"
	[[ $(id -u) -eq 0 ]] && chown postgres "$tmp/pg/pgbouncer.ini" "$tmp/pg/pgbouncer.users"
	as_pg "$pgb" -d "$tmp/pg/pgbouncer.ini" >/dev/null 2>&1 || pgb_port=
	for _ in $(seq 50); do
		[[ -z $pgb_port ]] || (echo >/dev/tcp/127.0.0.1/$pgb_port) 2>/dev/null && break
		sleep 0.1
	done
fi

# wal_syncs: the cluster's WAL flushes so far (pg_stat_wal, PostgreSQL 14+).
wal_syncs() {
	"$pgbin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -XAtq -d postgres -c 'SELECT wal_sync FROM pg_stat_wal' 2>/dev/null || echo -
}

(cd "$root" && CGO_ENABLED=0 go build -trimpath -o "$tmp/idemkey" .)
# The scaling section's in-process benchmark (before HOME moves: the
# module and build caches stay the user's).
[[ $mode != steps ]] && (cd "$root" && CGO_ENABLED=0 go test -c -o "$tmp/stores.test" ./derive/ledger/stores)
IK=$tmp/idemkey
export HOME=$tmp/home XDG_STATE_HOME=$tmp/home/state NO_COLOR=1
mkdir -p "$HOME"

# calc EXPR: floating-point arithmetic.
calc() { awk "BEGIN { print $* }"; }

# median of numbers on stdin
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# per_step LEDGER PREFIX: the median ms of `true` alone, then, for each
# binary in bins (this build, and BASE's), of a fresh-key step and of a
# replay. The runs are interleaved (true, each binary's fresh step, then
# each binary's replay of an earlier key, round after round), so that the
# load of a shared machine, which drifts over minutes, weighs on every
# column alike.
per_step() {
	local ledger=$1 p=$2 i t0 t1 j n=${#bins[@]}
	for ((j = 0; j < n; j++)); do # the table, the scripts
		"${bins[j]}" run --ledger "$ledger" --task "warm-$p" --tool x -- "$true_bin"
	done
	rm -f "$tmp"/ps.*
	for ((i = 0; i < STEPS; i++)); do
		t0=$EPOCHREALTIME
		"$true_bin"
		t1=$EPOCHREALTIME
		calc "($t1 - $t0) * 1000" >>"$tmp/ps.bare"
		for ((j = 0; j < n; j++)); do
			t0=$EPOCHREALTIME
			"${bins[j]}" run --ledger "$ledger" --task "$p$j-$i" --tool x -- "$true_bin"
			t1=$EPOCHREALTIME
			calc "($t1 - $t0) * 1000" >>"$tmp/ps.step$j"
		done
		for ((j = 0; j < n; j++)); do
			t0=$EPOCHREALTIME
			"${bins[j]}" run -q --ledger "$ledger" --task "$p$j-$((i / 2))" --tool x -- "$true_bin"
			t1=$EPOCHREALTIME
			calc "($t1 - $t0) * 1000" >>"$tmp/ps.replay$j"
		done
	done
	local out
	out=$(median <"$tmp/ps.bare")
	for ((j = 0; j < n; j++)); do
		out+=" $(median <"$tmp/ps.step$j") $(median <"$tmp/ps.replay$j")"
	done
	echo "$out"
}

# wal_per_step LEDGER PREFIX: WAL flushes per fresh step of $IK
# (pg_stat_wal's wal_sync over 40 steps, the WAL writer's own included;
# a count, so not interleaved), "-" unless LEDGER is PostgreSQL direct.
wal_per_step() {
	local ledger=$1 p=$2 i w0 w1
	[[ $ledger == "$pg_url" ]] || { echo -; return; }
	w0=$(wal_syncs)
	for ((i = 0; i < 40; i++)); do
		"$IK" run --ledger "$ledger" --task "$p-$i" --tool x -- "$true_bin"
	done
	sleep 0.5 # the WAL writer's flush of the last completion
	w1=$(wal_syncs)
	if [[ $w0 == - || $w1 == - ]]; then echo -; else calc "($w1 - $w0) / 40"; fi
}

true_bin=$(type -P true) # the program, not the shell's builtin

# The process alone, without a ledger: idemkey key on a small call.
printf '{"amount":100}' >"$tmp/call.json"
nokey=-
[[ $mode != scale ]] && nokey=$(for ((i = 0; i < STEPS; i++)); do
	t0=$EPOCHREALTIME
	"$IK" key --task t --tool x "$tmp/call.json" >/dev/null
	t1=$EPOCHREALTIME
	calc "($t1 - $t0) * 1000"
done | median)

# throughput LEDGER PREFIX: steps/s of 16 workers on DISTINCT keys, for
# each binary in bins, in 4 batches per binary taken in turn (as per_step,
# so that a drifting load weighs on each alike).
throughput() {
	local ledger=$1 p=$2 t0 t1 b j n=${#bins[@]} per=$((DISTINCT / 4))
	local -a spent
	for ((b = 0; b < 4; b++)); do
		for ((j = 0; j < n; j++)); do
			t0=$EPOCHREALTIME
			seq $((b * per + 1)) $(((b + 1) * per)) |
				xargs -P16 -I{} "${bins[j]}" run --ledger "$ledger" --task "$p$j-{}" --tool x -- "$true_bin"
			t1=$EPOCHREALTIME
			spent[j]=$(calc "${spent[j]:-0} + $t1 - $t0")
		done
	done
	local out=
	for ((j = 0; j < n; j++)); do out+="$(calc "4 * $per / ${spent[j]}") "; done
	echo "$out"
}

# trips LEDGER PREFIX: the writes on TCP sockets of a fresh step and of its
# replay (strace), "-" without strace.
trips() {
	local ledger=$1 p=$2 f r
	if ! command -v strace >/dev/null; then
		echo "- -"
		return
	fi
	f=$(strace -f -yy -e trace=write,sendto,sendmsg,writev "$IK" run --ledger "$ledger" --task "$p-trips" --tool x -- "$true_bin" 2>&1 | grep -c 'TCP' || true)
	r=$(strace -f -yy -e trace=write,sendto,sendmsg,writev "$IK" run -q --ledger "$ledger" --task "$p-trips" --tool x -- "$true_bin" 2>&1 | grep -c 'TCP' || true)
	echo "$f $r"
}

# race64 LEDGER PREFIX: wall s for 64 workers on one key; executions; exits.
race64() {
	local ledger=$1 p=$2 t0 t1 i
	rm -f "$tmp/ran" "$tmp/exits"
	printf '#!/bin/sh\necho x >> %s\nsleep 0.5\n' "$tmp/ran" >"$tmp/step.sh"
	chmod +x "$tmp/step.sh"
	t0=$EPOCHREALTIME
	for ((i = 0; i < 64; i++)); do
		(
			rc=0
			"$IK" run -q --ledger "$ledger" --task "$p-race" --tool x -- "$tmp/step.sh" 2>/dev/null || rc=$?
			echo $rc >>"$tmp/exits"
		) &
	done
	wait
	t1=$EPOCHREALTIME
	local ran
	ran=$(wc -l <"$tmp/ran")
	echo "$(calc "$t1 - $t0") $ran $(sort "$tmp/exits" | uniq -c | awk '{ printf "%s×%s ", $1, $2 }')"
}

pg_url="postgres://postgres@127.0.0.1:$pg_port/postgres?sslmode=disable"
redis_url="redis://127.0.0.1:$redis_port/0"
rows=()
bins=("$IK")
[[ -n ${BASE:-} ]] && bins+=("$(readlink -f "$BASE")")
new_ik=$IK
stores=(postgres)
[[ -n $pgb_port ]] && stores+=("postgres via pgbouncer")
stores+=(redis "redis, everysec")
[[ $mode == scale ]] && stores=()
for store in "${stores[@]}"; do
	case $store in
	postgres) url=$pg_url ;;
	"postgres via pgbouncer") url="postgres://postgres@127.0.0.1:$pgb_port/postgres?sslmode=disable" ;;
	redis) url=$redis_url ;;
	*) url="redis://127.0.0.1:$redis2_port/0" ;;
	esac
	p=${store//[^a-z]/}
	say "$store: $STEPS steps and $STEPS replays of each binary, interleaved"
	read -r -a vals < <(per_step "$url" "s$p")
	bare=${vals[0]}
	say "$store: $DISTINCT steps by 16 workers, of each binary, in turns"
	read -r -a tps < <(throughput "$url" "d$p")
	for j in "${!bins[@]}"; do
		IK=${bins[j]}
		step=${vals[2 * j + 1]} replay=${vals[2 * j + 2]}
		label=$store p=${store//[^a-z]/}
		[[ $IK != "$new_ik" ]] && label="$store (base)" p=b$p
		say "$label: 64 workers on one key"
		walf=$(wal_per_step "$url" "w$p")
		tp=${tps[j]}
		read -r race_wall race_ran race_exits < <(race64 "$url" "r$p")
		read -r trips_fresh trips_replay < <(trips "$url" "t$p")
		rows+=("$(printf '| %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %s / %s | %s | %.0f steps/s | %.2f s, %s ran; exits %s|' \
			"$label" "$bare" "$nokey" "$step" "$(calc "$step - $bare")" "$replay" "$trips_fresh" "$trips_replay" "$walf" "$tp" "$race_wall" "$race_ran" "$race_exits")")
		if [[ $race_ran != 1 ]]; then
			say "FAILED: $label: the raced step ran $race_ran times"
			exit 1
		fi
	done
done
IK=$new_ik

if [[ $mode != scale ]]; then
echo
echo "Fleet ledgers on loopback ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); PostgreSQL $("$pgbin/postgres" --version | awk '{ print $3 }') defaults, fsync on; Redis $("$redis" --version | awk '{ print $3 }' | tr -d v=) appendfsync always, and everysec$([[ -n $pgb_port ]] && echo "; $("$pgb" --version | head -1) in transaction mode, pool of 20"))"
echo
echo "| store | bare \`/bin/true\` | \`idemkey key\` (the process, no ledger) | \`idemkey run -- true\`, fresh key | overhead per step | replay | round trips, fresh / replay | WAL flushes per fresh step | 16 workers, distinct keys | 64 workers, one key |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
printf '%s\n' "${rows[@]}"
fi

[[ $mode == steps ]] && exit 0

# ---- scaling: claims + completions per second with 1, 8 and 32 workers ----

# start_redis NAME PORT ARGS…: a redis-server in $tmp/NAME with the
# ledger's persistence (appendonly, appendfsync always).
start_redis() {
	local name=$1 port=$2
	shift 2
	mkdir -p "$tmp/$name"
	"$redis" --port "$port" --bind 127.0.0.1 --dir "$tmp/$name" --save "" --appendonly yes \
		--appendfsync always --daemonize no "$@" >"$tmp/$name/log" 2>&1 &
	extra_pids+=($!)
	for _ in $(seq 100); do
		(echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && return
		sleep 0.1
	done
	say "redis-server on $port did not start: $(tail -3 "$tmp/$name/log")"
	return 1
}

# A primary with a synchronous streaming standby.
mkdir -p "$tmp/pgha"
[[ $(id -u) -eq 0 ]] && chown postgres "$tmp/pgha"
as_pg "$pgbin/initdb" -D "$tmp/pgha/primary" -U postgres --auth=trust -E UTF8 --no-locale >>"$tmp/initdb.log" 2>&1
pgp_port=$(free_port)
as_pg "$pgbin/postgres" -D "$tmp/pgha/primary" -p "$pgp_port" -k "$tmp/pgha" -c listen_addresses=127.0.0.1 \
	-c max_connections=200 >"$tmp/pgha/primary.log" 2>&1 &
for _ in $(seq 600); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgp_port" && break; sleep 0.1; done
"$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgp_port" || { cat "$tmp/pgha/primary.log" >&2; exit 1; }
as_pg "$pgbin/pg_basebackup" -d "host=127.0.0.1 port=$pgp_port user=postgres application_name=standby1" \
	-D "$tmp/pgha/standby" -R -X stream -c fast
pgs_port=$(free_port)
as_pg "$pgbin/postgres" -D "$tmp/pgha/standby" -p "$pgs_port" -k "$tmp/pgha" -c listen_addresses=127.0.0.1 \
	-c max_connections=200 >"$tmp/pgha/standby.log" 2>&1 &
psql_p() { "$pgbin/psql" -h 127.0.0.1 -p "$pgp_port" -U postgres -XAtq -d postgres -c "$1"; }
psql_p "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
psql_p "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 600); do
	[[ $(psql_p "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'" 2>/dev/null) == 1 ]] && break
	sleep 0.1
done
[[ $(psql_p "SELECT sync_state FROM pg_stat_replication") == sync ]] || { say "the standby is not synchronous"; exit 1; }

# Redis with one replica (a primary of its own: the single Redis above
# stays without one), and a cluster of 3 primaries.
rp_port=$(free_port)
start_redis redis-primary "$rp_port"
rrep_port=$(free_port)
start_redis redis-replica "$rrep_port" --replicaof 127.0.0.1 "$rp_port"
for _ in $(seq 100); do
	redis-cli -p "$rp_port" info replication | grep -q 'slave0:.*state=online' && break
	sleep 0.1
done
cluster_ports=()
cluster_up=1
for i in 1 2 3; do
	# A node listens on its port and on port + 10000 (the cluster bus).
	while p=$(free_port); (echo >/dev/tcp/127.0.0.1/$((p + 10000))) 2>/dev/null; do :; done
	start_redis "cluster$i" "$p" --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 ||
		cluster_up=
	cluster_ports+=("$p")
done
cluster_ok=
if [[ -n $cluster_up ]] && redis-cli --cluster create $(printf '127.0.0.1:%s ' "${cluster_ports[@]}") --cluster-replicas 0 --cluster-yes >"$tmp/cluster-create.log" 2>&1; then
	for _ in $(seq 100); do
		redis-cli -p "${cluster_ports[0]}" cluster info | grep -q 'cluster_state:ok' && { cluster_ok=1; break; }
		sleep 0.1
	done
fi
[[ -n $cluster_ok ]] || say "the Redis Cluster did not form: $(tail -3 "$tmp/cluster-create.log")"


# rtt_pg PORT / rtt_redis PORT: the median µs of one trivial request on an
# open connection (psql's \timing is too coarse; pgbench and
# redis-benchmark are what the servers ship).
rtt_pg() {
	local f=$tmp/rtt.sql
	echo 'SELECT 1;' >"$f"
	as_pg "$pgbin/pgbench" -n -h 127.0.0.1 -p "$1" -U postgres -f "$f" -t 2000 -c 1 postgres 2>/dev/null |
		awk '/latency average/ { printf "%.0f", $4 * 1000 }'
}
rtt_redis() {
	# -q still writes progress lines (rps=…), ended by \r: the last
	# "requests per second" line is the result.
	redis-benchmark -p "$1" -c 1 -n 5000 -q -t ping 2>/dev/null | tr '\r' '\n' |
		awk -F'[ :]+' '/PING_INLINE: [0-9.]+ requests per second/ { v = $2 } END { if (v > 0) printf "%.0f", 1e6 / v }'
}

# procs URL PREFIX W: steps/s of W processes over SCALE_STEPS fresh keys.
procs() {
	local url=$1 p=$2 w=$3 t0 t1
	t0=$EPOCHREALTIME
	seq "$SCALE_STEPS" | xargs -P"$w" -I{} "$IK" run -q --ledger "$url" --task "$p-$w-{}" --tool x -- "$true_bin" ||
		return 1
	t1=$EPOCHREALTIME
	calc "$SCALE_STEPS / ($t1 - $t0)"
}

# inproc URL: steps/s of 1, 8 and 32 goroutines (BenchmarkFleet).
inproc() {
	IDEMKEY_BENCH_LEDGER=$1 "$tmp/stores.test" -test.run '^$' -test.bench BenchmarkFleet -test.benchtime 2s 2>&1 |
		awk '/steps\/s/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "steps/s") printf "%.0f ", $i }'
}

# What this build takes: Redis's replicas= and a cluster.
# probe URL: a step on the ledger; on failure, the first line it said.
probe() {
	local out
	out=$("$IK" run -q --ledger "$1" --task "probe-$RANDOM$RANDOM" --tool x -- "$true_bin" 2>&1 >/dev/null) && return 0
	echo "${out%%$'\n'*}"
	return 1
}
rrep_url="redis://127.0.0.1:$rp_port/0?replicas=1"
rrep_label="Redis, 1 replica, replicas=1"
if ! why=$(probe "$rrep_url"); then
	say "replicas=1 refused by this build ($why): Redis with its replica measured without waiting for it"
	rrep_url="redis://127.0.0.1:$rp_port/0" rrep_label="Redis, 1 replica (no replicas= in this build: not waited for)"
fi
configs=("SQLite|$tmp/scale.db|-"
	"PostgreSQL|$pg_url|$(rtt_pg "$pg_port")"
	"PostgreSQL, synchronous standby|postgres://postgres@127.0.0.1:$pgp_port,127.0.0.1:$pgs_port/postgres?sslmode=disable&target_session_attrs=read-write|$(rtt_pg "$pgp_port")"
	"Redis|$redis_url|$(rtt_redis "$redis_port")"
	"$rrep_label|$rrep_url|$(rtt_redis "$rp_port")")
if [[ -n $cluster_ok ]]; then
	curl_url="redis://127.0.0.1:${cluster_ports[0]}/0"
	if ! why=$(probe "$curl_url"); then
		say "Redis Cluster skipped: this build refuses it ($why)"
		configs+=("Redis Cluster, 3 primaries|-|skipped: $why")
	else
		configs+=("Redis Cluster, 3 primaries|$curl_url|$(rtt_redis "${cluster_ports[0]}")")
	fi
fi

srows=()
for c in "${configs[@]}"; do
	IFS='|' read -r label url rtt <<<"$c"
	if [[ $url == - ]]; then
		srows+=("| $label | ${rtt} | | | | | | |")
		continue
	fi
	say "$label: $SCALE_STEPS steps by 1, 8, 32 processes; then 1, 8, 32 goroutines"
	p=${label//[^A-Za-z]/}
	row="| $label | $rtt µs |"
	[[ $rtt == - || -z $rtt ]] && row="| $label | - |"
	for w in 1 8 32; do
		v=$(procs "$url" "$p" "$w") || v=failed
		row+=" $(printf '%.0f' "$v" 2>/dev/null || echo "$v") |"
	done
	read -r -a g < <(inproc "$url") || true # no newline after the last figure
	row+=" ${g[0]:-failed} | ${g[1]:-failed} | ${g[2]:-failed} |"
	srows+=("$row")
done

echo
echo "Claims + completions per second, fresh keys ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); PostgreSQL $("$pgbin/postgres" --version | awk '{ print $3 }'), Redis $("$redis" --version | awk '{ print $3 }' | tr -d v=), appendfsync always)"
echo
echo "| ledger | one round trip | 1 process | 8 processes | 32 processes | 1 goroutine | 8 goroutines | 32 goroutines |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${srows[@]}"
