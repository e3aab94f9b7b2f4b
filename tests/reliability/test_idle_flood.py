# SPDX-License-Identifier: MIT
"""Idle client connections (issue 18, item 6): the probe opened 1 100 connections to the client
socket that never sent a hello; they filled the 1 024 slots forever and a real trainer then got
too_many_connections. Now a connection without a complete hello is closed after
hello_timeout_ms, and once hello-less connections hold max_connections - reserved_connections
slots (or all of them), a new connection closes the oldest of them that has waited its grace
(1 s), so the trainer gets in at once. Both closes are counted apart (connections.hello_timeouts,
connections.evicted in /api/v1/stats, and in /metrics), not only in bad_hellos."""
import json
import socket
import time

from relutil import integ, raise_fd_limit
from ssclient import Client, x_event

N_IDLE = 1100


def _open_idle(path, n):
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        if i % 10 == 0:
            s.sendall(b'{"hello":"stepscope/1","job":"x"')  # a hello never finished
        socks.append(s)
    return socks


def _first_reply(s, timeout):
    """(code of the first error line, or None; seconds until EOF, or None)."""
    s.settimeout(timeout)
    t0 = time.monotonic()
    buf = b""
    try:
        while True:
            try:
                d = s.recv(65536)
            except ConnectionResetError:  # it had sent bytes the daemon did not read
                break
            if not d:
                break
            buf += d
    except socket.timeout:
        return None, None
    line = buf.split(b"\n", 1)[0]
    code = json.loads(line)["error"]["code"] if line else None
    return code, time.monotonic() - t0


def _metrics(d):
    """The unlabelled samples of /metrics, by name."""
    st, _, body = d.request("/metrics")
    assert st == 200
    out = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()[:2]
            out[name] = float(value)
    return out


def test_idle_flood_cannot_lock_out_a_trainer(daemons, tmp, figures):
    assert raise_fd_limit(4 * N_IDLE) >= 2 * N_IDLE + 64, "cannot raise the fd limit"
    timeout_ms = 4000
    env = integ.clean_env(tmp)
    env["STEPSCOPE_HELLO_TIMEOUT_MS"] = str(timeout_ms)  # the rest default: 1024 slots, 64 reserved
    d = daemons("idle", env=env)
    t_flood = time.monotonic()
    idle = _open_idle(d.socket, N_IDLE)
    try:
        time.sleep(1.2)  # past the grace: the flood is now evictable
        # A real trainer: welcomed and acknowledged at once, not refused.
        t0 = time.monotonic()
        with Client(d.socket, timeout=10) as c:
            c.hello("trainer", stream="s")
            c.send_lines([x_event(i) for i in range(5)])
            assert c.wait_ack(5) == 5 and c.errors == []
            trainer_s = time.monotonic() - t0
            st = d.stats()
            # Hello-less connections hold at most 1024 - 64 slots.
            assert st["connections"]["open"] <= 1024 - 64 + 1, st["connections"]
            # Every idle connection ends: refused during the burst (too_many_connections),
            # evicted, or timed out; none outlives the timeout by more than its check period.
            codes = {}
            latest = 0.0
            for s in idle:
                code, _ = _first_reply(s, timeout=timeout_ms / 1000 * 1.25 + 3)
                assert code in ("too_many_connections", "evicted", "hello_timeout"), code
                codes[code] = codes.get(code, 0) + 1
                latest = max(latest, time.monotonic() - t_flood)
            assert codes.get("hello_timeout", 0) > 0 and codes.get("evicted", 0) >= 1, codes
            # Each way of closing them is counted, in /stats and in /metrics alike.
            conns = d.stats()["connections"]
            assert (conns["hello_timeouts"], conns["evicted"], conns["rejected"]) == (
                codes.get("hello_timeout", 0), codes["evicted"],
                codes.get("too_many_connections", 0)), (conns, codes)
            metrics = _metrics(d)
            assert metrics["stepscope_connections_hello_timeouts_total"] == conns["hello_timeouts"]
            assert metrics["stepscope_connections_evicted_total"] == conns["evicted"]
            # The trainer is still served after the flood is gone.
            c.send_lines([x_event(i) for i in range(5, 10)])
            assert c.wait_ack(10) == 10 and c.errors == []
        d.wait_for("only the trainer's connection was open, then none",
                   lambda: d.stats()["connections"]["open"] == 0, timeout=10)
        assert d.job("trainer")["events"] == 10
        figures(idle_connections=N_IDLE, trainer_welcomed_and_acked_s=round(trainer_s, 3),
                idle_outcomes=codes, all_idle_closed_after_s=round(latest, 2),
                hello_timeout_ms=timeout_ms)
        assert latest < timeout_ms / 1000 * 1.25 + 2.5, latest
    finally:
        for s in idle:
            s.close()


def test_burst_of_ranks_is_not_evicted(daemons):
    """Ranks connecting at once are all accepted before any hello is read: none may be evicted
    for the others (they are within their grace), even past max_connections - reserved."""
    n = 200
    assert raise_fd_limit(4 * n) >= 2 * n + 64
    d = daemons("burst", args=["--max-connections", str(n), "--reserved-connections", "150"])
    clients = []
    try:
        for i in range(n):
            c = Client(d.socket, timeout=30)
            clients.append(c)
            c.hello("burst", rank=i, world_size=n, stream="s", read_welcome=False)
        for c in clients:
            c.read_welcome()
        for c in clients:
            c.send_lines([x_event(0)])
        for c in clients:
            assert c.wait_ack(1) == 1 and c.errors == []
    finally:
        for c in clients:
            c.close()
