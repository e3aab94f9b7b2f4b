# SPDX-License-Identifier: MIT
"""On-demand capture end to end with real PyTorch (Debian's python3-torch 1.13 under
/usr/bin/python3): a training loop under stepscope.torch.attach(), a POST of a 3-step capture
starting at the next step, and the daemon's operator table of the job compared with torch's own
key_averages() of the profiler window the attachment ran."""
import json
import subprocess
import time

from fwutil import HERE, SYSTEM_PYTHON, script_env
from test_torch import (check_no_negative_stage, compare_with_key_averages, operators_of, q,  # noqa: F401
                        steps_of, torch_available, window_spans)

SCRIPT = HERE / "torch_capture_train.py"


def post_capture(daemon, job, body):
    import http.client
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
    try:
        conn.request("POST", f"/api/v1/jobs/{q(job)}/captures", body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


def run_with_capture(daemon, tmp, job, body, python=SYSTEM_PYTHON, script=SCRIPT, max_s=120):
    """Runs script (OUT.json READY_FILE MAX_SECONDS) under python, POSTs body once it is ready;
    returns its OUT.json, the POST's answer and the job's step count before the POST."""
    out, ready = tmp / (job + ".json"), tmp / (job + ".ready")
    p = subprocess.Popen([python, str(script), str(out), str(ready), str(max_s)],
                         env=script_env(daemon, job), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the training script never got going"
            time.sleep(0.05)
        daemon.wait_for("the job", lambda: daemon.job(job))
        before = len(steps_of(daemon, job))
        st, doc = post_capture(daemon, job, body)
        assert st == 201, doc
        outs = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, outs
    res = json.loads(out.read_text())
    assert res["flushed"] and res["internal_errors"] == 0 and res["dropped"] == 0, res
    return res, doc, before


def test_capture_three_steps_from_next(daemon, tmp):
    job = "torch-capture"
    res, doc, before = run_with_capture(daemon, tmp, job,
                                        {"steps": 3, "start": "next", "what": ["cpu", "shapes"]})
    cap = res["capture"]
    assert cap is not None, "the attachment never ran the capture"
    assert cap["id"] == doc["id"] and cap["state"] == "done"
    assert cap["what"] == ["cpu", "shapes"]
    # "next": a step that began after the request, and exactly 3 of them
    assert cap["first_step"] >= before - 1
    assert cap["last_step"] - cap["first_step"] == 2
    # the daemon shows the rank's part done
    got = daemon.wait_for("capture done", lambda: (lambda c: c if c["state"] == "done" else None)(
        daemon.get_json(f"/api/v1/jobs/{q(job)}/captures/{doc['id']}")))
    assert [(r["rank"], r["state"], r["reason"]) for r in got["ranks"]] == [(0, "done", None)]
    # the operator table holds exactly the window torch profiled: its own key_averages()
    daemon.wait_for("every event", lambda: daemon.job(job)["events"] == cap["events"])
    table = daemon.wait_for("operators", lambda: operators_of(daemon, job))
    compare_with_key_averages(table, cap["averages"], "captured window")
    assert table["train_step_body"]["calls"] == 3
    assert table["aten::conv2d"]["calls"] == 3
    # the loop's steps kept flowing around the capture
    assert len(steps_of(daemon, job)) == res["recorded"] > cap["last_step"]
    check_spans_in_captured_steps(daemon, job, cap)


def check_spans_in_captured_steps(daemon, job, cap):
    """The steps the collector reports are those whose spans the daemon stored: every span of the
    window lies inside steps first_step..last_step, each of them holds the window's per-step
    range (train_step_body) and takes its points from the trace (the dashboard's link to the
    captured steps opens them); no stage is negative on any step."""
    rows = steps_of(daemon, job)
    first, last = cap["first_step"], cap["last_step"]
    by_step = {r["step"]: r for r in rows}
    lo, hi = by_step[first]["start_us"], by_step[last]["end_us"]
    spans = window_spans(daemon, job)
    assert len(spans) == cap["events"]
    outside = [e for e in spans if not (lo <= e["ts"] and e["ts"] + e["dur"] <= hi)]
    assert not outside, (first, last, lo, hi, outside[:3])
    bodies = sorted((e for e in spans if e["name"] == "train_step_body"), key=lambda e: e["ts"])
    assert len(bodies) == last - first + 1
    for n, e in zip(range(first, last + 1), bodies):
        r = by_step[n]
        assert r["start_us"] <= e["ts"] and e["ts"] + e["dur"] <= r["end_us"], (n, e, r)
        assert r["source"] == "trace", r
        doc = daemon.get_json(f"/api/v1/jobs/{q(job)}/timeline?step={n}")
        assert any(x.get("name") == "train_step_body" for x in doc["traceEvents"]), n
    check_no_negative_stage(daemon, job, rows)


def test_capture_at_a_step_number_with_the_mindspore_form(daemon, tmp):
    """{start_step, stop_step}: the window is exactly those steps (inclusive)."""
    job = "torch-capture-at"
    res, doc, before = run_with_capture(daemon, tmp, job, {"start_step": 300, "stop_step": 301,
                                                           "ranks": [0]})
    cap = res["capture"]
    assert cap["state"] == "done" and cap["first_step"] == 300 and cap["last_step"] == 301
    table = daemon.wait_for("operators", lambda: operators_of(daemon, job))
    compare_with_key_averages(table, cap["averages"], "captured window")
    assert table["train_step_body"]["calls"] == 2
    check_spans_in_captured_steps(daemon, job, cap)
