# SPDX-License-Identifier: MIT
"""GET /api/v1/jobs/{job}/breakdown against a real daemon on a real socket.

- Golden: every Kineto trace of ../shared/data/kineto, sent verbatim, gives per step exactly the
  step bounds and category times of an independent Python reference of torch-tb-profiler's
  algorithm (tb_breakdown.py, from peers.md §1.3/§1.5), the same trimmed steps, the same average
  and the same GPU utilisation; every step's categories sum exactly to the step.
- Live: a job whose connection stays open gets new steps in its breakdown as they arrive.
- Paging, CSV and bad parameters.
"""
import csv
import io
import pathlib
import time
from decimal import Decimal

import pytest

import tb_breakdown as tb
from ssclient import Client

DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "kineto"
TRACES = ["gpu_5steps_rank0", "gpu_2steps_sampled_rank0", "rocm_minitoy_3steps",
          "cpu_only_rank34", "cpu_ops_rank_non_gpu"]
CATS = tb.CATS


def base(d, job):
    return "/api/v1/jobs/%d" % d.job(job)["id"]


def ns(v):
    """A microsecond figure of the API (exact decimal) in integer ns."""
    return int(Decimal(str(v)) * 1000)


def settled(d, path, timeout=20.0):
    """The document at path once its span count has stopped moving (live publishes every
    100 ms; everything was acknowledged before this is called)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        doc = d.get_json(path)
        if last is not None and doc["spans"] > 0 and doc["spans"] == last["spans"]:
            return doc
        last = doc
        time.sleep(0.3)
    raise AssertionError(f"{path} did not settle: {last}")


@pytest.mark.parametrize("name", TRACES)
def test_breakdown_equals_tb_reference(daemon, name):
    path = DATA / (name + ".json.gz")
    events = tb.load(path)
    ref = tb.breakdown(events, comm_prefix=True)
    strict = tb.breakdown(events)
    if not strict["departures"]:
        # Nothing stepscope does differently matters here: tb-plugin's own rules agree.
        assert strict == ref
    lines = tb.lines(path)
    with Client(daemon.socket) as c:
        c.hello("bd-" + name)
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)
    doc = settled(daemon, base(daemon, "bd-" + name) + "/breakdown?limit=100000")
    assert doc["rank"] == 0
    assert doc["total"] == len(ref["steps"]) == len(doc["rows"]) > 0
    assert doc["steps_dropped"] == ref["dropped"]
    for got, want in zip(doc["rows"], ref["steps"]):
        assert got["step"] == want["step"]
        assert (ns(got["start_us"]), ns(got["end_us"])) == (want["start"], want["end"])
        assert (ns(got["host_start_us"]), ns(got["host_end_us"])) == (want["host_start"],
                                                                     want["host_end"])
        assert got["device_events"] == want["n_device"]
        assert {c: ns(got[c + "_us"]) for c in CATS} == want["costs"], got["step"]
        # The categories sum exactly to the step.
        assert sum(ns(got[c + "_us"]) for c in CATS) == ns(got["total_us"]) == \
            want["end"] - want["start"]
    for c in CATS:
        assert doc["average"][c + "_us"] * 1000 == pytest.approx(ref["average"][c], abs=1e-3)
    assert doc["average"]["total_us"] * 1000 == pytest.approx(ref["average"]["total"], abs=1e-3)
    assert {g["device"]: g["utilization"] for g in doc["gpus"]} == pytest.approx(ref["gpus"])
    assert doc["window"]["start_us"] == doc["rows"][0]["start_us"]
    assert doc["window"]["end_us"] == doc["rows"][-1]["end_us"]
    assert doc["spans_evicted"] == 0


T0 = 1_000_000  # us


def x(name, cat, ts, dur, pid=1, tid=1, **args):
    e = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": T0 + ts, "dur": dur}
    if args:
        e["args"] = args
    return e


def gpu_step(n, t, kernel_us, loader_us=0):
    """Step n at t: a 1000 us host step with a loader span, one launch, and a kernel on GPU 0
    that runs kernel_us from t + 100."""
    corr = 1000 + n
    ev = [x("ProfilerStep#%d" % n, "user_annotation", t, 1000)]
    if loader_us:
        ev.append(x("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op",
                    t + 1, loader_us))
    ev += [x("aten::mm", "cpu_op", t + 50, 60, **{"External id": corr}),
           x("cudaLaunchKernel", "cuda_runtime", t + 60, 10, correlation=corr,
             **{"External id": corr}),
           x("gemm", "kernel", t + 100, kernel_us, pid=0, tid=7, correlation=corr,
             device=0, **{"External id": corr})]
    return ev


def test_breakdown_live_paging_csv(daemon):
    c = Client(daemon.socket)
    try:
        c.hello("live-bd")
        first = gpu_step(1, 0, 500) + gpu_step(2, 1000, 500)
        c.send_lines(first)
        c.wait_ack(len(first))
        p = base(daemon, "live-bd") + "/breakdown"
        doc = settled(daemon, p)
        # Step 2 launched as many device events as step 1: nothing trimmed.
        assert [r["step"] for r in doc["rows"]] == [1, 2]
        assert doc["rows"][0]["kernel_us"] == 500
        assert doc["gpus"] == [{"device": 0, "busy_us": 1000, "utilization": 0.5}]
        # The same connection keeps sending: the breakdown grows.
        more = gpu_step(3, 2000, 900) + gpu_step(4, 3000, 900)
        c.send_lines(more)
        c.wait_ack(len(first) + len(more))
        daemon.wait_for("4 steps", lambda: daemon.get_json(p)["total"] == 4)
        doc = daemon.get_json(p)
        assert [r["kernel_us"] for r in doc["rows"]] == [500, 500, 900, 900]
        assert doc["average"]["kernel_us"] == 700
        page = daemon.get_json(p + "?offset=1&limit=2")
        assert page["total"] == 4 and [r["step"] for r in page["rows"]] == [2, 3]
        assert daemon.get_json(p + "?rank=0")["total"] == 4
        status, _, body = daemon.request(p + "?format=csv&limit=3")
        assert status == 200
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert [int(r["step"]) for r in rows] == [1, 2, 3]
        for r in rows:
            assert sum(Decimal(r[k + "_us"]) for k in CATS) == Decimal(r["total_us"])
        for bad in ("rank=-2", "limit=0", "offset=x", "format=xml"):
            err = daemon.get_json(p + "?" + bad, status=400)
            assert bad.split("=")[0] in err["error"]["message"]
        daemon.get_json(p + "?rank=3", status=404)
    finally:
        c.close()
