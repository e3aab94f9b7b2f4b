#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 17's routes on a 1 M-span GPU job, and stepscope against HTA on the same file
(docs/PERFORMANCE.md, "Issue 17 routes").

Writes two traces with tests/bench/gpu_big_trace.py (15 copies of gpu_5steps_rank0: 1,008,255 X
spans, 116 k device events, kernels linked to their launches; --memory 8: 68 k [memory] events;
the second with --exp: kernels 5 % longer, one kernel name renamed), imports them as jobs m1 and
m2 into a fresh daemon of BUILD_DIR and times every issue 17 route the daemon lists in its
openapi.json (routes landed later are picked up): the first request after the import; then
ROUNDS requests each with a query string not asked before ("uncached": nothing from the answer
cache) and ROUNDS of one same request ("cached"); p50 and p95 of each.

Then, ROUNDS times and alternating in one invocation: stepscope (a fresh daemon, `stepscope
import` of m1's file, then the first answer of each /gpu route) against HTA 0.5.0 (pyenv
python3: TraceAnalysis(trace_dir) of the same file, then its own analysis behind each route);
medians. The machine's load average is printed at each step.

    BUILD_DIR=build-test python3 tests/bench/issue17_routes.py [--rounds 5] [--hta-rounds 3] [--copies 15] [--only gpu/idle]
        [--traces DIR]
        [--skip-routes] [--skip-hta] [--base BUILD]

