# Numbers as Java's Double.toString writes them (1.0, 1.0E21, 1.0E-7, 0.001), as a
# Java harness on Jackson's DoubleNode would; integers exact (long, BigInteger).
import json
import math
from decimal import Decimal
from _serve import Raw, serve, write

def java(s):
    f = float(s)
    if math.isinf(f):
        raise ValueError(s)
    if f == 0:
        return Raw("-0.0" if math.copysign(1, f) < 0 else "0.0")
    sign, digits, exp = Decimal(repr(f)).normalize().as_tuple()
    ds = "".join(map(str, digits))
    point = len(ds) + exp  # the value is 0.ds × 10^point
    if 1e-3 <= abs(f) < 1e7:
        if point <= 0:
            t = "0." + "0" * -point + ds
        elif point >= len(ds):
            t = ds + "0" * (point - len(ds)) + ".0"
        else:
            t = ds[:point] + "." + ds[point:]
    else:
        t = ds[0] + "." + (ds[1:] or "0") + "E" + str(point - 1)
    return Raw("-" * sign + t)

serve(lambda task, tool, args: write([task, tool, args]),
      decode=lambda line: json.loads(line, parse_float=java))
