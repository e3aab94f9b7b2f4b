#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time to a complete answer: `stepscope import` into a fresh daemon against HolisticTraceAnalysis
and torch-tb-profiler loading the same Kineto trace, side by side.

    python3 cli/bench/peers_bench.py --build build-rel \
        --peers /path/to/venv/bin/python --rounds 5 TRACE...

--peers is a Python with HolisticTraceAnalysis 0.5.0 and torch-tb-profiler 0.4.3 (from PyPI:
`python3 -m venv V && V/bin/pip install HolisticTraceAnalysis==0.5.0 torch-tb-profiler==0.4.3`;
not a test dependency). Each round, in this order, for each trace:

- stepscope (and --baseline's build, base_*, each against its own settled answers): a fresh
  stepscoped (its own data dir), then `stepscope import --quiet`; `import_s` is
  until the importer exits (every event acknowledged, i.e. durable), `answer_s` until
  /breakdown and /operators both equal the settled answers (taken once, 5 s after a first
  import), polled every 20 ms;
- hta: `TraceAnalysis(trace_dir=D)` in a new process, D holding only the trace; `hta_s` is that
  call, `hta_proc_s` the whole process (Python and pandas imports included);
- tb: `RunLoader(name, D, Cache()).load()` of torch-tb-profiler in a new process, the trace named
  worker0.pt.trace.json[.gz] as it expects; `tb_s` the call (parsing and every view it
  generates), `tb_proc_s` the process.

Prints one line per round and trace, then the medians.
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "bench"))
from answers_ab import VOLATILE  # noqa: E402  (the fields that differ between two runs)

ROUTES = ["/breakdown", "/operators"]

HTA = """
import sys, time
from hta.trace_analysis import TraceAnalysis
t = time.monotonic()
TraceAnalysis(trace_dir=sys.argv[1])
print(time.monotonic() - t)
"""
TB = """
import sys, time
from torch_tb_profiler.io.cache import Cache
from torch_tb_profiler.profiler.loader import RunLoader
if __name__ == "__main__":
    t = time.monotonic()
    run = RunLoader("bench", sys.argv[1], Cache()).load()
    assert run.profiles, "torch-tb-profiler loaded no profile"
    print(time.monotonic() - t)
"""


def start_daemon(build, work):
    d = tempfile.mkdtemp(dir=work)
    p = subprocess.Popen([str(build / "daemon" / "stepscoped"), "--socket", d + "/s.sock",
                          "--data-dir", d + "/data", "--http", "127.0.0.1:0", "--log-level",
                          "warn"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("peers_bench.py: the daemon did not start")
        m = re.search(r"dashboard http://(127\.0\.0\.1:\d+)", line)
        if m:
            return p, d, "http://" + m.group(1)


def get(base, path):
    with urllib.request.urlopen(base + "/api/v1/jobs/bench" + path, timeout=120) as r:
        return VOLATILE.sub(b"", r.read())


def stepscope_round(build, trace, work, want):
    p, d, base = start_daemon(build, work)
    try:
        t0 = time.monotonic()
        subprocess.run([str(build / "cli" / "stepscope"), "import", "--quiet",
                        "--socket", d + "/s.sock", "--job", "bench", str(trace)], check=True)
        t1 = time.monotonic()
        if want is None:
            time.sleep(5)
            return None, None, {r: get(base, r) for r in ROUTES}
        for r in ROUTES:
            while get(base, r) != want[r]:
                if time.monotonic() - t0 > 600:
                    sys.exit("peers_bench.py: %s never settled on %s" % (r, trace))
                time.sleep(0.02)
        return t1 - t0, time.monotonic() - t0, want
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def peer_round(python, code, folder):
    t0 = time.monotonic()
    out = subprocess.run([python, "-c", code, str(folder)], capture_output=True, text=True)
    wall = time.monotonic() - t0
    if out.returncode != 0:
        sys.exit("peers_bench.py: %s failed:\n%s" % (code.split()[3], out.stderr[-2000:]))
    return float(out.stdout.strip().splitlines()[-1]), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-rel", type=pathlib.Path)
    ap.add_argument("--peers", required=True, help="a python with HTA and torch-tb-profiler")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", type=pathlib.Path,
                    help="another build dir, timed the same way in each round (base_*)")
    ap.add_argument("traces", nargs="+", type=pathlib.Path)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="sspeers.")
    try:
        dirs = {}
        for t in a.traces:
            gz = ".gz" if t.name.endswith(".gz") else ""
            hta, tb = pathlib.Path(work, t.name, "hta"), pathlib.Path(work, t.name, "tb")
            hta.mkdir(parents=True)
            tb.mkdir(parents=True)
            os.symlink(t.resolve(), hta / t.name)
            os.symlink(t.resolve(), tb / ("worker0.pt.trace.json" + gz))
            dirs[t] = (hta, tb)
        builds = [("", a.build)] + ([("base_", a.baseline)] if a.baseline else [])
        want = {(b, t): stepscope_round(b, t, work, None)[2] for _, b in builds for t in a.traces}
        keys = [p + k for p, _ in builds for k in ("import_s", "answer_s")]
        res = {t: {k: [] for k in keys + ["hta_s", "hta_proc_s", "tb_s", "tb_proc_s"]}
               for t in a.traces}
        for i in range(a.rounds):
            for t in a.traces:
                r = res[t]
                for prefix, b in builds:
                    imp, ans, _ = stepscope_round(b, t, work, want[(b, t)])
                    r[prefix + "import_s"].append(imp)
                    r[prefix + "answer_s"].append(ans)
                h, hw = peer_round(a.peers, HTA, dirs[t][0])
                r["hta_s"].append(h)
                r["hta_proc_s"].append(hw)
                b, bw = peer_round(a.peers, TB, dirs[t][1])
                r["tb_s"].append(b)
                r["tb_proc_s"].append(bw)
                print("round %d %s: %s load=%s" % (i + 1, t.name, " ".join(
                    "%s=%.3f" % (k, v[-1]) for k, v in r.items()),
                    open("/proc/loadavg").read().split()[0]), flush=True)
        for t in a.traces:
            print("median %s: %s" % (t.name, " ".join(
                "%s=%.3f" % (k, statistics.median(v)) for k, v in res[t].items())))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
