#!/usr/bin/env bash
# bench_post.sh: the overhead of 'idemkey post' per request against curl,
# both sending the same body with the same key to a loopback server (a tiny
# node http server started here on 127.0.0.1, one fresh process and
# connection per request, as a shell step makes them).
#
# Usage: scripts/bench_post.sh [RUNS]      (default 300)
# Uses hyperfine when present (medians from its JSON export); otherwise a
# bash loop timed with date +%s%N. Prints a Markdown table of medians.
set -euo pipefail

runs=${1:-300}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server_pid=
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

command -v curl >/dev/null || { echo "bench_post: curl not found" >&2; exit 2; }
command -v node >/dev/null || { echo "bench_post: node not found" >&2; exit 2; }

(cd "$repo" && go build -trimpath -o "$work/idemkey" .)
idemkey=$work/idemkey

# A half-KiB tool call, members out of order as an agent would send them.
cat >"$work/args.json" <<'EOF'
{"repo":"acme/payments","title":"Fix rounding in invoice totals","head":"fix/rounding","base":"main",
 "body":"Invoice totals were rounded per line instead of per invoice. This change sums exact amounts and rounds once, matching the ledger. Tests cover the 0.005 boundary and multi-currency invoices.",
 "labels":["bug","billing","needs-review"],"draft":false,"reviewers":["alice","bob"],
 "meta":{"task":"t-42","attempt":1,"amount":1234.5,"currency":"EUR","lines":[{"sku":"A-1","qty":3,"price":10.25},{"sku":"B-7","qty":1,"price":99.99}]}}
EOF

# The loopback server: reads the body, answers 201 with a small JSON.
cat >"$work/server.js" <<'EOF'
const http = require('http');
const srv = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = '{"ok":true,"key":"' + (req.headers['idempotency-key'] || '') + '"}\n';
    res.writeHead(201, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)});
    res.end(body);
  });
});
srv.listen(0, '127.0.0.1', () => console.log(srv.address().port));
EOF
node "$work/server.js" >"$work/port" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")
url="http://127.0.0.1:$port/v1/pulls"

key=$("$idemkey" key --task t-42 --tool open_pull_request "$work/args.json")
"$idemkey" canon "$work/args.json" | tr -d '\n' >"$work/canonical.json"

# Sanity: both reach the server and get the same answer.
a=$(curl -sS -X POST -H 'Content-Type: application/json' -H "Idempotency-Key: $key" --data-binary @"$work/canonical.json" "$url")
b=$("$idemkey" post "$url" --task t-42 --tool open_pull_request -d @"$work/args.json" -sS)
[ "$a" = "$b" ] || { echo "bench_post: curl and idemkey got different answers: $a / $b" >&2; exit 1; }

names=("curl (precomputed key)" "idemkey post" "idemkey post --dry-run (no network)" "idemkey key (derive only)")
cmds=(
	"curl -sS -o /dev/null -X POST -H Content-Type:application/json -H Idempotency-Key:$key --data-binary @$work/canonical.json $url"
	"$idemkey post $url --task t-42 --tool open_pull_request -d @$work/args.json -sS -o /dev/null"
	"$idemkey post $url --task t-42 --tool open_pull_request -d @$work/args.json --dry-run -o /dev/null"
	"$idemkey key --task t-42 --tool open_pull_request $work/args.json"
)

medians=()
if command -v hyperfine >/dev/null; then
	tool="hyperfine $(hyperfine --version | awk '{print $2}'), $runs runs each, -N"
	for i in "${!cmds[@]}"; do
		hyperfine -N --warmup 20 --runs "$runs" --style none --export-json "$work/h$i.json" \
			"${cmds[$i]}" >/dev/null 2>&1
		medians+=("$(node -e 'const r=require(process.argv[1]).results[0]; console.log((r.median*1e3).toFixed(3))' "$work/h$i.json")")
	done
else
	tool="bash loop with date +%s%N, $runs runs each"
	for i in "${!cmds[@]}"; do
		read -r -a argv <<<"${cmds[$i]}"
		for _ in $(seq 20); do "${argv[@]}" >/dev/null; done
		: >"$work/t$i"
		for _ in $(seq "$runs"); do
			s=$(date +%s%N)
			"${argv[@]}" >/dev/null
			echo $(($(date +%s%N) - s)) >>"$work/t$i"
		done
		medians+=("$(sort -n "$work/t$i" | awk '{a[NR]=$1} END {m = NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.3f", m/1e6}')")
	done
fi

echo "idemkey post vs curl, loopback ($url), body $(wc -c <"$work/args.json") bytes; $tool"
echo
echo "| command | median ms/request | vs curl |"
echo "| --- | ---: | ---: |"
for i in "${!cmds[@]}"; do
	d=$(awk -v a="${medians[$i]}" -v b="${medians[0]}" 'BEGIN {printf "%+.3f ms", a-b}')
	echo "| ${names[$i]} | ${medians[$i]} | $d |"
done
