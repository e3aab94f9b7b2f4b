# SPDX-License-Identifier: MIT
"""/summary/{kind} on the real Kineto traces of tests/data/kineto, sent verbatim to a real
daemon: Paddle's tables over torch's event types (docs/ANALYSIS.md, "Paddle's summaries").

The expected figures are computed here from the trace itself (interval unions in exact ns, per
name groups), and the kernel and operator tables are also checked against the daemon's own
/kernels and /operators, which another implementation (ops.c, live aggregates) computes.
The equality with Paddle's own summary() is tests/frameworks/test_paddle_summary.py.
"""
import pathlib
from decimal import Decimal

import pytest

import tb_breakdown as tb
from ssclient import Client

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = ["gpu_2steps_sampled_rank0", "gpu_5steps_rank0", "rocm_minitoy_3steps",
          "cpu_ops_rank_non_gpu"]


def spans(events):
    """(name, cat, pid, start_ns, end_ns) of the complete events."""
    out = []
    for e in events:
        if e.get("ph") == "X" and "ts" in e and e.get("name"):
            s = tb.ns(e["ts"])
            out.append((e["name"], e.get("cat"), e.get("pid"), s, s + tb.ns(e.get("dur", Decimal(0)))))
    return out


def union(ranges):
    return sum(e - s for s, e in tb.merge([(s, e) for s, e in ranges if e > s]))


def us(v):
    return round(v * 1000)


@pytest.mark.parametrize("name", TRACES)
def test_summary_of_kineto_trace(daemon, name):
    path = DATA / (name + ".json.gz")
    sp = spans(tb.load(path))
    lines = tb.lines(path)
    job = "sum-" + name
    with Client(daemon.socket) as c:
        c.hello(job)
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)
    base = f"/api/v1/jobs/{job}"

    steps = [(s, e) for n, cat, _, s, e in sp
             if n.startswith("ProfilerStep#") and cat != "gpu_user_annotation"]
    total = union(steps)
    ov = daemon.get_json(base + "/summary/overview")
    assert ov["spans_cut"] == 0 and ov["lines_bad"] == 0
    assert ov["n_steps"] == len(steps) > 0
    assert us(ov["total_us"]) == total
    rows = {(r["type"], r["side"]): r for r in ov["rows"]}
    assert rows[("ProfileStep", "cpu")]["calls"] == len(steps)
    for cat, typ in (("kernel", "Kernel"), ("gpu_memcpy", "Memcpy"), ("gpu_memset", "Memset")):
        ranges = [(s, e) for _, c, _, s, e in sp if c == cat]
        if not ranges:
            assert (typ, "gpu") not in rows
            continue
        r = rows[(typ, "gpu")]
        assert r["calls"] == len(ranges)
        assert us(r["time_us"]) == union(ranges)
        assert abs(r["percent"] - 100 * union(ranges) / total) < 0.0001

    # Kernels: per name, equal to the trace and to /kernels; GPU utilisation per device.
    kern = daemon.get_json(base + "/summary/kernel")["rows"]
    want = {}
    for n, c, _, s, e in sp:
        if c == "kernel":
            want.setdefault(n, []).append(e - s)
    assert {r["name"]: (r["calls"], us(r["total_us"]), us(r["max_us"]), us(r["min_us"])) for r in kern} == \
        {n: (len(d), sum(d), max(d), min(d)) for n, d in want.items()}
    # (the live tables are published every 100 ms: wait until they hold the whole trace)
    mine = {r["name"]: (r["calls"], r["total_us"]) for r in kern}
    daemon.wait_for("/kernels equal to the kernel summary", lambda: {
        r["name"]: (r["calls"], r["total_us"])
        for r in daemon.get_json(base + "/kernels?limit=100000")["rows"]} == mine)
    dev = {r["device"]: r for r in daemon.get_json(base + "/summary/device")["rows"]}
    for pid in {p for _, c, p, _, _ in sp if c == "kernel"}:
        busy = union([(s, e) for _, c, p, s, e in sp if c == "kernel" and p == pid])
        assert us(dev[f"GPU{pid}"]["busy_us"]) == busy
        assert abs(dev[f"GPU{pid}"]["utilization_pct"] - 100 * busy / total) < 0.0001

    # Operators: every top-level row is a torch cpu_op name, with the trace's calls and total,
    # and /operators (torch's key_averages() rules) agrees on both.
    ops = daemon.get_json(base + "/summary/operator")["rows"]
    top = [r for r in ops if r["parent"] is None]
    assert len(top) >= 3
    cpu_ops = {}
    for n, c, _, s, e in sp:
        if c == "cpu_op":
            cpu_ops.setdefault(n, []).append(e - s)
    for r in top:
        d = cpu_ops[r["name"]]
        assert (r["calls"], us(r["total_us"])) == (len(d), sum(d)), r
    mine = {r["name"]: (r["calls"], r["total_us"]) for r in top}

    def live_ops():
        rows = daemon.get_json(base + "/operators?limit=100000")["rows"]
        return {r["name"]: (r["calls"], r["total_us"]) for r in rows if r["name"] in mine}
    daemon.wait_for("/operators agreeing with the operator summary", lambda: live_ops() == mine)
    assert abs(sum(r["percent"] for r in top) - 100) < 0.01
    assert [r["total_us"] for r in top] == sorted((r["total_us"] for r in top), reverse=True)

    # The model rows add up: the stages and Others make the step total.
    model = daemon.get_json(base + "/summary/model")["rows"]
    assert abs(sum(r["total_us"] for r in model if r["name"] != "ProfileStep") - ov["total_us"]) < 0.01


