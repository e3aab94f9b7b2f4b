#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes torch-tb-profiler's own overview step-time breakdown of one Kineto trace as JSON.

Not a test dependency: it needs the real plugin, which CI does not install. Its output is
committed as tests/data/kineto/<trace>.tb_profiler.json and tests/integ/test_live_breakdown.py
compares the daemon's /breakdown with it. Made with (tests/data/README.md):

    python3 -m venv /tmp/tbvenv && /tmp/tbvenv/bin/pip install torch-tb-profiler==0.4.3
    /tmp/tbvenv/bin/python tests/analyse/tb_profiler_steps.py TRACE.json.gz > OUT.json

It runs exactly what the plugin's overview runs, RunProfileData.parse() (the trace read and
EventParser/StepParser/OverallParser), and prints per step the plugin's step name (steps_names)
and its costs (steps_costs) in the plugin's units, microseconds as Python floats, unrounded, as
the overview's step table gets them; plus its average (avg_costs; the overview shows the
average total rounded to the microsecond) and the role ranges' presence flags that decide which
columns the overview shows.
"""
import json
import sys
import tempfile

from importlib.metadata import version

from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.event_parser import ProfileRole

COLUMNS = [("kernel", ProfileRole.Kernel), ("memcpy", ProfileRole.Memcpy),
           ("memset", ProfileRole.Memset), ("communication", ProfileRole.Communication),
           ("runtime", ProfileRole.Runtime), ("dataloader", ProfileRole.DataLoader),
           ("cpu_exec", ProfileRole.CpuOp), ("other", ProfileRole.Other),
           ("total", ProfileRole.Total)]


def costs(c):
    return {k: c.costs[role] for k, role in COLUMNS}


def main():
    path = sys.argv[1]
    with tempfile.TemporaryDirectory() as cache:
        data = RunProfileData.parse("worker0", None, path, cache)
    doc = {
        "producer": "torch-tb-profiler %s, RunProfileData.parse() (tests/analyse/"
                    "tb_profiler_steps.py)" % version("torch-tb-profiler"),
        "units": "us",
        "has_runtime": data.has_runtime,
        "has_kernel": data.has_kernel,
        "has_communication": data.has_communication,
        "steps": [dict(step=name, **costs(c))
                  for name, c in zip(data.steps_names, data.steps_costs)],
        "average": costs(data.avg_costs),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
