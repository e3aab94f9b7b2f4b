# SPDX-License-Identifier: MIT
"""On-demand capture with real Paddle (CPU) in a child process: stepscope.paddle.attach() serves
a POSTed capture with paddle.profiler.Profiler started at the window's first step and stopped
after its last, the window's events are streamed, the rank's part goes to done, and a start step
that has passed fails with the hook's reason."""
import pathlib
import shutil
import sys

from fwutil import HERE
from test_torch_capture import run_with_capture as torch_run

SCRIPT = HERE / "paddle_capture_train.py"


def run_with_capture(daemon, tmp, job, body, max_s=120):
    res, doc, _ = torch_run(daemon, tmp, job, body, python=sys.executable, script=SCRIPT,
                            max_s=max_s)
    return res, doc


def part(daemon, job, cid):
    return daemon.get_json("/api/v1/jobs/%s/captures/%d" % (job, cid))["ranks"][0]


def test_paddle_capture_three_steps(daemon, tmp):
    job = "paddle-capture"
    stray = pathlib.Path.cwd() / "profiler_log"  # Paddle's default export folder
    shutil.rmtree(stray, ignore_errors=True)
    res, doc = run_with_capture(daemon, tmp, job, {"steps": 3, "what": ["cpu", "shapes"]})
    assert not stray.exists(), "the capture left Paddle's own export in the working directory"
    cap = res["capture"]
    assert cap is not None and cap["id"] == doc["id"] and cap["state"] == "done", res
    assert cap["last_step"] - cap["first_step"] == 2 and cap["events"] > 0
    assert part(daemon, job, doc["id"])["state"] == "done"
    # Paddle's operators of the window reached the daemon (names without Paddle's suffix).
    ops = daemon.wait_for("paddle operators", lambda: [
        r["name"] for r in daemon.get_json("/api/v1/jobs/%s/operators?limit=1000" % job)["rows"]
        if "conv2d" in r["name"]])
    assert all("[" not in n for n in ops), ops


def test_paddle_capture_start_passed(daemon, tmp):
    job = "paddle-late"
    res, doc = run_with_capture(daemon, tmp, job, {"start": 0, "steps": 2}, max_s=10)
    assert res["capture"] is None
    r = daemon.wait_for("failed", lambda: part(daemon, job, doc["id"])["state"] == "failed"
                        and part(daemon, job, doc["id"]))
    assert r["reason"].startswith("step 0 has passed"), r
