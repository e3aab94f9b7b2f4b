#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes torch-tb-profiler's own operator view tables of one Kineto trace as JSON.

Not a test dependency: it needs the real plugin, which CI does not install. Its output is
committed as tests/data/kineto/<trace>.tb_operators.json and tests/integ/test_operator_view.py
compares the daemon's /operators/view with it. Made with (tests/data/README.md):

    /work/tbvenv/bin/python tests/analyse/tb_profiler_operators.py TRACE.json.gz > OUT.json

It runs exactly what the plugin's operator view runs: RunProfileData.parse() (the trace read,
EventParser's op trees per thread, runtimes attached to operators by external id and kernels to
runtimes by correlation, ModuleAggregator), then the four calls of RunGenerator.generate_run_profile() that make
the four tables the view serves (its JSON answers): grouped by operator name, by name + input
shape, and the call-stack drill-downs of each (keyed as the plugin keys them: name, or
name###input_shape). Durations are the plugin's: microseconds rounded to integers.

--map main: the plugin's category map as kineto's main-branch tb_plugin has it, which also
reads the current runtime categories (cuda_runtime, xpu_runtime, mtia_runtime,
privateuse1_runtime, glow_runtime) as Runtime. 0.4.3 knows only the 2021 cat "Runtime", so on a
current trace it links no kernel to an operator and its device columns are all 0
(docs/ANALYSIS.md, "tb-profiler's operator view"). Nothing else is changed.
"""
import json
import sys
import tempfile

from importlib.metadata import version

from torch_tb_profiler.profiler import trace
from torch_tb_profiler.profiler.data import RunProfileData
from torch_tb_profiler.profiler.run_generator import RunGenerator


def main():
    args = sys.argv[1:]
    main_map = args[:2] == ["--map", "main"]
    if main_map:
        args = args[2:]
        for cat in ("cuda_runtime", "xpu_runtime", "mtia_runtime", "privateuse1_runtime",
                    "glow_runtime"):
            trace.EventTypeMap[cat] = trace.EventTypes.RUNTIME
    path = args[0]
    with tempfile.TemporaryDirectory() as cache:
        data = RunProfileData.parse("worker0", None, path, cache)
    # The four calls generate_run_profile() makes for the operator view (the overview it makes
    # first divides by a step's total, which is 0 for a step of this trace under --map main).
    gen = RunGenerator("worker0", None, data)
    doc = {
        "producer": "torch-tb-profiler %s, RunGenerator._generate_op_table*() (tests/analyse/"
                    "tb_profiler_operators.py)" % version("torch-tb-profiler"),
        "units": "us",
        "map": "main" if main_map else "0.4.3",
        "by_name": gen._generate_op_table(data.op_list_groupby_name),
        "by_name_input": gen._generate_op_table(data.op_list_groupby_name_input, True),
        "stack_by_name": gen._generate_op_table_for_stack(False),
        "stack_by_name_input": gen._generate_op_table_for_stack(True),
    }
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
