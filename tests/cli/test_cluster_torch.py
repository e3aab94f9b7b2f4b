# SPDX-License-Identifier: MIT
"""/cluster/step-trace of a torch job: per rank, the device communication against computation
(docs/ANALYSIS.md "Cluster step trace": HTA's comm/comp overlap, per step as torch-tb-profiler's
distributed view), against the real daemon after a real `stepscope import` of two ranks of one
NCCL run (tests/data/kineto/gpu_2steps_sampled_rank{0,1}.json.gz, HTA's trace_filter pair).

The figures are recomputed here from the trace files by interval arithmetic over the kernels:
communication kernels by HTA's names (nccl*, hccl*, *ncclKernel*), computation the other
kernels, each set merged, intersected with each other and with the step's window. The windows
are the rank's /breakdown steps (start_us, end_us: torch-tb-profiler's device-stretched steps,
checked in tests/integ/test_live_breakdown*.py); everything inside them is computed here."""
import decimal
import re

from test_cluster_step_trace import wait_json
from test_import import DATA, run_import, trace_events

RANKS = {r: DATA / "kineto" / f"gpu_2steps_sampled_rank{r}.json.gz" for r in (0, 1)}
COMM = re.compile(r"^nccl|^hccl|ncclKernel")


def ns(us):
    """Kineto's µs (JSON number, maybe fractional) as integer ns, exactly."""
    return int(decimal.Decimal(repr(us)).scaleb(3).to_integral_value(decimal.ROUND_HALF_UP))


def merge(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def covered(iv, s, e):
    return sum(max(0, min(e, b) - max(s, a)) for a, b in iv)


def figures(path, windows):
    """{step: (computation, communication alone, communication, overlap)} in ns."""
    comm, comp = [], []
    for ev in trace_events(path):
        if ev.get("ph") == "X" and ev.get("cat") == "kernel":
            iv = (ns(ev["ts"]), ns(ev["ts"]) + ns(ev["dur"]))
            (comm if COMM.search(ev["name"]) else comp).append(iv)
    comm, comp = merge(comm), merge(comp)
    both = intersect(comm, comp)
    out = {}
    for step, (s, e) in windows.items():
        c, k, o = covered(comm, s, e), covered(comp, s, e), covered(both, s, e)
        out[step] = (k, c - o, c, o)
    return out


def us_ns(v):
    return ns(v)


KEYS = ("computation_us", "communication_alone_us", "communication_us", "overlap_us")


def test_two_ranks_communication_and_overlap(daemon):
    for r, path in RANKS.items():
        p = run_import(daemon, "--job", "ddp", "--rank", str(r), str(path))
        assert p.returncode == 0, p.stderr
    exp = {}
    for r, path in RANKS.items():
        bd = wait_json(daemon, f"/api/v1/jobs/ddp/breakdown?rank={r}")
        windows = {row["step"]: (us_ns(row["start_us"]), us_ns(row["end_us"])) for row in bd["rows"]}
        assert sorted(windows) == [551, 552]
        exp[r] = figures(path, windows)
    for step in (551, 552):
        doc = wait_json(daemon, f"/api/v1/jobs/ddp/cluster/step-trace?step={step}")
        assert doc["mode"] == "data-parallel" and doc["communication_from"] == "kernels"
        assert [row["rank"] for row in doc["ranks"]] == [0, 1]
        for row in doc["ranks"]:
            got = tuple(us_ns(row[k]) for k in KEYS)
            assert got == exp[row["rank"]][step], (step, row)
    # the average: the mean over the rank's steps, in whole ns
    doc = wait_json(daemon, "/api/v1/jobs/ddp/cluster/step-trace")
    for row in doc["ranks"]:
        e = exp[row["rank"]]
        assert tuple(us_ns(row[k]) for k in KEYS) == \
            tuple(sum(e[s][i] for s in e) // len(e) for i in range(4))
    # the figures are not empty: both ranks communicate, partly under computation
    for r in RANKS:
        for step in (551, 552):
            k, alone, c, o = exp[r][step]
            assert c > 0 and k > 0 and alone + o == c
    assert any(exp[r][s][3] > 0 for r in RANKS for s in (551, 552))



def test_csv_and_a_job_without_kernels(daemon):
    for r, path in RANKS.items():
        assert run_import(daemon, "--job", "ddp", "--rank", str(r), str(path)).returncode == 0
    doc = wait_json(daemon, "/api/v1/jobs/ddp/cluster/step-trace?step=552")
    st, _, body = daemon.request("/api/v1/jobs/ddp/cluster/step-trace?step=552&format=csv")
    assert st == 200
    lines = body.decode().splitlines()
    assert lines[0] == ("rank,stage,interval_us,fp_bp_us,tail_us,total_us,computation_us,"
                        "communication_alone_us,communication_us,overlap_us")
    for line, row in zip(lines[1:], doc["ranks"]):
        f = line.split(",")
        assert [int(f[0])] + [ns(float(x)) for x in f[6:]] == \
            [row["rank"]] + [ns(row[k]) for k in KEYS]
    # a CPU-only torch job (gloo, no kernels): the step trace alone, no device figures
    cpu = DATA / "kineto" / "cpu_only_rank34.json.gz"
    for r in (0, 1):
        assert run_import(daemon, "--job", "gloo", "--rank", str(r), str(cpu)).returncode == 0
    doc = wait_json(daemon, "/api/v1/jobs/gloo/cluster/step-trace")
    assert doc["communication_from"] is None
    assert [row["rank"] for row in doc["ranks"]] == [0, 1]
    assert all(k not in row for row in doc["ranks"] for k in KEYS[2:])
