# SPDX-License-Identifier: MIT
"""stepscope.Client against the real stepscoped (skipped when the binary is not built).

The binary is $BUILD_DIR/daemon/stepscoped, else the first of <repo>/build-test, <repo>/build,
<repo>/build-py that holds one. Each test starts its own daemon on a temp socket and data dir with
--http 127.0.0.1:0 and reads the port from its start line.
"""
import json
import os
import pathlib
import re
import signal
import subprocess
import time
import urllib.request

import pytest

import stepscope

REPO = pathlib.Path(__file__).resolve().parents[3]
START_RE = re.compile(r"^stepscoped: listening on socket (.+), dashboard http://(.+):(\d+)/$")


def find_binary():
    env = os.environ.get("BUILD_DIR")
    cands = [pathlib.Path(env)] if env else [REPO / "build-test", REPO / "build", REPO / "build-py"]
    for b in cands:
        if not b.is_absolute():
            b = REPO / b
        p = b / "daemon" / "stepscoped"
        if p.is_file() and os.access(str(p), os.X_OK):
            return p
    return None


BINARY = find_binary()
pytestmark = pytest.mark.skipif(
    BINARY is None,
    reason="stepscoped is not built (looked for $BUILD_DIR/daemon/stepscoped, else "
           "build-test/, build/, build-py/ under %s); build it with: meson setup build && "
           "ninja -C build" % REPO)


class Daemon:
    def __init__(self, sockdir):
        self.socket = str(sockdir / "daemon.sock")
        self.data_dir = str(sockdir / "data")
        self.stderr = sockdir / "daemon.stderr"
        self.proc = None
        self.port = None
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
        self.env.update(XDG_RUNTIME_DIR=str(sockdir), XDG_STATE_HOME=str(sockdir / "state"),
                        HOME=str(sockdir))

    def start(self):
        err = open(str(self.stderr), "ab")
        self.proc = subprocess.Popen(
            [str(BINARY), "--socket", self.socket, "--data-dir", self.data_dir,
             "--http", "127.0.0.1:0", "--static-dir", str(REPO / "static")],
            stdout=subprocess.PIPE, stderr=err, env=self.env, text=True)
        err.close()
        line = self.proc.stdout.readline().strip()
        m = START_RE.match(line)
        if not m:
            self.proc.kill()
            raise AssertionError("unexpected start line %r; stderr: %s"
                                 % (line, self.stderr.read_text(errors="replace")[-2000:]))
        assert m.group(1) == self.socket
        self.port = int(m.group(3))
        return self

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode if self.proc else None

    def get(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=10) as r:
            return json.loads(r.read().decode("utf-8"))

    def job(self, name):
        jobs = [j for j in self.get("/api/v1/jobs")["jobs"] if j["name"] == name]
        assert len(jobs) <= 1, jobs
        return jobs[0] if jobs else None

    def wait_job(self, name, pred, timeout=10.0):
        """The job once pred(job) holds (counters are read from committed data)."""
        deadline = time.monotonic() + timeout
        j = None
        while time.monotonic() < deadline:
            j = self.job(name)
            if j is not None and pred(j):
                return j
            time.sleep(0.05)
        return j


@pytest.fixture
def daemon(sockdir):
    d = Daemon(sockdir).start()
    yield d
    alive = d.proc.poll() is None
    rc = d.stop()
    assert alive, "the daemon died during the test; stderr: " + d.stderr.read_text()[-2000:]
    assert rc == 0, "daemon exit %r; stderr: %s" % (rc, d.stderr.read_text()[-2000:])


