# SPDX-License-Identifier: MIT
"""Unit tests of stepscope.Client against the in-process fake daemon (fakeserver.py)."""
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import stepscope
from stepscope import _env

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def clients():
    made = []

    def make(**kw):
        kw.setdefault("job", "unit")
        c = stepscope.Client(**kw)
        made.append(c)
        return c
    yield make
    for c in made:
        c.close(timeout=0.5)


def recs(server, client):
    """The records the fake daemon kept for the client's stream, in seq order."""
    return server.records((client.job, client.rank, client.stream))


def seqs_are_contiguous(lines):
    return [s for s, _ in lines] == list(range(len(lines)))


# -- never blocks, never raises, bounded ------------------------------------------------------

def test_absent_socket_never_raises(clients, sockdir):
    for path in (str(sockdir / "missing.sock"), "/nonexistent/dir/x.sock", "/" + "x" * 200):
        c = clients(socket=path)
        t0 = time.monotonic()
        with c.step(samples=4):
            with c.phase("forward"):
                pass
        c.queue("prefetch", 2, capacity=8)
        c.span("s", time.time_ns(), time.time_ns())
        with c.annotate("a"):
            pass
        c.event({"ph": "i", "name": "mark", "ts": 1.0})
        c.host_sample()
        assert time.monotonic() - t0 < 0.5
        assert c.flush(timeout=0.1) is False
        st = c.stats
        assert st["records"] == 6 and st["dropped"] == 0 and st["held"] + st["acked"] <= 6
        assert c.close(timeout=0.1) is False
        c.queue("after", 1)  # after close: dropped, counted, no exception
        assert c.stats["dropped_closed"] == 1
    assert c.stats["connect_failures"] >= 1


def test_buffer_bound_drops_and_counts(clients, sockdir):
    path = sockdir / "later.sock"
    c = clients(socket=str(path), buffer_bytes=10000)
    n = 1000
    for i in range(n):
        c.queue("q", i)
    st = c.stats
    assert st["dropped"] > 0 and st["dropped_full"] == st["dropped"]
    assert st["records"] + st["dropped"] == n
    assert st["buffered_bytes"] <= 10000
    kept = st["records"]
    # the daemon appears: what was kept arrives, exactly once, in order
    from fakeserver import FakeServer
    srv = FakeServer(path).start()
    try:
        assert c.flush(timeout=10)
        lines = recs(srv, c)
        assert len(lines) == kept and seqs_are_contiguous(lines)
        assert [r["size"] for _, r in lines] == list(range(kept))
        assert c.stats["buffered_bytes"] == 0
        # memory is free again: new records are taken
        c.queue("q", 5)
        assert c.flush(timeout=5) and len(recs(srv, c)) == kept + 1
    finally:
        srv.stop()


def test_stalled_daemon_never_blocks(clients, server):
    server.stall = True  # welcome, then never read: the kernel buffer fills, writes see EAGAIN
    c = clients(socket=server.path, buffer_bytes=1 << 20)
    payload = "x" * 200
    t0 = time.monotonic()
    n = 50000
    for i in range(n):
        c.span(payload, i * 1000, i * 1000 + 5)
    elapsed = time.monotonic() - t0
    st = c.stats
    assert st["dropped"] > 0 and st["records"] + st["dropped"] == n
    assert st["buffered_bytes"] <= 1 << 20
    assert elapsed < 10, elapsed
    assert c.flush(timeout=0.2) is False


# -- records --------------------------------------------------------------------------------

