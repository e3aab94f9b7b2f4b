#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Slow HTTP clients past the connection cap, the figures of docs/RELIABILITY.md "Slow HTTP
clients": for each setting, a real stepscoped, N connections trickling header bytes (a byte
every 0.5 s each, reopened when closed: tests/reliability/test_slow_http.py's Trickler), then
REQUESTS GETs of /api/v1/health 1.5 s apart (so that they span a wave of deadline closes); prints one JSON line per setting with the
slowest request and how many timed out (30 s).

    BUILD_DIR=build python3 tests/bench/slowloris.py

Settings (cap, request deadline, tricklers): the old defaults (256, none) with 400; the cap 256
with the deadline (10 s) with 400; the new defaults (4096, 10 s) with 1000 and with 3000.
"""
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "reliability"))

from relutil import integ, raise_fd_limit, rss_kib  # noqa: E402  (the integration tests' Daemon)
from test_slow_http import Trickler  # noqa: E402

REQUESTS = int(os.environ.get("REQUESTS", "10"))
SETTINGS = [(256, 0, 400), (256, 10, 400), (4096, 10, 1000), (4096, 10, 3000)]


def run(tmp, cap, deadline, n):
    d = integ.Daemon(tmp, f"s{cap}-{deadline}-{n}",
                     args=["--http-max-connections", str(cap),
                           "--http-request-timeout-s", str(deadline)]).start()
    try:
        with Trickler(d.host, d.port, n) as t:
            t0 = time.monotonic()
            while t.peak_open < n and time.monotonic() - t0 < 60:
                time.sleep(0.1)
            time.sleep(2.0)
            times, timeouts = [], 0
            for _ in range(REQUESTS):
                t1 = time.monotonic()
                try:
                    st, _, _ = d.request("/api/v1/health")
                    assert st == 200
                except OSError:
                    timeouts += 1
                times.append(time.monotonic() - t1)
                if timeouts >= 2:
                    break
                time.sleep(1.5)
            closed = len(t.lifetimes)
            rss = rss_kib(d.proc.pid)
        times.sort()
        return {"http_max_connections": cap, "http_request_timeout_s": deadline,
                "tricklers": n, "requests": len(times), "timeouts_30s": timeouts,
                "median_s": round(times[len(times) // 2], 3), "max_s": round(times[-1], 3),
                "tricklers_closed": closed, "rss_kib": rss, "load_avg_1m": round(os.getloadavg()[0], 1)}
    finally:
        d.proc.terminate()
        d.proc.wait(timeout=60)


def main():
    raise_fd_limit(1 << 20)
    with tempfile.TemporaryDirectory() as tmp:
        for cap, deadline, n in SETTINGS:
            print(__import__("json").dumps(run(pathlib.Path(tmp), cap, deadline, n)), flush=True)


if __name__ == "__main__":
    main()