def x(name, cat, ts, dur, tid="7(Python)"):
    return {"ph": "X", "name": name, "cat": cat, "ts": ts, "dur": dur, "pid": 7, "tid": tid}


def test_summary_per_rank_range_units_and_unknown_rank(daemon):
    """Two ranks of hand-made Paddle events: each rank's tables are its own, a step range picks
    its steps, the text form takes time_unit, and a rank the job does not have is a 404."""
    for rank, scale in ((0, 1), (1, 3)):
        ev = []
        for k in range(4):
            t = 4000 * k
            ev += [x(f"ProfileStep#{k}[{scale * 0.9:.3f} ms]", "ProfileStep", t, 900 * scale),
                   x("_DataLoaderIterSingleProcess", "Dataloader", t, 100 * scale),
                   x("matmul dygraph", "Operator", t + 200 * scale, 300 * scale, "7(C++)"),
                   x("matmul infer_meta", "OperatorInner", t + 200 * scale, 50 * scale, "7(C++)")]
        with Client(daemon.socket) as c:
            c.hello("pd-ranks", rank=rank, world_size=2)
            c.send_lines(ev)
            c.wait_ack(len(ev))
    base = "/api/v1/jobs/pd-ranks"
    for rank, scale in ((0, 1), (1, 3)):
        ov = daemon.get_json(f"{base}/summary/overview?rank={rank}")
        assert ov["rank"] == rank and ov["n_steps"] == 4
        assert ov["total_us"] == 4 * 900 * scale
        ops = daemon.get_json(f"{base}/summary/operator?rank={rank}")["rows"]
        # "7(Python)" and "7(C++)" are one thread, as in Paddle's trees: the inner row nests
        assert [(r["name"], r["parent"], r["calls"], r["total_us"]) for r in ops] == [
            ("matmul dygraph", None, 4, 4 * 300 * scale),
            ("matmul infer_meta", "matmul dygraph", 4, 4 * 50 * scale)]
        model = {r["name"]: r for r in daemon.get_json(f"{base}/summary/model?rank={rank}")["rows"]}
        assert model["ProfileStep"]["calls"] == 4 and model["Dataloader"]["total_us"] == 400 * scale
        assert model["Others"]["total_us"] == 4 * 800 * scale
    one = daemon.get_json(f"{base}/summary/overview?rank=1&steps=1-2")
    assert (one["first_step"], one["last_step"], one["total_us"]) == (1, 2, 2 * 2700)
    text = daemon.request(f"{base}/summary/overview?rank=1&time_unit=us&format=text")[2].decode()
    assert "Time unit: us\n" in text and "\nProfileStep                4                          10800.00" in text
    assert daemon.request(f"{base}/summary/overview?rank=2")[0] == 404
    assert daemon.request(f"{base}/benchmark?rank=2")[0] == 404
    b = daemon.get_json(f"{base}/benchmark?rank=1&skip=1")
    assert (b["source"], b["counted"], b["ips_unit"]) == ("spans", 3, "steps/s")
    assert {r["name"]: r["avg"] for r in b["rows"]} == pytest.approx(
        {"reader_cost": 0.0003, "batch_cost": 0.0027, "ips": 1 / 0.0027})


def test_operators_leave_out_the_gpu_mirrors_of_host_ranges(daemon):
    """rocm_minitoy_3steps (current Kineto) mirrors its host ranges on the GPU row (cat
    gpu_user_annotation: ProfilerStep#1, Optimizer.step#SGD.step). torch's key_averages() keeps
    those apart (a CUDA row; it groups by device type), so /operators counts each range once, on
    the host: the user annotations' calls and totals are those of their host spans, and no row is
    made of mirrors alone."""
    path = DATA / "rocm_minitoy_3steps.json.gz"
    sp = spans(tb.load(path))
    mirrors = {n for n, c, _, _, _ in sp if c == "gpu_user_annotation"}
    assert {"ProfilerStep#1", "Optimizer.step#SGD.step"} <= mirrors
    lines = tb.lines(path)
    with Client(daemon.socket) as c:
        c.hello("mirrors")
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)
    host = {}
    for n, c, _, s, e in sp:
        if c == "user_annotation":
            key = "ProfilerStep*" if n.startswith("ProfilerStep#") else n
            calls, total = host.get(key, (0, 0))
            host[key] = (calls + 1, total + e - s)

    def rows():
        got = {r["name"]: r for r in daemon.get_json("/api/v1/jobs/mirrors/operators?limit=100000")["rows"]}
        return got if "ProfilerStep*" in got else None
    got = daemon.wait_for("the operator table", rows)
    for name, (calls, total) in host.items():
        assert (got[name]["calls"], us(got[name]["total_us"])) == (calls, total), (name, got[name])
    assert not (mirrors - set(host)) & set(got), sorted(got)
    assert "ProfilerStep#1" not in got