def test_steps_and_phases(clients, server):
    c = clients(socket=server.path)
    for i in range(3):
        with c.step(samples=32) as s:
            assert c.current_step is s
            for name in ("dataloader", "forward", "backward", "optimizer"):
                with c.phase(name):
                    time.sleep(0.001)
            with c.phase("forward"):  # repeated: adds up
                pass
    assert c.current_step is None
    with c.step(step=10):
        pass
    with c.step():
        pass
    with c.phase("outside"):  # no step: records nothing
        pass
    assert c.flush(timeout=5)
    lines = recs(server, c)
    assert seqs_are_contiguous(lines)
    steps = [r for _, r in lines]
    assert [r["step"] for r in steps] == [0, 1, 2, 10, 11]
    for r in steps[:3]:
        assert r["type"] == "step" and r["samples"] == 32
        assert set(r["phases"]) == {"dataloader", "forward", "backward", "optimizer"}
        assert all(v >= 900 for v in r["phases"].values())
        assert r["end_us"] - r["begin_us"] >= sum(r["phases"].values()) - 1
        assert 1.6e15 < r["begin_us"] < 4e15  # realtime microseconds
    assert "phases" not in steps[3] and "samples" not in steps[3]


def test_step_times_exact_microseconds(clients, server):
    c = clients(socket=server.path)
    c.span("exact", 1700000000123456789, 1700000000123458789)
    assert c.flush(timeout=5)
    # parse the raw number text, not a float (which cannot hold ns at this magnitude)
    (_, r), = recs(server, c)
    assert r["dur"] == 2.0
    from decimal import Decimal
    raw = json.dumps(r)
    assert r["ph"] == "X" and r["pid"] == os.getpid()
    assert isinstance(r["tid"], int) and r["cat"] == "user_annotation"
    assert Decimal(repr(r["ts"])) == Decimal("1700000000123456.789") or "1700000000123456.8" in raw


def test_queue_span_annotate_host_event(clients, server):
    c = clients(socket=server.path)
    with c.step(step=7):
        c.queue("prefetch", 3, capacity=8)
    c.queue("other", 1, step=2)
    c.span("load", 1000, 3500, cat="io", args={"file": "a.bin"}, tid=5)

    @c.annotate("decorated")
    def f(x):
        return x * 2
    assert f(21) == 42
    with c.annotate("block", args={"k": 1}):
        time.sleep(0.001)
    h = c.host_sample()
    assert h["type"] == "host" and h["rss_bytes"] > 0 and h["cpu_percent"] >= 0
    c.event({"ph": "C", "name": "mem", "ts": 12.5, "pid": 1, "args": {"v": 3}, "extra": [1, 2]})
    assert c.flush(timeout=5)
    got = [r for _, r in recs(server, c)]
    assert len(got) == 8
    # the step line comes after the queue sample taken inside it
    assert got[0]["type"] == "queue" and got[0]["step"] == 7 and got[0]["capacity"] == 8
    assert got[1]["type"] == "step" and got[1]["step"] == 7
    assert got[2] == dict(got[2], type="queue", name="other", size=1, step=2)
    sp = got[3]
    assert sp == {"ph": "X", "name": "load", "cat": "io", "ts": 1.0, "dur": 2.5, "pid": os.getpid(),
                  "tid": 5, "args": {"file": "a.bin"}}
    assert got[4]["name"] == "decorated" and got[4]["dur"] >= 0
    assert got[5]["name"] == "block" and got[5]["dur"] >= 1000 and got[5]["args"] == {"k": 1}
    assert got[6]["type"] == "host" and "ts_us" in got[6]
    assert got[7] == {"ph": "C", "name": "mem", "ts": 12.5, "pid": 1, "args": {"v": 3},
                      "extra": [1, 2]}


