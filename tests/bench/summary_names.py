#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/summary/{kind} of a job with N distinct operator names (each with an inner
row), for each build given, side by side: the figures of docs/PERFORMANCE.md's "Summaries of
many names" and of docs/RELIABILITY.md's issue 18 rows.

For each N and each build in turn (a fresh daemon each, the same job sent to it), it measures:
  one      the time of one request, and the daemon's peak RSS (VmHWM) growth over its RSS
           before the first request;
  four     then four requests at once: the time until the last answered, their statuses, the
           peak RSS growth (over the same base: the peak of the whole run), and the worst
           /api/v1/health time, polled every 50 ms meanwhile.
A request not answered in --timeout seconds is reported as such (the daemon is then killed).

  python3 tests/bench/summary_names.py --build OLD_BUILD_DIR --build build \\
      [--names 10000 40000 80000 150000] [--kind operator] [--config 'key = value']
"""
import argparse
import os
import pathlib
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
sys.path.insert(0, str(HERE.parent / "reliability"))

from relutil import integ, rss_kib  # noqa: E402
from test_analysis_http import _ingest_names  # noqa: E402


def get(d, path, timeout):
    import http.client
    conn = http.client.HTTPConnection(d.host, d.port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        r.read()
        return r.status
    except OSError:
        return "no answer"
    finally:
        conn.close()


def measure(build, n, kind, config, timeout, tmp):
    os.environ["BUILD_DIR"] = str(pathlib.Path(build).resolve())
    d = integ.Daemon(pathlib.Path(tmp), f"d{n}_{abs(hash(build))}", config=config)
    d.start()
    try:
        _ingest_names(d, "names", n)
        path = f"/api/v1/jobs/names/summary/{kind}"
        base = rss_kib(d.proc.pid, "VmHWM")
        t0 = time.monotonic()
        st = get(d, path, timeout)
        one = time.monotonic() - t0
        one_rss = rss_kib(d.proc.pid, "VmHWM") - base
        if st == "no answer":
            return f"one: no answer in {timeout:.0f} s; four: not run"
        got = []
        threads = [threading.Thread(target=lambda: got.append(get(d, path, timeout)))
                   for _ in range(4)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        worst = 0.0
        while any(t.is_alive() for t in threads):
            h0 = time.monotonic()
            hs = get(d, "/api/v1/health", timeout)
            worst = max(worst, time.monotonic() - h0)
            if hs != 200:
                worst = float("inf")
            time.sleep(0.05)
        four = time.monotonic() - t0
        four_rss = rss_kib(d.proc.pid, "VmHWM") - base
        return (f"one: {st} {one:.2f} s +{one_rss / 1024:.0f} MiB; four: "
                f"{'/'.join(str(s) for s in sorted(got, key=str))} {four:.2f} s "
                f"+{four_rss / 1024:.0f} MiB, health worst {worst:.3f} s")
    finally:
        d.proc.kill()
        d.proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", action="append", required=True, help="a build dir (repeat)")
    ap.add_argument("--names", type=int, nargs="+", default=[10000, 40000, 80000, 150000])
    ap.add_argument("--kind", default="operator")
    ap.add_argument("--config", default=None, help="config file text for every daemon")
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.names:
            for b in a.build:
                print(f"names={n} build={b} {measure(b, n, a.kind, a.config, a.timeout, tmp)}",
                      flush=True)


if __name__ == "__main__":
    main()
