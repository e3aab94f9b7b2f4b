#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of GET /api/v1/jobs/{job}/memory on a 1 M-event job, beside /summary/memory (Paddle's
Memory Summary: the same read of the rank's stored events on an analysis thread) and, with
--tb PYTHON, torch-tb-profiler's own load and memory view of the same file.

Builds a Kineto trace of about 1 M events from tests/data/kineto/cuda_views_h200/trace_a.json.gz
(profile_memory: 300 [memory] events per copy), its events repeated COPIES times, each copy
shifted past the one before, its ProfilerStep numbers and correlation ids moved apart and its
[memory] totals kept (each copy's curve repeats), imports it into a fresh daemon of BUILD_DIR,
then asks each route ROUNDS times, each with a query string not asked before. Prints the import
time, and per route the p50 wall time and the daemon's CPU per request (/proc/PID/stat).

    BUILD_DIR=build-test python3 tests/bench/memory_route.py [--copies 117] [--rounds 5] [--tb /work/tbvenv/bin/python]
"""
import argparse
import json
import pathlib
import subprocess
import time

from routes_common import BigJob

HERE = pathlib.Path(__file__).resolve().parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=117)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tb", help="a Python with torch-tb-profiler 0.4.3")
    args = ap.parse_args()
    job = BigJob(args.copies, HERE.parent / "data" / "kineto" / "cuda_views_h200" / "trace_a.json.gz",
                 ("X", "i"))
    trace = job.trace
    print(f"events: {job.n} ({job.n_mem} [memory])")
    try:
        print(f"stepscope import: {job.import_s:.2f} s")
        first = None
        for route in ("memory", "memory?format=csv", "summary/memory"):
            body = job.measure(route, args.rounds)[2]
            if route == "memory":
                first = json.loads(body)
        g = next(s for s in first["devices"] if s["device"] == "GPU0")
        print(f"GPU0: {g['points']} points, {g['kept']} kept, peak {g['peak_allocated']} B; "
              f"{len(first['operators'])} operator rows")
        if args.tb:
            s = time.perf_counter()
            r = subprocess.run([args.tb, str(HERE.parent / "analyse" / "tb_profiler_memory.py"),
                                str(trace)], capture_output=True, text=True, timeout=3600)
            assert r.returncode == 0, r.stderr[-2000:]
            tb = json.loads(r.stdout)
            print(f"torch-tb-profiler load + memory view: {time.perf_counter() - s:.2f} s; "
                  f"its GPU0 peak {tb['devices']['GPU0']['peak']} B, "
                  f"{len(tb['devices']['GPU0']['stats'])} rows")
            want = sorted(tuple(x[:1] + [float(v) for v in x[1:]]) for x in tb["devices"]["GPU0"]["stats"])
            got = sorted((r["name"], float(r["calls"]), float(r["size_increase"]),
                          float(r["self_size_increase"]), float(r["allocation_count"]),
                          float(r["self_allocation_count"]), float(r["allocation_size"]),
                          float(r["self_allocation_size"]))
                         for r in first["operators"] if r["device"] == "GPU0")
            print("operator table equal to torch-tb-profiler's:", got == want)
    finally:
        job.stop()


if __name__ == "__main__":
    main()
