#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes torch-tb-profiler's own module view of one Kineto trace as JSON.

Not a test dependency: it needs the real plugin, which CI does not install. Its output is
committed beside the trace (tests/data/kineto/cuda_views_h200/trace_a.tb_modules*.json) and
tests/integ/test_tree.py compares the daemon's /tree?kind=module with it. Made with
(tests/data/README.md):

    python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install torch-tb-profiler==0.4.3
    /tmp/tbvenv/bin/python tests/analyse/tb_profiler_modules.py TRACE.json.gz > OUT.json
    /tmp/tbvenv/bin/python tests/analyse/tb_profiler_modules.py --runtime-cat cuda_runtime \\
        TRACE.json.gz > OUT_runtime.json

It runs exactly what the plugin's module view runs: RunProfileData.parse() (the trace read,
EventParser and OpTreeBuilder: its operator tree per thread) and module_op.aggegate_module_view()
on its tree and events, and prints the plugin's Stats tree unchanged (times in the plugin's
microseconds, unrounded floats).

--runtime-cat CAT: the plugin (0.4.3) knows the runtime category only as "Runtime"; torch 2.x
writes "cuda_runtime", so on its traces the plugin links no kernel to an operator and every
module's device time is 0. With this option the script hands the plugin a copy of the trace in
which category CAT reads "Runtime" (nothing else changed), so its own code links the kernels.
"""
import argparse
import gzip
import json
import os
import sys
import tempfile

from importlib.metadata import version

from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.module_op import aggegate_module_view


def stats(s):
    return {"name": s.name, "id": s.id, "occurences": s.occurences, "operators": s.operators,
            "host_duration": s.host_duration, "self_host_duration": s.self_host_duration,
            "device_duration": s.device_duration,
            "self_device_duration": s.self_device_duration, "avg_duration": s.avg_duration,
            "children": [stats(c) for c in s.children]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime-cat")
    ap.add_argument("trace")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.trace
        if args.runtime_cat:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as f:
                doc = json.load(f)
            events = doc["traceEvents"] if isinstance(doc, dict) else doc
            for e in events:
                if isinstance(e, dict) and e.get("cat") == args.runtime_cat:
                    e["cat"] = "Runtime"
            path = os.path.join(tmp, "trace.json")
            with open(path, "w") as f:
                json.dump(doc, f)
        data = RunProfileData.parse("worker0", None, path, os.path.join(tmp, "cache"))
        view = aggegate_module_view(data.tid2tree, data.events)
    producer = "torch-tb-profiler %s, module_op.aggegate_module_view() (tests/analyse/" \
               "tb_profiler_modules.py%s)" % (version("torch-tb-profiler"),
                                              " --runtime-cat " + args.runtime_cat
                                              if args.runtime_cat else "")
    json.dump({"producer": producer, "units": "us",
               "modules": [stats(s) for s in view] if view else None}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
