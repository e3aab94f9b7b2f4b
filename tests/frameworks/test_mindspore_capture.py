# SPDX-License-Identifier: MIT
"""On-demand capture with real MindSpore (CPU, PyNative) in a child process: StepscopeCallback
serves a POSTed capture with mindspore.Profiler started at the window's first step, stopped and
analysed after its last; the window's trace_view.json events (MatMul, ... with text times) are
streamed with exact numeric times and the rank's part goes to done."""
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
