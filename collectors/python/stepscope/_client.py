# SPDX-License-Identifier: MIT
"""The client: what the training thread calls. It only encodes and appends to a deque.

Guarantees (see docs/PYTHON.md): no call blocks on the daemon or raises into user code; memory
held for the daemon is bounded by ``buffer_bytes`` (records past it are dropped and counted);
lines not acknowledged are replayed after a reconnect; a forked child starts afresh.
"""
import atexit
import collections
import os
import sys
import threading
import time
import weakref

from . import _env
from ._encode import encode_line, encode_str, to_bytes, us
from ._host import HostSampler
from ._sender import Marker, Sender

__all__ = ["Client"]

_time_ns = time.time_ns
_BYE = b'{"type":"bye"}\n'
VERSION = "0.1.0"

_clients = weakref.WeakSet()


def _count_internal(c, e):
    try:
        c._stats["internal_errors"] += 1
        c._stats["last_error"] = "client: %r" % (e,)
    except Exception:
        pass


class _Step:
    """``with client.step(samples=n) as s:``; phases inside it add to ``s.phases``."""
    __slots__ = ("_c", "step", "samples", "phases", "begin", "_prev")

    def __init__(self, c, step, samples):
        self._c = c
        self.step = step
        self.samples = samples
        self.phases = {}
        self.begin = None
        self._prev = None

    def __enter__(self):
        c = self._c
        self._prev = c._step
        c._step = self
        self.begin = _time_ns()
        return self

    def __exit__(self, et, ev, tb):
        end = _time_ns()
        c = self._c
        c._step = self._prev
        self._prev = None
        if et is not StopIteration:  # a loader running dry inside the step: not a step
            try:
                c._emit_step(self, end)
            except Exception as e:
                _count_internal(c, e)
        return False


class _Phase:
    __slots__ = ("_c", "name", "t0")

    def __init__(self, c, name):
        self._c = c
        self.name = name

    def __enter__(self):
        self.t0 = _time_ns()
        return self

    def __exit__(self, et, ev, tb):
        d = _time_ns() - self.t0
        s = self._c._step
        if s is not None:
            ph = s.phases
            ph[self.name] = ph.get(self.name, 0) + d
        return False


class _Annotate:
    __slots__ = ("_c", "name", "cat", "args", "t0")

    def __init__(self, c, name, cat, args):
        self._c = c
        self.name = name
        self.cat = cat
        self.args = args

    def __enter__(self):
        self.t0 = _time_ns()
        return self

    def __exit__(self, et, ev, tb):
        self._c.span(self.name, self.t0, _time_ns(), self.cat, self.args)
        return False

    def __call__(self, func):
        """As a decorator: every call of func is one span."""
        import functools
        c, name, cat, args = self._c, self.name, self.cat, self.args

        @functools.wraps(func)
        def wrapper(*a, **kw):
            with _Annotate(c, name, cat, args):
                return func(*a, **kw)
        return wrapper


