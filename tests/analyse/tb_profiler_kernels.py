#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes torch-tb-profiler's own kernel view (and, for several ranks of one job, its distributed
view's communication-operator table) of Kineto traces as JSON.

Not a test dependency: it needs the real plugin, which CI does not install. Its output is
committed beside the traces as tests/data/kineto/<trace>.tb_kernels.json (one trace) or
<name>.tb_comm_ops.json (--comm, the ranks of one job), and tests/integ/test_tb_kernels.py
compares the daemon's /kernel-details and /comm-ops with it. Made with (tests/data/README.md):

    /work/tbvenv/bin/python tests/analyse/tb_profiler_kernels.py TRACE.json.gz > OUT.json
    /work/tbvenv/bin/python tests/analyse/tb_profiler_kernels.py --comm RANK0.json.gz RANK1.json.gz > OUT.json

It runs what the plugin's views run: RunProfileData.parse() and process() (the trace read, the
event tree, the kernel aggregations), then RunGenerator's own kernel table, kernel-by-operator
table and tensor-core share as the Kernel view gets them (its rounding kept); with --comm,
DistributedRunProfileData and RunLoader's alignment of the workers' communication kernels, then
DistributedRunGenerator's "Communication Operations Stats" table per worker.
"""
import json
import sys
import tempfile

from importlib.metadata import version

from torch_tb_profiler.profiler.data import DistributedRunProfileData, RunProfileData
from torch_tb_profiler.profiler.loader import RunLoader
from torch_tb_profiler.profiler.run_generator import DistributedRunGenerator, RunGenerator


def load(path, worker, cache):
    data = RunProfileData.parse(worker, None, path, cache)
    data.process()
    data.analyze()
    return data


def table(t):
    names = [c["name"] for c in t["data"]["columns"]]
    return [dict(zip(names, row)) for row in t["data"]["rows"]]


def kernels(path):
    with tempfile.TemporaryDirectory() as cache:
        data = load(path, "worker0", cache)
    gen = RunGenerator("worker0", None, data)
    return {
        "producer": "torch-tb-profiler %s, RunGenerator's kernel tables (tests/analyse/"
                    "tb_profiler_kernels.py)" % version("torch-tb-profiler"),
        "units": "us",
        "tc_used_ratio": data.tc_used_ratio,
        "has_blocks_per_sm": data.gpu_metrics_parser.has_blocks_per_sm,
        "has_occupancy": data.gpu_metrics_parser.has_occupancy,
        "kernels": table(gen._generate_kernel_table()),
        "kernels_by_operator": table(gen._generate_kernel_op_table()),
    }


def comm(paths):
    profiles = []
    with tempfile.TemporaryDirectory() as cache:
        for i, path in enumerate(paths):
            profiles.append(DistributedRunProfileData(load(path, "worker%d" % i, cache)))
    loader = RunLoader.__new__(RunLoader)  # only its alignment of the workers is used
    loader.run_name = "run"
    run = loader._process_distributed_profiles(profiles, None)
    workers = run.comm_ops["data"] if run else {}
    return {
        "producer": "torch-tb-profiler %s, DistributedRunGenerator's Communication Operations "
                    "Stats (tests/analyse/tb_profiler_kernels.py --comm)"
                    % version("torch-tb-profiler"),
        "units": "us, bytes",
        "workers": {w: [dict(zip([c["name"] for c in t["columns"]], row)) for row in t["rows"]]
                    for w, t in workers.items()},
    }


def main():
    doc = comm(sys.argv[2:]) if sys.argv[1] == "--comm" else kernels(sys.argv[1])
    json.dump(doc, sys.stdout, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
