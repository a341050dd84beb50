# json.dumps with sort_keys and compact separators, but ensure_ascii left True.
import json
from _serve import serve
serve(lambda task, tool, args: json.dumps([task, tool, args], sort_keys=True, separators=(",", ":")))
