# SPDX-License-Identifier: MIT
"""GET /api/v1/diff with step ranges (?base_steps=A-B&exp_steps=C-D), checked against the peers'
own answers on the same traces with the same steps:

- HTA 0.5.0's trace diff (hta.trace_diff: what TraceDiff.compare_traces computes with
  control_iteration and test_iteration, per category) on the two real H200 runs of tests/data/kineto/cuda_views_h200 (run b: batch
  32 and one more Conv2d+ReLU): per operator (HTA's CPU side) and per kernel (its GPU side) the
  calls and total time of each side and the deltas, and the names added and removed;
- torch 1.13's own key_averages() (calls, total and self CPU time) over the events of those
  steps, on two CPU runs made here by Debian's torch (tests/integ/torch_steps_trace.py);
- each side's step time and breakdown: the mean of that job's /breakdown steps in its range.
"""
import csv
import gzip
import io
import json
import logging
import pathlib
import shutil
import subprocess

import pytest

from conftest import build_dir, clean_env

from hta.trace_diff import DeviceType, LabeledTrace  # noqa: E402 (requirements.txt)

HERE = pathlib.Path(__file__).resolve().parent
DATA = HERE.parents[0] / "data" / "kineto" / "cuda_views_h200"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch 1.13


def ns(v):
    return round(v * 1000)  # the API writes exact microseconds with 3 decimals


def imported(d, tmp, name, path):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", name, str(path)],
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return d.job(name)["id"]


def hta_trace(tmp, label, path, monkeypatch):
    folder = tmp / ("hta-" + label)
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")  # nanoseconds, as stepscope keeps them
    logging.disable(logging.WARNING)
    try:
        return LabeledTrace(label=label, trace_dir=str(folder))
    finally:
        logging.disable(logging.NOTSET)


def hta_rows(control, test, c_iters, t_iters, device, cats):
    """Per name: calls and total ns of each side as HTA's trace diff computes them
    (TraceDiff.compare_traces is LabeledTrace.extract_ops() by rank, iterations and device type,
    then get_ops_summary() per (cat, name), then summed per name), with only the rows of cats:
    HTA's sum per name also merges other categories of the same name (a python_function named
    as a record_function range), and keeps events stepscope's operator and kernel tables leave
    out (python functions, memcpys). ProfilerStep#N rows are summed as ProfilerStep* (torch's
    key_averages() name, stepscope's)."""
    rows = {}
    for k, (lt, iters) in enumerate(((control, c_iters), (test, t_iters))):
        df = lt.get_ops_summary(lt.extract_ops(None, iters, device))
        for _, r in df[df["cat"].isin(cats)].iterrows():
            key = "ProfilerStep*" if r["name"].startswith("ProfilerStep#") else r["name"]
            o = rows.setdefault(key, [0, 0, 0, 0])
            o[k] += int(r["counts"])
            o[2 + k] += round(r["total_duration"] * 1000)
    return rows


def check_bd(daemon, doc, side, job, first, last):
    bd = daemon.get_json(f"/api/v1/jobs/{job}/breakdown")
    steps = [r for r in bd["rows"] if first <= r["step"] <= last]
    s = doc[side]
    assert s["steps"] == len(steps) > 0
    mean = sum(r["total_us"] for r in steps) / len(steps)
    assert abs(s["step_time_us"] - mean) < 1e-3, (s, mean)
    for k, v in s["breakdown"].items():
        assert abs(v - sum(r[k] for r in steps) / len(steps)) < 1e-3, k


