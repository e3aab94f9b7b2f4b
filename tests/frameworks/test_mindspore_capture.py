# SPDX-License-Identifier: MIT
"""On-demand capture with real MindSpore (CPU, PyNative) in a child process: StepscopeCallback
serves a POSTed capture with mindspore.Profiler started at the window's first step, stopped and
analysed after its last; the window's trace_view.json events (MatMul, ... with text times) are
streamed with exact numeric times and the rank's part goes to done. The daemon's operator
tables equal MindSpore's own cpu_op_type_info/cpu_op_detail_info of the window (trace_view's
"Scope Layer" spans are not operators), and MindSpore's profiler folder is kept."""
import csv
import math
import pathlib
import sys

from fwutil import HERE
from test_torch_capture import run_with_capture

SCRIPT = HERE / "mindspore_capture_train.py"


def test_mindspore_capture_two_steps(daemon, tmp):
    job = "ms-capture"
    res, doc, _ = run_with_capture(daemon, tmp, job, {"steps": 2, "what": ["cpu"]},
                                   python=sys.executable, script=SCRIPT)
    assert res["flushed"] and res["internal_errors"] == 0, res
    cap = res["capture"]
    assert cap is not None and cap["id"] == doc["id"] and cap["state"] == "done", res
    assert cap["last_step"] - cap["first_step"] == 1 and cap["events"] > 0
    r = daemon.get_json("/api/v1/jobs/%s/captures/%d" % (job, doc["id"]))["ranks"][0]
    assert r["state"] == "done" and r["reason"] is None
    # MindSpore's host operators of the window are in the daemon's operator table.
    names = daemon.wait_for("mindspore operators", lambda: {
        r["name"] for r in daemon.get_json("/api/v1/jobs/%s/operators?limit=1000" % job)["rows"]}
        & {"MatMul", "Conv2D", "ReLU", "BiasAdd"})
    assert "MatMul" in names or "Conv2D" in names, names
    # trace_view's "Scope Layer" spans (Default, network-WithLossCell, _backbone-Net, Gradients,
    # ...) are the network's scope hierarchy over these operators, not operators: no row, no share
    rows = daemon.get_json("/api/v1/jobs/%s/operators?limit=1000" % job)["rows"]
    scopes = {"Default", "Gradients", "network-WithLossCell", "_backbone-Net", "optimizer-SGD"}
    assert not {r["name"] for r in rows} & scopes, rows
    assert abs(sum(r["percent"] for r in rows) - 100) < 0.01, rows
    # ... and never a step's FP or BP point
    pts = daemon.get_json("/api/v1/jobs/%s/step-trace" % job)["points"]
    assert pts["fp_start"] not in scopes and pts["bp_end"] not in scopes, pts

    # MindSpore's profiler output is the user's: kept, and named in the capture
    out = pathlib.Path(cap["output_dir"])
    assert out.parent == tmp and out.name.startswith("stepscope-mindspore-"), cap
    fw = next(out.glob("*_ascend_ms/FRAMEWORK"))
    # the window's operators as MindSpore's own tables count them: by type and by name
    types = list(csv.DictReader(open(fw / "cpu_op_type_info_0.csv")))
    by_type = daemon.get_json("/api/v1/jobs/%s/operators?group=type&limit=1000" % job)["rows"]
    assert len(types) > 3
    check_rows(by_type, types, "op_type", "type_occurrences", "total_compute_time", "avg_time(ms)")
    percent = {r["name"]: r["percent"] for r in by_type}
    for t in types:  # MindSpore's percent is a fraction of the operators' total
        assert math.isclose(percent[t["op_type"]], float(t["percent"]) * 100,
                            rel_tol=1e-4, abs_tol=1e-4), (t, percent)
    detail = list(csv.DictReader(open(fw / "cpu_op_detail_info_0.csv")))
    check_rows(rows, detail, "full_op_name", "op_occurrences", "op_total_time(ms)",
               "op_avg_time(ms)")

    # stopping and analysing MindSpore's profiler (about a second) is the capture's cost, not the
    # next step's data loading: the next step starts after it
    stop_us = cap["stop_ns"] / 1000
    assert stop_us > 100_000, cap
    rows = {r["step"]: r for r in daemon.get_json("/api/v1/jobs/%s/steps?limit=1000" % job)["rows"]}
    last, after = rows[cap["last_step"]], rows[cap["last_step"] + 1]
    assert after["interval_us"] < stop_us / 4, (cap, after)
    assert after["start_us"] - last["end_us"] >= stop_us * 0.9, (cap, last, after)

    # the window's steps take FP/BP points from their spans ("trace"), the others from their
    # records' phases: the average says how many of each it mixes, and ?source= keeps to one
    by_source = {}
    for r in rows.values():
        by_source[r["source"]] = by_source.get(r["source"], 0) + 1
    assert by_source.get("trace", 0) >= 1 and by_source.get("phases", 0) >= 1, by_source
    doc = daemon.get_json("/api/v1/jobs/%s/step-trace" % job)
    assert doc["sources"] == {"trace": by_source["trace"], "phases": by_source["phases"]}, doc
    assert doc["n_steps"] == by_source["trace"] + by_source["phases"], doc
    for src, other in (("trace", "phases"), ("phases", "trace")):
        doc = daemon.get_json("/api/v1/jobs/%s/step-trace?source=%s" % (job, src))
        steps = [r for r in rows.values() if r["source"] == src]
        assert doc["sources"] == {src: len(steps), other: 0} and doc["n_steps"] == len(steps), doc
        assert doc["points"]["source"] == src, doc
        mean_tail = sum(r["tail_us"] for r in steps) / len(steps)
        assert math.isclose(doc["tail_us"], mean_tail, rel_tol=1e-3, abs_tol=1), (doc, steps)
    st, _, body = daemon.request("/api/v1/jobs/%s/step-trace?source=both" % job)
    assert st == 400 and b"source: trace or phases" in body, body


def check_rows(rows, table, name, calls, total_ms, avg_ms):
    """The daemon's rows are the rows of MindSpore's table (one each, by name), with its calls,
    total and average (MindSpore prints 6 significant digits)."""
    got = {r["name"]: r for r in rows}
    assert len(got) == len(rows) and set(got) == {t[name] for t in table}, (sorted(got), table)
    for t in table:
        r = got[t[name]]
        assert r["calls"] == int(t[calls]), (t, r)
        assert math.isclose(r["total_us"], float(t[total_ms]) * 1000,
                            rel_tol=1e-5, abs_tol=2e-3), (t, r)
        assert math.isclose(r["avg_us"], float(t[avg_ms]) * 1000,
                            rel_tol=1e-5, abs_tol=2e-3), (t, r)
