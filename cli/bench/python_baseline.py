# SPDX-License-Identifier: MIT
"""The import benchmarks' baseline: python3 json.load of a Chrome trace (.gz too) plus a
per-operator aggregation (calls and total "dur" per "name" of every "ph" "X" event). Prints the
number of events, of operators and the costliest operator on stderr."""
import collections
import gzip
import json
import sys

with open(sys.argv[1], "rb") as f:
    raw = f.read()
doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
ops = collections.defaultdict(lambda: [0, 0.0])
for e in doc["traceEvents"]:
    if e.get("ph") == "X":
        a = ops[e["name"]]
        a[0] += 1
        a[1] += e["dur"]
top = sorted(ops.items(), key=lambda kv: -kv[1][1])[:5]
print(len(doc["traceEvents"]), len(ops), top[0][0], file=sys.stderr)
