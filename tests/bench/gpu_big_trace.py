#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a 1 M-span Kineto trace for timing the issue 17 routes (docs/PERFORMANCE.md): 15 copies of
tests/data/kineto/gpu_5steps_rank0.json.gz one after another, each shifted past the previous one
in time, its correlation, External id and flow ids moved by 10 M and its ProfilerStep#N
renumbered, so that the copies are distinct events (stepscope import adds an identical file
only once) and HTA and stepscope read one 75-step rank.

--memory K: also an allocation at the start and a free at the end of every Kth cpu_op (Kineto's
[memory] instant events, with running Total Allocated / Total Reserved), so that /memory has
operators to charge. --exp: the experiment side of a diff: every kernel's duration 5 % longer, and
the kernels of the most frequent kernel name renamed (that name removed, "<name>_exp" added).
Without options the file is what it always was.

    python3 tests/bench/gpu_big_trace.py OUT.json.gz [--copies 15] [--memory 8] [--exp]
"""
import argparse
import collections
import gzip
import json
import pathlib
import re

SRC = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "gpu_5steps_rank0.json.gz"


def memory_events(e, allocated, size):
    """An allocation at e's start and its free at e's end, on e's thread (HTA and tb-profiler
    charge a [memory] event to the operator it falls in)."""
    def ev(ts, nbytes):
        allocated[0] += nbytes
        return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                "pid": e["pid"], "tid": e["tid"], "ts": ts,
                "args": {"Total Reserved": 1 << 30, "Total Allocated": allocated[0],
                         "Bytes": nbytes, "Device Id": 0, "Device Type": 1,
                         "Addr": 0x7F0000000000 + allocated[1]}}
    allocated[1] += 1
    return [ev(e["ts"], size), ev(e["ts"] + e.get("dur", 0), -size)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, default=15)
    ap.add_argument("--memory", type=int, default=0, metavar="K")
    ap.add_argument("--exp", action="store_true")
    args = ap.parse_args()
    d = json.load(gzip.open(SRC))
    ev = d["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    shift = max(e["ts"] + e.get("dur", 0) for e in xs) - min(e["ts"] for e in xs) + 1000
    renamed = None
    if args.exp:
        renamed = collections.Counter(e["name"] for e in xs
                                      if e.get("cat") == "kernel").most_common(1)[0][0]
    res = []
    allocated = [0, 0]
    n_ops = 0
    for k in range(args.copies):
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
            if args.exp and e.get("cat") == "kernel":
                e["dur"] = round(e["dur"] * 1.05, 3)
                if e["name"] == renamed:
                    e["name"] += "_exp"
            res.append(e)
            if args.memory and e.get("ph") == "X" and e.get("cat") == "cpu_op":
                n_ops += 1
                if n_ops % args.memory == 0:
                    res.extend(memory_events(e, allocated, 4096 * (1 + n_ops % 7)))
    d["traceEvents"] = res
    with gzip.open(args.out, "wt", compresslevel=1) as f:
        json.dump(d, f)
    print(f"{args.out}: {sum(1 for e in res if e.get('ph') == 'X')} spans, "
          f"{sum(1 for e in res if e.get('name') == '[memory]')} [memory] events")


if __name__ == "__main__":
    main()