def test_diff_steps_equal_hta_trace_diff(daemon, tmp, monkeypatch):
    a = imported(daemon, tmp, "h200_a", DATA / "trace_a.json.gz")
    b = imported(daemon, tmp, "h200_b", DATA / "trace_b.json.gz")
    ca, cb = [2, 3, 4], [3, 4, 5, 6]
    doc = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b&base_steps=2-4&exp_steps=3-6")
    assert doc["base"]["steps_range"] == {"first": 2, "last": 4, "step_spans": 3, "first_step": 2,
                                          "last_step": 4, "spans_read": doc["base"]["steps_range"]
                                          ["spans_read"], "spans_cut": 0}
    assert doc["exp"]["steps_range"]["step_spans"] == 4
    base = hta_trace(tmp, "base", DATA / "trace_a.json.gz", monkeypatch)
    exp = hta_trace(tmp, "exp", DATA / "trace_b.json.gz", monkeypatch)
    for table, device, cats in (
            ("operators", DeviceType.CPU, ["cpu_op", "user_annotation", "cuda_runtime",
                                           "cuda_driver"]),
            ("kernels", DeviceType.GPU, ["kernel"])):
        want = hta_rows(base, exp, ca, cb, device, cats)
        got = {r["name"]: r for r in doc[table]}
        assert set(got) == set(want), (table, set(got) ^ set(want))
        for name, (bc, ec, bt, et) in want.items():
            r = got[name]
            assert (r["base_calls"], r["exp_calls"], r["delta_calls"]) == (bc, ec, ec - bc), r
            assert abs(ns(r["base_total_us"]) - bt) <= 1 and abs(ns(r["exp_total_us"]) - et) <= 1, \
                (r, bt, et)
            assert r["status"] == ("both" if bc and ec else "added" if ec else "removed")
        added = sorted(n for n, v in want.items() if v[0] == 0)
        assert sorted(doc["added"][table]) == added
        assert sorted(doc["removed"][table]) == sorted(n for n, v in want.items() if v[1] == 0)
    assert doc["added"]["kernels"]  # b's extra layer runs kernels a never ran
    conv = next(r for r in doc["operators"] if r["name"] == "aten::conv2d")
    assert conv["base_calls"] == 3 * 2 and conv["exp_calls"] == 4 * 3  # 2 and 3 convs a step
    check_bd(daemon, doc, "base", a, 2, 4)
    check_bd(daemon, doc, "exp", b, 3, 6)

    # one side ranged: the other is every step of its job (HTA's iterations 2..6)
    one = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b&exp_steps=3-6")
    assert one["base"]["steps_range"]["first"] is None and one["base"]["steps_range"]["step_spans"] == 5
    want = hta_rows(base, exp, [2, 3, 4, 5, 6], cb, DeviceType.GPU, ["kernel"])
    assert {r["name"]: [r["base_calls"], r["exp_calls"]] for r in one["kernels"]} == \
        {n: v[:2] for n, v in want.items()}
    # per-side rank, and CSV with the JSON's rows
    r0 = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b&base_steps=2-4&exp_steps=3-6"
                         "&base_rank=0&exp_rank=0")
    assert r0["operators"] == doc["operators"] and r0["base"]["rank"] == 0
    st, hdr, body = daemon.request("/api/v1/diff?base=h200_a&exp=h200_b&base_steps=2-4"
                                   "&exp_steps=3-6&format=csv")
    assert st == 200 and hdr["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [r["name"] for r in rows] == [r["name"] for r in doc["operators"] + doc["kernels"]]
    # and records: the same rows as objects
    recs = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b&base_steps=2-4&exp_steps=3-6"
                           "&format=records")
    assert [(r["table"], r["name"], r["delta_calls"]) for r in recs] == \
        [(r["table"], r["name"], int(r["delta_calls"])) for r in rows]
    # the same job and range on both sides: nothing changes
    same = daemon.get_json("/api/v1/diff?base=h200_b&exp=h200_b&base_steps=3-4&exp_steps=3-4")
    assert not same["added"]["operators"] and not same["removed"]["kernels"]
    assert all(r["delta_calls"] == 0 and r["delta_total_us"] == 0
               for r in same["operators"] + same["kernels"])


