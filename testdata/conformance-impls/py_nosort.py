# json.dumps without sort_keys: members in the order of the input.
import json
from _serve import serve
serve(lambda task, tool, args: json.dumps([task, tool, args], separators=(",", ":"), ensure_ascii=False))
