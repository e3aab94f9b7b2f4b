# SPDX-License-Identifier: MIT
"""The background sender: one daemon thread per client (per process).

It owns the connection and every line taken from the client's pending deque. Lines get their
sequence numbers here, in the order the deque hands them over, and are kept (``_lines[_head:]``)
until the daemon acknowledges them, whatever happens to connections in between:

* connect with exponential backoff (0.05 s doubling to 5 s) while the daemon is absent;
* hello with the client's ``stream`` and ``seq`` = the oldest line still held, then wait for the
  welcome; from then on every held line is written again, contiguously from that seq, because the
  daemon numbers the lines of a connection from the hello's seq (it skips those it already holds,
  so each is stored exactly once);
* batches of up to 64 KiB per write; a batch is cut once 4 KiB are waiting, or the oldest waiting
  line has lingered ``LINGER`` seconds, or a flush/close waits;
* ``{"ack":N}`` frees the lines below N (once written on this connection, so the numbering of the
  connection never skips); ``{"error":...}`` is counted; ``{"capture":...}`` goes to the capture
  callbacks (``on_capture``); every other line, captures included, to the control callbacks.

Flush markers travel through the same deque as lines, so a flush waits for exactly the lines
recorded before it, however many threads record.
"""
import errno
import json
import os
import select
import socket
import threading
import time

from ._encode import encode_line

BATCH_MIN = 4 * 1024
BATCH_MAX = 64 * 1024
LINGER = 0.010        # seconds a line may wait for a fuller batch
TICK = 0.010          # longest sleep while connected (picks up new lines)
BACKOFF_MIN = 0.05
BACKOFF_MAX = 5.0
HANDSHAKE_TIMEOUT = 5.0
RECV_SIZE = 256 * 1024


class Marker:
    """A flush request: done once every line recorded before it is acknowledged."""
    __slots__ = ("event", "seq")

    def __init__(self):
        self.event = threading.Event()
        self.seq = None


class _Disconnected(Exception):
    pass


