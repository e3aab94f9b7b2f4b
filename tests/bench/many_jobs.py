#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hello->ack of many small jobs on a fresh daemon of the build in $BUILD_DIR (docs/RELIABILITY.md
and docs/PERFORMANCE.md, issue 18 items 3 and 4): JOBS one-event jobs (each its own connection:
hello, one record, wait for its ack) from WORKERS client threads, then PROBES more one at a time
at the end; prints one JSON line: the latencies (median, p99, worst) of all jobs, of the last
tenth and of the probes, live bytes per job, evictions, refused jobs, RSS, the daemon's CPU time.

  BUILD_DIR=build python3 tests/bench/many_jobs.py [JOBS [CONFIG_LINE ...]]

JOBS defaults to 10000; each CONFIG_LINE (e.g. "live_max_jobs = 100000", "live_max_bytes =
16777216") goes into the daemon's config file. Run it for two builds side by side."""
import json
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
sys.path.insert(0, str(HERE.parent / "reliability"))

from relutil import integ, rss_kib  # noqa: E402
from test_many_jobs import many_jobs, one_job  # noqa: E402

PROBES = 200


def figures(lat):
    s = sorted(lat)
    return {"n": len(s), "median_s": round(statistics.median(s), 4),
            "p99_s": round(s[min(len(s) - 1, int(len(s) * 0.99))], 4), "worst_s": round(s[-1], 4)}


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    config = "".join(line + "\n" for line in sys.argv[2:]) or None
    with tempfile.TemporaryDirectory() as t:
        d = integ.Daemon(pathlib.Path(t), "many", config=config)
        d.start()
        try:
            t0 = time.monotonic()
            lat = many_jobs(d, jobs)  # by job index
            wall = time.monotonic() - t0
            probes = [one_job(d.socket, f"probe-{i}") for i in range(PROBES)]
            st = d.stats()["live"]
            with open(f"/proc/{d.proc.pid}/stat") as f:  # utime + stime, in clock ticks
                ticks = sum(int(x) for x in f.read().rsplit(")", 1)[1].split()[11:13])
            print(json.dumps({
                "build": str(integ.build_dir()), "jobs": jobs, "config": sys.argv[2:],
                "wall_s": round(wall, 2), "all": figures(lat),
                "last_tenth": figures(lat[-max(1, jobs // 10):]), "probes": figures(probes),
                "live_bytes_per_job": round(st["bytes"] / (jobs + PROBES)),
                "evictions": st["evictions"], "untracked_jobs": st["untracked_jobs"],
                "rss_mib": round(rss_kib(d.proc.pid) / 1024),
                "daemon_cpu_s": round(ticks / os.sysconf("SC_CLK_TCK"), 2)}), flush=True)
        finally:
            d.proc.kill()
            d.proc.wait()


if __name__ == "__main__":
    main()
