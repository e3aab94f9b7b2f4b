# SPDX-License-Identifier: MIT
"""On-demand captures against a real daemon: POST /api/v1/jobs/{job}/captures, the request line
on the ingest connection, the clients' {"type":"capture"} reports, and the per-rank states that
GET lists (docs/API.md "Captures", docs/PROTOCOL.md section 6)."""
import http.client
import json
import pathlib
import signal
import socket
import subprocess
import time
import urllib.parse

from conftest import build_dir, clean_env
from ssclient import Client

CAPS = ["capture"]
KINETO = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"


def post(daemon, job, body, ctype="application/json", path=None, extra=None):
    """POSTs body (an object is JSON-encoded, bytes go as they are). Returns (status, doc)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
    try:
        headers = dict(extra or {}, **{"Content-Length": str(len(data))})
        if ctype is not None:
            headers["Content-Type"] = ctype
        url = path or "/api/v1/jobs/%s/captures" % urllib.parse.quote(job, safe="")
        conn.request("POST", url, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def captures(daemon, job):
    return daemon.get_json("/api/v1/jobs/%s/captures" % job)["captures"]


def capture(daemon, job, cid):
    return daemon.get_json("/api/v1/jobs/%s/captures/%d" % (job, cid))


def rank_state(daemon, job, cid, rank):
    for r in capture(daemon, job, cid)["ranks"]:
        if r["rank"] == rank:
            return r
    return None


def next_request(client, timeout=10):
    """Reads lines until a capture request arrives; returns its payload."""
    while True:
        msg = client.read_message(timeout=timeout)
        assert msg is not None, "connection closed before a capture request"
        if "capture" in msg:
            return msg["capture"]


def connect(daemon, job, rank=0, world_size=1, capable=True):
    c = Client(daemon.socket)
    extra = {"capabilities": CAPS} if capable else {}
    c.hello(job, rank=rank, world_size=world_size, **extra)
    daemon.wait_for("job " + job, lambda: daemon.job(job))
    return c


def report(client, cid, state, reason=None):
    rec = {"type": "capture", "id": cid, "state": state}
    if reason is not None:
        rec["reason"] = reason
    client.send_lines([rec])
    return client.wait_ack(client.welcome["next_seq"] + client.lines_sent - 1)


def test_capture_goes_pending_armed_recording_done(daemon):
    c = connect(daemon, "cap")
    st, doc = post(daemon, "cap", {"steps": 3, "start": "next", "what": ["cpu", "shapes"]})
    assert st == 201, doc
    cid = doc["id"]
    assert cid >= 1 and doc["steps"] == 3 and doc["start"] == "next"
    assert doc["what"] == ["cpu", "shapes"] and doc["all_ranks"] is True
    assert [(r["rank"], r["state"]) for r in doc["ranks"]] == [(0, "pending")]
    req = next_request(c)
    assert req == {"id": cid, "start_step": None, "steps": 3, "what": ["cpu", "shapes"]}
    assert capture(daemon, "cap", cid)["state"] == "pending"
    for state in ("armed", "recording", "done"):
        report(c, cid, state)
        got = rank_state(daemon, "cap", cid, 0)
        assert got["state"] == state and got["reason"] is None
        assert capture(daemon, "cap", cid)["state"] == state
    # A part that ended stays as it ended.
    report(c, cid, "failed", "too late")
    assert rank_state(daemon, "cap", cid, 0)["state"] == "done"
    assert [x["id"] for x in captures(daemon, "cap")] == [cid]
    # The reports were acked like records and stored nothing: no error, no event.
    assert c.errors == []
    assert daemon.job("cap")["events"] == 0
    c.close()


def test_failed_report_keeps_the_reason(daemon):
    c = connect(daemon, "capf")
    st, doc = post(daemon, "capf", {"steps": 1})
    assert st == 201
    cid = next_request(c)["id"]
    report(c, cid, "armed")
    report(c, cid, "failed", "RuntimeError: profiler already running")
    r = rank_state(daemon, "capf", cid, 0)
    assert r["state"] == "failed" and r["reason"] == "RuntimeError: profiler already running"
    assert capture(daemon, "capf", cid)["state"] == "failed"
    # A long reason is cut to 256 bytes, on a character boundary.
    st, doc = post(daemon, "capf", {"steps": 1})
    cid = next_request(c)["id"]
    report(c, cid, "failed", "\u00e9" * 200)
    assert rank_state(daemon, "capf", cid, 0)["reason"] == "\u00e9" * 128
    c.close()


def test_start_step_and_mindspore_form(daemon):
    c = connect(daemon, "ms")
    st, doc = post(daemon, "ms", {"start_step": 10, "stop_step": 14})
    assert st == 201, doc
    assert doc["start"] == 10 and doc["steps"] == 5 and doc["what"] == ["cpu"]
    req = next_request(c)
    assert req["start_step"] == 10 and req["steps"] == 5
    st, doc = post(daemon, "ms", {"start": 200, "steps": 2, "ranks": [0]})
    assert st == 201 and doc["start"] == 200 and doc["all_ranks"] is False
    req = next_request(c)
    assert req["start_step"] == 200 and req["steps"] == 2
    c.close()


def test_bad_bodies_are_400_naming_the_field(daemon):
    c = connect(daemon, "bad")
    cases = [
        ({"steps": 0}, "steps"),
        ({"steps": 1001}, "steps"),
        ({"steps": "3"}, "steps"),
        ({"steps": 2.5}, "steps"),
        ({"start": "later"}, "start"),
        ({"start": -1}, "start"),
        ({"ranks": "all"}, "ranks"),
        ({"ranks": [-1]}, "ranks"),
        ({"ranks": [[0]]}, "ranks"),
        ({"ranks": []}, "ranks"),
        ({"what": ["cpu", "gpu-magic"]}, "what"),
        ({"what": "cpu"}, "what"),
        ({"what": []}, "what"),
        ({"start_step": 5}, "stop_step"),
        ({"start_step": 5, "stop_step": 4}, "stop_step"),
        ({"start_step": 5, "stop_step": 9, "steps": 2}, "start_step"),
        (b"{\"steps\":3", "body"),
        (b"[1,2]", "body"),
        (b"", "body"),
        (b"{\"steps\":3}{}", "body"),
        (b"{\"what\":[\"\\ud800\"]}", "body"),
    ]
    for body, field in cases:
        st, doc = post(daemon, "bad", body)
        assert st == 400, (body, st, doc)
        assert doc["error"]["code"] == "bad_request"
        assert doc["error"]["message"].startswith(field + ":"), (body, doc)
    # No capture was made by any of them.
    assert captures(daemon, "bad") == []
    assert c.errors == []
    c.close()


def test_http_guards(daemon):
    c = connect(daemon, "guard")
    st, doc = post(daemon, "guard", {"steps": 1}, ctype="text/plain")
    assert st == 415 and doc["error"]["code"] == "unsupported_media_type"
    st, doc = post(daemon, "guard", {"steps": 1}, ctype=None)
    assert st == 415
    st, doc = post(daemon, "guard", {"steps": 1}, ctype="application/x-www-form-urlencoded")
    assert st == 415
    big = b"{\"what\":[" + b"\"cpu\"," * 4000 + b"\"cpu\"]}"
    st, doc = post(daemon, "guard", big)
    assert st == 413 and doc["error"]["code"] == "body_too_large"
    st, doc = post(daemon, "nosuchjob", {"steps": 1})
    assert st == 404
    st, doc = post(daemon, "guard", {"steps": 1}, path="/api/v1/jobs/guard/steps")
    assert st == 405
    st, doc = post(daemon, "guard", {"steps": 1}, path="/api/v1/jobs")
    assert st == 405
    st, _, _ = daemon.request("/api/v1/jobs/guard/captures", method="DELETE")
    assert st == 405
    st, _, _ = daemon.request("/api/v1/jobs/guard/captures/999")
    assert st == 404
    st, _, _ = daemon.request("/api/v1/jobs/nosuchjob/captures")
    assert st == 404
    # A body sent in chunks past the cap (no Content-Length) is refused too.
    s = socket.create_connection((daemon.host, daemon.port), timeout=30)
    s.sendall(b"POST /api/v1/jobs/guard/captures HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 8192
    for _ in range(3):
        s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    s.sendall(b"0\r\n\r\n")
    reply = s.recv(4096)
    s.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:100]
    # And a well-formed one still works afterwards.
    st, doc = post(daemon, "guard", {"steps": 1})
    assert st == 201
    c.close()


def test_client_without_capability_fails_its_part(daemon):
    # A job whose only session cannot capture: refused (409), with the reason.
    old = connect(daemon, "old", capable=False)
    st, doc = post(daemon, "old", {"steps": 2})
    assert st == 409, doc
    assert doc["error"]["code"] == "no_live_session"
    assert "capability" in doc["error"]["message"]
    assert captures(daemon, "old") == []
    # Beside a rank that can, the one that cannot fails its part.
    new = connect(daemon, "old", rank=1, world_size=2)
    st, doc = post(daemon, "old", {"steps": 2})
    assert st == 201, doc
    cid = doc["id"]
    assert next_request(new)["id"] == cid
    daemon.wait_for("failed part",
                    lambda: rank_state(daemon, "old", cid, 0)["state"] == "failed")
    assert rank_state(daemon, "old", cid, 0)["reason"] == "client cannot capture"
    # It never got a request: the only line it may read is nothing at all.
    old.send_lines([{"type": "step", "step": 0, "begin_us": 1, "end_us": 2}])
    old.wait_ack(old.welcome["next_seq"] + 1)
    assert old.others == []
    old.close()
    new.close()


def test_ended_and_imported_jobs_refuse_captures(daemon, tmp):
    """No session could ever serve these: 409 with the reason, nothing kept, and counted."""
    c = connect(daemon, "ended")
    c.send_lines([{"type": "step", "step": 0, "begin_us": 1, "end_us": 2}])
    c.wait_ack(c.welcome["next_seq"] + 1)
    c.close()
    daemon.wait_for("ended", lambda: not daemon.job("ended")["live"])
    before = daemon.stats()["captures"]["refused"]
    st, doc = post(daemon, "ended", {"steps": 3})
    assert st == 409, doc
    assert doc["error"]["code"] == "no_live_session"
    assert "no session of this job is connected" in doc["error"]["message"]
    # Named ranks that are not connected: the same.
    st, doc = post(daemon, "ended", {"steps": 3, "ranks": [0, 5]})
    assert st == 409 and "those ranks" in doc["error"]["message"]
    assert captures(daemon, "ended") == []
    # An imported trace (a real Kineto file through `stepscope import`).
    env = clean_env(tmp)
    r = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import",
                        "--socket", str(daemon.socket), "--job", "imported", "--quiet",
                        str(KINETO / "cpu_only_rank34.json.gz")], env=env, capture_output=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    st, doc = post(daemon, "imported", {"steps": 1})
    assert st == 409 and doc["error"]["code"] == "no_live_session", doc
    assert captures(daemon, "imported") == []
    assert daemon.stats()["captures"]["refused"] == before + 3


def made_then_refused(daemon, job, n):
    """Makes n one-step captures of job (each 201); the next answers 429 too_many_captures.
    Returns (the n ids, the refusal's message)."""
    ids = []
    for _ in range(n):
        st, doc = post(daemon, job, {"steps": 1})
        assert st == 201, doc
        ids.append(doc["id"])
    st, doc = post(daemon, job, {"steps": 1})
    assert st == 429 and doc["error"]["code"] == "too_many_captures", doc
    return ids, doc["error"]["message"]


def test_captures_per_job_are_capped(daemons):
    d = daemons("cap", args=["--capture-max-open", "3"])
    c = connect(d, "many")
    ids, message = made_then_refused(d, "many", 3)
    assert "3 captures that have not ended" in message
    assert "capture_max_open" in message
    assert [x["id"] for x in captures(d, "many")] == ids
    assert d.stats()["captures"]["refused"] == 1
    # Another job has its own allowance; an ended capture frees a place.
    other = connect(d, "other")
    assert post(d, "other", {"steps": 1})[0] == 201
    for cid in ids:
        assert next_request(c)["id"] == cid
    report(c, ids[0], "done")
    st, doc = post(d, "many", {"steps": 1})
    assert st == 201, doc
    c.close()
    other.close()


def test_captures_kept_per_job_are_bounded(daemons):
    """Issue 18, item 8: beside the open ones, the captures a job keeps were bounded only by
    CAPTURE_MAX (100 000) for the whole daemon, kept across restarts, past which every new capture
    of every job was refused for good. Now a job keeps capture_max_kept (1 000; 3 here): its
    oldest ended capture is forgotten for a new one, in the store too; while none has ended, a new
    one is refused (429) naming the option."""
    d = daemons("kept", args=["--capture-max-kept", "3"])
    c = connect(d, "kept")
    ids, message = made_then_refused(d, "kept", 3)
    assert "capture_max_kept" in message, message
    for cid in ids:
        assert next_request(c)["id"] == cid
    report(c, ids[1], "done")
    st, doc = post(d, "kept", {"steps": 1})
    assert st == 201, doc
    kept = [ids[0], ids[2], doc["id"]]
    assert [x["id"] for x in captures(d, "kept")] == kept
    st, _, _ = d.request("/api/v1/jobs/kept/captures/%d" % ids[1])
    assert st == 404
    assert d.stats()["captures"]["refused"] == 1
    c.close()
    d.stop()
    d.start()
    assert [x["id"] for x in captures(d, "kept")] == kept  # forgotten in the store as well


def test_pending_capture_whose_session_ends_expires(daemons):
    d = daemons("exp", args=["--capture-expire-s", "1"])
    c = connect(d, "gone-pending", world_size=2)
    st, doc = post(d, "gone-pending", {"steps": 2, "ranks": [0, 1]})
    assert st == 201, doc
    cid = doc["id"]
    assert next_request(c)["id"] == cid
    t0 = time.monotonic()
    c.close()  # never armed; rank 1 never connected
    d.wait_for("expired", lambda: capture(d, "gone-pending", cid)["state"] == "expired")
    assert time.monotonic() - t0 < 5
    parts = {p["rank"]: p for p in capture(d, "gone-pending", cid)["ranks"]}
    assert parts[0]["state"] == "expired" and parts[1]["state"] == "expired"
    assert parts[0]["reason"].startswith("no session of rank 0 took it within 1 s")
    assert d.stats()["captures"]["expired"] == 2
    # A client that stays connected but never arms expires too, with that reason.
    q = connect(d, "silent")
    st, doc = post(d, "silent", {"steps": 1})
    assert next_request(q)["id"] == doc["id"]
    d.wait_for("expired", lambda: capture(d, "silent", doc["id"])["state"] == "expired")
    assert capture(d, "silent", doc["id"])["ranks"][0]["reason"] == (
        "the client did not arm it within 1 s of the request")
    # An armed part does not expire: it ends with its session.
    st, doc = post(d, "silent", {"steps": 1})
    assert next_request(q)["id"] == doc["id"]
    report(q, doc["id"], "armed")
    time.sleep(1.5)
    assert capture(d, "silent", doc["id"])["state"] == "armed"
    q.close()
    # The expired state is stored: it survives a restart.
    keep = captures(d, "gone-pending")
    d.stop(signal.SIGTERM)
    d.start()
    assert captures(d, "gone-pending") == keep


def test_ranks_that_connect_later_get_the_request(daemon):
    r0 = connect(daemon, "late", rank=0, world_size=4)
    st, doc = post(daemon, "late", {"ranks": [0, 3], "steps": 2})
    assert st == 201
    cid = doc["id"]
    assert [(r["rank"], r["state"]) for r in doc["ranks"]] == [(0, "pending"), (3, "pending")]
    assert next_request(r0)["id"] == cid
    # Rank 3 is not connected: its part waits.
    report(r0, cid, "armed")
    assert rank_state(daemon, "late", cid, 3)["state"] == "pending"
    assert capture(daemon, "late", cid)["state"] == "armed"
    r3 = Client(daemon.socket)
    r3.hello("late", rank=3, world_size=4, capabilities=CAPS)
    assert next_request(r3)["id"] == cid
    report(r3, cid, "done")
    report(r0, cid, "done")
    assert capture(daemon, "late", cid)["state"] == "done"
    # Rank 1 was not asked: a report from it changes nothing.
    r1 = Client(daemon.socket)
    r1.hello("late", rank=1, world_size=4, capabilities=CAPS)
    report(r1, cid, "done")
    assert [r["rank"] for r in capture(daemon, "late", cid)["ranks"]] == [0, 3]
    for c in (r0, r1, r3):
        c.close()


def test_all_ranks_takes_ranks_connecting_while_pending(daemon):
    r0 = connect(daemon, "allr", rank=0, world_size=2)
    st, doc = post(daemon, "allr", {"steps": 1})
    assert st == 201 and [r["rank"] for r in doc["ranks"]] == [0]
    cid = doc["id"]
    r1 = Client(daemon.socket)
    r1.hello("allr", rank=1, world_size=2, capabilities=CAPS)
    assert next_request(r1)["id"] == cid
    assert [r["rank"] for r in capture(daemon, "allr", cid)["ranks"]] == [0, 1]
    r0.close()
    r1.close()


def test_disconnect_while_recording_fails_the_part(daemon):
    c = connect(daemon, "gone")
    st, doc = post(daemon, "gone", {"steps": 5})
    cid = next_request(c)["id"]
    report(c, cid, "recording")
    c.close()
    daemon.wait_for("failed part",
                    lambda: rank_state(daemon, "gone", cid, 0)["state"] == "failed")
    assert rank_state(daemon, "gone", cid, 0)["reason"] == "client disconnected"


def test_request_sent_but_not_armed_is_resent_on_reconnect(daemon):
    c = connect(daemon, "again")
    st, doc = post(daemon, "again", {"steps": 1})
    cid = next_request(c)["id"]
    c.close()
    c2 = connect(daemon, "again")
    assert next_request(c2)["id"] == cid
    c2.close()


def test_restart_keeps_the_list(daemon):
    c = connect(daemon, "keep", world_size=2)
    st, a = post(daemon, "keep", {"steps": 3, "what": ["cpu", "stack", "memory"]})
    st, b = post(daemon, "keep", {"start_step": 7, "stop_step": 8, "ranks": [0, 1]})
    assert next_request(c)["id"] == a["id"]
    assert next_request(c)["id"] == b["id"]
    report(c, a["id"], "done")
    report(c, b["id"], "failed", "no such step")
    before = captures(daemon, "keep")
    c.close()
    daemon.restart()  # kill -9: what was acked survives
    after = captures(daemon, "keep")
    assert after == before
    assert [x["state"] for x in after] == ["done", "failed"]
    # New captures (for a rank that connected again) take new ids.
    c = connect(daemon, "keep", world_size=2)
    st, doc = post(daemon, "keep", {"steps": 1})
    assert st == 201 and doc["id"] > b["id"]
    c.close()


def test_malformed_capture_reports_are_invalid_lines(daemon):
    c = connect(daemon, "rep")
    c.send_lines([{"type": "capture", "id": 1, "state": "exploded"},
                  {"type": "capture", "state": "done"},
                  {"type": "capture", "id": 1, "state": "done", "reason": 5}])
    c.wait_ack(c.welcome["next_seq"] + 3)
    assert [e["code"] for e in c.errors] == ["invalid", "invalid", "invalid"]
    # A report on a capture that does not exist is acked and ignored.
    report(c, 999, "done")
    assert captures(daemon, "rep") == []
    c.close()


def python_client(daemon, job):
    """The stdlib-only Python collector (collectors/python), in this process."""
    import pathlib
    import sys
    path = str(pathlib.Path(__file__).resolve().parents[2] / "collectors" / "python")
    if path not in sys.path:
        sys.path.insert(0, path)
    from stepscope import Client
    return Client(socket=daemon.socket, job=job, rank=0, world_size=1)


def test_python_client_hands_requests_to_its_callback(daemon):
    import threading
    c = python_client(daemon, "py")
    got = []
    seen = threading.Event()

    def on_capture(req):
        got.append(req)
        c.capture_state(req["id"], "armed")
        seen.set()
    c.on_capture(on_capture)
    c.queue("q", 1)
    assert c.flush(10)
    daemon.wait_for("job py", lambda: daemon.job("py"))
    st, doc = post(daemon, "py", {"start": 12, "steps": 4, "what": ["cpu", "memory"]})
    assert st == 201
    assert seen.wait(10)
    assert got == [{"id": doc["id"], "start_step": 12, "steps": 4, "what": ["cpu", "memory"]}]
    c.capture_state(doc["id"], "failed", "x" * 1000)
    assert c.flush(10)
    r = rank_state(daemon, "py", doc["id"], 0)
    assert r["state"] == "failed" and r["reason"] == "x" * 256  # the client cuts it to 256 bytes
    c.close()


def test_python_client_without_a_handler_answers_failed(daemon):
    c = python_client(daemon, "pynone")
    c.queue("q", 1)
    assert c.flush(10)
    daemon.wait_for("job pynone", lambda: daemon.job("pynone"))
    st, doc = post(daemon, "pynone", {"steps": 1})
    assert st == 201
    daemon.wait_for("failed part",
                    lambda: rank_state(daemon, "pynone", doc["id"], 0)["state"] == "failed")
    assert rank_state(daemon, "pynone", doc["id"], 0)["reason"].startswith(
        "no capture handler in this process")
    c.close()


def test_auth_token_guards_the_post(daemons):
    token = "capture-token-0123456789abcdef"
    d = daemons("tok", args=["--auth-token", token])
    c = Client(d.socket)
    c.hello("sec", capabilities=CAPS)
    c.send_lines([{"type": "step", "step": 0, "begin_us": 1, "end_us": 2}])
    c.wait_ack(c.welcome["next_seq"] + 1)
    for extra in ({}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}):
        st, doc = post(d, "sec", {"steps": 1}, extra=extra)
        assert st == 401 and doc["error"]["code"] == "unauthorized"
    st, doc = post(d, "sec", {"steps": 1}, extra={"Authorization": "Bearer " + token})
    assert st == 201, doc
    assert next_request(c)["id"] == doc["id"]
    c.close()
