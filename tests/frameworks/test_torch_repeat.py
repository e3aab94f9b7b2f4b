# SPDX-License-Identifier: MIT
"""Repeated captures end to end with real PyTorch (Debian's python3-torch 1.13 under
/usr/bin/python3, stepscope.torch.attach()): "steps":2,"every":5,"repeat":3 records three
windows of two steps, five steps apart, each its own capture of one series; a cancel stops the
windows that have not started; bad values are refused with the reason (docs/API.md "Captures")."""
import http.client
import json
import subprocess
import time

from fwutil import HERE, SYSTEM_PYTHON, import_cli, script_env
from test_torch import q, steps_of, torch_available, window_spans  # noqa: F401
from test_torch_capture import post_capture

SCRIPT = HERE / "torch_repeat_train.py"


def post(daemon, path):
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
    try:
        conn.request("POST", path, body="{}", headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, json.loads(r.read())
    finally:
        conn.close()


class Trainer:
    """torch_repeat_train.py on job, ready once a few steps ran; stop() ends it, returns its OUT."""

    def __init__(self, daemon, tmp, job):
        self.out, self.ready, self.stop_file = (tmp / (job + x) for x in (".json", ".ready",
                                                                           ".stop"))
        self.p = subprocess.Popen([SYSTEM_PYTHON, str(SCRIPT), str(self.out), str(self.ready),
                                   str(self.stop_file), "240"],
                                  env=script_env(daemon, job), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not self.ready.exists():
            assert self.p.poll() is None, self.p.communicate()
            assert time.monotonic() < deadline, "the training script never got going"
            time.sleep(0.05)
        daemon.wait_for("the job", lambda: daemon.job(job))

    def stop(self):
        self.stop_file.write_text("stop")
        outs = self.p.communicate(timeout=120)
        assert self.p.returncode == 0, outs
        res = json.loads(self.out.read_text())
        assert res["flushed"] and res["internal_errors"] == 0 and res["dropped"] == 0, res
        return res

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def series_of(daemon, job, series):
    doc = daemon.get_json(f"/api/v1/jobs/{q(job)}/captures")
    return [c for c in doc["captures"] if c["series"] == series]


def all_ended(daemon, job, series):
    caps = series_of(daemon, job, series)
    ended = ("done", "failed", "expired", "cancelled")
    return caps if caps and all(c["state"] in ended for c in caps) else None


def test_three_windows_of_two_steps_every_five(daemon, tmp):
    job = "torch-repeat"
    t = Trainer(daemon, tmp, job)
    try:
        # past capture_max_open (16): 429 naming it, and nothing made
        st, doc = post_capture(daemon, job, {"steps": 2, "every": 5, "repeat": 17})
        assert st == 429 and "capture_max_open" in doc["error"]["message"], doc
        assert "one per window" in doc["error"]["message"], doc
        assert daemon.get_json(f"/api/v1/jobs/{q(job)}/captures")["captures"] == []
        st, doc = post_capture(daemon, job, {"steps": 2, "every": 5, "repeat": 3})
        assert st == 201, doc
        assert (doc["series"], doc["window"], doc["every"], doc["repeat"]) == (doc["id"], 0, 5, 3)
        caps = daemon.wait_for("three windows ended", lambda: all_ended(daemon, job, doc["id"]),
                               timeout=120)
    finally:
        res = t.stop() if t.p.poll() is None else None
        t.kill()
    assert [c["id"] for c in caps] == [doc["id"], doc["id"] + 1, doc["id"] + 2]
    assert [c["window"] for c in caps] == [0, 1, 2]
    assert [c["state"] for c in caps] == ["done"] * 3, caps
    s = caps[0]["ranks"][0]["first_step"]
    assert [(c["ranks"][0]["first_step"], c["ranks"][0]["last_step"]) for c in caps] == \
        [(s, s + 1), (s + 5, s + 6), (s + 10, s + 11)]
    # the collector ran the same three windows, at the same steps
    assert [(w["id"], w["state"], w["first_step"], w["last_step"]) for w in res["windows"]] == \
        [(c["id"], "done", c["ranks"][0]["first_step"], c["ranks"][0]["last_step"])
         for c in caps]
    # every stored span lies in steps s, s+1; s+5, s+6; s+10, s+11, and each holds its step body
    events = sum(w["events"] for w in res["windows"])
    daemon.wait_for("every event", lambda: daemon.job(job)["events"] == events)
    rows = {r["step"]: r for r in steps_of(daemon, job)}
    spans = window_spans(daemon, job)
    assert len(spans) == events

    def step_of(e):
        hits = [n for n, r in rows.items()
                if r["start_us"] <= e["ts"] and e["ts"] + e["dur"] <= r["end_us"]]
        assert len(hits) == 1, (e, hits)
        return hits[0]
    want = [s, s + 1, s + 5, s + 6, s + 10, s + 11]
    assert sorted({step_of(e) for e in spans}) == want
    bodies = [step_of(e) for e in spans if e["name"] == "train_step_body"]
    assert sorted(bodies) == want


def test_cli_every_repeat_wait(daemon, tmp):
    """`stepscope capture JOB --steps 2 --every 5 --repeat 3 --wait`: the three windows' ids,
    then each window's ranks done, exit 0; bad values are the daemon's 400 with the reason."""
    job = "torch-repeat-cli"
    t = Trainer(daemon, tmp, job)
    try:
        def cli(*args):
            return subprocess.run([str(import_cli()), "capture", job, *args, "--socket",
                                   daemon.socket], capture_output=True, text=True, timeout=120)
        r = cli("--steps", "3", "--every", "2", "--repeat", "2")
        assert r.returncode == 1 and "every: must be at least steps (3)" in r.stderr, r
        assert cli("--steps", "2", "--repeat", "101").returncode == 2
        r = cli("--steps", "2", "--every", "5", "--repeat", "3", "--wait", "--timeout", "100")
    finally:
        res = t.stop() if t.p.poll() is None else None
        t.kill()
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    first = int(lines[0])
    assert lines[1:3] == [str(first + 1), str(first + 2)], lines
    for w in range(3):
        i = lines.index(f"window {w + 1} of 3: capture {first + w}")
        assert lines[i + 1].split() == ["RANK", "STATE", "REASON"]
        assert lines[i + 2].split() == ["0", "done", "-"], lines
    caps = series_of(daemon, job, first)
    s = caps[0]["ranks"][0]["first_step"]
    assert [(w["first_step"], w["last_step"]) for w in res["windows"]] == \
        [(s, s + 1), (s + 5, s + 6), (s + 10, s + 11)]


def test_cancel_mid_series_cancels_the_rest(daemon, tmp):
    job = "torch-repeat-cancel"
    t = Trainer(daemon, tmp, job)
    try:
        st, doc = post_capture(daemon, job, {"steps": 2, "every": 150, "repeat": 3})
        assert st == 201, doc
        sid = doc["id"]
        # window 0 done, window 1 placed (sent to the client, which armed it)
        daemon.wait_for("window 0 done, window 1 armed", lambda: (lambda c: c if len(c) == 3 and
                        c[0]["state"] == "done" and c[1]["state"] == "armed" else None)(
                            series_of(daemon, job, sid)), timeout=60)
        st, got = post(daemon, f"/api/v1/jobs/{q(job)}/captures/{sid + 1}/cancel")
        assert st == 200, got
        assert got["series"] == sid and got["cancelled"] == 2
        assert [c["state"] for c in got["captures"]] == ["done", "cancelled", "cancelled"]
        assert all(r["reason"] == "cancelled" for c in got["captures"][1:] for r in c["ranks"])
        # the client dropped window 1: it trains past its steps and never records it
        w1 = got["captures"][1]["ranks"][0]
        daemon.wait_for("the steps of window 1 passed",
                        lambda: len(steps_of(daemon, job)) > w1["last_step"] + 3, timeout=90)
    finally:
        res = t.stop() if t.p.poll() is None else None
        t.kill()
    assert [(w["id"], w["state"]) for w in res["windows"]] == [(sid, "done")]
    caps = series_of(daemon, job, sid)
    assert [c["state"] for c in caps] == ["done", "cancelled", "cancelled"]
    # cancelling again cancels nothing more; an unknown capture is 404
    st, again = post(daemon, f"/api/v1/jobs/{q(job)}/captures/{sid}/cancel")
    assert st == 200 and again["cancelled"] == 0
    st, _ = post(daemon, f"/api/v1/jobs/{q(job)}/captures/{sid + 99}/cancel")
    assert st == 404


def test_bad_every_and_repeat_are_refused_with_the_reason(daemon, tmp):
    job = "torch-repeat-bad"
    t = Trainer(daemon, tmp, job)
    try:
        for body, field, why in [
                ({"steps": 3, "every": 2, "repeat": 2}, "every", "at least steps (3)"),
                ({"steps": 1, "every": 0, "repeat": 2}, "every", "1..1000000"),
                ({"steps": 2, "every": 5, "repeat": 101}, "repeat", "1..100"),
                ({"steps": 2, "every": 5, "repeat": 0}, "repeat", "until cancelled"),
                ({"steps": 2, "repeat": "3"}, "repeat", "1..100")]:
            st, doc = post_capture(daemon, job, body)
            assert st == 400, (body, doc)
            msg = doc["error"]["message"]
            assert msg.startswith(field + ":") and why in msg, (body, msg)
        assert daemon.get_json(f"/api/v1/jobs/{q(job)}/captures")["captures"] == []
    finally:
        t.stop()
        t.kill()


def capture_only(daemon, tmp, job):
    """Three capture windows (3 steps every 10) of attach() on job with no torch.profiler window,
    so no ProfilerStep span: the first captured step s, the nine captured steps, /steps' rows by
    step and the stored spans."""
    t = Trainer(daemon, tmp, job)
    try:
        st, doc = post_capture(daemon, job, {"steps": 3, "every": 10, "repeat": 3})
        assert st == 201, doc
        caps = daemon.wait_for("three windows ended", lambda: all_ended(daemon, job, doc["id"]),
                               timeout=120)
    finally:
        res = t.stop() if t.p.poll() is None else None
        t.kill()
    assert [c["state"] for c in caps] == ["done"] * 3, caps
    s = caps[0]["ranks"][0]["first_step"]
    want = [s, s + 1, s + 2, s + 10, s + 11, s + 12, s + 20, s + 21, s + 22]
    events = sum(w["events"] for w in res["windows"])
    daemon.wait_for("every event", lambda: daemon.job(job)["events"] == events)
    spans = window_spans(daemon, job)
    assert len(spans) == events
    rows = {r["step"]: r for r in steps_of(daemon, job)}
    assert sorted(n for n, r in rows.items() if r["spans"] > 0) == want
    return s, want, rows, spans


def test_breakdown_and_ranged_diff_take_the_captured_steps_records(daemon, tmp):
    """Issue 17 items 1/3/7: on a capture-only rank (capture_only()) /breakdown's steps are the
    captured steps' records as /steps lists them (not one step 0 over the windows and the gaps
    between them), and a ranged diff over one window answers with the spans stored in its
    steps."""
    job = "torch-repeat-bd"
    s, want, rows, spans = capture_only(daemon, tmp, job)
    bd = daemon.get_json(f"/api/v1/jobs/{q(job)}/breakdown")
    assert [r["step"] for r in bd["rows"]] == want, [(r["step"], r["total_us"]) for r in bd["rows"]]
    for r in bd["rows"]:
        st = rows[r["step"]]
        assert abs(r["host_start_us"] - st["start_us"]) <= 1, (r, st)
        assert abs(r["host_end_us"] - st["end_us"]) <= 1, (r, st)
        assert 30000 <= r["step_us"] < 1000000, r  # a step sleeps 30 ms; a window is 3 steps
    assert bd["average"]["total_us"] < 1000000, bd["average"]

    # the ranged diff over each window: 200, its three steps, every host span stored in them
    def stored_in(first, last):
        lo, hi = rows[first]["start_us"], rows[last]["end_us"]
        return [e for e in spans if lo <= e["ts"] < hi]
    for first in (s, s + 10):
        st, _, body = daemon.request(f"/api/v1/diff?base={q(job)}&exp={q(job)}"
                                     f"&base_steps={first}-{first + 2}&exp_steps={s + 20}-{s + 22}")
        assert st == 200, body
        d = json.loads(body)
        assert d["base"]["steps"] == 3 and d["exp"]["steps"] == 3, d["base"]
        assert 30000 <= d["base"]["step_time_us"] < 1000000, d["base"]
        assert sum(r["base_calls"] for r in d["operators"]) == len(stored_in(first, first + 2)) > 0
        assert sum(r["exp_calls"] for r in d["operators"]) == len(stored_in(s + 20, s + 22)) > 0
    # the unranged diff's step time is the breakdown's mean step, not the windows' extent
    d = daemon.get_json(f"/api/v1/diff?base={q(job)}&exp={q(job)}")
    assert d["base"]["steps"] == 9 and d["base"]["step_time_us"] < 1000000, d["base"]


def test_gpu_views_take_the_captured_steps_records(daemon, tmp):
    """Issues 13/17: the GPU views of a capture-only rank (capture_only()) see its captured steps
    as /breakdown does: HTA's last-step cut counts the nine captured steps (step_names) and cuts
    at the last one's start (last_step=exclude) or end (include), as /steps and /breakdown bound
    it, on every per-rank view that reports it; CPU-only torch launches no device event, so every
    device figure is 0 or null (no kernel time, no stream, no launch)."""
    job = "torch-repeat-gpu"
    s, want, rows, _ = capture_only(daemon, tmp, job)
    bd = daemon.get_json(f"/api/v1/jobs/{q(job)}/breakdown")
    assert [r["step"] for r in bd["rows"]] == want
    last = rows[want[-1]]
    assert abs(bd["rows"][-1]["host_start_us"] - last["start_us"]) <= 1
    gpu = f"/api/v1/jobs/{q(job)}/gpu"
    for last_step, cut in (("exclude", last["start_us"]), ("include", last["end_us"])):
        opt = f"last_step={last_step}"
        t = daemon.get_json(f"{gpu}/temporal?{opt}")
        assert len(t["rows"]) == 1, t
        row = t["rows"][0]
        assert (row["rank"], row["step_names"], row["filtered"]) == (0, len(want), True), row
        assert abs(row["cut_us"] - cut) <= 1, (row, last)
        assert (row["device_events"], row["device_events_kept"], row["kernel_us"]) == (0, 0, 0)
        assert row["idle_pct"] is None and row["compute_pct"] is None, row
        for view in ("idle", "queue"):
            d = daemon.get_json(f"{gpu}/{view}?{opt}")
            assert len(d["ranks"]) == 1 and d["rows"] == [], d
            rk = d["ranks"][0]
            assert (rk["rank"], rk["step_names"], rk["filtered"]) == (0, len(want), True), rk
            assert rk["cut_us"] == row["cut_us"], (rk, row)
            assert (rk["device_events"], rk["kept"]) == (0, 0), rk
        o = daemon.get_json(f"{gpu}/overlap?{opt}")
        assert [(r["rank"], r["communication_us"], r["overlap_pct"]) for r in o["rows"]] == \
            [(0, 0, None)], o
        assert daemon.get_json(f"{gpu}/kernel-types?{opt}")["rows"] == []
        assert daemon.get_json(f"{gpu}/launches?{opt}")["total"] == 0
    # the CSV says the same
    st, _, body = daemon.request(f"{gpu}/temporal?format=csv")
    assert st == 200, body
    head, line = body.decode().splitlines()
    csv = dict(zip(head.split(","), line.split(",")))
    assert (csv["step_names"], csv["filtered"]) == (str(len(want)), "true"), csv
