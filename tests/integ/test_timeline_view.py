# SPDX-License-Identifier: MIT
"""What the dashboard's timeline needs from the API (issue 13 item 6), with a real daemon and
real traces imported by the real `stepscope import`:

- /steps says which steps have spans (`spans`, `?with_spans=1`), so the page opens on one.
- A step's window carries the trace's own thread_name/process_name metadata events (Kineto gives
  them a ts at the start of the trace, which no later step's window contained), so rows are
  labelled by names, not "tid -1107294656".
- A trace without steps (MindSpore's 11_timeline) tells its time range (ranks_detail
  trace_start_us/trace_end_us), and a window over it gives its spans.
"""
import gzip
import json
import pathlib
import subprocess

from conftest import build_dir

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
K5 = DATA / "kineto" / "gpu_5steps_rank0.json.gz"
TL11 = DATA / "mindspore" / "11_timeline"


def stepscope_import(d, path, job):
    r = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import",
                        "--socket", d.socket, "--job", job, "--quiet", str(path)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_steps_with_spans_and_names_in_a_step_window(daemon):
    stepscope_import(daemon, K5, "k5")
    b = "/api/v1/jobs/k5"
    daemon.wait_for("steps", lambda: daemon.get_json(b + "/steps")["total"] == 5)
    daemon.wait_for("spans", lambda: all(r["spans"] > 0 for r in daemon.get_json(
        b + "/steps")["rows"]))
    rows = daemon.get_json(b + "/steps")["rows"]
    assert daemon.get_json(b + "/steps?with_spans=1")["total"] == 5
    # Each step's count is the X events of the trace that start inside it and that live files
    # under steps (every X event of this trace but the python function events).
    with gzip.open(K5, "rt") as f:
        evs = json.load(f)["traceEvents"]
    for r in rows:
        lo, hi = r["start_us"], r["end_us"]
        inside = [e for e in evs if e.get("ph") == "X" and lo <= e["ts"] < hi]
        assert 0 < r["spans"] <= len(inside), r
    # The trace's thread names, all of them, in the window of its last step.
    want = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
            if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert len(want) > 5
    last = rows[-1]["step"]
    doc = daemon.get_json(b + f"/timeline?ranks=0&step={last}")
    got = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"]
           if e.get("ph") == "M" and e["name"] == "thread_name"}
    assert got == want
    # The threads with most spans are named (python's main and backward threads, the CUDA
    # streams); Kineto's trace itself names no other (its pthread-id tids such as -1107294656
    # have no thread_name event), so those keep their id.
    threads = {(e["pid"], e["tid"]) for e in doc["traceEvents"] if e.get("ph") == "X"}
    assert {(4515, 4515), (4515, 25556), (0, 7)} <= threads & set(got)
    # Kineto's own process names come too.
    procs = {e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert "pyper:trainer:0:0" in procs


def test_a_steps_without_spans_says_so(daemon):
    """Steps from step records only: spans 0, and with_spans lists none."""
    from ssclient import Client
    with Client(daemon.socket) as c:
        c.hello("nospans")
        c.send_lines([{"type": "step", "step": s, "begin_us": 1000 * s, "end_us": 1000 * s + 900}
                      for s in range(1, 4)])
        c.wait_ack(3)
    b = "/api/v1/jobs/nospans"
    daemon.wait_for("steps", lambda: daemon.get_json(b + "/steps")["total"] == 3)
    assert [r["spans"] for r in daemon.get_json(b + "/steps")["rows"]] == [0, 0, 0]
    assert daemon.get_json(b + "/steps?with_spans=1") == {"total": 0, "rows": []}


def test_a_trace_without_steps_is_browsed_by_time(daemon):
    # The Ascend timeline (the folder also holds a GPU one, on another clock, which the folder
    # import refuses to mix: test_import_mindspore.py)
    stepscope_import(daemon, TL11 / "ascend_timeline_display_0.json", "tl11")
    job = daemon.wait_for("job", lambda: daemon.job("tl11"))
    b = "/api/v1/jobs/tl11"
    assert daemon.get_json(b + "/steps")["total"] == 0
    rk = daemon.get_json(b)["ranks_detail"][0]
    evs = []
    evs += [e for e in json.loads((TL11 / "ascend_timeline_display_0.json").read_text()) if "ts" in e]
    lo = min(float(e["ts"]) for e in evs)
    hi = max(float(e["ts"]) + float(e.get("dur", 0)) for e in evs)
    # kept to the ns (PROTOCOL.md): the file's float ts end in sub-ns digits
    lo, hi = round(lo, 3), round(hi, 3)
    assert (rk["trace_start_us"], rk["trace_end_us"]) == (lo, hi)
    doc = daemon.get_json(b + "/timeline?ranks=0&start_us=%r&end_us=%r" % (lo, hi))
    assert doc["otherData"]["events"] == job["events"] == len(evs)
    # A window over the first half only gives the events in it.
    mid = (lo + hi) / 2
    doc = daemon.get_json(b + "/timeline?ranks=0&start_us=%r&end_us=%r" % (lo, mid))
    assert doc["otherData"]["events"] == sum(1 for e in evs if float(e["ts"]) <= mid)
