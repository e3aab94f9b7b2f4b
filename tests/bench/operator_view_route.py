#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of GET /api/v1/jobs/{job}/operator-view on a 1 M-span job, beside /summary/operator
(Paddle's operator summary: the same read of the rank's stored spans on an analysis thread) and
the live /operators, and, with --tb PYTHON, torch-tb-profiler's own load and operator view of the
same file (tests/analyse/tb_profiler_operators.py --map main), its table compared with ours.

Builds a Kineto trace of about 1 M X events from tests/data/kineto/cuda_views_h200/trace_a.json.gz
(diff_route.py's make_trace: the events repeated COPIES times, each copy shifted past the one
before, its step numbers, correlation and External ids moved apart), imports it into a fresh
daemon of BUILD_DIR, then asks each route ROUNDS times, each with a query string not asked
before. Prints the import time, and per route the p50 wall time and the daemon's CPU per request.

    BUILD_DIR=build-test python3 tests/bench/operator_view_route.py [--copies 130] [--rounds 5] [--tb /work/tbvenv/bin/python]
"""
import argparse
import http.client
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
import conftest  # noqa: E402
from diff_route import daemon_cpu, make_trace  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=130)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tb", help="a Python with torch-tb-profiler 0.4.3")
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssb.", dir="/tmp"))
    trace = tmp / "big.json.gz"
    n, _ = make_trace(trace, args.copies,
                      HERE.parent / "data" / "kineto" / "cuda_views_h200" / "trace_a.json.gz")
    print(f"X events: {n}")
    d = conftest.Daemon(tmp, "d")
    d.start()
    try:
        s = time.perf_counter()
        subprocess.run([str(conftest.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                        "--socket", d.socket, "--job", "big", str(trace)], check=True,
                       env=conftest.clean_env(tmp), timeout=1800)
        print(f"stepscope import: {time.perf_counter() - s:.2f} s")
        c = http.client.HTTPConnection(d.host, d.port, timeout=600)
        docs = {}
        for route in ("operator-view?limit=100000", "operator-view?group_by=input_shape&limit=100000",
                      "operator-view?format=csv", "summary/operator?format=json",
                      "operators?limit=100000"):
            walls, cpus = [], []
            for i in range(args.rounds):
                # A query not asked before: no answer from the cache (the live /operators is
                # cached by snapshot; max_spans is ignored there but still makes the key new).
                c0, w0 = daemon_cpu(d), time.perf_counter()
                c.request("GET", f"/api/v1/jobs/big/{route}&max_spans={4000000 - i}")
                r = c.getresponse()
                body = r.read()
                walls.append(time.perf_counter() - w0)
                cpus.append(daemon_cpu(d) - c0)
                assert r.status == 200, (route, r.status, body[:300])
            if "format=csv" not in route:
                docs[route] = json.loads(body)
            print(f"/{route}: p50 {statistics.median(walls):.3f} s wall, "
                  f"{statistics.mean(cpus):.3f} s daemon CPU per request ({len(body)} bytes)")
        ours = docs["operator-view?limit=100000"]
        print(f"operator view: {ours['spans_read']} spans read, {ours['calls']} operator calls, "
              f"{ours['device_events_linked']} of {ours['device_events']} device events linked, "
              f"{ours['total']} rows")
        if args.tb:
            s = time.perf_counter()
            r = subprocess.run([args.tb, str(HERE.parent / "analyse" / "tb_profiler_operators.py"),
                                "--map", "main", str(trace)], capture_output=True, text=True,
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
        d.stop()


if __name__ == "__main__":
    main()
