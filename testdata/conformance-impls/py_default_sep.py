# json.dumps(sort_keys=True, ensure_ascii=False) with the default separators (", " and ": ").
import json
from _serve import serve
serve(lambda task, tool, args: json.dumps([task, tool, args], sort_keys=True, ensure_ascii=False))