def test_records_arrive_with_exact_counts(daemon):
    c = stepscope.Client(socket=daemon.socket, job="py-exact", rank=0, world_size=1,
                         framework="python")
    try:
        for i in range(25):
            with c.step(samples=16):
                for p in ("dataloader", "forward", "backward", "optimizer"):
                    with c.phase(p):
                        pass
                c.queue("prefetch", i % 4, capacity=4)
            c.span("op<%d>" % i, time.time_ns(), time.time_ns() + 1000, cat="cpu_op")
            with c.annotate('annot"%d' % i):
                pass
        c.event({"ph": "i", "name": "mark", "ts": time.time_ns() / 1000, "s": "p"})
        c.event({"ph": "C", "name": "mem", "ts": time.time_ns() / 1000, "args": {"b": 1}})
        for _ in range(3):
            c.host_sample()
        assert c.flush(timeout=10), c.stats
        st = c.stats
        assert st["errors"] == 0, st
        assert st["acked"] == st["records"] == 25 * 4 + 2 + 3
        j = daemon.wait_job("py-exact", lambda j: j["events"] >= 52)
        assert j is not None
        assert (j["steps"], j["spans"], j["events"], j["queue_samples"], j["host_samples"]) == \
            (25, 50, 52, 25, 3), j
        assert j["live"] is True
    finally:
        assert c.close(timeout=10)
    j = daemon.wait_job("py-exact", lambda j: not j["live"])
    assert j["live"] is False and j["events"] == 52


def test_errors_are_reported_and_acknowledged(daemon):
    c = stepscope.Client(socket=daemon.socket, job="py-errors")
    try:
        c.event({"no": "ph nor type"})                       # unknown
        c.event({"ph": "X", "name": "neg", "ts": 1, "dur": -5})  # invalid
        c.event({"ph": "X", "name": "ok", "ts": 1, "dur": 5})
        assert c.flush(timeout=10), c.stats
        st = c.stats
        assert st["errors"] == 2 and st["acked"] == 3, st
        assert set(st["error_codes"]) <= {"unknown", "invalid"}
        j = daemon.wait_job("py-errors", lambda j: j["events"] >= 1)
        assert j["events"] == 1
    finally:
        c.close(timeout=10)


def test_hostile_names_reach_the_daemon(daemon):
    c = stepscope.Client(socket=daemon.socket, job="py-<script>\"hostile\"\ud800")
    try:
        for n in ('<script>alert(1)</script>', 'q"uo\\te', "lone\udc80", "nl\n\x00"):
            c.span(n, time.time_ns(), time.time_ns() + 10, cat=n, args={n: n})
            with c.step():
                with c.phase(n):
                    pass
            c.queue(n, 1)
        assert c.flush(timeout=10), c.stats
        assert c.stats["errors"] == 0, c.stats
        j = daemon.wait_job(c.job, lambda j: j["events"] >= 4)
        assert j is not None and j["name"] == 'py-<script>"hostile"\ufffd'
        assert (j["events"], j["steps"], j["queue_samples"]) == (4, 4, 4)
    finally:
        c.close(timeout=10)


def test_kill9_restart_replays_exactly_once(daemon):
    """kill -9 the daemon mid-stream, restart it on the same data dir and socket while the client
    keeps sending: after flush the job holds every event exactly once."""
    c = stepscope.Client(socket=daemon.socket, job="py-replay")
    sent = 0
    duplicates = 0

    def burst(n):
        nonlocal sent
        for _ in range(n):
            t = time.time_ns()
            c.span("op%d" % sent, t, t + 1000, cat="cpu_op")
            sent += 1

    def wait_connected():
        deadline = time.monotonic() + 15
        while not c.stats["connected"] and time.monotonic() < deadline:
            time.sleep(0.005)
        assert c.stats["connected"], c.stats

    try:
        burst(3000)
        wait_connected()
        for rnd in range(5):
            burst(2000)
            time.sleep(0.005 * rnd)  # kill at different points: some lines durable, not acked
            duplicates += daemon.get("/api/v1/stats").get("duplicates", 0)
            daemon.kill9()
            burst(1000)               # the daemon is gone: held in the buffer
            daemon.start()
            wait_connected()
        burst(2000)
        assert c.flush(timeout=30), c.stats
        st = c.stats
        assert st["reconnects"] >= 5 and st["errors"] == 0 and st["dropped"] == 0, st
        j = daemon.wait_job("py-replay", lambda j: j["events"] >= sent)
        assert j["events"] == sent and j["spans"] == sent, (j, st)
        duplicates += daemon.get("/api/v1/stats").get("duplicates", 0)
        print("\nkill9 replay: sent=%d replayed=%d daemon duplicates=%d reconnects=%d"
              % (sent, st["replayed"], duplicates, st["reconnects"]))
    finally:
        c.close(timeout=10)
    time.sleep(0.2)
    assert daemon.job("py-replay")["events"] == sent


