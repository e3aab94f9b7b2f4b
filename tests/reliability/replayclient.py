# SPDX-License-Identifier: MIT
"""A replaying rank for the kill -9 tests: what a real collector does (docs/PROTOCOL.md section 3).

It holds every line it has not seen acknowledged. On any connection failure (the daemon died) it
reconnects, says hello with its stream and seq = the oldest unacknowledged line, and sends again
from there; lines the daemon had made durable but not yet acknowledged come back as duplicates,
which the daemon must drop. Lines are pre-encoded so Python's cost is a memcpy per 64 KiB.
"""
import json
import socket
import threading
import time

TS0 = 1700000000000000


def event_lines(rank, n):
    """n X events of rank, each with a distinct ts (the key the timeline check counts)."""
    return [json.dumps({"ph": "X", "cat": "kernel", "name": f"kernel_{i % 13}", "pid": rank,
                        "tid": 1, "ts": TS0 + i * 10, "dur": 3,
                        "args": {"seq": i}}, separators=(",", ":")).encode() + b"\n"
            for i in range(n)]


class ReplayingRank(threading.Thread):
    def __init__(self, path, job, rank, world, n, batch_bytes=65536, deadline_s=120.0):
        super().__init__(daemon=True)
        self.path, self.job, self.rank, self.world = path, job, rank, world
        self.lines = event_lines(rank, n)
        self.n = n
        self.batch = max(1, batch_bytes // len(self.lines[0])) if n else 1
        self.acked = 0          # highest ack read: lines [0, acked) are durable
        self.connects = 0
        self.replayed = 0       # lines sent again after a reconnect
        self.sent_hi = 0        # lines [0, sent_hi) were written at least once
        self.errors = []        # {"error":...} payloads (none expected)
        self.failure = None
        self.deadline = time.monotonic() + deadline_s
        self._lock = threading.Lock()

    # One connection: hello, then send from the oldest unacked line while a reader takes acks.
    def _session(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        try:
            s.connect(self.path)
        except OSError:
            s.close()
            return False
        self.connects += 1
        start = self.acked
        hello = {"hello": "stepscope/1", "job": self.job, "rank": self.rank,
                 "world_size": self.world, "host": "reliability", "pid": 1000 + self.rank,
                 "framework": "pytest", "stream": f"r{self.rank}", "seq": start}
        done = threading.Event()

        def reader():
            buf = b""
            try:
                while True:
                    data = s.recv(65536)
                    if not data:
                        break
                    buf += data
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        msg = json.loads(line)
                        if "ack" in msg:
                            with self._lock:
                                self.acked = max(self.acked, msg["ack"])
                        elif "error" in msg:
                            self.errors.append(msg["error"])
                        if self.acked >= self.n:
                            return
            except (OSError, ValueError):
                pass
            finally:
                done.set()

        try:
            s.sendall(json.dumps(hello).encode() + b"\n")
            t = threading.Thread(target=reader, daemon=True)
            t.start()
            for a in range(start, self.n, self.batch):
                if done.is_set():
                    break
                b = min(self.n, a + self.batch)
                s.sendall(b"".join(self.lines[a:b]))
                self.replayed += max(0, min(b, self.sent_hi) - a)
                self.sent_hi = max(self.sent_hi, b)
            while not done.wait(0.05):
                if time.monotonic() > self.deadline:
                    break
        except OSError:
            pass
        finally:
            s.close()
            done.wait(5)
        return True

    def run(self):
        try:
            while self.acked < self.n:
                if time.monotonic() > self.deadline:
                    self.failure = f"rank {self.rank}: acked {self.acked} of {self.n} at deadline"
                    return
                if not self._session():
                    time.sleep(0.05)  # the daemon is restarting
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.failure = f"rank {self.rank}: {e!r}"
