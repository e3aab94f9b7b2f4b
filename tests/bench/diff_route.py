#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of GET /api/v1/diff on two 1 M-span jobs, beside the six requests it is made of.

Builds a Kineto trace of about 1 M X spans from tests/data/kineto/gpu_5steps_rank0.json.gz (its
spans repeated COPIES times, each copy shifted past the one before, its ProfilerStep numbers and
correlation ids moved apart), imports it twice (jobs m1, m2) into a fresh daemon of BUILD_DIR,
then asks /diff?base=m1&exp=m2 and, alternating with it, the six answers it reads (/operators,
/kernels, /breakdown of each job), each request with a query string not asked before so that no
answer comes from the cache. Prints the first /diff (which computes both breakdowns), then the
p50 wall time of each and the daemon's CPU per request (/proc/PID/stat, clock ticks).

    BUILD_DIR=build-test python3 tests/bench/diff_route.py [--copies 15] [--rounds 20]
"""
import argparse
import gzip
import http.client
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
import conftest  # noqa: E402


def make_trace(path, copies, src=HERE.parent / "data" / "kineto" / "gpu_5steps_rank0.json.gz",
               phases=("X",)):
    """src's events of phases repeated copies times, each copy shifted past the one before, its
    ProfilerStep numbers and correlation ids moved apart (the other events once, flows left
    out), written to path. Returns (events copied, [memory] events among them)."""
    t = json.load(gzip.open(src))
    xs = [e for e in t["traceEvents"] if e.get("ph") in phases]
    t0 = min(float(e["ts"]) for e in xs)
    t1 = max(float(e["ts"]) + float(e.get("dur", 0)) for e in xs)
    out = [e for e in t["traceEvents"] if e.get("ph") not in phases + ("s", "f")]
    for k in range(copies):
        for e in xs:
            c = dict(e, ts=float(e["ts"]) + k * (t1 - t0 + 1000))
            m = re.match(r"ProfilerStep#(\d+)$", c.get("name", ""))
            if m:
                c["name"] = f"ProfilerStep#{int(m.group(1)) + 1000 * k}"
            if c.get("args"):
                c["args"] = {a: (v + 10_000_000 * k if a in ("correlation", "External id")
                                 and isinstance(v, int) else v) for a, v in c["args"].items()}
            out.append(c)
    t["traceEvents"] = out
    with gzip.open(path, "wt", compresslevel=1) as f:
        json.dump(t, f)
    return len(xs) * copies, sum(e.get("name") == "[memory]" for e in xs) * copies


def daemon_cpu(d):
    """The CPU seconds (user + system) the daemon d's process has used so far."""
    f = open(f"/proc/{d.proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=15)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssb.", dir="/tmp"))
    trace = tmp / "big.json.gz"
    print("X spans per job:", make_trace(trace, args.copies)[0])
    d = conftest.Daemon(tmp, "d")
    d.start()

    def cpu():
        return daemon_cpu(d)

    try:
        for job in ("m1", "m2"):
            subprocess.run([str(conftest.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                            "--socket", d.socket, "--job", job, str(trace)], check=True,
                           env=conftest.clean_env(tmp), timeout=1800)
        c = http.client.HTTPConnection(d.host, d.port, timeout=600)

        def get(path):
            s = time.perf_counter()
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            assert r.status == 200, (path, r.status)
            return time.perf_counter() - s

        print(f"first /diff (both breakdowns computed): {get('/api/v1/diff?base=m1&exp=m2'):.3f} s")
        parts = [f"/api/v1/jobs/{j}/{r}?limit=100000" for j in ("m1", "m2")
                 for r in ("operators", "kernels", "breakdown")]
        diff, six, dc, sc = [], [], 0.0, 0.0
        for i in range(args.rounds):
            c0 = cpu()
            diff.append(get(f"/api/v1/diff?base=m1&exp=m2&n={i}"))
            c1 = cpu()
            six.append(sum(get(p + f"&n={i}") for p in parts))
            dc, sc = dc + c1 - c0, sc + cpu() - c1
        n = args.rounds
        print(f"/diff: p50 {statistics.median(diff) * 1e3:.2f} ms, daemon CPU "
              f"{dc / n * 1e3:.2f} ms per request")
        print(f"its six component requests, summed: p50 {statistics.median(six) * 1e3:.2f} ms, "
              f"daemon CPU {sc / n * 1e3:.2f} ms")
    finally:
        d.stop()


if __name__ == "__main__":
    main()
