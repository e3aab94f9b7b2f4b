# SPDX-License-Identifier: MIT
"""Framing: how lines are cut into writes must not matter, and a line cut off by the client's
death is counted and dropped without touching the complete lines before it."""
import os
import random
import signal
import socket
import subprocess
import sys
import textwrap
import time

from ssclient import Client, dumps, x_event


def test_lines_in_one_byte_writes_and_random_splits(daemon):
    one_byte = [x_event(i, name=f"tiny_{i}") for i in range(5)]
    split = [x_event(100 + i, name=f"split_{i}") for i in range(200)]
    crlf = [x_event(500 + i, name=f"crlf_{i}") for i in range(3)]
    with Client(daemon.socket) as c:
        c.hello("framing")
        # Each of the first lines goes out one byte per write(), with a pause now and then so
        # the daemon really sees partial lines.
        for ev in one_byte:
            data = dumps(ev).encode() + b"\n"
            for k in range(len(data)):
                c.send_raw(data[k:k + 1])
                if k % 50 == 0:
                    time.sleep(0.001)
        # Then a stream cut at random points, 1 to 97 bytes a write.
        rng = random.Random(1234)
        stream = b"".join(dumps(ev).encode() + b"\n" for ev in split)
        off = 0
        while off < len(stream):
            n = rng.randint(1, 97)
            c.send_raw(stream[off:off + n])
            off += n
        # "\r\n" ends a line too; the '\r' is not part of the record.
        c.send_raw(b"".join(dumps(ev).encode() + b"\r\n" for ev in crlf))
        total = len(one_byte) + len(split) + len(crlf)
        assert c.wait_ack(total) == total
    assert c.errors == []
    job = daemon.job("framing")
    assert job["events"] == total
    st = daemon.stats()
    assert st["lines"] == total
    assert st["malformed"] == 0
    assert st["partial_lines"] == 0

    doc = daemon.get_json(f"/api/v1/jobs/{job['id']}/timeline")
    got = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["name"])
    assert got == sorted(one_byte + split + crlf, key=lambda e: e["name"])


def test_blank_lines_ignored_and_take_no_seq(daemon):
    with Client(daemon.socket) as c:
        c.hello("blank")
        c.send_raw(b"\n\n" + dumps(x_event(0)).encode() + b"\n\r\n\n" + dumps(x_event(1)).encode()
                   + b"\n\n")
        # Two records: the ack that covers both is 2, whatever the blank lines.
        assert c.wait_ack(2) == 2
    assert c.errors == []
    assert daemon.job("blank")["events"] == 2
    assert daemon.stats()["lines"] == 2


CHILD = textwrap.dedent("""
    import json, socket, sys, time
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[1])
    s.sendall(json.dumps({"hello": "stepscope/1", "job": "partial"}).encode() + b"\\n")
    for i in range(10):
        ev = {"ph": "X", "name": "whole_%d" % i, "ts": 1000.0 + i, "dur": 1.0, "pid": 0, "tid": 0}
        s.sendall(json.dumps(ev).encode() + b"\\n")
    s.sendall(b'{"ph":"X","name":"cut_off_he')
    print("sent", flush=True)
    time.sleep(60)
""")


def test_client_killed_mid_line(daemon):
    child = subprocess.Popen([sys.executable, "-c", CHILD, daemon.socket], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"sent\n"
        # Let the daemon read the partial bytes before the peer goes away.
        daemon.wait_for("the 10 whole lines to be read", lambda: daemon.stats()["lines"] >= 10)
        time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    daemon.wait_for("partial_lines == 1", lambda: daemon.stats()["partial_lines"] == 1)
    daemon.wait_for("10 events stored", lambda: daemon.job("partial")["events"] == 10)
    st = daemon.stats()
    assert st["partial_lines"] == 1
    assert st["lines"] == 10
    assert st["malformed"] == 0
    job = daemon.job("partial")
    assert job["events"] == 10
    daemon.wait_for("the job to be not live", lambda: daemon.job("partial")["live"] is False)
    daemon.assert_alive()


def test_client_closing_right_after_a_burst_keeps_every_whole_line(daemon):
    """No ack awaited: close() right after write() still delivers every complete line, even when
    an ack the daemon writes meanwhile finds the peer gone (EPIPE) while the peer's last lines
    still wait in the socket. The race is timing-dependent, so it is tried a number of times."""
    n, rounds = 3000, 60
    for k in range(rounds):
        c = Client(daemon.socket)
        c.hello(f"burst_close_{k}")
        c.send_lines(x_event(i) for i in range(n))
        c.close()
    # Settled: every connection closed and everything read is durable.
    daemon.wait_for("all connections closed and acked", lambda: (
        lambda st: st["connections"]["open"] == 0 and st["acknowledged"] == st["lines"]
        and st["buffered_bytes"] == 0)(daemon.stats()))
    daemon.wait_for("all jobs visible", lambda: len(daemon.jobs()) == rounds)
    short = {j["name"]: j["events"] for j in daemon.jobs() if j["events"] != n}
    st = daemon.stats()
    assert not short, (f"{len(short)} of {rounds} connections lost lines they had fully written "
                       f"before closing: {short}; stats lines={st['lines']} (sent {n * rounds}), "
                       f"partial_lines={st['partial_lines']}")
    assert st["partial_lines"] == 0
    assert st["lines"] == n * rounds
    assert os.path.exists(daemon.socket)


def test_client_that_never_reads_replies_loses_nothing(daemon):
    """The deterministic form of the race above. A client may ignore everything the daemon sends
    (PROTOCOL.md section 3: "a client that never reads the welcome can still count"); this one
    says so with shutdown(SHUT_RD), so each ack the daemon writes fails with EPIPE. Lines the
    client keeps writing after that must still be read, stored and counted."""
    n = 3000
    c = Client(daemon.socket)
    c.hello("write_only")
    c.sock.shutdown(socket.SHUT_RD)
    evs = [x_event(i) for i in range(n)]
    closed_on_us = None
    for k in range(0, n, 500):
        try:
            c.send_lines(evs[k:k + 500])
        except OSError as e:
            closed_on_us = f"the daemon closed the connection after {k} lines ({e!r})"
            break
        time.sleep(0.1)  # longer than flush_interval_ms: an ack is written in between
    c.close()
    daemon.wait_for("the connection to close", lambda: daemon.stats()["connections"]["open"] == 0)
    daemon.wait_for("every line read to be durable", lambda: (
        lambda st: st["acknowledged"] == st["lines"] and st["buffered_bytes"] == 0)(daemon.stats()))
    st = daemon.stats()
    assert closed_on_us is None, f"{closed_on_us}; it read {st['lines']} of {n} lines"
    assert st["lines"] == n, f"the daemon read {st['lines']} of {n} lines"
    assert daemon.job("write_only")["events"] == n
