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
import gzip
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
import conftest  # noqa: E402
from diff_route import make_trace  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=117)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tb", help="a Python with torch-tb-profiler 0.4.3")
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssb.", dir="/tmp"))
    trace = tmp / "big.json.gz"
    n, n_mem = make_trace(trace, args.copies,
                          HERE.parent / "data" / "kineto" / "cuda_views_h200" / "trace_a.json.gz",
                          ("X", "i"))
    print(f"events: {n} ({n_mem} [memory])")
    d = conftest.Daemon(tmp, "d")
    d.start()

    def cpu():
        f = open(f"/proc/{d.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    try:
        s = time.perf_counter()
        subprocess.run([str(conftest.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                        "--socket", d.socket, "--job", "big", str(trace)], check=True,
                       env=conftest.clean_env(tmp), timeout=1800)
        print(f"stepscope import: {time.perf_counter() - s:.2f} s")
        c = http.client.HTTPConnection(d.host, d.port, timeout=600)
        first = None
        for route in ("memory", "memory?format=csv", "summary/memory"):
            walls, cpus = [], []
            for i in range(args.rounds):
                sep = "&" if "?" in route else "?"
                c0, w0 = cpu(), time.perf_counter()
                c.request("GET", f"/api/v1/jobs/big/{route}{sep}max_spans={4000000 - i}")
                r = c.getresponse()
                body = r.read()
                walls.append(time.perf_counter() - w0)
                cpus.append(cpu() - c0)
                assert r.status == 200, (route, r.status, body[:300])
                if route == "memory" and first is None:
                    first = json.loads(body)
            print(f"/{route}: p50 {statistics.median(walls):.3f} s wall, "
                  f"{statistics.mean(cpus):.3f} s daemon CPU per request ({len(body)} bytes)")
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
        d.stop()


if __name__ == "__main__":
    main()
