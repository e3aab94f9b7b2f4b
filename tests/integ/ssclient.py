# SPDX-License-Identifier: MIT
"""A minimal stepscope protocol client for the integration tests (docs/PROTOCOL.md).

Pure stdlib and deliberately naive: blocking socket, whole lines, no buffering policy. It keeps
every reply the daemon sent (welcome, acks, errors, anything else) so tests can assert on them.
"""
import json
import socket
import time

DEFAULT_TIMEOUT = 30.0


def dumps(obj):
    """Compact JSON text of obj, the way a real client would send it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def x_event(i, name=None, tid=1, pid=0, ts0=1700000000000000.0, **extra):
    """A Chrome-trace X event numbered i, with a fractional timestamp."""
    ev = {
        "ph": "X",
        "cat": "kernel",
        "name": name if name is not None else f"kernel_{i % 17}",
        "pid": pid,
        "tid": tid,
        "ts": ts0 + i * 10.5,
        "dur": 2.25 + (i % 5),
        "args": {"correlation": i},
    }
    ev.update(extra)
    return ev


def to_line(item):
    """bytes of one line without its '\\n': dicts become JSON, str is encoded, bytes pass."""
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode()
    return dumps(item).encode()


class ProtocolError(AssertionError):
    pass


class Client:
    def __init__(self, path, timeout=DEFAULT_TIMEOUT):
        self.path = path
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.rbuf = b""
        self.welcome = None
        self.acks = []      # every ack value, in order
        self.errors = []    # every {"error":{...}} payload, in order
        self.others = []    # any other line the daemon sent
        self.eof = False
        self.lines_sent = 0  # lines written, the hello included (so the next is line lines_sent+1)

    # -- writing ---------------------------------------------------------------------------

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_lines(self, items, batch_bytes=65536):
        """Sends each item as one line, in writes of about batch_bytes."""
        buf = []
        size = 0
        for item in items:
            line = to_line(item) + b"\n"
            buf.append(line)
            size += len(line)
            self.lines_sent += 1
            if size >= batch_bytes:
                self.sock.sendall(b"".join(buf))
                buf, size = [], 0
        if buf:
            self.sock.sendall(b"".join(buf))

    def hello(self, job, rank=0, world_size=1, stream=None, seq=None, read_welcome=True, **extra):
        h = {"hello": "stepscope/1", "job": job, "rank": rank, "world_size": world_size,
             "host": "integ", "pid": 4242, "framework": "pytest"}
        if stream is not None:
            h["stream"] = stream
        if seq is not None:
            h["seq"] = seq
        h.update(extra)
        self.send_lines([h])
        if read_welcome:
            return self.read_welcome()
        return None

    def read_welcome(self):
        msg = self.read_message()
        if msg is None or "welcome" not in msg:
            raise ProtocolError(f"expected a welcome, got {msg!r} (errors {self.errors!r})")
        self.welcome = msg
        return msg

    # -- reading ---------------------------------------------------------------------------

    def read_message(self, timeout=None):
        """The next line from the daemon, parsed and recorded; None at EOF."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while b"\n" not in self.rbuf:
            if self.eof:
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no reply line from the daemon (acks so far {self.acks[-1:]})")
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                self.eof = True
                if self.rbuf:
                    raise ProtocolError(f"daemon sent an unterminated line: {self.rbuf!r}")
                return None
            self.rbuf += data
        line, self.rbuf = self.rbuf.split(b"\n", 1)
        msg = json.loads(line)  # a reply that is not JSON fails the test here
        if not isinstance(msg, dict):
            raise ProtocolError(f"daemon sent a non-object line: {line!r}")
        if "ack" in msg:
            self.acks.append(msg["ack"])
        elif "error" in msg:
            self.errors.append(msg["error"])
        elif "welcome" not in msg:
            self.others.append(msg)
        return msg

    @property
    def last_ack(self):
        return self.acks[-1] if self.acks else None

    def wait_ack(self, k, timeout=None):
        """Reads until an ack >= k arrives. Returns it; fails on EOF or timeout."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while not self.acks or self.acks[-1] < k:
            msg = self.read_message(timeout=max(0.0, deadline - time.monotonic()))
            if msg is None:
                raise ProtocolError(f"connection closed before ack {k}; acks {self.acks[-3:]}, "
                                    f"errors {self.errors[:5]!r}")
        return self.acks[-1]

    def read_until_eof(self, timeout=None):
        """Reads every remaining line until the daemon closes the connection."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.timeout)
        while self.read_message(timeout=max(0.0, deadline - time.monotonic())) is not None:
            pass

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