def torch_run(tmp, run, ranges):
    out = tmp / f"torch_{run}.json"
    try:
        r = subprocess.run([SYSTEM_PYTHON, str(HERE / "torch_steps_trace.py"), str(out), run]
                           + ranges, capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        pytest.fail(f"{SYSTEM_PYTHON} not found: Debian's python3-torch is needed")
    assert r.returncode == 0, r.stderr[-2000:]
    return out, json.loads(pathlib.Path(str(out) + ".ranges.json").read_text())


def test_diff_steps_equal_torch_key_averages(daemon, tmp):
    pa, ka = torch_run(tmp, "a", ["1-3"])
    pb, kb = torch_run(tmp, "b", ["2-5"])
    imported(daemon, tmp, "cpu_a", pa)
    imported(daemon, tmp, "cpu_b", pb)
    doc = daemon.get_json("/api/v1/diff?base=cpu_a&exp=cpu_b&base_steps=1-3&exp_steps=2-5")
    base, exp = ka["1-3"], kb["2-5"]
    got = {r["name"]: r for r in doc["operators"]}
    assert set(got) == set(base) | set(exp)
    for name, r in got.items():
        for side, want in (("base", base.get(name)), ("exp", exp.get(name))):
            w = want or {"calls": 0, "total_us": 0, "self_us": 0}
            assert r[side + "_calls"] == w["calls"], (name, side, r, w)
            assert ns(r[side + "_total_us"]) == w["total_us"] * 1000, (name, side, r, w)
            assert ns(r[side + "_self_us"]) == w["self_us"] * 1000, (name, side, r, w)
        assert ns(r["delta_self_us"]) == ns(r["exp_self_us"]) - ns(r["base_self_us"])
    assert got["ProfilerStep*"]["base_calls"] == 3 and got["ProfilerStep*"]["exp_calls"] == 4
    assert not doc["kernels"]  # a CPU run
    # the same spans through the summaries' read: names without a cat (legacy torch) once
    # passed memcmp() a NULL pointer (UBSan in CI)
    op = daemon.get_json("/api/v1/jobs/cpu_a/summary/operator?steps=1-3")
    assert op["n_steps"] == 3 and op["rows"]


def test_diff_steps_bad_parameters(daemon, tmp):
    imported(daemon, tmp, "h200_a", DATA / "trace_a.json.gz")
    for path, status, words in [
        ("/api/v1/diff?base=h200_a&exp=h200_a&base_steps=x", 400, "base_steps"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&exp_steps=5-2", 400, "exp_steps"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&base_steps=40-50", 404, "base_steps"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&exp_steps=40", 404, "exp_steps"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&base_steps=2&base_rank=3", 404, "rank"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&exp_rank=3", 404, "rank"),
        ("/api/v1/diff?base=h200_a&exp=nosuch&base_steps=2", 404, 'no job "nosuch"'),
        ("/api/v1/diff?base=h200_a&exp=h200_a&base_steps=2&format=text", 400, "format"),
    ]:
        doc = daemon.get_json(path, status=status)
        assert words in doc["error"]["message"], (path, doc)
    daemon.assert_alive()


def test_diff_steps_window_read_equals_whole_read(daemons, tmp):
    """A ranged diff decodes only its steps' time of each rank, and of the rest only the step
    spans and kernels (a kernel is its launch's step's wherever it runs), counting the other
    spans from the store's scan: its answer is byte for byte the one of a read of the whole
    rank. On gpu_5steps_rank0 (steps 550-554, spans before the first and after the last one)
    with ranges inside it: kernels launched in range that run past the steps' end, a span over
    both edges. ?max_spans= below the rank's stored events makes the daemon read the
    whole rank (as it must when a cut may be needed): both reads run (the debug log says which)
    and answer the same."""
    trace = HERE.parents[0] / "data" / "kineto" / "gpu_5steps_rank0.json.gz"
    ev = json.load(gzip.open(trace))["traceEvents"]
    xs = [e for e in ev if e.get("ph") == "X"]
    step = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in xs
            if e["name"].startswith("ProfilerStep#")}
    lo, hi = step[551][0], step[553][1]
    # the data holds what the window must get right: spans outside it on both sides, a span
    # over both edges (Kineto's "Trace" span: read whole, in no step, as it starts before them),
    # and kernels launched in range that run after its end
    assert min(e["ts"] for e in xs) < lo and max(e["ts"] + e["dur"] for e in xs) > hi
    assert any(e["ts"] < lo and e["ts"] + e["dur"] > hi for e in xs)
    launched = {e["args"]["correlation"] for e in xs if e.get("cat") == "cuda_runtime"
                and lo <= e["ts"] < hi and "correlation" in e.get("args", {})}
    late = [e for e in xs if e.get("cat") == "kernel"
            and e.get("args", {}).get("correlation") in launched and e["ts"] + e["dur"] > hi]
    assert any(e["ts"] > hi for e in late)

    d = daemons("window", config="log_level = debug\n")
    imported(d, tmp, "g5", trace)
    for q in ("base_steps=551-553&exp_steps=554", "base_steps=550&exp_steps=552-553",
              "base_steps=551-553", "base_steps=551-553&exp_steps=554&format=csv"):
        path = "/api/v1/diff?base=g5&exp=g5&" + q
        before = d.stderr().count("steps' window")
        st, _, window = d.request(path)
        assert st == 200, window[:300]
        assert d.stderr().count("steps' window") == before + 2, d.stderr()[-2000:]
        x_spans = len([e for e in xs if e["name"]])
        # every stored event of the rank (metadata and flows too) is more than its X spans
        before = d.stderr().count("read whole")
        st, _, whole = d.request(path + f"&max_spans={x_spans}")
        assert st == 200, whole[:300]
        assert d.stderr().count("read whole") == before + 2, d.stderr()[-2000:]
        assert window == whole, q
        if "csv" not in q:
            doc = json.loads(window)
            assert doc["base"]["steps_range"]["spans_read"] == x_spans
            assert doc["base"]["steps_range"]["spans_cut"] == 0
    d.assert_alive()