def test_hostile_names_are_valid_json(clients, server):
    c = clients(socket=server.path)
    names = ['<script>alert("x")</script>', 'quote"back\\slash', "new\nline\ttab\x00nul\x1f",
             "lone\ud800surrogate", "low\udcffhalf", "pair\ud83d\ude00joined", "日本語 ✓", "\u2028"]
    for n in names:
        c.span(n, 1000, 2000, cat=n, args={n: n})
        c.queue(n, 1)
        with c.step():
            with c.phase(n):
                pass
        with c.annotate(n):
            pass
        c.event({"ph": "i", "name": n, "ts": 1, "args": {n: [n]}})
    c.event({"ph": "i", "name": "nan", "ts": float("nan"), "args": {"inf": float("inf")}})
    c.event({"ph": "i", "name": "obj", "ts": 1, "args": {"set": {1}, "obj": object(), 3: b"x"}})
    cyc = {"ph": "i", "name": "cycle", "ts": 1}
    cyc["self"] = cyc
    c.event(cyc)  # a cycle: sent with the inner reference as "<cycle>", nothing raised
    assert c.flush(timeout=5)
    assert server.invalid == []
    got = [r for _, r in recs(server, c)]
    assert len(got) == len(names) * 5 + 3
    assert c.stats["dropped"] == 0 and c.stats["errors"] == 0
    assert got[-1]["self"] == "<cycle>"
    seen = set()
    for r in got:
        for v in (r.get("name"), r.get("cat")):
            if isinstance(v, str):
                seen.add(v)
        seen.update((r.get("phases") or {}).keys())
    assert '<script>alert("x")</script>' in seen and 'quote"back\\slash' in seen
    assert "new\nline\ttab\x00nul\x1f" in seen and "日本語 ✓" in seen and "\u2028" in seen
    assert "lone\ufffdsurrogate" in seen and "low\ufffdhalf" in seen
    assert "pair\U0001F600joined" in seen
    nan = [r for r in got if r.get("name") == "nan"][0]
    assert nan["ts"] is None and nan["args"] == {"inf": None}
    obj = [r for r in got if r.get("name") == "obj"][0]
    assert obj["args"]["set"] == [1] and obj["args"]["3"] == "b'x'"


# -- batching, acks, errors, control ---------------------------------------------------------

def test_writes_are_batched(clients, server):
    c = clients(socket=server.path)
    n = 5000
    for i in range(n):
        c.queue("q", i)
    assert c.flush(timeout=10)
    st = c.stats
    assert st["lines_written"] == n
    assert st["writes"] * 20 < n, st  # tens of lines per write, not one write per record
    assert max(server.reads) > 1
    lines = recs(server, c)
    assert len(lines) == n and seqs_are_contiguous(lines)
    assert st["bytes_written"] <= 64 * 1024 * st["writes"]


def test_flush_waits_for_acks(clients, server):
    server.auto_ack = False
    c = clients(socket=server.path)
    c.queue("q", 1)
    assert c.flush(timeout=0.3) is False  # written but never acknowledged
    assert server.wait_for(lambda: len(recs(server, c)) == 1)
    server.auto_ack = True
    c.queue("q", 2)  # the next read acks both
    assert c.flush(timeout=5) is True
    assert c.stats["acked"] == 2 and c.stats["held"] == 0
    assert c.flush(timeout=1) is True  # nothing new: returns at once


def test_close_says_bye_and_is_idempotent(clients, server):
    c = clients(socket=server.path)
    for i in range(10):
        c.queue("q", i)
    assert c.close(timeout=5) is True
    assert c.close(timeout=5) is True
    got = [r for _, r in recs(server, c)]
    assert len(got) == 11 and got[-1] == {"type": "bye"}
    c.queue("late", 1)
    assert c.stats["dropped_closed"] == 1 and len(recs(server, c)) == 11
    t0 = time.monotonic()
    assert c.flush(timeout=5) is True and time.monotonic() - t0 < 1  # closed: answers at once


def test_error_lines_are_counted(clients, server):
    c = clients(socket=server.path)
    c.event({"name": "no ph, no type"})
    c.event({"ph": "i", "name": "ok", "ts": 1})
    assert c.flush(timeout=5)
    st = c.stats
    assert st["errors"] == 1 and st["error_codes"] == {"unknown": 1}
    assert st["acked"] == 2  # rejected lines are acknowledged too


def test_control_lines_reach_the_hook(clients, server):
    c = clients(socket=server.path)
    got = []
    c.on_control(lambda m: 1 / 0)  # a failing hook does not stop the others
    c.on_control(got.append)
    c.queue("q", 1)
    assert c.flush(timeout=5)
    server.send_all({"capture": {"steps": 3}})
    server.send_all({"something": "new"})
    deadline = time.monotonic() + 5
    while len(got) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert got == [{"capture": {"steps": 3}}, {"something": "new"}]
    assert c.stats["control_lines"] == 2


