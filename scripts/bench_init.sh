#!/usr/bin/env bash
# bench_init.sh: what each library idemkey links costs a process's start-up
# (issue 23: the small call, one `idemkey key` process per tool call).
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
#   bash scripts/bench_init.sh            # the table, in Markdown
#   RUNS=300 bash scripts/bench_init.sh
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-100}
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
	{
		echo "package main"
		for p in ${g#*|}; do echo "import _ \"$p\""; done
	} >"$tmp/imports$i.go"
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
