#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of GET /api/v1/jobs/{job}/operator-view on a 1 M-span job, beside /summary/operator
(Paddle's operator summary: the same read of the rank's stored spans on an analysis thread) and
the live /operators, and, with --tb PYTHON, torch-tb-profiler's own load and operator view of the
same file (tests/analyse/tb_profiler_operators.py --map main), its table compared with ours.

Builds a Kineto trace of about 1 M X events from tests/data/kineto/cuda_views_h200/trace_a.json.gz
(routes_common.BigJob: the events repeated COPIES times, each copy shifted past the one
before, its step numbers, correlation and External ids moved apart), imports it into a fresh
daemon of BUILD_DIR, then asks each route ROUNDS times, each with a query string not asked
before. Prints the import time, and per route the p50 wall time and the daemon's CPU per request.

    BUILD_DIR=build-test python3 tests/bench/operator_view_route.py [--copies 130] [--rounds 5] [--tb /work/tbvenv/bin/python]
"""
import argparse
import json
import subprocess
import time

from routes_common import HERE, VIEWS_TRACE, BigJob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=130)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tb", help="a Python with torch-tb-profiler 0.4.3")
    args = ap.parse_args()
    job = BigJob(args.copies, VIEWS_TRACE)
    try:
        print(f"X events: {job.n}\nstepscope import: {job.import_s:.2f} s")
        # Each request a query not asked before (BigJob.measure()): no answer from the cache (the
        # live /operators is cached by snapshot; max_spans is ignored there but still makes the
        # key new).
        docs = job.measure_all(("operator-view?limit=100000",
                                "operator-view?group_by=input_shape&limit=100000",
                                "operator-view?format=csv", "summary/operator?format=json",
                                "operators?limit=100000"), args.rounds)
        ours = docs["operator-view?limit=100000"]
        print(f"operator view: {ours['spans_read']} spans read, {ours['calls']} operator calls, "
              f"{ours['device_events_linked']} of {ours['device_events']} device events linked, "
              f"{ours['total']} rows")
        if args.tb:
            s = time.perf_counter()
            r = subprocess.run([args.tb, str(HERE.parent / "analyse" / "tb_profiler_operators.py"),
                                "--map", "main", str(job.trace)], capture_output=True, text=True,
                               timeout=3600)
            assert r.returncode == 0, r.stderr[-2000:]
            tb = json.loads(r.stdout)
            print(f"torch-tb-profiler load + operator view: {time.perf_counter() - s:.2f} s; "
                  f"{len(tb['by_name']['data'])} rows")
            # The plugin's durations are differences of µs floats near 4.8e12 (this trace's
            # timestamps), each within 2 ulp (2 * 2^-10 µs) of the trace's ns: a sum over n
            # calls is within 0.5 (its rounding) + n * 2^-9 µs of ours.
            bad, worst = 0, 0.0
            theirs = {x["name"]: x for x in tb["by_name"]["data"]}
            for row in ours["rows"]:
                t = theirs.get(row["name"])
                if t is not None:
                    worst = max([worst] + [abs(row[o] - t[k]) for o, k in
                                           (("host_self_us", "host_self_duration"),
                                            ("host_total_us", "host_total_duration"),
                                            ("device_self_us", "device_self_duration"),
                                            ("device_total_us", "device_total_duration"))])
                if t is None or t["calls"] != row["calls"] or any(
                        abs(row[o] - t[k]) > 0.5 + row["calls"] * 2 ** -9 for o, k in
                        (("host_self_us", "host_self_duration"),
                         ("host_total_us", "host_total_duration"),
                         ("device_self_us", "device_self_duration"),
                         ("device_total_us", "device_total_duration"))):
                    bad += 1
            print("table equal to torch-tb-profiler's (to its float µs):",
                  bad == 0 and len(theirs) == len(ours["rows"]),
                  f"({bad} rows differ; largest difference {worst:.3f} µs)")
    finally:
        job.stop()


if __name__ == "__main__":
    main()
