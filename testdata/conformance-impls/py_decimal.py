# Floats normalized through Decimal: str(Decimal(repr(float(s))).normalize())
# (1E+2 for 100.0, 1E-7, 0.00001); integers exact, as Python's int.
import json
from decimal import Decimal
from _serve import Raw, serve, write

num = lambda s: Raw(str(Decimal(repr(float(s))).normalize()))
serve(lambda task, tool, args: write([task, tool, args]),
      decode=lambda line: json.loads(line, parse_float=num))
