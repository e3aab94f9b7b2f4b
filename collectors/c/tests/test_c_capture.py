# SPDX-License-Identifier: MIT
"""libstepscope's captures against the real stepscoped (docs/C_CLIENT.md "Captures"): a program
with a capture callback (tests/capture_client.c) gets the request the API created, reports armed,
recording and done around the steps it records, and the daemon holds those states and the
window's spans; a program without a callback is not asked (its hello has no capability, so the
daemon refuses a capture of its job, 409); a start step that has passed is reported failed with
the program's reason."""
import json
import re
import subprocess
import time
import urllib.error
import urllib.request

from test_c_client import build_dir, daemon, tmp  # noqa: F401 (pytest fixtures)

PROGRAM = build_dir() / "collectors" / "c" / "capture_client"
REQ_RE = re.compile(r"^request id=(\d+) start=(-?\d+) steps=(\d+) what=(\d+)$")
DONE_RE = re.compile(r"^done first=(-?\d+) last=(-?\d+) requests=(\d+)$")
WHAT = {"cpu": 1, "cuda": 2, "device": 4, "shapes": 8, "stack": 16, "memory": 32, "flops": 64,
        "modules": 128}


def post(d, job, body):
    req = urllib.request.Request(
        "http://127.0.0.1:%d/api/v1/jobs/%s/captures" % (d.port, job),
        data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 201
        return json.loads(r.read())


def start(d, job, mode):
    p = subprocess.Popen([str(PROGRAM), d.socket, job, mode], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=d.env, text=True)
    assert p.stdout.readline().strip() == "ready", p.stderr.read() if p.poll() is not None else ""
    d.wait_job(job, lambda j: j["live"])
    return p


def wait(pred, timeout=15):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def part(d, job, cid):
    return d.get("/api/v1/jobs/%s/captures/%d" % (job, cid))["ranks"][0]


def test_capture_callback_and_states(daemon):  # noqa: F811
    p = start(daemon, "c-cap", "serve")
    cap = post(daemon, "c-cap", {"steps": 3, "what": ["cpu", "shapes", "stack"]})
    line = p.stdout.readline().strip()
    m = REQ_RE.match(line)
    assert m, line
    assert int(m.group(1)) == cap["id"] and m.group(2) == "-1" and m.group(3) == "3"
    assert int(m.group(4)) == WHAT["cpu"] | WHAT["shapes"] | WHAT["stack"]
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    m = DONE_RE.match(out.strip().splitlines()[-1])
    assert m, out
    first, last, requests = map(int, m.groups())
    assert last - first + 1 == 3 and requests == 1
    r = part(daemon, "c-cap", cap["id"])
    assert r["state"] == "done" and r["reason"] is None
    # The window's spans are stored: one captured_op per captured step, in those steps.
    def calls():
        ops = daemon.get("/api/v1/jobs/c-cap/operators?limit=100")["rows"]
        return {o["name"]: o["calls"] for o in ops}
    wait(lambda: calls().get("aten::linear") == last + 1)
    assert calls().get("captured_op") == 3, calls()
    wait(lambda: daemon.get("/api/v1/jobs/c-cap/steps?limit=1")["total"] == last + 1)
    steps = {s["step"] for s in daemon.get("/api/v1/jobs/c-cap/steps?limit=10000")["rows"]}
    assert {first, first + 1, last} <= steps


def test_start_step_passed_fails_with_reason(daemon):  # noqa: F811
    p = start(daemon, "c-late", "serve")
    cap = post(daemon, "c-late", {"start": 0, "steps": 2})
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert REQ_RE.match(out.splitlines()[0]).group(2) == "0"
    wait(lambda: part(daemon, "c-late", cap["id"])["state"] == "failed")
    r = part(daemon, "c-late", cap["id"])
    assert r["state"] == "failed" and r["reason"] == "step 0 has passed"


def test_without_a_callback_the_client_is_not_asked(daemon):  # noqa: F811
    p = start(daemon, "c-none", "none")
    req = urllib.request.Request(
        "http://127.0.0.1:%d/api/v1/jobs/c-none/captures" % daemon.port,
        data=b'{"steps":1}', headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(req, timeout=30)
        raise AssertionError("a capture no session can serve was accepted")
    except urllib.error.HTTPError as e:
        assert e.code == 409
        doc = json.loads(e.read())
        assert doc["error"]["code"] == "no_live_session"
        assert "capability" in doc["error"]["message"]
    out, err = p.communicate("stop\n", timeout=60)
    assert p.returncode == 0, err
    assert DONE_RE.match(out.strip().splitlines()[-1]).group(3) == "0"
