#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of GET /api/v1/jobs/{job}/tree (kind=operator and kind=module) on a 1 M-span job, beside
/summary/operator (Paddle's operator table: the same read of the rank's stored spans on an
analysis thread) and, with --tb PYTHON, torch-tb-profiler's own load and module view of the same
file.

Builds a Kineto trace of about 1 M X events from tests/data/kineto/cuda_views_h200/trace_a.json.gz
(with_modules: 50 module spans per copy), its events repeated COPIES times, each copy shifted
past the one before, its ProfilerStep numbers and correlation ids moved apart, imports it into a
fresh daemon of BUILD_DIR, then asks each route ROUNDS times, each with a query string not asked
before. Prints the import time, and per route the p50 wall time and the daemon's CPU per request
(/proc/PID/stat).

    BUILD_DIR=build-test python3 tests/bench/tree_route.py [--copies 133] [--rounds 5] [--tb /work/tbvenv/bin/python]
"""
import argparse
import json
import pathlib
import subprocess
import time

from routes_common import VIEWS_TRACE, BigJob

HERE = pathlib.Path(__file__).resolve().parent


def flat_tb(ms, out):
    for m in ms:
        out.append((m["name"], m["occurences"], m["operators"]))
        flat_tb(m["children"], out)
    return out


def flat_ours(ns, out):
    for x in ns:
        out.append((x["name"], x["calls"], x["operators"]))
        flat_ours(x["children"], out)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=133)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tb", help="a Python with torch-tb-profiler 0.4.3")
    args = ap.parse_args()
    job = BigJob(args.copies, VIEWS_TRACE)
    try:
        print(f"X events: {job.n}\nstepscope import: {job.import_s:.2f} s")
        docs = job.measure_all(("tree?kind=operator", "tree?kind=operator&format=csv",
                                "tree?kind=module", "summary/operator"), args.rounds)
        mods = docs["tree?kind=module"]
        print(f"operator tree: {docs['tree?kind=operator']['n_nodes']} nodes, "
              f"{docs['tree?kind=operator']['spans']} spans; module tree: {mods['n_nodes']} nodes, "
              f"{mods['module_spans']} module spans")
        if args.tb:
            s = time.perf_counter()
            r = subprocess.run([args.tb, str(HERE.parent / "analyse" / "tb_profiler_modules.py"),
                                str(job.trace)], capture_output=True, text=True, timeout=3600)
            assert r.returncode == 0, r.stderr[-2000:]
            same = flat_ours(mods["nodes"], []) == flat_tb(json.loads(r.stdout)["modules"], [])
            print(f"torch-tb-profiler load + module view: {time.perf_counter() - s:.2f} s; "
                  f"the same modules, occurrences and operators: {same}")
    finally:
        job.stop()


if __name__ == "__main__":
    main()
