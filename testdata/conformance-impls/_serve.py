"""The protocol of `idemkey conform` for the Python implementations here:
one request a line on stdin ({"id","task","tool","args_text"}: the arguments'
exact text), one answer a line on stdout (the key, or with
the argument "canonical" the text; an empty line for a rejection).
serve(canonical) takes a function of (task, tool, args) returning the text;
decode, when given, parses the arguments' text instead of json.loads."""
import hashlib
import json
import sys


def serve(canonical, decode=json.loads):
    sys.stdin.reconfigure(encoding="utf-8", errors="surrogatepass")
    sys.stdout.reconfigure(encoding="utf-8")
    output = sys.argv[1] if len(sys.argv) > 1 else "key"
    for line in sys.stdin:
        try:
            call = json.loads(line)
            text = canonical(call["task"], call["tool"], decode(call["args_text"]))
            data = text.encode("utf-8")  # fails on a lone surrogate
            answer = text if output == "canonical" else hashlib.sha256(data).hexdigest()
        except Exception:
            answer = ""
        print(answer, flush=True)


class Raw:
    """A number already written, for write."""

    def __init__(self, s):
        self.s = s


def write(x, names=sorted):
    """The compact JSON text of x, names in the order names(obj) gives
    (code points: Python's sort), strings as json.dumps(ensure_ascii=False)
    writes them, Raw numbers as they are (for implementations with their
    own number formatting: json.loads(line, parse_float=lambda s: Raw(…)))."""
    if isinstance(x, dict):
        parts = []
        for k in names(x):
            parts.append(write(k) + ":" + write(x[k], names))
        return "{" + ",".join(parts) + "}"
    if isinstance(x, list):
        parts = []
        for e in x:
            parts.append(write(e, names))
        return "[" + ",".join(parts) + "]"
    if isinstance(x, Raw):
        return x.s
    return json.dumps(x, ensure_ascii=False)
