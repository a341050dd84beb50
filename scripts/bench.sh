#!/usr/bin/env bash
# bench.sh — end-to-end performance of idemkey against the reference harness
# on Node and a jq pipeline, side by side in one run.
#
#   bash scripts/bench.sh
#
# Builds idemkey (statically, CGO_ENABLED=0, as the README does) and
# scripts/minsha the same way, generates deterministic inputs with
# scripts/gendoc (a 64 MiB mixed document, the same document minified and
# wrapped as {"items":[…]}, a 400-byte tool call, 100,000 JSON Lines
# calls), checks that idemkey and the harness agree on their keys, then
# times:
#   - idemkey key --task T --tool X big.json  (and min.json, obj.json)
#   - idemkey canon big.json > /dev/null      (the canonical form alone;
#     the target is key within 1.15x of it. canon builds the member index,
#     key does not, so key is the quicker; the like-for-like comparison,
#     the one pass with and without SHA-256 in one process, is
#     go test -bench '(Text|Canon)64MiB' ./derive)
#   - openssl dgst -sha256 big.json  (the ceiling: read and hash only)
#   - node scripts/refharness.js key T X big.json
#   - jq -cS . big.json | sha256sum   (a speed yardstick only: jq -S sorts
#     by code point and formats numbers its own way, not the canonical form)
#   - idemkey, node and jq on the 400-byte call (whole-process time), and
#     scripts/minsha, a minimal static Go program that reads the file and
#     prints its SHA-256: the floor for a Go program's start-up
#   - the small call again, minsha, idemkey built -tags noledger (without
#     the ledger's drivers) and idemkey in turns, round by round
#   - idemkey key --batch --from call calls.jsonl  vs
#     node scripts/refharness.js batch < calls.jsonl
# and prints a Markdown table. Wall times are medians (hyperfine when
# present, else a loop over /usr/bin/time); MB/s is input bytes / median
# wall time / 10^6; peak RSS is /usr/bin/time's %M of one run.
#
# Then what each linked library costs the small call's start-up
# (scripts/bench_init.sh: minsha with blank imports of each group, in
# turns; INIT=0 skips it) and the fleet section (scripts/bench_fleet.sh,
# FLEET=0 skips it).
#
# Environment: RUNS (idemkey runs on the big document, default 7),
# SLOW_RUNS (node and jq, default 3), SMALL_RUNS (idemkey on the small
# call, default 100), SIZE (default 64MiB), CALLS (default 100000),
# SHAPES=0 skips the minified and object-rooted documents,
# KEEP=1 keeps the temporary directory, NO_HYPERFINE=1 times with the
# /usr/bin/time loop even when hyperfine is installed.
#
# Exits non-zero only on a real failure: a build or generator error, a
# command that fails, or keys that differ. A missing node or jq skips
# its rows with a message.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNS=${RUNS:-7}
SLOW_RUNS=${SLOW_RUNS:-3}
SMALL_RUNS=${SMALL_RUNS:-100}
SIZE=${SIZE:-64MiB}
CALLS=${CALLS:-100000}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idemkey-bench.XXXXXX")
if [[ ${KEEP:-} == 1 ]]; then
	echo "bench: keeping $tmp" >&2
else
	trap 'rm -rf "$tmp"' EXIT
fi