class Client:
    """A connection to stepscoped for this process. See docs/PYTHON.md.

    Every argument has a default from the environment: ``socket`` from STEPSCOPE_SOCKET (else
    $XDG_RUNTIME_DIR/stepscope.sock, else /tmp/stepscope-$UID.sock), ``job`` from STEPSCOPE_JOB
    (else the script's name), ``rank``/``world_size``/``local_rank`` from RANK/WORLD_SIZE/LOCAL_RANK.
    """

    def __init__(self, socket=None, job=None, rank=None, world_size=None, stream=None,
                 buffer_bytes=64 * 2 ** 20, framework=None, framework_version=None, run=None,
                 local_rank=None, env=None, max_line_bytes=1 << 20, start=True,
                 exit_timeout=5.0):
        self.socket_path = socket or _env.default_socket_path()
        self.job = _env.clean_name(job if job is not None else _env.default_job(), "python")
        r = rank if rank is not None else _env.env_int("RANK")
        r = r if isinstance(r, int) and r >= 0 else 0
        ws = world_size if world_size is not None else _env.env_int("WORLD_SIZE")
        ws = ws if isinstance(ws, int) and ws >= 1 else 1
        if ws <= r:
            ws = r + 1
        self.rank, self.world_size = r, ws
        lr = local_rank if local_rank is not None else _env.env_int("LOCAL_RANK")
        self.local_rank = lr
        self.host = _env.truncate_utf8(_env.hostname())
        self._given_stream = stream
        self._limit = int(buffer_bytes)
        self._max_line = int(max_line_bytes)
        self._exit_timeout = exit_timeout
        self._meta = {"framework": framework, "framework_version": framework_version,
                      "run": run if run is not None else os.environ.get("STEPSCOPE_RUN"),
                      "env": env}
        self._control_callbacks = []
        self._capture_callbacks = []
        self._cancel_callbacks = []
        self._keys = {}
        self._closed = False
        self._closing = False
        self._reported = False
        self._close_result = None
        self._step = None
        self._next_step = 0
        self._fresh_state()
        _clients.add(self)
        if start:
            self._start()

    def _fresh_state(self):
        """Everything a process must not share with its parent (also run in a forked child)."""
        self._pid = os.getpid()
        given = self._given_stream
        key = "%s:%d:%d" % (self.host, self._pid, _time_ns())
        if given:
            key = "%s/%s" % (given, key) if self._pid != getattr(self, "_stream_pid", self._pid) \
                else str(given)
        self.stream = _env.truncate_utf8(key)
        self._stream_pid = self._pid
        self._pending = collections.deque()
        self._in_bytes = 0
        self._freed_bytes = 0
        self._records = 0
        self._dropped = 0
        self._stats = {"acked": 0, "errors": 0, "error_codes": {}, "connects": 0,
                       "reconnects": 0, "disconnects": 0, "connect_failures": 0, "replayed": 0,
                       "writes": 0, "lines_written": 0, "bytes_written": 0, "control_lines": 0,
                       "dropped_full": 0, "dropped_oversized": 0, "dropped_closed": 0,
                       "dropped_unencodable": 0, "internal_errors": 0, "last_error": None}
        self._sender = None
        self._ok = False  # the fast path may append (sender running, not closed)
        self._start_lock = threading.Lock()
        self._host = HostSampler()

    def _after_fork_child(self):
        old = self._sender
        self._fresh_state()
        self._step = None
        if old is not None:
            old.abandon_after_fork()
        # the child's sender starts with its first record (a DataLoader worker may record nothing)

    # -- the sender ---------------------------------------------------------------------------

    def _start(self):
        with self._start_lock:
            if self._sender is None and not self._closed:
                try:
                    s = Sender(self)
                    s.start()
                except Exception as e:  # no threads or fds left: records are dropped, counted
                    _count_internal(self, e)
                    return False
                self._sender = s
                self._ok = True
        return self._sender is not None

    def _make_hello(self):
        h = {"hello": "stepscope/1", "job": self.job, "rank": self.rank,
             "world_size": self.world_size, "host": self.host, "pid": os.getpid(),
             "clock": "realtime", "collector": "stepscope-python/" + VERSION,
             "python": "%d.%d.%d" % sys.version_info[:3], "capabilities": ["capture"]}
        if self.local_rank is not None:
            h["local_rank"] = self.local_rank
        for k in ("framework", "framework_version", "run"):
            v = self._meta[k]
            if v is not None:
                h[k] = _env.truncate_utf8(_env.clean_name(v, ""))
        if self._meta["env"] is not None:
            h["env"] = self._meta["env"]
        return h

    @property
    def _hello(self):
        return self._make_hello()

    def _hello_framework(self):
        """(framework, framework_version) as the next hello writes them."""
        h = self._make_hello()
        return (h.get("framework"), h.get("framework_version"))

    def _name_framework(self, name, version):
        """Names the framework in the hello unless one is named already (stepscope.torch.attach(),
        the Paddle and MindSpore hooks). A connection whose hello went without it is made again
        between two batches, so that the daemon knows the framework of every rank (the helper's
        rules follow it); the stream resumes from the daemon's ack, nothing is stored twice.
        Returns whether it named it."""
        m = self._meta
        if m.get("framework") is not None:
            return False
        m["framework"], m["framework_version"] = name, version
        s = self._sender
        if s is not None:
            s.rehello = True
            s.wake()
        return True

    # -- appending (the hot path) -------------------------------------------------------------

    def _put(self, b):
        n = len(b)
        if not self._ok or n > self._max_line or self._in_bytes - self._freed_bytes + n > self._limit:
            self._put_slow(b, n)
            return
        self._in_bytes += n
        self._records += 1
        self._pending.append(b)

    def _put_slow(self, b, n):
        st = self._stats
        if self._closed:
            self._dropped += 1
            st["dropped_closed"] += 1
            return
        if n > self._max_line:
            self._dropped += 1
            st["dropped_oversized"] += 1
            return
        if self._in_bytes - self._freed_bytes + n > self._limit:
            self._dropped += 1
            st["dropped_full"] += 1
            return
        if self._sender is None and not self._start():
            self._dropped += 1
            st["dropped_full"] += 1
            return
        self._in_bytes += n
        self._records += 1
        self._pending.append(b)

    def _put_str(self, s):
        try:
            b = s.encode("utf-8")
        except UnicodeEncodeError:
            b = to_bytes(s)
        self._put(b)

    def _put_obj(self, obj):
        b = encode_line(obj)
        if b is None:
            self._dropped += 1
            self._stats["dropped_unencodable"] += 1
            return
        self._put(b)

    def _key(self, name):
        k = self._keys.get(name)
        if k is None:
            k = encode_str(name if isinstance(name, str) else str(name))
            if len(self._keys) < 4096:
                self._keys[name] = k
        return k

    def _emit_step(self, s, end):
        b = s.begin
        if end < b:
            end = b
        line = '{"type":"step","step":%d,"begin_us":%d.%03d,"end_us":%d.%03d' % (
            s.step, b // 1000, b % 1000, end // 1000, end % 1000)
        if s.samples is not None:
            line += ',"samples":%d' % s.samples
        ph = s.phases
        if ph:
            key = self._key
            line += ',"phases":{' + ",".join(
                ['%s:%d.%03d' % (key(k), v // 1000, v % 1000) for k, v in ph.items()]) + "}}\n"
        else:
            line += "}\n"
        self._put_str(line)

    # -- public API ---------------------------------------------------------------------------

    def step(self, samples=None, step=None):
        """``with client.step(samples=n) as s:`` records one step record at exit. Steps number
        themselves from 0 (or continue from an explicit ``step=``)."""
        try:
            if step is None:
                step = self._next_step
            else:
                step = int(step)
                if step < 0:
                    step = 0
            self._next_step = step + 1
            if samples is not None:
                samples = int(samples)
                if samples < 0:
                    samples = None
        except Exception as e:
            _count_internal(self, e)
            step, samples = self._next_step, None
            self._next_step += 1
        return _Step(self, step, samples)

    def phase(self, name):
        """``with client.phase("forward"):`` inside a step adds its duration to the step's
        ``phases`` (repeated names add up). Outside a step it records nothing."""
        return _Phase(self, name)

    @property
    def current_step(self):
        return self._step

    def queue(self, name, size, capacity=None, step=None):
        """A queue depth sample: ``{"type":"queue","name","size","capacity","step","ts_us"}``."""
        try:
            ts = _time_ns() // 1000
            line = '{"type":"queue","name":%s,"size":%d' % (self._key(name), max(0, int(size)))
            if capacity is not None:
                line += ',"capacity":%d' % max(0, int(capacity))
            if step is not None:
                line += ',"step":%d' % max(0, int(step))
            elif self._step is not None:
                line += ',"step":%d' % self._step.step
            self._put_str(line + ',"ts_us":%d}\n' % ts)
        except Exception as e:
            _count_internal(self, e)

    def span(self, name, begin_ns, end_ns, cat="user_annotation", args=None, tid=None):
        """A Chrome trace "X" event from two time.time_ns() readings."""
        try:
            begin_ns = int(begin_ns)
            dur = int(end_ns) - begin_ns
            if dur < 0:
                dur = 0
            if tid is None:
                tid = threading.get_native_id()
            line = '{"ph":"X","name":%s,"cat":%s,"ts":%s,"dur":%d.%03d,"pid":%d,"tid":%s' % (
                encode_str(name if isinstance(name, str) else str(name)),
                self._key(cat), us(begin_ns), dur // 1000, dur % 1000, self._pid,
                tid if isinstance(tid, int) else encode_str(str(tid)))
            if args is not None:
                a = encode_line(args)
                if a is None:
                    self._dropped += 1
                    self._stats["dropped_unencodable"] += 1
                    return
                self._put(b"".join((to_bytes(line), b',"args":', a[:-1], b"}\n")))
            else:
                self._put_str(line + "}\n")
        except Exception as e:
            _count_internal(self, e)

    def annotate(self, name, cat="user_annotation", args=None):
        """``with client.annotate("load"):`` (or ``@client.annotate("load")``): one X span."""
        return _Annotate(self, name, cat, args)

    def event(self, ev):
        """Forwards one Chrome trace event dict (it should carry "ph") verbatim."""
        try:
            self._put_obj(ev)
        except Exception as e:
            _count_internal(self, e)

    def record(self, rec):
        """Any record dict (e.g. ``{"type":"pipeline","ops":[...]}``), encoded as is."""
        self.event(rec)

    def host_sample(self):
        """``{"type":"host","ts_us","cpu_percent","sys_cpu_percent","rss_bytes"}``; CPU since
        the previous sample (the first: since the client was made). Returns the record."""
        try:
            rec = self._host.sample()
            rec["ts_us"] = _time_ns() // 1000
            self._put_obj(rec)
            return rec
        except Exception as e:
            _count_internal(self, e)
            return None

    def on_control(self, callback):
        """callback(dict) is called, on the sender thread, with every line from the daemon that
        is not a welcome, ack or error (e.g. ``{"capture":{...}}``). Exceptions are swallowed."""
        self._control_callbacks.append(callback)
        return callback

    def on_capture(self, callback):
        """callback(request) is called, on the sender thread, for every capture request the
        daemon sends (docs/PROTOCOL.md section 6): ``{"id": int, "start_step": int or None (the
        next step), "steps": int, "what": [str, ...]}``. It must return quickly (never block the
        sender) and report progress with ``capture_state()``. While no callback is registered,
        requests are answered ``failed`` at once. Exceptions are swallowed."""
        self._capture_callbacks.append(callback)
        return callback

    def on_capture_cancel(self, callback):
        """callback(capture_id) is called, on the sender thread, when the daemon cancels a
        capture it sent (``{"capture_cancel":{"id":N}}``, docs/PROTOCOL.md section 6): a window
        not yet started must not start; one recording may end as it would. Must return quickly."""
        self._cancel_callbacks.append(callback)
        return callback

    def capture_state(self, capture_id, state, reason=None, step=None):
        """Reports a capture's progress on this rank to the daemon: ``state`` is "armed",
        "recording" (with ``step``, the step it started at, which places the later windows of a
        repeated capture), "done" or "failed" (with ``reason``, cut to 256 bytes). Any thread."""
        rec = {"type": "capture", "id": int(capture_id), "state": str(state)}
        if step is not None:
            rec["step"] = int(step)
        if reason is not None:
            rec["reason"] = _env.truncate_utf8(str(reason))
        self._put_obj(rec)

    def _capture_cancel(self, payload):
        """Sender thread: a {"capture_cancel":{"id":N}} payload from the daemon."""
        cid = payload.get("id") if isinstance(payload, dict) else None
        if cid.__class__ is not int or cid < 1:
            return
        for cb in list(self._cancel_callbacks):
            try:
                cb(cid)
            except Exception as e:
                _count_internal(self, e)

    def _capture_request(self, req):
        """Sender thread: a {"capture":{...}} payload from the daemon."""
        cid = req.get("id") if isinstance(req, dict) else None
        if cid.__class__ is not int or cid < 1:
            return
        start, steps, what = req.get("start_step"), req.get("steps"), req.get("what")
        if (start is not None and start.__class__ is not int) or steps.__class__ is not int \
                or not isinstance(what, list):
            self.capture_state(cid, "failed", "malformed capture request")
            return
        request = {"id": cid, "start_step": start, "steps": steps,
                   "what": [w for w in what if isinstance(w, str)]}
        if not self._capture_callbacks:
            self.capture_state(cid, "failed", "no capture handler in this process "
                                              "(stepscope.torch.attach registers one)")
            return
        for cb in list(self._capture_callbacks):
            try:
                cb(dict(request))
            except Exception as e:
                _count_internal(self, e)

    # -- flush / close ------------------------------------------------------------------------

    def flush(self, timeout=5.0):
        """Waits until the daemon has acknowledged every record recorded before this call.
        Returns True if it did within timeout (seconds; None: no limit)."""
        try:
            s = self._sender
            if s is None:
                return not self._pending
            if self._closed:  # the sender is stopped: nothing more will be acknowledged
                return s.held() == 0
            m = Marker()
            self._pending.append(m)
            s.wake()
            return m.event.wait(timeout)
        except Exception as e:
            _count_internal(self, e)
            return False

    def close(self, timeout=5.0):
        """Says bye, waits up to timeout for the daemon to acknowledge everything, stops the
        sender. Records after close are dropped (counted). Idempotent; run at exit."""
        if self._closed:
            return bool(self._close_result)
        try:
            self._ok = False
            self._closed = True
            ok = True
            s = self._sender
            if s is not None:
                self._closing = True
                self._in_bytes += len(_BYE)  # held until acknowledged, freed then like a record
                self._pending.append(_BYE)
                m = Marker()
                self._pending.append(m)
                s.wake()
                ok = m.event.wait(timeout)
                s.shutdown(1.0)
            self._close_result = ok
            self._report(bye_held=not ok and s is not None)
            return ok
        except Exception as e:
            _count_internal(self, e)
            return False

    def _close_at_exit(self):
        if self._closed or os.getpid() != self._pid:
            return
        s = self._sender
        timeout = self._exit_timeout
        if s is None or not s.connected:
            timeout = min(timeout, 1.0)  # no daemon now: do not hold up the exit for long
        self.close(timeout)

    def _report(self, bye_held=False):
        if self._reported:
            return
        self._reported = True
        msgs = []
        if self._dropped:
            st = self._stats
            why = []
            for k, label in (("dropped_full", "buffer full"), ("dropped_oversized", "too long"),
                             ("dropped_closed", "after close"),
                             ("dropped_unencodable", "not encodable")):
                if st[k]:
                    why.append("%d %s" % (st[k], label))
            msgs.append("%d records dropped (%s; buffer_bytes=%d)"
                        % (self._dropped, ", ".join(why), self._limit))
        s = self._sender
        held = (s.held() if s is not None else 0) + sum(
            1 for x in list(self._pending) if x.__class__ is bytes)
        if bye_held:
            held = max(0, held - 1)
        if held:
            msgs.append("%d records not acknowledged by the daemon at %s (%s)"
                        % (held, self.socket_path, self._stats["last_error"] or "no reply"))
        if not msgs:
            return
        text = "stepscope: " + "; ".join(msgs)
        try:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
        except Exception:
            pass

    # -- introspection ------------------------------------------------------------------------

    @property
    def stats(self):
        """Counters: records, dropped (and why), acked, errors (by code), connects, reconnects,
        replayed, writes, lines_written, bytes_written, buffered_bytes, held, connected..."""
        d = dict(self._stats)
        d["error_codes"] = dict(d["error_codes"])
        s = self._sender
        d.update(records=self._records, dropped=self._dropped,
                 buffered_bytes=self._in_bytes - self._freed_bytes,
                 held=(s.held() if s is not None else 0),
                 connected=bool(s is not None and s.connected), stream=self.stream,
                 socket=self.socket_path, job=self.job, rank=self.rank)
        return d

    @property
    def dropped(self):
        return self._dropped

    @property
    def closed(self):
        return self._closed

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.close()
        return False

    def __repr__(self):
        return "<stepscope.Client job=%r rank=%d socket=%r stream=%r>" % (
            self.job, self.rank, self.socket_path, self.stream)


def _atexit():
    for c in list(_clients):
        try:
            c._close_at_exit()
        except Exception:
            pass


def _after_fork_in_child():
    for c in list(_clients):
        try:
            c._after_fork_child()
        except Exception:
            pass


atexit.register(_atexit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
