# SPDX-License-Identifier: MIT
"""libstepscope against the real stepscoped: exact counts, and exactly-once after kill -9.

Drives the test program <BUILD_DIR>/collectors/c/integ_client (tests/integ_client.c), which
records N steps (4 phases each, with 2 spans, 1 counter and 1 queue sample) while a second thread
records one span per step, then flushes. Expected in /api/v1/jobs: steps N, spans 3N, events 4N
(spans and counters), queue_samples N. The daemon is started as tests/integ/conftest.py does:
<BUILD_DIR>/daemon/stepscoped --socket S --data-dir D --http 127.0.0.1:0, and the port is read
from its first stdout line. BUILD_DIR defaults to build (relative to the current directory, else
to the repository). Standard library and pytest only.
"""
import json
import os
import pathlib
import queue
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
START_RE = re.compile(r"^stepscoped: listening on socket (.+), dashboard http://(.+):(\d+)/$")
DONE_RE = re.compile(r"^done flush=(-?\d+) free=(-?\d+) records=(\d+) dropped=(\d+) acked=(\d+) "
                     r"reconnects=(\d+) errors=(\d+)$")


def build_dir():
    b = pathlib.Path(os.environ.get("BUILD_DIR", "build"))
    if not b.is_absolute():
        b = b.resolve() if b.exists() else REPO / b
    return b


DAEMON = build_dir() / "daemon" / "stepscoped"
PROGRAM = build_dir() / "collectors" / "c" / "integ_client"


@pytest.fixture
def tmp():
    d = pathlib.Path(tempfile.mkdtemp(prefix="ssc.", dir="/tmp"))  # sun_path is short
    yield d
    shutil.rmtree(d, ignore_errors=True)


class Daemon:
    def __init__(self, tmp):
        self.tmp = tmp
        self.socket = str(tmp / "d.sock")
        self.data_dir = str(tmp / "data")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
        self.env.update(XDG_RUNTIME_DIR=str(tmp), XDG_STATE_HOME=str(tmp / "state"), HOME=str(tmp))
        self.proc = None
        self.port = None
        self.killed = False

    def start(self):
        err = open(self.tmp / "daemon.stderr", "ab")
        self.proc = subprocess.Popen(
            [str(DAEMON), "--socket", self.socket, "--data-dir", self.data_dir,
             "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, env=self.env)
        err.close()
        lines = queue.Queue()

        def drain(out):
            for raw in out:
                lines.put(raw.decode(errors="replace").rstrip("\n"))
            lines.put(None)

        threading.Thread(target=drain, args=(self.proc.stdout,), daemon=True).start()
        first = lines.get(timeout=20)
        assert first is not None, "daemon exited before its start line:\n" + self.stderr()
        m = START_RE.match(first)
        assert m, first
        assert m.group(1) == self.socket
        self.port = int(m.group(3))
        return self

    def stderr(self):
        try:
            return (self.tmp / "daemon.stderr").read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def kill9(self):
        self.proc.kill()
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.proc.wait(timeout=30)
            assert rc == 0, "daemon exited %d on SIGTERM:\n%s" % (rc, self.stderr())
        elif self.proc and not self.killed:
            pytest.fail("daemon died (exit %s):\n%s" % (self.proc.returncode, self.stderr()))

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=30) as r:
            return json.loads(r.read())

    def job(self, name):
        doc = self.get("/api/v1/jobs")
        for j in doc["jobs"] if isinstance(doc, dict) else doc:
            if j["name"] == name:
                return j
        return None

    def wait_job(self, name, pred, timeout=20.0):
        deadline = time.monotonic() + timeout
        j = None
        while time.monotonic() < deadline:
            j = self.job(name)
            if j is not None and pred(j):
                return j
            time.sleep(0.05)
        raise AssertionError("timed out waiting for job %s; last: %r" % (name, j))


@pytest.fixture
def daemon(tmp):
    if not DAEMON.exists() or not PROGRAM.exists():
        pytest.fail("build first: ninja -C %s daemon/stepscoped collectors/c/integ_client"
                    % build_dir())
    d = Daemon(tmp).start()
    yield d
    d.stop()


def run_program(daemon, job, n, pause_at=-1, env_extra=None):
    env = dict(daemon.env)
    env.update(env_extra or {})
    return subprocess.Popen([str(PROGRAM), daemon.socket, job, str(n), str(pause_at)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, text=True)


def finish(proc, timeout=90):
    out, err = proc.communicate(timeout=timeout)
    lines = out.strip().splitlines()
    assert lines, "no output; stderr: %s" % err
    m = DONE_RE.match(lines[-1])
    assert m, "last line %r; stderr: %s" % (lines[-1], err)
    res = dict(zip(("flush", "free", "records", "dropped", "acked", "reconnects", "errors"),
                   map(int, m.groups())))
    assert proc.returncode == 0, (res, err)
    return res


def expected(n):
    return {"steps": n, "spans": 3 * n, "events": 4 * n, "queue_samples": n}


def assert_counts(daemon, job, n):
    want = expected(n)
    j = daemon.wait_job(job, lambda j: j["events"] >= want["events"] and
                        j["steps"] >= n and j["queue_samples"] >= n)
    time.sleep(0.3)  # anything extra (a duplicate) would show up by now
    j = daemon.job(job)
    got = {k: j[k] for k in want}
    assert got == want, (got, want)
    return j


def test_exact_counts(daemon):
    n = 300
    res = finish(run_program(daemon, "c-exact", n))
    # records: per step 1 step + 3 spans + 1 counter + 1 queue = 6 per step; plus the bye
    assert res["records"] == 6 * n and res["dropped"] == 0 and res["errors"] == 0, res
    assert res["acked"] == 6 * n, res  # counted at ss_flush, before the bye
    assert res["flush"] == 0 and res["free"] == 0
    j = assert_counts(daemon, "c-exact", n)
    assert j["live"] is False


def test_kill9_restart_mid_stream(daemon):
    """kill -9 while records are held unacknowledged, and again while the program records:
    after ss_flush every record is stored exactly once."""
    n = 600
    proc = run_program(daemon, "c-kill9", n, pause_at=250, env_extra={"INTEG_STEP_US": "300"})
    line = proc.stdout.readline().strip()
    assert line == "paused", (line, proc.stderr.read() if proc.poll() is not None else "")
    daemon.killed = True
    daemon.kill9()       # some of the first 250 steps are acked, some not
    time.sleep(0.2)      # the client sees the broken connection and backs off
    daemon.start()
    daemon.wait_job("c-kill9", lambda j: j["live"])  # the client is back (replaying)
    proc.stdin.write("go\n")
    proc.stdin.flush()
    time.sleep(0.05)     # the program is recording steps 250..600 (300 us each)
    daemon.kill9()
    daemon.start()
    res = finish(proc)
    assert res["dropped"] == 0 and res["errors"] == 0, res
    assert res["reconnects"] >= 2, res
    assert res["acked"] == 6 * n, res
    assert_counts(daemon, "c-kill9", n)
    daemon.killed = False
