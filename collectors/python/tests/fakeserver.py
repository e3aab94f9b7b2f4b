# SPDX-License-Identifier: MIT
"""An in-process fake of stepscoped's socket side (docs/PROTOCOL.md sections 1-3), for unit tests.

It numbers each connection's lines from the hello's seq (else the stream's next_seq), keeps the
lines of a stream at or above its next_seq exactly once (lower ones count as duplicates), acks
after every read (unless ``auto_ack`` is off), and can drop connections or go away on command.
"""
import json
import os
import socket
import threading
import time


class Stream:
    def __init__(self, key):
        self.key = key
        self.next_seq = 0
        self.lines = []       # (seq, parsed record) in the order taken
        self.raw = []         # the same lines as received (bytes), with keep_raw
        self.duplicates = 0


class FakeServer:
    def __init__(self, path, auto_ack=True, welcome_delay=0.0, keep_raw=False):
        self.path = str(path)
        self.keep_raw = keep_raw  # also keep each taken line's bytes (Stream.raw), e.g. to replay
        self.auto_ack = auto_ack
        self.welcome_delay = welcome_delay
        self.streams = {}
        self.hellos = []
        self.conns = []
        self.reads = []           # byte counts of each recv with records
        self.invalid = []         # lines that were not valid UTF-8 JSON objects
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.listener = None
        self.running = False
        self.thread = None
        self.drop_after_lines = None  # drop the connection once this many records were read
        self.stall = False            # stop reading after the welcome (a daemon under backpressure)

    # -- control ------------------------------------------------------------------------------

    def start(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ls.bind(self.path)
        ls.listen(16)
        ls.settimeout(0.05)
        self.listener = ls
        self.running = True
        self.thread = threading.Thread(target=self._accept_loop, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        """Goes away like a killed daemon: listener and connections closed, socket file gone."""
        self.running = False
        if self.thread:
            self.thread.join(2)
        if self.listener:
            self.listener.close()
            self.listener = None
        self.drop_connections()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def drop_connections(self):
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                c.close()
            except OSError:
                pass

    def send_all(self, obj):
        """Sends one line to every connected client (e.g. a control line)."""
        data = (json.dumps(obj) + "\n").encode()
        with self.lock:
            conns = list(self.conns)
        for c in conns:
            try:
                c.sendall(data)
            except OSError:
                pass

    def records(self, key=None):
        with self.lock:
            if key is None:
                out = []
                for s in self.streams.values():
                    out.extend(s.lines)
                return out
            s = self.streams.get(key)
            return list(s.lines) if s else []

    def wait_for(self, pred, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(left)
        return True

    # -- serving ------------------------------------------------------------------------------

    def _accept_loop(self):
        while self.running:
            try:
                c, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            c.settimeout(None)
            with self.lock:
                self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        buf = b""
        hello = None
        stream = None
        seq = 0
        taken = 0
        try:
            while True:
                data = c.recv(1 << 20)
                if not data:
                    return
                buf += data
                lines = buf.split(b"\n")
                buf = lines.pop()
                nrec = 0
                for raw in lines:
                    raw = raw.rstrip(b"\r")
                    if not raw.strip():
                        continue
                    try:
                        obj = json.loads(raw.decode("utf-8"))
                        if not isinstance(obj, dict):
                            raise ValueError("not an object")
                    except ValueError:
                        obj = None
                    if hello is None:
                        if obj is None or obj.get("hello") != "stepscope/1":
                            c.sendall(b'{"error":{"line":1,"code":"bad_hello","message":"x"}}\n')
                            return
                        hello = obj
                        key = (obj.get("job"), obj.get("rank", 0), obj.get("stream") or object())
                        with self.cond:
                            self.hellos.append(obj)
                            stream = self.streams.get(key)
                            if stream is None:
                                stream = self.streams[key] = Stream(key)
                            seq = obj["seq"] if "seq" in obj else stream.next_seq
                            welcome = stream.next_seq
                            self.cond.notify_all()
                        if self.welcome_delay:
                            time.sleep(self.welcome_delay)
                        c.sendall(('{"welcome":"stepscope/1","job_id":1,"session_id":1,'
                                   '"stream_id":1,"next_seq":%d}\n' % welcome).encode())
                        while self.stall and self.running:
                            time.sleep(0.01)
                        continue
                    nrec += 1
                    if obj is None:
                        c.sendall(b'{"error":{"line":0,"seq":%d,"code":"malformed","message":"x"}}\n'
                                  % seq)
                    elif "ph" not in obj and "type" not in obj:
                        c.sendall(b'{"error":{"line":0,"seq":%d,"code":"unknown","message":"x"}}\n'
                                  % seq)
                    with self.cond:
                        if obj is None:
                            self.invalid.append(raw)
                        if seq >= stream.next_seq:
                            stream.lines.append((seq, obj))
                            if self.keep_raw:
                                stream.raw.append(raw)
                            stream.next_seq = seq + 1
                        else:
                            stream.duplicates += 1
                        self.cond.notify_all()
                    seq += 1
                    taken += 1
                    if obj is not None and obj.get("type") == "bye":
                        c.sendall(b'{"ack":%d}\n' % stream.next_seq)
                        return
                    if self.drop_after_lines is not None and taken >= self.drop_after_lines:
                        self.drop_after_lines = None
                        with self.lock:
                            if c in self.conns:
                                self.conns.remove(c)
                        c.shutdown(socket.SHUT_RDWR)
                        return
                if nrec:
                    with self.lock:
                        self.reads.append(nrec)
                    if self.auto_ack and stream is not None:
                        c.sendall(b'{"ack":%d}\n' % stream.next_seq)
        except OSError:
            return
        finally:
            with self.lock:
                if c in self.conns:
                    self.conns.remove(c)
            try:
                c.close()
            except OSError:
                pass