class Sender:
    def __init__(self, client):
        self.c = client
        self.stop = False
        self.sock = None
        self.rbuf = b""
        self.lines = []        # held lines; _lines[head] has sequence number base_seq
        self.head = 0
        self.base_seq = 0
        self.written = 0       # index past the last line fully written on this connection
        self.sent = 0          # index past the last line put into a batch on this connection
        self.out = None        # memoryview of the batch being written
        self.out_off = 0
        self.batch_end = 0
        self.waiting_since = None  # when unbatched lines first waited
        self.unbatched_bytes = 0
        self.acked_upto = 0    # highest ack seen for this stream
        self.markers = []
        self.backoff = BACKOFF_MIN
        self.connected = False
        self.welcome = None
        self.hello_framework = None  # (framework, framework_version) of this connection's hello
        self.rehello = False   # the client named its framework after a hello went (_name_framework)
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            os.set_blocking(fd, False)
        self.thread = threading.Thread(target=self._main, name="stepscope-sender", daemon=True)

    # -- called from other threads -------------------------------------------------------------

    def start(self):
        self.thread.start()

    def wake(self):
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def shutdown(self, timeout=1.0):
        self.stop = True
        self.wake()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout)
        if not self.thread.is_alive():
            self._close_sock()
            for fd in (self.wake_r, self.wake_w):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.wake_r = self.wake_w = -1

    def abandon_after_fork(self):
        """In a forked child: drop the parent's descriptors without touching its connection."""
        self.stop = True
        s, self.sock = self.sock, None
        if s is not None:
            try:
                s.close()  # our copy of the descriptor only; no shutdown(), that would cut the parent's
            except OSError:
                pass
        for fd in (self.wake_r, self.wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self.wake_r = self.wake_w = -1

    def held(self):
        return len(self.lines) - self.head

    # -- the thread -----------------------------------------------------------------------------

    def _main(self):
        while not self.stop:
            try:
                self._run()
            except Exception as e:  # never die: count, back off, carry on
                self.c._stats["internal_errors"] += 1
                self.c._stats["last_error"] = "sender: %r" % (e,)
                self._disconnect()
                self._sleep(self.backoff)
                self.backoff = min(self.backoff * 2, BACKOFF_MAX)

    def _run(self):
        while not self.stop:
            self._pump()
            if self.sock is None:
                if self.c._closing and self.held() == 0:
                    self._sleep(TICK * 10)  # said bye and all is acknowledged: stay off
                    continue
                if not self._connect():
                    self._sleep(self.backoff)
                    self.backoff = min(self.backoff * 2, BACKOFF_MAX)
                    continue
                self.backoff = BACKOFF_MIN
            if self.rehello and self.out is None:
                # between batches: a hello that went without the framework is sent again (the
                # stream resumes from the daemon's ack, nothing is stored twice)
                self.rehello = False
                if self.hello_framework != self.c._hello_framework():
                    self._disconnect()
                    continue
            self._step_connected()

    def _sleep(self, seconds):
        try:
            r, _, _ = select.select([self.wake_r], [], [], seconds)
        except (OSError, ValueError):
            time.sleep(seconds)
            return
        if r:
            self._drain_wake()

    def _drain_wake(self):
        try:
            while os.read(self.wake_r, 4096):
                pass
        except OSError:
            pass

    def _pump(self):
        """Takes lines and markers out of the client's deque, numbering the lines."""
        pending = self.c._pending
        lines = self.lines
        added = 0
        while True:
            try:
                item = pending.popleft()
            except IndexError:
                break
            if item.__class__ is bytes:
                lines.append(item)
                added += len(item)
            else:
                item.seq = self.base_seq + len(lines) - self.head
                self.markers.append(item)
        if added:
            self.unbatched_bytes += added
            if self.waiting_since is None:
                self.waiting_since = time.monotonic()
        if self.markers:
            self._check_markers()

    def _check_markers(self):
        done = [m for m in self.markers if m.seq <= self.base_seq]
        if done:
            self.markers = [m for m in self.markers if m.seq > self.base_seq]
            for m in done:
                m.event.set()

    def _free(self):
        """Frees the held lines that are acknowledged and written on this connection."""
        upto = min(self.acked_upto - self.base_seq, self.written - self.head)
        if upto <= 0:
            return
        lines = self.lines
        freed = 0
        for i in range(self.head, self.head + upto):
            freed += len(lines[i])
            lines[i] = None
        self.head += upto
        self.base_seq += upto
        self.c._freed_bytes += freed
        self.c._stats["acked"] += upto
        if self.head > 4096 and self.head * 2 > len(lines):
            del lines[:self.head]
            self.written -= self.head
            self.sent -= self.head
            self.batch_end -= self.head
            self.head = 0
        if self.markers:
            self._check_markers()

    # -- connection -----------------------------------------------------------------------------

    def _connect(self):
        st = self.c._stats
        # lines acknowledged on an earlier connection but not yet rewritten are durable: drop them
        self.written = self.sent = self.batch_end = len(self.lines)
        self._free()
        self.written = self.sent = self.batch_end = self.head
        self.out = None
        self.unbatched_bytes = sum(len(self.lines[i]) for i in range(self.head, len(self.lines)))
        self.waiting_since = time.monotonic() if self.unbatched_bytes else None
        self.rbuf = b""
        s = None
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(HANDSHAKE_TIMEOUT)
            s.connect(self.c.socket_path)
            hello = dict(self.c._hello)
            self.hello_framework = (hello.get("framework"), hello.get("framework_version"))
            hello["stream"] = self.c.stream
            hello["seq"] = self.base_seq
            s.sendall(encode_line(hello))
            welcome = self._read_welcome(s)
        except (OSError, _Disconnected, ValueError) as e:
            st["connect_failures"] += 1
            if not isinstance(e, _Disconnected):
                st["last_error"] = "connect %s: %s" % (self.c.socket_path, e)
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass
            return False
        s.setblocking(False)
        self.sock = s
        self.welcome = welcome
        self.connected = True
        st["connects"] += 1
        if st["connects"] > 1:
            st["reconnects"] += 1
            st["replayed"] += self.held()
        return True

    def _read_welcome(self, s):
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT
        while True:
            nl = self.rbuf.find(b"\n")
            if nl >= 0:
                line, self.rbuf = self.rbuf[:nl], self.rbuf[nl + 1:]
                msg = self._parse(line)
                if msg is None:
                    continue
                if "welcome" in msg:
                    return msg
                if "error" in msg:
                    self._count_error(msg)
                    raise _Disconnected()
                self._dispatch(msg)
                continue
            left = deadline - time.monotonic()
            if left <= 0 or self.stop:
                self.c._stats["last_error"] = "no welcome from the daemon"
                raise _Disconnected()
            s.settimeout(min(left, 0.25))
            try:
                data = s.recv(RECV_SIZE)
            except socket.timeout:
                continue
            if not data:
                self.c._stats["last_error"] = "daemon closed the connection before welcome"
                raise _Disconnected()
            self.rbuf += data

    def _close_sock(self):
        s, self.sock = self.sock, None
        if s is not None:
            try:
                s.close()
            except OSError:
                pass

    def _disconnect(self):
        if self.sock is not None:
            self.c._stats["disconnects"] += 1
        self._close_sock()
        self.connected = False
        self.out = None

    def _step_connected(self):
        now = time.monotonic()
        if self.out is None and self.sent < len(self.lines):
            if (self.unbatched_bytes >= BATCH_MIN or self.markers or self.c._closing or self.stop
                    or self.waiting_since is None or now - self.waiting_since >= LINGER):
                self._build_batch()
        if self.out is not None:
            timeout = TICK
        elif self.sent < len(self.lines) and self.waiting_since is not None:
            timeout = max(0.0, min(TICK, self.waiting_since + LINGER - now))
        else:
            timeout = TICK
        sock = self.sock
        try:
            r, w, _ = select.select([sock, self.wake_r], [sock] if self.out is not None else [], [],
                                    timeout)
        except (OSError, ValueError):
            self._disconnect()
            return
        if self.wake_r in r:
            self._drain_wake()
        try:
            if sock in r:
                self._recv()
            if w and self.sock is not None:
                self._send()
        except _Disconnected:
            self._disconnect()

    def _build_batch(self):
        lines = self.lines
        i = self.sent
        n = len(lines)
        size = 0
        parts = []
        while i < n:
            ln = lines[i]
            if size and size + len(ln) > BATCH_MAX:
                break
            parts.append(ln)
            size += len(ln)
            i += 1
        self.out = memoryview(b"".join(parts))
        self.out_off = 0
        self.batch_end = i
        self.sent = i
        self.unbatched_bytes = max(0, self.unbatched_bytes - size)
        self.waiting_since = time.monotonic() if i < n else None
        st = self.c._stats
        st["writes"] += 1
        st["lines_written"] += len(parts)

    def _send(self):
        try:
            k = self.sock.send(self.out[self.out_off:])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            raise _Disconnected()
        self.out_off += k
        self.c._stats["bytes_written"] += k
        if self.out_off >= len(self.out):
            self.out = None
            self.written = self.batch_end
            self._free()

    def _recv(self):
        try:
            data = self.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            raise _Disconnected()
        if not data:
            raise _Disconnected()
        buf = self.rbuf + data if self.rbuf else data
        start = 0
        while True:
            nl = buf.find(b"\n", start)
            if nl < 0:
                break
            msg = self._parse(buf[start:nl])
            start = nl + 1
            if msg is not None:
                self._dispatch(msg)
        self.rbuf = buf[start:]
        if len(self.rbuf) > (1 << 20):  # a daemon line this long is not ours to understand
            self.rbuf = b""

    @staticmethod
    def _parse(line):
        line = line.strip()
        if not line:
            return None
        try:
            msg = json.loads(line.decode("utf-8", "replace"))
        except ValueError:
            return None
        return msg if isinstance(msg, dict) else None

    def _count_error(self, msg):
        st = self.c._stats
        st["errors"] += 1
        err = msg.get("error")
        code = err.get("code") if isinstance(err, dict) else None
        if isinstance(code, str):
            codes = st["error_codes"]
            codes[code] = codes.get(code, 0) + 1
        st["last_error"] = "daemon: %s" % (json.dumps(err, ensure_ascii=True)[:500],)

    def _dispatch(self, msg):
        if "ack" in msg:
            n = msg.get("ack")
            if isinstance(n, int) and not isinstance(n, bool):
                if n > self.acked_upto:
                    self.acked_upto = n
                self._free()
            return
        if "error" in msg:
            self._count_error(msg)
            return
        if "welcome" in msg:
            return
        self.c._stats["control_lines"] += 1
        if "capture" in msg:
            self.c._capture_request(msg["capture"])
        if "capture_cancel" in msg:
            self.c._capture_cancel(msg["capture_cancel"])
        for cb in list(self.c._control_callbacks):
            try:
                cb(msg)
            except Exception as e:
                self.c._stats["last_error"] = "control callback: %r" % (e,)