say() { echo "bench: $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }
q() { printf '%q' "$1"; }

# ---- the ledger: idemkey run (a separate section; bash scripts/bench.sh --ledger-only runs just it) ----
# bench_ledger IDEMKEY DIR: prints a Markdown table, medians side by side:
#   - true                                  (the bare command)
#   - idemkey run --task t --tool x -- true (a fresh step: claim, run, record;
#     every timed step has a key of its own)
#   - the same, replayed                    (the succeeded record's replay)
#   - 16 processes at once on distinct keys, LEDGER_STEPS steps each (steps/s)
#   - fsyncs per fresh step (strace -c over 20 steps: fsync + fdatasync),
#     which do not depend on the machine's load
# Each binary has a fresh ledger file in DIR (a local disk: WAL,
# synchronous=FULL). LEDGER_BASE=PATH also measures another idemkey binary
# (an older build) in rows marked "(base)". The binaries and `true` take
# turns, round by round (LEDGER_RUNS rounds, default 100; the 16-process
# runs LEDGER_ROUNDS times, default 3, the median kept): a shared machine's
# load drifts within a run, and measuring one binary after the other reads
# that drift as a difference.
bench_ledger() {
	local dir=$1 runs=${LEDGER_RUNS:-100} steps=${LEDGER_STEPS:-40} rounds=${LEDGER_ROUNDS:-3}
	shift
	local -a bins=("$@") labels=("")
	if [[ -n ${LEDGER_BASE:-} ]]; then
		bins+=("$(readlink -f "$LEDGER_BASE")")
		labels+=(" (base)")
	fi
	local i j r w t0 t1 ik led
	for ((i = 0; i < ${#bins[@]}; i++)); do
		mkdir -p "$dir/$i"
		IDEMKEY_LEDGER=$dir/$i/ledger.db "${bins[i]}" ledger init 2>/dev/null
		IDEMKEY_LEDGER=$dir/$i/ledger.db "${bins[i]}" run --task t --tool x -- true
	done
	say "ledger: true, fresh steps and replays, ${#bins[@]} binaries in turn ($runs rounds)"
	for ((r = 0; r < runs; r++)); do
		t0=$EPOCHREALTIME
		/usr/bin/true
		t1=$EPOCHREALTIME
		echo "true $t0 $t1"
		for ((i = 0; i < ${#bins[@]}; i++)); do
			led=$dir/$i/ledger.db
			t0=$EPOCHREALTIME
			IDEMKEY_LEDGER=$led "${bins[i]}" run --task "f$r" --tool x -- /usr/bin/true
			t1=$EPOCHREALTIME
			echo "fresh$i $t0 $t1"
			t0=$EPOCHREALTIME
			IDEMKEY_LEDGER=$led "${bins[i]}" run -q --task t --tool x -- true
			t1=$EPOCHREALTIME
			echo "replay$i $t0 $t1"
		done
	done >"$dir/times" 2>/dev/null
	say "ledger: 16 concurrent processes, $steps steps each, distinct keys ($rounds rounds)"
	for ((r = 0; r < rounds; r++)); do
		for ((i = 0; i < ${#bins[@]}; i++)); do
			ik=${bins[i]} led=$dir/$i/conc$r.db
			IDEMKEY_LEDGER=$led "$ik" ledger init 2>/dev/null
			t0=$EPOCHREALTIME
			for ((w = 0; w < 16; w++)); do
				(for ((j = 0; j < steps; j++)); do IDEMKEY_LEDGER=$led "$ik" run --task "w$w-$j" --tool x -- true || exit 1; done) &
			done
			wait
			t1=$EPOCHREALTIME
			echo "conc$i $t0 $t1"
		done
	done >>"$dir/times"
	local -a syncs=()
	for ((i = 0; i < ${#bins[@]}; i++)); do
		syncs[i]=-
		if have strace; then
			strace -f -c -e trace=fsync,fdatasync -o "$dir/syncs$i" \
				bash -c 'for i in $(seq 20); do IDEMKEY_LEDGER=$2 "$1" run --task "s$i" --tool x -- true || exit 1; done' - "${bins[i]}" "$dir/$i/ledger.db" >/dev/null 2>&1
			syncs[i]=$(awk '$NF == "fsync" || $NF == "fdatasync" { n += $4 } END { printf "%.1f", n / 20 }' "$dir/syncs$i")
		fi
	done
	med() { # med NAME: median seconds of the rows named NAME
		awk -v n="$1" '$1 == n { printf "%.6f\n", $3 - $2 }' "$dir/times" | sort -g |
			awk '{ w[NR] = $1 } END { print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }'
	}
	local bare
	bare=$(med true)
	echo
	echo "| ledger (SQLite, $(df -T "$dir" | awk 'NR == 2 { print $2 }'), load average $(cut -d' ' -f1-3 /proc/loadavg)) | median wall | overhead vs true |"
	echo "| --- | ---: | ---: |"
	awk -v b="$bare" 'BEGIN { printf "| `true` | %.2f ms | — |\n", b * 1000 }'
	for ((i = 0; i < ${#bins[@]}; i++)); do
		awk -v b="$bare" -v r="$(med "fresh$i")" -v p="$(med "replay$i")" -v c="$(med "conc$i")" \
			-v n=$((16 * steps)) -v l="${labels[i]}" -v s="${syncs[i]}" 'BEGIN {
			printf "| `idemkey run --task t --tool x -- true` (fresh step)%s | %.2f ms | +%.2f ms |\n", l, r * 1000, (r - b) * 1000
			printf "| the same, replayed%s | %.2f ms | +%.2f ms |\n", l, p * 1000, (p - b) * 1000
			printf "| 16 processes at once, distinct keys%s | %.0f steps/s | %d steps in %.2f s |\n", l, n / c, n, c
			printf "| fsyncs per fresh step (strace)%s | %s | — |\n", l, s
		}'
	done
}

apt_install() { # apt_install PACKAGE: best effort, only as root
	if [[ $(id -u) == 0 ]] && have apt-get; then
		say "installing $1"
		apt-get install -y "$1" >/dev/null 2>&1 ||
			{ apt-get update >/dev/null 2>&1 && apt-get install -y "$1" >/dev/null 2>&1; } || true
	fi
}

use_hyperfine=0
if [[ -z ${NO_HYPERFINE:-} ]]; then
	have hyperfine || apt_install hyperfine
	have hyperfine && use_hyperfine=1
fi
[[ -x /usr/bin/time ]] || apt_install time
if [[ ! -x /usr/bin/time ]]; then
	say "/usr/bin/time (GNU time) is missing: install the time package"
	exit 1
fi
use_node=1 use_jq=1
have node || { use_node=0; say "node not found: skipping the reference harness rows"; }
have jq || { use_jq=0; say "jq not found: skipping the jq rows"; }

# bash scripts/bench.sh --fleet-only runs just the fleet section (below).
if [[ ${1:-} == --fleet-only ]]; then
	bash "$root/scripts/bench_fleet.sh"
	exit $?
fi

# ---- build and generate ----
say "building idemkey and gendoc"
# idemkey is built as the README builds it, statically (CGO_ENABLED=0);
# the default build, linked against libc, is timed on the small call too.
# minsha is built exactly as idemkey is.
build_flags=(-trimpath -ldflags=-s\ -w)
(cd "$root" && CGO_ENABLED=0 go build "${build_flags[@]}" -o "$tmp/idemkey" . &&
	CGO_ENABLED=0 go build "${build_flags[@]}" -o "$tmp/minsha" ./scripts/minsha &&
	go build "${build_flags[@]}" -o "$tmp/idemkey-cgo" . &&
	CGO_ENABLED=0 go build "${build_flags[@]}" -tags noledger -o "$tmp/idemkey-noledger" . &&
	go build -o "$tmp/gendoc" ./scripts/gendoc)
IK=$tmp/idemkey
if [[ ${1:-} == --ledger-only ]]; then
	mkdir -p "$tmp/ledger"
	bench_ledger "$tmp/ledger" "$IK"
	exit 0
fi
say "generating inputs in $tmp"
"$tmp/gendoc" -kind mixed -size "$SIZE" -o "$tmp/big.json"
"$tmp/gendoc" -kind call -o "$tmp/call.json"
"$tmp/gendoc" -kind calls -n "$CALLS" -o "$tmp/calls.jsonl"
# The same document minified (JSON strings never hold a raw newline, so
# deleting them leaves the same value, with no line structure to guess
# run boundaries from) and as the one member of a root object.
shapes=${SHAPES:-1}
if ((shapes)); then
	tr -d '\n' <"$tmp/big.json" >"$tmp/min.json"
	{ printf '{"items":'; cat "$tmp/big.json"; printf '}\n'; } >"$tmp/obj.json"
fi
big_bytes=$(wc -c <"$tmp/big.json")
call_bytes=$(wc -c <"$tmp/call.json")
calls_bytes=$(wc -c <"$tmp/calls.jsonl")
ref="$root/scripts/refharness.js"

# ---- correctness first: a fast wrong answer is worthless ----
failed=0
agree() { # agree NAME FILE
	local a b
	a=$("$IK" key --task T --tool X "$2")
	if ((use_node)); then
		b=$(node "$ref" key T X "$2")
		if [[ $a != "$b" ]]; then
			say "MISMATCH on $1: idemkey $a, node $b"
			failed=1
		fi
	fi
}
agree big.json "$tmp/big.json"
if ((shapes)); then
	agree min.json "$tmp/min.json"
	agree obj.json "$tmp/obj.json"
fi
agree call.json "$tmp/call.json"

batch=1
if ! "$IK" key --batch --from call </dev/null >/dev/null 2>&1; then
	batch=0
	say "batch: skipped (idemkey key --batch not available)"
elif ((use_node)); then
	"$IK" key --batch --from call "$tmp/calls.jsonl" >"$tmp/keys.idemkey"
	node "$ref" batch <"$tmp/calls.jsonl" >"$tmp/keys.node"
	if ! cmp -s "$tmp/keys.idemkey" "$tmp/keys.node"; then
		say "MISMATCH in the batch: $(diff "$tmp/keys.idemkey" "$tmp/keys.node" | head -4 | tr '\n' ' ')"
		failed=1
	fi
fi

# ---- measurement ----
# timeit RUNS WARMUP CMD: prints the median wall time and the mean CPU time
# (user + system) in seconds. CMD is a command line; a plain command runs
# without a shell, one with a pipe or redirection under sh -c (hyperfine
# subtracts the shell's own start-up time; the fallback loop cannot).
# Without hyperfine, EPOCHREALTIME and times give the figures.
timeit() {
	local runs=$1 warmup=$2 cmd=$3 plain=1 i
	[[ $cmd == *[\|\<\>]* ]] && plain=0
	if ((use_hyperfine)); then
		local shell=()
		((plain)) && shell=(-N)
		hyperfine --style none "${shell[@]}" --warmup "$warmup" --runs "$runs" \
			--export-csv "$tmp/hf.csv" "$cmd" >/dev/null 2>"$tmp/hf.err" ||
			{ cat "$tmp/hf.err" >&2; return 1; }
		# command,mean,stddev,median,user,system,min,max
		awk -F, 'NR == 2 { print $(NF - 4), $(NF - 3) + $(NF - 2) }' "$tmp/hf.csv"
		return
	fi
	# The fallback: wall time from bash's microsecond clock, CPU time from
	# the children's totals (times) over all the runs.
	(
		for ((i = 0; i < warmup; i++)); do run_once "$plain" "$cmd"; done
		times >"$tmp/times" # in this shell: a pipe would run it in a subshell
		cpu0=$(tail -1 "$tmp/times")
		for ((i = 0; i < runs; i++)); do
			t0=$EPOCHREALTIME
			run_once "$plain" "$cmd"
			t1=$EPOCHREALTIME
			echo "$t0 $t1"
		done >"$tmp/walls"
		times >"$tmp/times"
		cpu1=$(tail -1 "$tmp/times")
		awk '{ printf "%.6f\n", $2 - $1 }' "$tmp/walls" | sort -g |
			awk -v runs="$runs" -v a="$cpu0" -v b="$cpu1" '
				function secs(s,   p) { split(s, p, /[ms ]+/); return p[1] * 60 + p[2] + p[3] * 60 + p[4] }
				{ w[NR] = $1 }
				END { print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2, (secs(b) - secs(a)) / runs }'
	)
}

run_once() { # run_once PLAIN CMD
	if (($1)); then
		eval "$2" >/dev/null
	else
		sh -c "$2" >/dev/null
	fi
}

# peak_rss CMD: peak resident set size in KiB of one run of CMD (for a
# pipeline, of its largest process).
peak_rss() {
	/usr/bin/time -f '%M' -o "$tmp/rss" sh -c "$1" >/dev/null
	tail -1 "$tmp/rss"
}

# One row per measurement, tab-separated: case, command, median wall, CPU,
# input bytes, peak RSS in KiB, units (the number of calls for a batch, 1
# for a document whose MB/s is wanted, 0 for none).
rows=()
measure() { # measure CASE COMMAND RUNS WARMUP BYTES UNITS CMD
	local t r
	say "timing $1: $2 ($3 runs)"
	t=$(timeit "$3" "$4" "$7")
	r=$(peak_rss "$7")
	rows+=("$1"$'\t'"$2"$'\t'"${t% *}"$'\t'"${t#* }"$'\t'"$5"$'\t'"$r"$'\t'"$6")
}

size_label=$(sed -E 's/([0-9])([KMG]?i?B)$/\1 \2/' <<<"$SIZE")
big=$tmp/big.json call=$tmp/call.json calls=$tmp/calls.jsonl

busy() { # warn, before timing, when other work would skew the figures (after it, the load average would count this script's own runs)
	local load
	load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
	if awk -v l="$load" -v n="$(nproc)" 'BEGIN { exit !(l > n / 2) }'; then
		say "warning: load average $load on $(nproc) cores: other work is running and will skew the figures"
	fi
}
busy
document() { # document CASE FILE BYTES: idemkey, its canonical form alone, the ceiling, node and jq on one document
	measure "$1" "idemkey key" "$RUNS" 1 "$3" 1 \
		"$(q "$IK") key --task T --tool X $(q "$2")"
	# The canonical form alone, to /dev/null.
	measure "$1" "idemkey canon > /dev/null" "$RUNS" 1 "$3" 1 \
		"$(q "$IK") canon $(q "$2") > /dev/null"
	# The ceiling: read the file and hash it, nothing else. OpenSSL uses the
	# CPU's SHA extensions as Go does; coreutils' sha256sum may not.
	if have openssl; then
		measure "$1" "openssl dgst -sha256 (ceiling)" "$RUNS" 1 "$3" 1 \
			"openssl dgst -sha256 $(q "$2")"
	else
		measure "$1" "sha256sum (ceiling)" "$RUNS" 1 "$3" 1 \
			"sha256sum $(q "$2")"
	fi
	((use_node)) && measure "$1" "node refharness.js key" "$SLOW_RUNS" 0 "$3" 1 \
		"node $(q "$ref") key T X $(q "$2")"
	((use_jq)) && measure "$1" "jq -cS . | sha256sum" "$SLOW_RUNS" 0 "$3" 1 \
		"jq -cS . $(q "$2") | sha256sum"
	return 0
}
document "$size_label document" "$big" "$big_bytes"
if ((shapes)); then
	document "$size_label document, minified" "$tmp/min.json" "$(wc -c <"$tmp/min.json")"
	document "$size_label document as {\"items\":[…]}" "$tmp/obj.json" "$(wc -c <"$tmp/obj.json")"
fi

measure "400-byte call" "idemkey key (default go build: dynamically linked)" "$SMALL_RUNS" 5 "$call_bytes" 0 \
	"$(q "$tmp/idemkey-cgo") key --task T --tool X $(q "$call")"
measure "400-byte call" "idemkey key" "$SMALL_RUNS" 5 "$call_bytes" 0 \
	"$(q "$IK") key --task T --tool X $(q "$call")"
# The floor: a static Go program that reads the file and prints its
# SHA-256, built as idemkey is; the target is idemkey within 1.5x.
measure "400-byte call" "minsha: read + SHA-256, minimal static Go (floor)" "$SMALL_RUNS" 5 "$call_bytes" 0 \
	"$(q "$tmp/minsha") $(q "$call")"
# The same three in turns, round by round (SMALL_RUNS rounds), with a build
# without the ledger's drivers (-tags noledger): medians of each, and their
# ratios, free of the load's drift between hyperfine runs.
small_turns() {
	local r b t0 t1
	for ((r = 0; r < SMALL_RUNS; r++)); do
		for b in minsha idemkey-noledger idemkey; do
			if [[ $b == minsha ]]; then
				t0=$EPOCHREALTIME
				"$tmp/minsha" "$call" >/dev/null
				t1=$EPOCHREALTIME
			else
				t0=$EPOCHREALTIME
				"$tmp/$b" key --task T --tool X "$call" >/dev/null
				t1=$EPOCHREALTIME
			fi
			echo "$b $t0 $t1"
		done
	done >"$tmp/small"
	smed() { awk -v n="$1" '$1 == n { printf "%.6f\n", $3 - $2 }' "$tmp/small" | sort -g |
		awk '{ w[NR] = $1 } END { print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }'; }
	awk -v m="$(smed minsha)" -v n="$(smed idemkey-noledger)" -v k="$(smed idemkey)" -v runs="$SMALL_RUNS" 'BEGIN {
		printf "\n| 400-byte call, in turns (%d rounds) | median wall | vs minsha |\n| --- | ---: | ---: |\n", runs
		printf "| minsha | %.2f ms | 1.00× |\n", m * 1000
		printf "| idemkey key, built without the ledger (-tags noledger) | %.2f ms | %.2f× |\n", n * 1000, n / m
		printf "| idemkey key | %.2f ms | %.2f× (%+.0f%% over noledger) |\n", k * 1000, k / m, (k / n - 1) * 100
	}' >"$tmp/small.md"
}
small_turns
((use_node)) && measure "400-byte call" "node refharness.js key" $((SMALL_RUNS / 5 + 1)) 2 "$call_bytes" 0 \
	"node $(q "$ref") key T X $(q "$call")"
((use_jq)) && measure "400-byte call" "jq -cS . | sha256sum" $((SMALL_RUNS / 2 + 1)) 2 "$call_bytes" 0 \
	"jq -cS . $(q "$call") | sha256sum"

if ((batch)); then
	measure "batch, $CALLS calls" "idemkey key --batch --from call" "$SLOW_RUNS" 1 "$calls_bytes" "$CALLS" \
		"$(q "$IK") key --batch --from call $(q "$calls")"
	((use_node)) && measure "batch, $CALLS calls" "node refharness.js batch" "$SLOW_RUNS" 0 "$calls_bytes" "$CALLS" \
		"node $(q "$ref") batch < $(q "$calls")"
fi

# ---- drift ----
# bench_drift: idemkey drift on a generated log of DRIFT_CALLS calls (default
# 1,000,000) of about 400 bytes (scripts/driftgen -client, seed 1), against
# the targets: at most 10 s and 1 GB. NO_DRIFT=1 skips it;
# DRIFT_RUNS (default 3) sets the runs.
bench_drift() {
	local n=${DRIFT_CALLS:-1000000} runs=${DRIFT_RUNS:-3} log=$tmp/drift.jsonl bytes wall rss
	say "generating a drift log of $n calls"
	(cd "$root" && go build -o "$tmp/driftgen" ./scripts/driftgen)
	"$tmp/driftgen" -calls "$n" -seed 1 -client >"$log"
	bytes=$(wc -c <"$log")
	busy
	measure "drift, $n calls" "idemkey drift --json" "$runs" 0 "$bytes" "$n" \
		"$(q "$IK") drift --json $(q "$log") > /dev/null; test \$? -le 1"
	wall=$(printf '%s\n' "${rows[-1]}" | cut -f3)
	rss=$(printf '%s\n' "${rows[-1]}" | cut -f6)
	if awk -v w="$wall" -v r="$rss" 'BEGIN { exit !(w > 10 || r > 1024 * 1024) }'; then
		say "drift: over the target (10 s, 1 GB): ${wall} s, $((rss / 1024)) MiB"
	fi
}
[[ ${NO_DRIFT:-} == 1 ]] || bench_drift

# ---- report ----
mkdir -p "$tmp/ledger"
bench_ledger "$tmp/ledger" "$IK" >"$tmp/ledger.md"
{
	echo
	echo "Machine: $(nproc) cores, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo unknown CPU);" \
		"$(go version | awk '{ print $3 }'), node $( ((use_node)) && node --version || echo -), $( ((use_jq)) && jq --version || echo jq -)"
	echo "Inputs: $big_bytes-byte mixed document (also minified, and as {\"items\":[…]}), $call_bytes-byte call, $CALLS calls in $calls_bytes bytes (scripts/gendoc, seed 1)"
	echo
	echo "| input | command | median wall | CPU (user+sys) | throughput | peak RSS | RSS / input | idemkey vs this |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
	printf '%s\n' "${rows[@]}" | awk -F'\t' '
		function dur(t) { return t < 0.1 ? sprintf("%.1f ms", t * 1000) : sprintf("%.2f s", t) }
		$2 ~ /^idemkey key/ { base[$1] = $3 }
		{
			cmd = $2
			gsub(/\|/, "\\|", cmd)
			tp = $7 > 1 ? sprintf("%.0f keys/s", $7 / $3) : $7 == 1 ? sprintf("%.1f MB/s", $5 / $3 / 1e6) : "—"
			ratio = $5 >= 1048576 ? sprintf("%.1f×", $6 * 1024 / $5) : "—"
			rel = $2 ~ /^idemkey canon/ ? sprintf("key takes %.2f× as long", base[$1] / $3) : $2 ~ /^idemkey/ ? "—" : $2 ~ /ceiling/ ? sprintf("at %.0f%% of it", 100 * $3 / base[$1]) : $2 ~ /floor/ ? sprintf("takes %.2f× as long", base[$1] / $3) : sprintf("%.1f× faster", $3 / base[$1])
			printf "| %s | `%s` | %s | %s | %s | %.1f MiB | %s | %s |\n", $1, cmd, dur($3), dur($4), tp, $6 / 1024, ratio, rel
		}'
}
cat "$tmp/small.md" "$tmp/ledger.md"
# ---- start-up: what each linked library costs the small call ----
# scripts/bench_init.sh prints its own table (instructions in package
# initialisation, page faults, wall in turns); INIT=0 skips it.
if [[ ${INIT:-1} != 0 ]]; then
	RUNS=$SMALL_RUNS bash "$root/scripts/bench_init.sh" || failed=1
fi
# ---- fleet: shared ledgers on PostgreSQL and Redis ----
# scripts/bench_fleet.sh starts its own servers on loopback and prints its
# own table: idemkey run's overhead per step against the bare command, a
# replay, 16 workers' throughput on distinct keys, 64 workers on one key.
# FLEET=0 skips it; STEPS and DISTINCT size it; --fleet-only runs just it.
if [[ ${FLEET:-1} != 0 ]]; then
	bash "$root/scripts/bench_fleet.sh" || failed=1
fi

# ---- mcp: the proxy's targets ----
# derive/mcp's benchmarks, medians of round trips in one run, through a
# pipe to an in-process server, direct and through idemkey: a recorded
# write (its claim made durable before it is sent; the completion is not
# waited for on SQLite, see ledger.LazySwapper) within +1 ms of direct, a
# pass-through within +0.2 ms, a replay within 0.3 ms, and the live heap
# flat over 100,000 calls (the benchmark fails if it grows). MCP=0 skips
# it.
if [[ ${MCP:-1} != 0 ]]; then
	say "idemkey mcp (targets: write <= direct + 1 ms, pass-through <= direct + 0.2 ms, replay <= 0.3 ms, heap flat)"
	(cd "$root" && go test -run '^$' -bench 'BenchmarkPassThrough|BenchmarkReplay|BenchmarkFirstWrite' -benchtime 2000x ./derive/mcp &&
		go test -run '^$' -bench 'BenchmarkMemory100k' -benchtime 1x ./derive/mcp) |
		awk '/^Benchmark/ { sub(/-[0-9]+$/, "", $1); line = "| " $1; for (i = 5; i < NF; i += 2) line = line " | " $i " " $(i + 1); print line " |" }' || failed=1
fi

if ((failed)); then
	say "FAILED: idemkey and the reference harness disagree, or a fleet measurement failed (see above)"
	exit 1
fi