# -- replay ---------------------------------------------------------------------------------

def test_replay_after_connection_drop(clients, server):
    server.auto_ack = False  # nothing durable yet: everything must be replayed
    c = clients(socket=server.path)
    n = 3000
    for i in range(n // 2):
        c.queue("q", i)
    assert server.wait_for(lambda: len(recs(server, c)) >= 500)
    server.drop_connections()
    for i in range(n // 2, n):
        c.queue("q", i)
    server.auto_ack = True
    assert c.flush(timeout=15)
    lines = recs(server, c)
    assert len(lines) == n and seqs_are_contiguous(lines)
    assert [r["size"] for _, r in lines] == list(range(n))
    st = c.stats
    assert st["reconnects"] >= 1 and st["replayed"] > 0
    stream = server.streams[(c.job, c.rank, c.stream)]
    assert stream.duplicates > 0  # replayed lines the server already held were skipped
    assert all(h["stream"] == c.stream for h in server.hellos)
    assert [h["seq"] for h in server.hellos][0] == 0


def test_replay_midline_drops_and_restarts(clients, sockdir):
    """The daemon dies repeatedly mid-stream (sometimes in the middle of a batch) and comes back
    with its durable state; the client keeps recording throughout."""
    from fakeserver import FakeServer
    path = sockdir / "r.sock"
    srv = FakeServer(path).start()
    c = clients(socket=str(path))
    n = 0
    try:
        for round_ in range(4):
            srv.drop_after_lines = 137 + round_ * 50
            for _ in range(700):
                c.span("op%d" % n, n * 1000, n * 1000 + 10)
                n += 1
            time.sleep(0.05)
            # the daemon goes away entirely for a moment, then a new one takes the socket
            streams = srv.streams
            srv.stop()
            for _ in range(100):
                c.span("op%d" % n, n * 1000, n * 1000 + 10)
                n += 1
            time.sleep(0.1)
            srv = FakeServer(path)
            srv.streams = streams  # durable state survives the restart
            srv.start()
            # The records of the gap are pending: the client reconnects to this daemon before the
            # next round takes it away again (on a loaded machine its backoff could otherwise
            # span two restarts, and it would see one reconnect for both).
            deadline = time.monotonic() + 20
            while c.stats["reconnects"] < round_ + 1 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert c.flush(timeout=20)
        lines = srv.records((c.job, c.rank, c.stream))
        assert len(lines) == n and seqs_are_contiguous(lines)
        assert [r["name"] for _, r in lines] == ["op%d" % i for i in range(n)]
        assert c.stats["reconnects"] >= 4
    finally:
        srv.stop()


def test_threads_record_concurrently(clients, server):
    c = clients(socket=server.path)
    per = 2000

    def work(t):
        for i in range(per):
            c.span("t%d" % t, i, i + 1, tid=t)
    ts = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert c.flush(timeout=10)
    lines = recs(server, c)
    assert len(lines) == 4 * per and seqs_are_contiguous(lines)
    for t in range(4):
        assert sum(1 for _, r in lines if r["tid"] == t) == per


# -- fork -----------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_fork_child_uses_its_own_stream(clients, server):
    c = clients(socket=server.path)
    c.queue("parent", 1)
    assert c.flush(timeout=5)
    parent_stream = c.stream
    server.auto_ack = False
    c.queue("parent-unacked", 2)  # held by the parent at fork time: the child must not send it
    assert server.wait_for(lambda: len(recs(server, c)) == 2)
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            ok = (c.stream != parent_stream and c.stats["held"] == 0
                  and c.stats["records"] == 0 and not c.stats["connected"])
            for i in range(5):
                c.queue("child", i)
            ok = ok and c.close(timeout=10)
            code = 0 if ok else 1
        finally:
            os._exit(code)
    server.auto_ack = True  # the parent's server thread serves the child's connection too
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    # the parent carries on over its own connection
    c.queue("parent", 3)
    assert c.flush(timeout=5)
    assert c.stream == parent_stream
    parent = [r for _, r in recs(server, c)]
    assert [r["name"] for r in parent] == ["parent", "parent-unacked", "parent"]
    child_keys = [k for k in server.streams if k[2] not in (parent_stream,)]
    assert len(child_keys) == 1
    child = [r for _, r in server.records(child_keys[0])]
    assert [r.get("name") for r in child] == ["child"] * 5 + [None]
    assert child[-1] == {"type": "bye"}
    hello_pids = {h["stream"]: h["pid"] for h in server.hellos}
    assert hello_pids[parent_stream] == os.getpid() and hello_pids[child_keys[0][2]] == pid


# -- defaults and packaging -----------------------------------------------------------------

def test_defaults_from_environment(clean_env, sockdir):
    assert _env.default_socket_path() == str(sockdir / "stepscope.sock")
    clean_env.setenv("XDG_RUNTIME_DIR", "relative/dir")
    assert _env.default_socket_path() == "/tmp/stepscope-%d.sock" % os.getuid()
    clean_env.delenv("XDG_RUNTIME_DIR")
    assert _env.default_socket_path() == "/tmp/stepscope-%d.sock" % os.getuid()
    clean_env.setenv("STEPSCOPE_SOCKET", str(sockdir / "x.sock"))
    clean_env.setenv("STEPSCOPE_JOB", "bert")
    clean_env.setenv("RANK", "3")
    clean_env.setenv("WORLD_SIZE", "8")
    clean_env.setenv("LOCAL_RANK", "1")
    c = stepscope.Client(start=False)
    try:
        assert c.socket_path == str(sockdir / "x.sock")
        assert (c.job, c.rank, c.world_size, c.local_rank) == ("bert", 3, 8, 1)
        h = c._make_hello()
        assert h["hello"] == "stepscope/1" and h["pid"] == os.getpid() and h["local_rank"] == 1
        host, pid, ns = c.stream.rsplit(":", 2)
        assert host == c.host and int(pid) == os.getpid() and int(ns) > 0
    finally:
        c.close(0.1)
    clean_env.setenv("WORLD_SIZE", "2")  # inconsistent with RANK=3: made valid
    c = stepscope.Client(start=False, job="bad\x01job" + "é" * 300)
    try:
        assert c.world_size == 4
        assert "\x01" not in c.job and len(c.job.encode()) <= 256
    finally:
        c.close(0.1)


def test_job_defaults_to_script_name(sockdir, tmp_path):
    script = tmp_path / "train_resnet.py"
    script.write_text("import stepscope; print(stepscope.Client(start=False).job)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    env["PYTHONPATH"] = PKG
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=30)
    assert out.stdout.strip() == "train_resnet", out.stderr


def test_import_pulls_in_no_framework():
    code = ("import sys, stepscope; bad = [m for m in ('torch', 'paddle', 'mindspore', 'numpy')"
            " if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PKG),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr


def test_exit_reports_drops_once_and_does_not_hang(sockdir):
    code = ("import stepscope\n"
            "c = stepscope.Client(socket=%r, buffer_bytes=2000)\n"
            "for i in range(500): c.queue('q', i)\n" % str(sockdir / "absent.sock"))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PKG),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    assert time.monotonic() - t0 < 5
    assert out.stderr.count("stepscope:") == 1, out.stderr
    assert "records dropped" in out.stderr and "not acknowledged" in out.stderr


def test_exit_flushes_to_the_daemon(server):
    code = ("import stepscope\n"
            "c = stepscope.attach(socket=%r, job='atexit')\n"
            "assert stepscope.get_client() is c\n"
            "for i in range(100): c.queue('q', i)\n" % server.path)
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PKG),
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    got = [r for _, r in server.records()]
    assert len(got) == 101 and got[-1] == {"type": "bye"}


def test_default_client(clean_env, sockdir):
    import stepscope as ss
    ss._default = None
    a = ss.attach(socket=str(sockdir / "none.sock"), job="d", start=False)
    assert ss.get_client() is a and ss.attach() is a
    a.close(0.1)
    b = ss.get_client()
    assert b is not a and not b.closed
    b.close(0.1)
    ss._default = None
