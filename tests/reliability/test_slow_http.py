# SPDX-License-Identifier: MIT
"""Slow HTTP clients (issue 7, item 2): thousands of connections that trickle their headers
(slowloris), and clients that ask for a large export and never read it. The dashboard, health
and an analysis route must keep answering, each request within a bound; the tricklers must be
closed by the request deadline (http_request_timeout_s, daemon/web/guard.c) even though they are never
idle, and the stalled readers by the idle timeout (http_timeout_s)."""
import os
import select
import socket
import threading
import time

from relutil import SCALE, raise_fd_limit, rss_kib
from ssclient import Client

TS0 = 1700000000000000
BOUND_S = 1.0          # every request of the probe must answer within this (3x under ASan)


def _sanitized(pid):
    """True when the daemon is an ASan build: slower, and its RSS is not the allocator's."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def _cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _quiet(pid, timeout=30.0):
    """Waits until the process uses under 10 % of a core over 0.5 s; returns the wait."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        c0 = _cpu_s(pid)
        time.sleep(0.5)
        if _cpu_s(pid) - c0 < 0.05:
            break
    return time.monotonic() - t0


def _sockets(pid):
    """Sockets the process holds (HTTP connections among them; SQLite's files are not)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return n


def _ingest(d, job, steps, ops):
    """A small real job, so the analysis routes and the export have something to compute."""
    with Client(d.socket, timeout=60) as c:
        c.hello(job, rank=0, world_size=1, stream="r0")
        lines = 0
        for s in range(steps):
            base = TS0 + s * 100000
            batch = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 0,
                      "tid": 1, "ts": base, "dur": 99000}]
            batch += [{"ph": "X", "cat": "kernel", "name": f"op_{k}", "pid": 0, "tid": 7,
                       "ts": base + 10 + k * 2400, "dur": 2000, "args": {"pad": "x" * 100}}
                      for k in range(ops)]
            c.send_lines(batch)
            lines += len(batch)
        assert c.wait_ack(lines) == lines
    d.wait_for("job visible", lambda: d.job(job)["events"] == lines, timeout=30)
    return lines


def _probe(d, job, rounds):
    """rounds x (health, dashboard, an analysis route): returns the slowest, asserting 200s."""
    worst = 0.0
    paths = ["/api/v1/health", "/", f"/api/v1/jobs/{job}/operators?limit=20"]
    for _ in range(rounds):
        for p in paths:
            t0 = time.monotonic()
            st, _, body = d.request(p)
            dt = time.monotonic() - t0
            worst = max(worst, dt)
            assert st == 200, f"{p}: {st} {body[:200]}"
        time.sleep(0.2)
    return worst


class Trickler:
    """n connections sending the headers of a GET a byte at a time, every conn a byte each
    `every` s, so never idle; each one closed by the daemon is reopened (the attack goes on) and
    its lifetime from its first byte to the close seen is kept."""

    def __init__(self, host, port, n, every=0.5):
        self.host, self.port, self.n, self.every = host, port, n, every
        self.stop = threading.Event()
        self.lifetimes = []      # first byte sent -> end of stream seen, s
        self.open_failures = 0
        self.peak_open = 0
        self.socks = {}          # fd -> [socket, first byte time, bytes sent]
        self.thread = threading.Thread(target=self._run, daemon=True)

    HEADER = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100000

    def _open(self):
        try:
            s = socket.create_connection((self.host, self.port), timeout=5)
            s.setblocking(False)
            s.send(self.HEADER[:1])
        except OSError:
            self.open_failures += 1
            return
        self.socks[s.fileno()] = [s, time.monotonic(), 1]

    def _closed(self, fd):
        s, t_first, _ = self.socks.pop(fd)
        self.lifetimes.append(time.monotonic() - t_first)
        s.close()

    def _run(self):
        while not self.stop.is_set():
            while len(self.socks) < self.n and not self.stop.is_set():
                self._open()
            self.peak_open = max(self.peak_open, len(self.socks))
            # Ends of stream first: a closed connection is counted, not written to.
            p = select.poll()
            for fd in self.socks:
                p.register(fd, select.POLLIN)
            for fd, _ in p.poll(0):
                self._closed(fd)
            for fd, ent in list(self.socks.items()):
                try:
                    ent[0].send(self.HEADER[ent[2]:ent[2] + 1])
                    ent[2] += 1
                except BlockingIOError:
                    pass
                except OSError:
                    self._closed(fd)
            self.stop.wait(self.every)
        for ent in self.socks.values():
            ent[0].close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=60)


def test_slowloris_1000_trickling_connections(daemons, figures):
    """1000 connections (4000 in the long variant) (past the old default cap of 256) trickle header bytes, reopened as soon
    as the daemon closes one. Health, the dashboard and an analysis route answer every time
    within BOUND_S; every trickler is closed by the request deadline (4 s here) after its first
    byte, within the reaper's tick and the machine's scheduling, not before."""
    n = int(1000 * SCALE)
    deadline = 4
    assert raise_fd_limit(4 * n) >= 2 * n + 64, "cannot raise the fd limit for this test"
    d = daemons("slow", args=["--http-request-timeout-s", str(deadline)])
    _ingest(d, "j", 20, 20)
    before = d.get_json("/api/v1/stats")["http"]["deadline_closed"]
    with Trickler(d.host, d.port, n) as t:
        d.wait_for(f"{n} trickling connections", lambda: t.peak_open >= n, timeout=60)
        d.wait_for("the daemon holding them",
                   lambda: _sockets(d.proc.pid) > n, timeout=30)
        rss_attacked = rss_kib(d.proc.pid)
        worst = _probe(d, "j", 20)  # about 6 s: through at least one wave of deadline closes
        d.wait_for(f"the first {n} closed by the deadline", lambda: len(t.lifetimes) >= n,
                   timeout=deadline + 30)
        worst = max(worst, _probe(d, "j", 5))
    lives = sorted(t.lifetimes)
    closed = d.get_json("/api/v1/stats")["http"]["deadline_closed"] - before
    med = lives[len(lives) // 2]
    figures(slow_connections=n, reopened_total=len(lives), open_failures=t.open_failures,
            deadline_s=deadline, worst_request_s=round(worst, 3),
            lifetime_min_s=round(lives[0], 2), lifetime_median_s=round(med, 2),
            lifetime_max_s=round(lives[-1], 2), deadline_closed=closed,
            rss_attacked_kib=rss_attacked)
    bound = BOUND_S * (3 if _sanitized(d.proc.pid) else 1)
    assert worst < bound, f"a request took {worst:.2f} s with {n} trickling connections"
    assert t.open_failures == 0
    # Closed by the deadline, not before it (minus the reaper's tick), and not much after.
    assert lives[0] >= deadline - 0.5, f"a trickler was closed after {lives[0]:.2f} s"
    assert med < deadline + 2.0, f"median lifetime {med:.2f} s for a {deadline} s deadline"
    assert closed >= n, f"only {closed} connections counted as closed by the deadline"
    # A request that is answered is not cut by the deadline: a keep-alive connection idle after
    # its answer stays open longer than the deadline (until the idle timeout), and an answer
    # still being sent (the event stream, whose first ping comes after 10 s) is not cut.
    s = socket.create_connection((d.host, d.port), timeout=10)
    s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert s.recv(65536).startswith(b"HTTP/1.1 200")
    ev = socket.create_connection((d.host, d.port), timeout=10)
    ev.sendall(b"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = b""
    while b"event: hello" not in head:
        chunk = ev.recv(65536)
        assert chunk, f"the event stream ended: {head[:200]!r}"
        head += chunk
    assert head.startswith(b"HTTP/1.1 200")
    time.sleep(deadline + 1.5)
    s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert s.recv(65536).startswith(b"HTTP/1.1 200"), "an idle keep-alive was cut by the deadline"
    s.close()
    ev.settimeout(0.5)
    try:
        while True:  # whatever events came meanwhile, then silence: the end would be b""
            assert ev.recv(65536), "the event stream was cut by the deadline"
    except socket.timeout:
        pass
    ev.close()


def test_slow_readers_of_a_large_export(daemons, figures):
    """Clients that ask for a large timeline export (about 6 MB, more than the kernel buffers on
    both ends take) and never read it, with a 4 KiB receive buffer. An export in flight holds up
    to a store block (1 MiB) until its reader takes it, so only http_max_exports (32) are
    streamed at once and the rest answer 503 busy: the daemon's memory stays bounded however many
    readers stall. The stalled streams make no progress and the idle timeout (5 s here) closes
    them; meanwhile health, the dashboard and an analysis route answer within BOUND_S, and once
    they are gone an export is served again."""
    n = int(1000 * SCALE)
    idle = 5
    slots = 32
    assert raise_fd_limit(4 * n + 256) >= 2 * n + 64, "cannot raise the fd limit for this test"
    d = daemons("readers", args=["--http-timeout-s", str(idle)])
    events = _ingest(d, "big", 700, 40)
    st, _, body = d.request("/api/v1/jobs/big/timeline")
    assert st == 200 and len(body) > 5000000
    base = _sockets(d.proc.pid)
    rss0 = rss_kib(d.proc.pid)
    readers = []
    t0 = time.monotonic()
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((d.host, d.port))
        s.sendall(b"GET /api/v1/jobs/big/timeline HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        readers.append(s)
    try:
        held = _sockets(d.proc.pid) - base
        # The 32 streams first fill their sockets' send buffers (some MB each): that burst is
        # export work, not slowness; the probe starts once they are stalled.
        burst_s = _quiet(d.proc.pid)
        worst = _probe(d, "big", 5)
        rss_stalled = rss_kib(d.proc.pid)
        held = max(held, _sockets(d.proc.pid) - base)
        refused = d.get_json("/api/v1/stats")["http"]["exports_refused"]
        d.wait_for("the stalled readers closed by the idle timeout",
                   lambda: _sockets(d.proc.pid) <= base, timeout=idle + 60)
        closed_s = time.monotonic() - t0
        worst = max(worst, _probe(d, "big", 3))
    finally:
        for s in readers:
            s.close()
    st, _, again = d.request("/api/v1/jobs/big/timeline")
    growth_mib = (rss_stalled - rss0) / 1024
    figures(slow_readers=n, export_bytes=len(body), events=events, idle_timeout_s=idle,
            max_exports=slots, exports_refused=refused, sockets_held_max=held,
            streams_stalled_after_s=round(burst_s, 1),
            worst_request_s=round(worst, 3), all_closed_after_s=round(closed_s, 1),
            rss_before_kib=rss0, rss_stalled_kib=rss_stalled, rss_growth_mib=round(growth_mib, 1))
    assert held >= n * 9 // 10, f"the daemon held only {held} of the {n} readers"
    assert refused == n - slots, f"{refused} exports refused, {n - slots} expected"
    sanitized = _sanitized(d.proc.pid)
    # 32 streams of at most a block and a chunk each, plus what the other readers' connections
    # cost (a few KiB each), with room for the allocator.
    assert sanitized or growth_mib < slots * 1.5 + n * 0.05 + 16, f"RSS grew by {growth_mib:.0f} MiB"
    bound = BOUND_S * (3 if sanitized else 1)
    assert worst < bound, f"a request took {worst:.2f} s with {n} stalled readers"
    assert closed_s < idle + 30
    assert st == 200 and again == body, "no export served once the stalled readers were gone"


def test_per_address_limit(daemons, figures):
    """http_max_connections_per_ip (for a non-loopback address, where one host should not take
    every slot): past it a new connection from that address is closed at once, unread; the held
    ones still end at the request deadline, and the address is served again afterwards."""
    limit = 50
    deadline = 3
    d = daemons("perip", args=["--http-max-connections-per-ip", str(limit),
                               "--http-request-timeout-s", str(deadline)])
    base = _sockets(d.proc.pid)
    held = []
    for _ in range(limit):
        s = socket.create_connection((d.host, d.port), timeout=10)
        s.sendall(b"G")
        held.append(s)
    d.wait_for(f"{limit} connections accepted", lambda: _sockets(d.proc.pid) >= base + limit)
    t0 = time.monotonic()
    extra = socket.create_connection((d.host, d.port), timeout=10)
    try:
        extra.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = extra.recv(65536)
    except (ConnectionResetError, BrokenPipeError):
        got = b""
    refused_s = time.monotonic() - t0
    extra.close()
    assert got == b"", f"the connection past the per-address limit was answered: {got[:100]!r}"
    for s in held:
        s.settimeout(deadline + 10)
        try:
            assert s.recv(65536) == b"", "a held connection was answered"
        except ConnectionResetError:
            pass
        s.close()
    held_s = time.monotonic() - t0
    # libmicrohttpd gives an address its slots back when it cleans a closed connection up, on
    # its next loop turn after the close the client saw: wait for the daemon to let the held
    # sockets go (CI once asked within that turn and was refused), then the address is served.
    d.wait_for("the held connections released", lambda: _sockets(d.proc.pid) <= base, timeout=10)
    st, _, _ = d.request("/api/v1/health")
    figures(per_ip_limit=limit, refused_after_s=round(refused_s, 3),
            held_closed_after_s=round(held_s, 2))
    assert refused_s < 2.0
    assert st == 200