def _ignore_acks(c):
    s = c._sender
    real = s._dispatch
    s._dispatch = lambda msg: None if "ack" in msg else real(msg)
    return lambda: s.__dict__.pop("_dispatch", None)


def _wait_stat(daemon, key, value, timeout=10.0):
    deadline = time.monotonic() + timeout
    st = None
    while time.monotonic() < deadline:
        st = daemon.get("/api/v1/stats")
        if st[key] >= value:
            break
        time.sleep(0.02)
    return st


def test_durable_but_unacked_lines_are_not_stored_twice(daemon):
    """The worst case for replay: the daemon committed lines but the client never saw the ack
    (here: the client ignores acks), then the daemon is killed. The client replays all of them
    with the same stream and seq; the restarted daemon must skip every one as a duplicate."""
    c = stepscope.Client(socket=daemon.socket, job="py-dups")
    restore = _ignore_acks(c)
    try:
        n = 1000
        for i in range(n):
            c.span("op%d" % i, 1000 * i, 1000 * i + 1, cat="cpu_op")
        j = daemon.wait_job("py-dups", lambda j: j["events"] >= n)
        assert j["events"] == n
        assert c.stats["held"] == n
        daemon.kill9()
        restore()  # acks count again
        daemon.start()
        st = _wait_stat(daemon, "lines", n)
        assert st["duplicates"] == n and st["lines"] == n, st
        assert c.stats["replayed"] == n
        c.span("after", 0, 1, cat="cpu_op")  # a new line: its ack covers the replayed ones
        assert c.flush(timeout=10), (c.stats, daemon.get("/api/v1/stats"))
        assert c.stats["held"] == 0
        assert daemon.wait_job("py-dups", lambda j: j["events"] > n)["events"] == n + 1
    finally:
        c.close(timeout=10)


def test_replay_of_only_duplicates_is_acknowledged(daemon):
    c = stepscope.Client(socket=daemon.socket, job="py-dups-ack")
    restore = _ignore_acks(c)
    try:
        for i in range(100):
            c.span("op%d" % i, 1000 * i, 1000 * i + 1, cat="cpu_op")
        assert daemon.wait_job("py-dups-ack", lambda j: j["events"] >= 100)["events"] == 100
        daemon.kill9()
        restore()
        daemon.start()
        assert c.flush(timeout=3), (c.stats, daemon.get("/api/v1/stats"))
    finally:
        c.close(timeout=10)


def test_no_daemon_then_daemon(sockdir):
    """Records made before the daemon exists are delivered once it starts."""
    d = Daemon(sockdir)
    c = stepscope.Client(socket=d.socket, job="py-late")
    try:
        for i in range(100):
            c.queue("q", i)
        assert c.flush(timeout=0.2) is False
        d.start()
        assert c.flush(timeout=15), c.stats
        j = d.wait_job("py-late", lambda j: j["queue_samples"] >= 100)
        assert j["queue_samples"] == 100
    finally:
        c.close(timeout=10)
        assert d.stop() == 0


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_fork_child_stream_on_real_daemon(daemon):
    c = stepscope.Client(socket=daemon.socket, job="py-fork")
    try:
        c.queue("parent", 1)
        assert c.flush(timeout=10)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for i in range(7):
                    c.queue("child", i)
                code = 0 if c.close(timeout=10) and c.stats["errors"] == 0 else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        c.queue("parent", 2)
        assert c.flush(timeout=10)
        j = daemon.wait_job("py-fork", lambda j: j["queue_samples"] >= 9)
        assert j["queue_samples"] == 9 and j["sessions"] == 2, j
    finally:
        c.close(timeout=10)