--base BUILD (another build folder, e.g. main's): a daemon of it beside BUILD_DIR's, the same
imports, and each timed request asked of one daemon then of the other, so that both rows of a
route see the same machine; the rows then also give the daemon's CPU time per uncached request.
"""
import argparse
import contextlib
import http.client
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
import conftest  # noqa: E402

# Issue 17's routes, with the query each is timed with ({j}: the job). A route is timed when the
# daemon's openapi.json lists its path.
ROUTES = [
    ("/api/v1/jobs/{job}/gpu/temporal", "/api/v1/jobs/m1/gpu/temporal?"),
    ("/api/v1/jobs/{job}/gpu/kernel-types", "/api/v1/jobs/m1/gpu/kernel-types?"),
    ("/api/v1/jobs/{job}/gpu/overlap", "/api/v1/jobs/m1/gpu/overlap?"),
    ("/api/v1/jobs/{job}/gpu/launches", "/api/v1/jobs/m1/gpu/launches?"),
    ("/api/v1/jobs/{job}/gpu/idle", "/api/v1/jobs/m1/gpu/idle?"),
    ("/api/v1/jobs/{job}/gpu/queue", "/api/v1/jobs/m1/gpu/queue?"),
    ("/api/v1/jobs/{job}/memory", "/api/v1/jobs/m1/memory?"),
    ("/api/v1/jobs/{job}/tree", "/api/v1/jobs/m1/tree?kind=operator&"),
    ("/api/v1/jobs/{job}/operator-view", "/api/v1/jobs/m1/operator-view?"),
    ("/api/v1/jobs/{job}/tree", "/api/v1/jobs/m1/tree?kind=module&"),
    ("/api/v1/jobs/{job}/kernels/details", "/api/v1/jobs/m1/kernels/details?"),
    ("/api/v1/jobs/{job}/comm-ops", "/api/v1/jobs/m1/comm-ops?"),
    ("/api/v1/diff", "/api/v1/diff?base=m1&exp=m2&"),
    ("/api/v1/diff", "/api/v1/diff?base=m1&exp=m2&base_steps={b}&exp_steps={e}&"),
    # the same uncut: the rank's 1,008,255 spans pass the default max_spans (1 M), and a read
    # that must cut reads the rank whole; below the cap only the steps' window is decoded
    ("/api/v1/diff", "/api/v1/diff?base=m1&exp=m2&base_steps={b}&exp_steps={e}&max_spans=2000000&"),
    # the baseline of a ranged diff: one store read of the rank, as each of its sides does
    ("/api/v1/jobs/{job}/summary/{kind}", "/api/v1/jobs/m1/summary/operator?steps={b}&"),
]
# A 1 M-span analysis on a loaded 2-core machine may outlast the default 30 s deadline.
# /tree's forecast on 1 M spans (about 1.2 GiB) passes the default 1 GiB budget: that is a 413 at
# once (printed); the bench allows 4 GiB to time it.
CONFIG = "http_analysis_timeout_ms = 600000\nhttp_analysis_max_bytes = 4294967296\n"
# HTA's analysis behind each /gpu route (TraceAnalysis methods, visualize off).
HTA = {
    "gpu/temporal": "get_temporal_breakdown(visualize=False)",
    "gpu/kernel-types": "get_gpu_kernel_breakdown(visualize=False)",
    "gpu/overlap": "get_comm_comp_overlap(visualize=False)",
    "gpu/launches": "get_cuda_kernel_launch_stats(visualize=False)",
    "gpu/idle": "get_idle_time_breakdown(visualize=False)",
    "gpu/queue": "get_queue_length_summary()",
}
HTA_SCRIPT = r"""
import json, logging, sys, time
logging.disable(logging.WARNING)
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
ta = TraceAnalysis(trace_dir=sys.argv[1])
out = {"load": time.perf_counter() - t0}
for name, call in json.loads(sys.argv[2]).items():
    t = time.perf_counter()
    eval("ta." + call)
    out[name] = time.perf_counter() - t
print(json.dumps(out))
"""


def load():
    return open("/proc/loadavg").read().split()[0]


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


class Client:
    def __init__(self, d):
        self.c = http.client.HTTPConnection(d.host, d.port, timeout=1800)

    def get(self, path):
        s = time.perf_counter()
        self.c.request("GET", path)
        r = self.c.getresponse()
        body = r.read()
        if r.status != 200:
            raise RuntimeError(f"{path}: {r.status} {body[:300]!r}")
        self.size = len(body)
        return time.perf_counter() - s


def imported(d, tmp, job, trace):
    s = time.perf_counter()
    subprocess.run([str(conftest.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                    "--socket", d.socket, "--job", job, str(trace)], check=True,
                   env=conftest.clean_env(tmp), timeout=3600)
    return time.perf_counter() - s


@contextlib.contextmanager
def build(path):
    """BUILD_DIR set to path meanwhile: the daemon a Daemon starts and the importer are its."""
    old = os.environ.get("BUILD_DIR")
    os.environ["BUILD_DIR"] = str(path)
    try:
        yield
    finally:
        if old is None:
            del os.environ["BUILD_DIR"]
        else:
            os.environ["BUILD_DIR"] = old


def cpu_s(d):
    """The daemon's CPU time so far (user + system), seconds."""
    f = open(f"/proc/{d.proc.pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def routes(args, tmp, t1, t2):
    # With --base, a daemon of that build beside BUILD_DIR's, each request asked of one then of
    # the other, so that both see the same machine.
    builds = [("", conftest.build_dir())]
    if args.base:
        builds.append(("base", pathlib.Path(args.base).resolve()))
    ds = []
    try:
        for k, (label, path) in enumerate(builds):
            with build(path):
                d = conftest.Daemon(tmp, f"routes{k}", config=CONFIG)
                ds.append(d)
                d.start()
                print(f"{label or 'build'} {path}: import m1 {imported(d, tmp, 'm1', t1):.2f} s, "
                      f"m2 {imported(d, tmp, 'm2', t2):.2f} s (load {load()})")
        cs = [Client(d) for d in ds]
        d = ds[0]
        listed = set(json.loads(d.request("/api/v1/openapi.json")[2])["paths"])
        # step ranges: the rank's first 5 steps against 5 steps from the middle of the other
        steps = [r["step"] for r in json.loads(d.request(
            "/api/v1/jobs/m1/steps?limit=100000")[2])["rows"]]
        k = min(5, len(steps))
        mid = max(0, min(len(steps) // 2, len(steps) - k))
        rng = {"b": f"{steps[0]}-{steps[k - 1]}", "e": f"{steps[mid]}-{steps[mid + k - 1]}"}
        print("| route | first | uncached p50 / p95 | cached p50 / p95 | body | load |"
              + (" daemon CPU, uncached p50 |" if args.base else ""))
        for path, q in ROUTES:
            q = q.format(**rng)
            if args.only and not any(o in q for o in args.only.split(",")):
                continue
            if path not in listed:
                print(f"| {q} | not on this build |")
                continue
            try:
                first = [c.get(q + "n=first") for c in cs]
            except RuntimeError as e:
                print(f"| {q} | {e} |")
                continue
            cold = [[] for _ in cs]
            cpu = [[] for _ in cs]
            for i in range(args.rounds):
                for j, c in enumerate(cs):
                    u = cpu_s(ds[j])
                    cold[j].append(c.get(q + f"n={i}"))
                    cpu[j].append(cpu_s(ds[j]) - u)
            warm = [[] for _ in cs]
            for c in cs:
                c.get(q + "n=warm")
            for _ in range(args.rounds):
                for j, c in enumerate(cs):
                    warm[j].append(c.get(q + "n=warm"))
            for j, (label, _) in enumerate(builds):
                print(f"| `{q.rstrip('?&')}`{' (' + label + ')' if label else ''} | "
                      f"{first[j]:.3f} s | {statistics.median(cold[j]):.3f} / "
                      f"{pct(cold[j], 95):.3f} s | {statistics.median(warm[j]) * 1e3:.2f} / "
                      f"{pct(warm[j], 95) * 1e3:.2f} ms | {cs[j].size / 1024:.0f} KiB | {load()} |"
                      + (f" {statistics.median(cpu[j]):.2f} s |" if args.base else ""),
                      flush=True)
    finally:
        for d in ds:
            d.stop()


def versus(args, tmp, t1):
    listed = None
    folder = tmp / "hta"
    folder.mkdir()
    shutil.copy(t1, folder / t1.name)
    ours, theirs = [], []
    for r in range(args.hta_rounds):
        d = conftest.Daemon(tmp, f"vs{r}")
        d.start()
        try:
            o = {"load": imported(d, tmp, "m1", t1)}
            if listed is None:
                listed = {p.split("/api/v1/jobs/{job}/")[-1]
                          for p in json.loads(d.request("/api/v1/openapi.json")[2])["paths"]}
            c = Client(d)
            for route in HTA:
                if route in listed:
                    o[route] = c.get(f"/api/v1/jobs/m1/{route}")
        finally:
            d.stop()
        calls = {k: v for k, v in HTA.items() if k in o}
        h = subprocess.run([sys.executable, "-c", HTA_SCRIPT, str(folder), json.dumps(calls)],
                           check=True, capture_output=True, text=True, timeout=3600)
        t = json.loads(h.stdout.strip().splitlines()[-1])
        print(f"round {r}: stepscope {o}, HTA {t} (load {load()})", flush=True)
        ours.append(o)
        theirs.append(t)
    print("| step | stepscope s | HTA s | HTA / stepscope |")
    for k in ours[0]:
        a = statistics.median(x[k] for x in ours)
        b = statistics.median(x[k] for x in theirs)
        name = "load (stepscope import / TraceAnalysis)" if k == "load" else k
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.1f} |")
    a = statistics.median(sum(x.values()) for x in ours)
    b = statistics.median(sum(x.values()) for x in theirs)
    print(f"| load + every analysis | {a:.3f} | {b:.3f} | {b / a:.1f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hta-rounds", type=int, default=3)
    ap.add_argument("--copies", type=int, default=15)
    ap.add_argument("--traces", help="a folder to keep the traces in (and take them from)")
    ap.add_argument("--only", help="time only the routes whose query holds one of these texts (commas)")
    ap.add_argument("--skip-routes", action="store_true")
    ap.add_argument("--skip-hta", action="store_true")
    ap.add_argument("--base", metavar="BUILD", help="also time the routes on this build's daemon, "
                    "each request asked of both in turn")
    args = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssb17.", dir="/tmp"))
    keep = pathlib.Path(args.traces) if args.traces else tmp
    keep.mkdir(exist_ok=True)
    t1, t2 = keep / f"m1_{args.copies}.json.gz", keep / f"m2_{args.copies}.json.gz"
    for out, extra in ((t1, []), (t2, ["--exp"])):
        if not out.exists():
            subprocess.run([sys.executable, str(HERE / "gpu_big_trace.py"), str(out), "--memory",
                            "8", "--copies", str(args.copies)] + extra, check=True)
    print(f"cores {os.cpu_count()}, load {load()}, build {conftest.build_dir()}")
    try:
        if not args.skip_routes:
            routes(args, tmp, t1, t2)
        if not args.skip_hta:
            versus(args, tmp, t1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
