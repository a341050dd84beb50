#!/bin/sh
# jq -cS (jq 1.6) as the canonicalization, run once per case:
#   idemkey conform --per-case -- sh jq_case.sh {task} {tool} {file} [canonical]
# Nothing printed for a call jq rejects.
text=$(jq -cS --arg task "$1" --arg tool "$2" '[$task, $tool, .]' "$3" 2>/dev/null) || exit 0
if [ "$4" = canonical ]; then
	printf '%s\n' "$text"
else
	printf '%s' "$text" | sha256sum | cut -c1-64
fi
