#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a 1 M-span Kineto trace for timing the /gpu/* routes (docs/PERFORMANCE.md): 15 copies of
tests/data/kineto/gpu_5steps_rank0.json.gz one after another, each shifted past the previous one
in time, its correlation, External id and flow ids moved by 10 M and its ProfilerStep#N
renumbered, so that the copies are distinct events (stepscope import adds an identical file
only once) and HTA and stepscope read one 75-step rank.

    python3 tests/bench/gpu_big_trace.py OUT.json.gz
"""
import gzip
import json
import pathlib
import re
import sys

COPIES = 15
SRC = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "gpu_5steps_rank0.json.gz"


def main(out):
    d = json.load(gzip.open(SRC))
    ev = d["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    shift = max(e["ts"] + e.get("dur", 0) for e in xs) - min(e["ts"] for e in xs) + 1000
    res = []
    for k in range(COPIES):
        for e in ev:
            if e.get("ph") == "M":
                if k == 0:
                    res.append(e)
                continue
            e = dict(e)
            if "ts" in e:
                e["ts"] += k * shift
            if e.get("args"):
                e["args"] = dict(e["args"])
                for key in ("correlation", "External id"):
                    if isinstance(e["args"].get(key), int):
                        e["args"][key] += k * 10_000_000
            if isinstance(e.get("id"), int):
                e["id"] += k * 10_000_000
            m = re.match(r"ProfilerStep#(\d+)$", e.get("name", ""))
            if m:
                e["name"] = "ProfilerStep#%d" % (int(m.group(1)) + 5 * k)
            res.append(e)
    d["traceEvents"] = res
    with gzip.open(out, "wt", compresslevel=1) as f:
        json.dump(d, f)
    print(f"{out}: {sum(1 for e in res if e.get('ph') == 'X')} spans")


if __name__ == "__main__":
    main(sys.argv[1])
