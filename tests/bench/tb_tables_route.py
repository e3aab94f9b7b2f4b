# SPDX-License-Identifier: MIT
"""Cost of GET /kernels/details (group=name and group=operator), /comm-ops and
/gpu/kernel-types?table=kernels on a 1 M-span job, beside /summary/operator (Paddle's operator
table: the same read of the rank's stored spans on an analysis thread) and /kernels (live
aggregates).

Builds a Kineto trace of about 1 M X events from tests/data/kineto/cuda_views_h200/trace_a.json.gz
(routes_common.BigJob: its events repeated COPIES times, each copy shifted past the one before),
imports it into a fresh daemon of BUILD_DIR, then asks each route ROUNDS times, each with a query
string not asked before. Prints the import time, and per route the p50 wall time and the daemon's
CPU per request (/proc/PID/stat).

    BUILD_DIR=build-test python3 tests/bench/tb_tables_route.py [--copies 133] [--rounds 3]
"""
import argparse
import json

from routes_common import VIEWS_TRACE, BigJob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=133)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    job = BigJob(args.copies, VIEWS_TRACE)
    try:
        print(f"X events: {job.n}\nstepscope import: {job.import_s:.2f} s")
        for route in ("kernels/details", "kernels/details?group=operator",
                      "kernels/details?group=operator&format=csv", "comm-ops",
                      "gpu/kernel-types?table=kernels", "summary/operator", "kernels?limit=100000"):
            body = job.measure(route, args.rounds)[2]
            if route == "kernels/details?group=operator":
                doc = json.loads(body)
                print(f"  {doc['kernels']} kernels, {doc['launched']} launched by an operator, "
                      f"{doc['total']} rows, spans read {doc['spans_read']}, cut {doc['spans_cut']}")
    finally:
        job.stop()


if __name__ == "__main__":
    main()
