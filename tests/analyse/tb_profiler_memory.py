#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes torch-tb-profiler's own memory view of one Kineto trace as JSON.

Not a test dependency: it needs the real plugin, which CI does not install. Its output is
committed as tests/data/kineto/<dir>/<trace>.tb_memory.json and tests/integ/test_memory.py
compares the daemon's /memory with it. Made with (tests/data/README.md):

    python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install torch-tb-profiler==0.4.3
    /tmp/tbvenv/bin/python tests/analyse/tb_profiler_memory.py TRACE.json.gz > OUT.json

It runs what the plugin's memory view runs: RunProfileData.parse() (which builds the operator
trees and MemoryParser.find_memory_nodes()), RunGenerator.generate_run_profile(), then the
view's own RunProfile.get_memory_stats() and get_memory_curve(), in bytes and microseconds so
nothing is rounded away (the page shows KB). Printed per device (the plugin's names: CPU, GPU0):

- "stats": the operator table, the plugin's rows unchanged: [name, calls, size increase, self
  size increase, allocation count, self allocation count, allocation size, self allocation size];
- "curve": the curve's points [time since the profiler's first event (us), allocated, reserved]
  (not patched into a step plot; lttb_sample() keeps every point below 10240);
- "peak": MemorySnapshot.get_peak_memory(), the largest Total Allocated, and "peak_ts_us", the
  time (us since the first event) of the first point of the curve holding it.
"""
import json
import sys
import tempfile

from importlib.metadata import version

from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.run_generator import RunGenerator


def main():
    path = sys.argv[1]
    with tempfile.TemporaryDirectory() as cache:
        data = RunProfileData.parse("worker0", None, path, cache)
    run = RunGenerator("worker0", None, data).generate_run_profile()
    stats = run.get_memory_stats(memory_metric="B")
    curve = run.get_memory_curve(time_metric="us", memory_metric="B", patch_for_step_plot=False)
    peaks = run.memory_snapshot.get_peak_memory()
    devices = {}
    for (dtype, did), peak in sorted(peaks.items(), key=lambda kv: (int(kv[0][0]), kv[0][1])):
        name = "CPU" if int(dtype) == 0 else "GPU%d" % did
        points = curve["rows"].get(name, [])
        at = next((p[0] for p in points if p[1] == peak), None)
        devices[name] = {"peak": peak, "peak_ts_us": at, "curve": points,
                         "stats": stats["rows"].get(name, [])}
    doc = {
        "producer": "torch-tb-profiler %s, RunProfile.get_memory_stats()/get_memory_curve() "
                    "(tests/analyse/tb_profiler_memory.py)" % version("torch-tb-profiler"),
        "units": {"bytes": "B", "time": "us since the profiler's first event"},
        "first_ts_us": run.profiler_start_ts,
        "stats_columns": [c["name"] for c in stats["columns"]],
        "devices": devices,
    }
    json.dump(doc, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
