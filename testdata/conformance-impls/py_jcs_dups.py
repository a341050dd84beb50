# An RFC 8785 implementation in Python: names sorted by UTF-16 code units,
# numbers as ECMAScript writes them, lone surrogates rejected; but json.loads
# keeps the last of repeated names instead of rejecting them.
import json
import math
from decimal import Decimal
from _serve import Raw, serve, write

def es(s):
    f = float(s)
    if math.isinf(f):
        raise ValueError(s)
    if f == 0:
        return "0"
    sign, digits, exp = Decimal(repr(f)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    k, n = len(ds), len(ds) + exp
    t = (ds + "0" * (n - k) if k <= n <= 21 else ds[:n] + "." + ds[n:] if 0 < n <= 21
         else "0." + "0" * -n + ds if -6 < n <= 0
         else ds[0] + ("." + ds[1:] if k > 1 else "") + "e" + ("+" if n > 0 else "-") + str(abs(n - 1)))
    return "-" * sign + t

utf16 = lambda obj: sorted(obj, key=lambda k: k.encode("utf-16-be", "surrogatepass"))

num = lambda s: Raw(es(s))
serve(lambda task, tool, args: write([task, tool, args], utf16),
      decode=lambda line: json.loads(line, parse_float=num, parse_int=num, parse_constant=float))
