#!/usr/bin/env bash
# bench_init.sh: what each library idemkey links costs a process's start-up
# (the small call: one `idemkey key` process per tool call).
#
# scripts/minsha (read a file, SHA-256, print) is built as idemkey is, once
# alone and once for each row below with blank imports of a group of
# packages added through `go build -overlay` (nothing is written to the
# tree): the difference to minsha is what linking that group costs, its
# package initialisation and the larger binary. Then idemkey itself, built
# without the ledger drivers (-tags noledger) and as released. For each:
#
#   - instructions of one run, the median of 5 (valgrind's callgrind, when
#     installed, GODEBUG=asyncpreemptoff=1, on a copy built with its symbol
#     table): in package initialisation (--toggle-collect=runtime.doInit1;
#     most runs agree to 1%, and one in four or so is far off either way:
#     the toggle loses track where a goroutine switches stacks) and in all
#     (the runtime's idle threads spin more or less from run to run);
#   - minor page faults of one run (GNU time's %R, the median of 5);
#   - the median wall time of RUNS runs (default 100), all the binaries
#     in turns, round by round, so that the load's drift
#     falls on each alike (the figures still grow with the load).
#
# One more row calibrates: minsha that writes TOUCH (default 200) fresh
# pages at start and links nothing more, so that the cost of a page fault
# on this machine can be read off, and how much of idemkey's time over
# minsha its extra faults account for. Then, where perf can record page
# faults, where idemkey key's and a replay's faults are taken: the
# runtime's start-up, each group of packages' init, and main.
#
#   bash scripts/bench_init.sh            # the tables, in Markdown
#   RUNS=300 bash scripts/bench_init.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-100}
TOUCH=${TOUCH:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
say() { echo "bench_init: $*" >&2; }

# name|packages (blank-imported into minsha)
groups=(
	"modernc.org/sqlite (the SQLite store)|modernc.org/sqlite"
	"pgx/v5 (the PostgreSQL store)|github.com/jackc/pgx/v5 github.com/jackc/pgx/v5/pgconn"
	"go-redis/v9 (the Redis store)|github.com/redis/go-redis/v9"
	"the three drivers|modernc.org/sqlite github.com/jackc/pgx/v5 github.com/jackc/pgx/v5/pgconn github.com/redis/go-redis/v9"
	"x/text/collate (derive/conform)|golang.org/x/text/collate"
	"yaml/v3 and go-toml/v2 (settings)|go.yaml.in/yaml/v3 github.com/pelletier/go-toml/v2"
	"cobra, pflag, color (the command line)|github.com/spf13/cobra github.com/fatih/color"
	"net/http (post)|net/http"
	"idemkey's canon and derive|github.com/idemkey/idemkey/canon github.com/idemkey/idemkey/derive"
	"idemkey's derive/diff, conform, drift|github.com/idemkey/idemkey/derive/diff github.com/idemkey/idemkey/derive/conform github.com/idemkey/idemkey/derive/drift"
	"nothing linked: $TOUCH fresh pages written at start (what a page fault costs)|@touch"
)

flags=(-trimpath "-ldflags=-s -w")
cd "$root"
say "building minsha and ${#groups[@]} variants"
CGO_ENABLED=0 go build "${flags[@]}" -o "$tmp/b0" ./scripts/minsha
CGO_ENABLED=0 go build -trimpath -o "$tmp/b0.sym" ./scripts/minsha
names=("minsha (read + SHA-256: the floor)")
bins=("$tmp/b0")
for ((i = 0; i < ${#groups[@]}; i++)); do
	g=${groups[i]}
	if [[ ${g#*|} == @touch ]]; then
		# The calibration row: TOUCH anonymous pages, each faulted in by
		# one write, and nothing else linked.
		printf '%s\n' "package main" 'import "syscall"' "func init() {" \
			"	b, _ := syscall.Mmap(-1, 0, $TOUCH*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)" \
			"	for i := 0; i < len(b); i += 4096 { b[i] = 1 }" "}" >"$tmp/imports$i.go"
	else
		{
			echo "package main"
			for p in ${g#*|}; do echo "import _ \"$p\""; done
		} >"$tmp/imports$i.go"
	fi
	printf '{"Replace":{"%s":"%s"}}\n' "$root/scripts/minsha/zz_imports.go" "$tmp/imports$i.go" >"$tmp/overlay$i.json"
	CGO_ENABLED=0 go build "${flags[@]}" -overlay "$tmp/overlay$i.json" -o "$tmp/b$((i + 1))" ./scripts/minsha
	CGO_ENABLED=0 go build -trimpath -overlay "$tmp/overlay$i.json" -o "$tmp/b$((i + 1)).sym" ./scripts/minsha
	names+=("minsha + ${g%%|*}")
	bins+=("$tmp/b$((i + 1))")
done
for t in noledger idemkey; do
	tags=()
	[[ $t == noledger ]] && tags=(-tags noledger)
	CGO_ENABLED=0 go build "${flags[@]}" "${tags[@]}" -o "$tmp/$t" .
	CGO_ENABLED=0 go build -trimpath "${tags[@]}" -o "$tmp/$t.sym" .
done
names+=("idemkey key, -tags noledger" "idemkey key")
bins+=("$tmp/noledger" "$tmp/idemkey")
go build -o "$tmp/gendoc" ./scripts/gendoc
"$tmp/gendoc" -kind call -o "$tmp/call.json"

cmdline() { # cmdline I [SUFFIX]: the command of binary I (with SUFFIX: its copy) on the 400-byte call
	if [[ ${bins[$1]} == */noledger || ${bins[$1]} == */idemkey ]]; then
		echo "${bins[$1]}${2:-} key --task T --tool X $tmp/call.json"
	else
		echo "${bins[$1]}${2:-} $tmp/call.json"
	fi
}
callgrind() { # callgrind I [OPTION]: the median instruction count of 5 runs of binary I's copy
	local r i=$1
	shift
	for ((r = 0; r < 5; r++)); do
		# shellcheck disable=SC2046
		GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind "$@" --callgrind-out-file=/dev/null $(cmdline "$i" .sym) 2>&1 >/dev/null |
			awk '/Collected/ { print $NF }' || true
	done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

n=${#bins[@]}
declare -a ir init faults
for ((i = 0; i < n; i++)); do
	ir[i]=- init[i]=-
	if command -v valgrind >/dev/null; then
		ir[i]=$(callgrind "$i")
		init[i]=$(callgrind "$i" --toggle-collect=runtime.doInit1)
	fi
	for ((r = 0; r < 5; r++)); do
		# shellcheck disable=SC2046
		/usr/bin/time -f '%R' -o "$tmp/f" $(cmdline "$i") >/dev/null
		tail -1 "$tmp/f"
	done | sort -n | awk 'NR == 3' >"$tmp/fm"
	faults[i]=$(cat "$tmp/fm")
done

say "timing in turns ($RUNS rounds, load $(cut -d' ' -f1-3 /proc/loadavg))"
# One line per run of each binary: its start and end (bash's clock, in
# microseconds).
for ((i = 0; i < n; i++)); do : >"$tmp/w$i"; done
for ((r = 0; r < RUNS; r++)); do
	for ((i = 0; i < n; i++)); do
		t0=$EPOCHREALTIME
		# shellcheck disable=SC2046
		$(cmdline "$i") >/dev/null
		t1=$EPOCHREALTIME
		echo "$t0 $t1" >>"$tmp/w$i"
	done
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
median() { awk '{ printf "%.6f\n", $2 - $1 }' "$1" | sort -g | awk '{ w[NR] = $1 } END { print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2 }'; }

echo
echo "| process (one 400-byte call; $RUNS rounds in turns, load average $load) | instructions in package init | instructions in all | minor page faults | median wall | vs minsha |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
base_w=$(median "$tmp/w0")
base_ir=${ir[0]} base_init=${init[0]}
for ((i = 0; i < n; i++)); do
	w=$(median "$tmp/w$i")
	awk -v name="${names[i]}" -v ir="${ir[i]}" -v bir="$base_ir" -v ini="${init[i]}" -v bini="$base_init" -v f="${faults[i]}" -v bf="${faults[0]}" -v w="$w" -v bw="$base_w" -v i="$i" 'BEGIN {
		irs = ir == "-" ? "-" : (i == 0 ? sprintf("%.2f M", ir / 1e6) : sprintf("%.2f M (%+.2f)", ir / 1e6, (ir - bir) / 1e6))
		ins = ini == "-" ? "-" : (i == 0 ? sprintf("%.3f M", ini / 1e6) : sprintf("%.3f M (%+.3f)", ini / 1e6, (ini - bini) / 1e6))
		fs = i == 0 ? f : sprintf("%d (%+d)", f, f - bf)
		printf "| %s | %s | %s | %s | %.2f ms | %.2f× |\n", name, ins, irs, fs, w * 1000, w / bw
	}'
done

# What a page fault costs here, from the calibration row, and how much of
# idemkey's time over minsha its extra faults account for. On a machine
# that traps to a hypervisor for each fault this is most of a small call.
for ((i = 0; i < n; i++)); do [[ ${names[i]} == *"fresh pages"* ]] && ti=$i; done
awk -v tw="$(median "$tmp/w$ti")" -v tf="${faults[ti]}" -v bw="$base_w" -v bf="${faults[0]}" \
	-v kw="$(median "$tmp/w$((n - 1))")" -v kf="${faults[n - 1]}" 'BEGIN {
	c = (tw - bw) / (tf - bf)
	printf "\nA page fault costs about %.1f µs here (the calibration row: %+d faults, %+.2f ms). idemkey key has %+d faults over minsha: at that cost %.2f ms of its %+.2f ms (%.0f%%).\n",
		c * 1e6, tf - bf, (tw - bw) * 1000, kf - bf, (kf - bf) * c * 1000, (kw - bw) * 1000, 100 * (kf - bf) * c / (kw - bw)
}'

# Where idemkey key's page faults are taken, by phase and by module
# (perf record -e page-faults, each fault with its call stack; needs perf).
# A package's init is the frame under runtime.doInit1 (or any X.init
# frame); main is cmd.Run; the runtime's start-up is what runs from
# rt0_go before the first init.
faults_by_phase() { # faults_by_phase COMMAND...
	perf record -q -g -e page-faults -c 1 -o "$tmp/pf.data" "$@" >/dev/null 2>&1 || return 1
	perf script -i "$tmp/pf.data" 2>/dev/null | awk '
		function group(p) {
			if (p ~ /^github\.com\/idemkey\//) return "idemkey'"'"'s own packages"
			if (p ~ /^modernc\.org\/|^github\.com\/dustin\/go-humanize|^github\.com\/google\/uuid|^github\.com\/ncruces\//) return "modernc.org/sqlite, its libc and their dependencies"
			if (p ~ /^github\.com\/jackc\//) return "pgx"
			if (p ~ /^github\.com\/redis\//) return "go-redis"
			if (p ~ /^golang\.org\/x\/text\//) return "golang.org/x/text (pgx'"'"'s SASLprep)"
			if (p ~ /^go\.yaml\.in\/|^github\.com\/pelletier\//) return "yaml/v3 and go-toml (settings)"
			if (p ~ /^github\.com\/spf13\/|^github\.com\/fatih\/|^github\.com\/mattn\//) return "cobra, pflag, color"
			if (p ~ /^golang\.org\/x\//) return "golang.org/x/sys, x/crypto, x/net"
			return "the standard library"
		}
		function flush(   i, s, p, kind) {
			if (nf == 0) return
			kind = ""
			for (i = 1; i <= nf; i++) {
				s = fr[i]
				if (s ~ /\.init(\.[0-9]+)?$/ && s !~ /^runtime\./) {
					p = s; sub(/\.init(\.[0-9]+)?$/, "", p)
					kind = "package init: " group(p)
				}
			}
			if (kind == "") for (i = 1; i <= nf; i++) if (fr[i] ~ /idemkey\/cmd\.Run$/) kind = "main: idemkey'"'"'s command (cobra, settings, the work)"
			if (kind ~ /^main/) for (i = 1; i <= nf; i++) if (fr[i] ~ /^modernc\.org\//) kind = "main: SQLite (opening the ledger, reading the record)"
			if (kind == "") kind = fr[nf] == "runtime.rt0_go.abi0" ? "runtime start-up (schedinit: heap, itabs, modules, environment)" : "runtime: goroutines, stacks, threads"
			n[kind]++; total++; nf = 0
		}
		/^[^ \t]/ { flush(); next }
		/^$/ { flush(); next }
		{ s = $2; sub(/\+0x[0-9a-f]+$/, "", s); fr[++nf] = s }
		END {
			flush()
			for (k in n) printf "%d\t%s\n", n[k], k
			printf "%d\ttotal\n", total
		}' | sort -t$'\t' -k1,1nr
}
if command -v perf >/dev/null && perf record -q -e page-faults -o "$tmp/probe.data" true >/dev/null 2>&1; then
	led=$tmp/ledger
	mkdir -p "$led"
	IDEMKEY_LEDGER=$led/ledger.db "$tmp/idemkey.sym" run --task T --tool X -- true >/dev/null 2>&1
	faults_by_phase "$tmp/idemkey.sym" key --task T --tool X "$tmp/call.json" >"$tmp/pk" || true
	IDEMKEY_LEDGER=$led/ledger.db faults_by_phase "$tmp/idemkey.sym" run -q --task T --tool X -- true >"$tmp/pr" || true
	echo
	echo "| where the page faults are taken (perf, one run) | idemkey key | a replay (run on SQLite) |"
	echo "| --- | ---: | ---: |"
	awk -F'\t' 'FNR == NR { k[$2] = $1; order[++m] = $2; next } { r[$2] = $1; if (!($2 in k)) order[++m] = $2 }
		END { for (i = 1; i <= m; i++) if (order[i] != "total") printf "| %s | %d | %d |\n", order[i], k[order[i]], r[order[i]]
			printf "| all | %d | %d |\n", k["total"], r["total"] }' "$tmp/pk" "$tmp/pr"
else
	say "perf cannot record page faults here: no table of where they are taken"
fi
