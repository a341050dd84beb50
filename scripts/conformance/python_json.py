"""Python's json.dumps as an implementation under test for `idemkey conform`:

    idemkey conform -- python3 scripts/conformance/python_json.py
    idemkey conform --output canonical -- python3 scripts/conformance/python_json.py canonical

One request a line on stdin, {"id","task","tool","args_text"} (the arguments'
exact text, parsed with json.loads); one answer a line on
stdout: the key (or the canonical text), or an empty line for a call it rejects.
"""
import hashlib
import json
import sys

sys.stdin.reconfigure(encoding="utf-8")
sys.stdout.reconfigure(encoding="utf-8")
output = sys.argv[1] if len(sys.argv) > 1 else "key"

for line in sys.stdin:
    try:
        call = json.loads(line)
        args = json.loads(call["args_text"])
        text = json.dumps([call["task"], call["tool"], args],
                          sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        data = text.encode("utf-8")  # fails on a lone surrogate
        answer = text if output == "canonical" else hashlib.sha256(data).hexdigest()
    except Exception:  # rejected: an empty line
        answer = ""
    print(answer, flush=True)
