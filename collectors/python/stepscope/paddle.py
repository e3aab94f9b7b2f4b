# SPDX-License-Identifier: MIT
"""stepscope.paddle: PaddlePaddle hooks (see docs/PYTHON.md, section "Paddle").

    import stepscope.paddle as ssp

    hook = ssp.attach(model, optimizer, train_loader)  # always-on step records
    for x, y in train_loader:                 # fetch timed, samples counted (or hook.loader(it))
        loss = loss_fn(model(x), y)           # forward: the model's forward hooks
        loss.backward()                       # backward: forward end -> optimizer start
        optimizer.step()                      # optimizer: the wrapped step(); ends the step
        optimizer.clear_grad()                # (beside a Profiler: prof.step() ends it, as
                                              # Paddle's timer; docs/PYTHON.md)

    model.fit(data, callbacks=[ssp.StepscopeCallback()])   # paddle.Model (hapi) instead

    prof = paddle.profiler.Profiler(scheduler=(2, 5), on_trace_ready=ssp.trace_handler())

Importing this module works without Paddle installed (StepscopeCallback then derives from
stepscope._hooks.NoFrameworkCallback, whose ``on_*`` hooks do nothing); nothing here raises into
the training loop: internal failures are counted in the client's stats (``internal_errors``,
``last_error``).
"""
import json
import os
import re
import shutil
import tempfile
import time

from . import get_client
from ._client import _count_internal
from ._encode import encode_line, us
from ._capture import Captures
from ._hooks import NoFrameworkCallback, StepHook, batch_size, framework_of

try:  # paddle.Model's callback base; absent without Paddle
    from paddle.callbacks import Callback as _CallbackBase
except Exception:  # ImportError, or a broken install
    _CallbackBase = NoFrameworkCallback

__all__ = ["StepHook", "attach", "serve_captures", "StepscopeCallback", "trace_handler",
           "stream_chrome_trace"]

_now = time.time_ns


def attach(model=None, optimizer=None, dataloader=None, client=None, host_interval=1.0,
           captures=True):
    """A StepHook watching model (a paddle.nn.Layer), optimizer and dataloader (any iterable
    object whose class can be swapped, e.g. paddle.io.DataLoader: its fetches are timed; or wrap
    an iterable with the hook's ``loader()``). A host CPU sample is sent at a step's end at most
    every host_interval seconds (0: none). With captures, the daemon's capture requests run
    ``paddle.profiler.Profiler`` for the requested steps and stream the window (``hook.captures``,
    docs/PYTHON.md "Capture"). ``detach()`` undoes it all."""
    h = StepHook(model, optimizer, client, host_interval=host_interval,
                 framework=framework_of("paddle"), dataloader=dataloader)
    if captures:
        serve_captures(h)
    _watch_timer(h)
    return h


class _TimerHook:
    """A hook of Paddle's benchmark timer (paddle.profiler.timer, whose hooks Paddle calls from
    its DataLoader and from Profiler.step()): while a paddle.profiler.Profiler runs, hook's steps
    are the timer's. A step ends at ``prof.step()`` and the next begins there (as the timer's
    batch_cost runs from one step() to the next: clear_grad() and step() itself included), its
    ``dataloader`` phase is the reader cost the timer measures inside DataLoader.__next__ (a
    fetch ``hook.loader()`` gets from anything but the DataLoader's own iterator, e.g. a
    generator around it, is timed whole there), and its samples are
    step()'s num_samples (without them, the batches' sizes; Paddle's ips is then steps/s). The
    step open at ``Profiler.stop()`` is dropped, as the timer drops it."""

    def __init__(self, hook):
        self.hook = hook
        self._r0 = None

    def _running(self, bench):
        return getattr(bench, "current_event", None) is not None

    def begin(self, bench):
        pass

    def before_reader(self, bench):
        self._r0 = _now()

    def after_reader(self, bench):
        try:
            t, r0, self._r0 = _now(), self._r0, None
            h = self.hook
            if r0 is not None and h.timer_steps and h._step is not None and \
                    not h.fetch_timed_here:
                h._add("dataloader", t - r0)
                h.timer_read = h._step
        except Exception as e:
            _count_internal(self.hook.client, e)

    def after_step(self, bench):
        try:
            if not self._running(bench):
                return
            t, h = _now(), self.hook
            if h.timer_steps and h._step is not None:
                n = getattr(bench, "num_samples", None)
                if n is not None:
                    h._step.samples = int(n)
                h.end(t)
            else:
                h._abandon()  # the first step(): the timer's first batch began at start()
            h.timer_steps = True
            h.begin(t)
        except Exception as e:
            _count_internal(self.hook.client, e)

    def end(self, bench):
        try:
            h = self.hook
            if h.timer_steps:
                h._abandon()
                h.timer_steps = False
        except Exception as e:
            _count_internal(self.hook.client, e)


def _watch_timer(h):
    """Adds a _TimerHook to Paddle's benchmark timer; detach() removes it. Without Paddle's timer
    (another version), nothing."""
    try:
        from paddle.profiler.timer import benchmark
        hooks = benchmark().hooks
    except Exception:
        return
    key = f"stepscope-{id(h)}"
    hooks[key] = _TimerHook(h)
    orig = h.detach

    def detach():
        hooks.pop(key, None)
        h.timer_steps = False
        orig()
    h.detach = detach


def serve_captures(hook):
    """Makes hook (a StepHook) serve capture requests with paddle.profiler.Profiler: started at
    the window's first step (CPU, plus GPU when asked for cuda/device and Paddle has one;
    record_shapes, profile_memory, with_flops from ``what``), stopped after its last step, the
    window exported and streamed as trace_handler does."""
    client = hook.client

    def stop(prof):
        prof.stop()
        return _export_window(prof, client)

    hook.captures = Captures(client, _start_profiler, stop)
    return hook.captures


def _start_profiler(what):
    import inspect

    import paddle
    import paddle.profiler as pp
    targets = [pp.ProfilerTarget.CPU]
    if ("cuda" in what or "device" in what) and paddle.device.is_compiled_with_cuda() \
            and paddle.device.cuda.device_count() > 0:
        targets.append(pp.ProfilerTarget.GPU)
    kw = {"record_shapes": "shapes" in what, "profile_memory": "memory" in what}
    if "flops" in what and "with_flops" in inspect.signature(pp.Profiler).parameters:
        kw["with_flops"] = True
    # on_trace_ready: without one Paddle writes ./profiler_log/*.json at stop(); the window is
    # exported by the caller instead.
    prof = pp.Profiler(targets=targets, on_trace_ready=lambda p: None, **kw)
    prof.start()
    return prof


class StepscopeCallback(_CallbackBase):
    """A ``paddle.callbacks.Callback`` for ``paddle.Model.fit``: one step record per train batch.

    The step starts where the previous batch ended (or at the epoch's start), so ``dataloader``
    is the reader's time; ``forward``, ``backward`` and ``optimizer`` come from hooks on the
    model's network and optimizer (installed at ``on_train_begin``, removed at
    ``on_train_end``); ``samples`` is hapi's ``logs["batch_size"]``.
    """

    def __init__(self, client=None, host_interval=1.0, captures=True):
        super().__init__()
        self._client = client
        self._captures = captures
        self._host_interval = host_interval
        self._hook = None
        self._fetch_t0 = None

    def _ensure_hook(self):
        if self._hook is None:
            self._hook = StepHook(
                client=self._client,  # None: the process-wide client, made naming the framework
                close_on_optimizer=False, host_interval=self._host_interval,
                framework=framework_of("paddle"))
            if self._captures:
                serve_captures(self._hook)
        return self._hook

    def on_train_begin(self, logs=None):
        try:
            h = self._ensure_hook()
            m = getattr(self, "model", None)
            net = getattr(m, "network", None)
            if net is not None:
                h.watch_model(net)
            opt = getattr(m, "_optimizer", None)
            if opt is not None:
                h.watch_optimizer(opt)
        except Exception as e:
            _count_internal(self._ensure_hook().client, e)

    def on_epoch_begin(self, epoch, logs=None):
        self._fetch_t0 = _now()

    def on_train_batch_begin(self, step, logs=None):
        try:
            t = _now()
            h = self._ensure_hook()
            t0 = self._fetch_t0 if self._fetch_t0 is not None else t
            h.end(t0)
            h.begin(t0)
            h._add("dataloader", t - t0)
        except Exception as e:
            _count_internal(self._ensure_hook().client, e)

    def on_train_batch_end(self, step, logs=None):
        try:
            t = _now()
            h = self._ensure_hook()
            s = h._step
            if s is not None and logs:
                n = logs.get("batch_size")
                if n is not None:
                    s.samples = int(n)
            h.end(t)
            self._fetch_t0 = t
        except Exception as e:
            _count_internal(self._ensure_hook().client, e)

    def on_train_end(self, logs=None):
        if self._hook is not None:
            self._hook.detach()
        self._fetch_t0 = None


# -- the profiler window ------------------------------------------------------------------------

_SUFFIX = re.compile(r"^(.*)\[-?[0-9.]+ ?(?:ns|us|ms|s)\]$", re.S)
_UNIT_NS = {"ns": 1, "us": 1000, "ms": 1000000, "s": 1000000000}


def _offset_ns(text):
    """'917.229 us' -> 917229, or None."""
    try:
        num, unit = str(text).split()
        if "." in num:
            whole, frac = num.split(".", 1)
        else:
            whole, frac = num, ""
        f = _UNIT_NS[unit]
        digits = len(str(f)) - 1
        frac = (frac + "0" * digits)[:digits]
        sign = -1 if whole.startswith("-") else 1
        return sign * (abs(int(whole)) * f + (int(frac) if frac else 0))
    except Exception:
        return None


def _ts_ns(ts):
    if isinstance(ts, bool) or not isinstance(ts, (int, float)):
        return None
    return ts * 1000 if isinstance(ts, int) else int(round(ts * 1000))


def _slack_ns(off):
    """How far Paddle's float rounding may move an offset of off ns (cli/import/paddle_times.h:
    two float roundings of off / 2^24 each, then %.3f's; 0 below 2^23 ns)."""
    a = abs(off)
    return 0 if a < (1 << 23) else (a + (1 << 22)) >> 23


def _window_start(events, offs):
    """The window's start in ns from Paddle's truncated ts and its (float-rounded) offsets, or
    None when no start fits every event (the import's rule, cli/import/paddle_times.c)."""
    lo = hi = None
    for ev, off in zip(events, offs):
        if off is None:
            continue
        d, slack = _ts_ns(ev.get("ts")) - off, _slack_ns(off)
        lo = d + slack if lo is None else min(lo, d + slack)
        hi = d - slack if hi is None else max(hi, d - slack)
    if hi is None or hi - lo >= 1000:
        return None
    return hi


def stream_chrome_trace(doc, client):
    """Sends the events of a Paddle chrome trace document (``prof.export(path, "json")``) to
    client: names lose Paddle's ``[12.345 us]`` duration suffix, and timestamps, which Paddle
    writes truncated to whole µs, are rebuilt to the ns from each event's ``args.start_time``
    (its offset from the window's start), exactly as ``stepscope import`` rebuilds them: where
    no window start fits every event's ts and offset, the ts are sent as written and
    ``stream_chrome_trace.kept_us`` is set. A ``[memory]`` event gets ``owner`` and ``owner_ts``,
    the host event Paddle wrote it after (the one it attributed it to), and the document's
    ``ExtraInfo`` CPU figures follow the events as one ``ExtraInfo`` record over the window
    (docs/PROTOCOL.md 9). Returns the number of lines sent."""
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return 0
    offs = []
    for ev in events:
        off = None
        if isinstance(ev, dict):
            args = ev.get("args")
            if isinstance(args, dict) and "start_time" in args and _ts_ns(ev.get("ts")) is not None:
                off = _offset_ns(args["start_time"])
        offs.append(off)
    base = _window_start(events, offs)
    stream_chrome_trace.kept_us = base is None and any(o is not None for o in offs)
    owners = {}  # thread number -> (name, ts in ns) of its last host event
    first = end = pid = None
    n = 0
    for ev, off in zip(events, offs):
        if not isinstance(ev, dict) or "ph" not in ev:
            continue
        ev = dict(ev)
        name = ev.get("name")
        if isinstance(name, str):
            m = _SUFFIX.match(name)
            if m:
                ev["name"] = m.group(1)
        ts = _ts_ns(ev.get("ts"))
        if off is not None and base is not None:
            ts, t = base + off, _ts_ns(ev["ts"])
            if t % 1000 == 0:  # a ts truncated to the µs bounds the start to [t, t + 999]
                ts = min(max(ts, t), t + 999)
        tid = _thread_num(ev.get("tid"))
        if ev["ph"] == "X" and ts is not None and tid is not None and \
                ev.get("cat") not in _NOT_HOST and isinstance(ev.get("cat"), str) and \
                isinstance(ev.get("name"), str):
            owners[tid] = (ev["name"], ts)
            dur = _ts_ns(ev.get("dur"))
            e = ts + (dur if dur is not None and dur > 0 else 0)
            first = ts if first is None else min(first, ts)
            end = e if end is None else max(end, e)
            if pid is None:
                pid = ev.get("pid")
        elif ev["ph"] in ("i", "I") and ev.get("name") == "[memory]" and tid in owners:
            # the host event Paddle gave it to: the last one of its thread before it in the
            # export (docs/PROTOCOL.md 9), as `stepscope import` names it
            oname, ots = owners[tid]
            b, o = encode_line(ev), encode_line({"owner": oname})
            if b is None or o is None:
                continue
            b = (b"{" + o[1:-2] + b',"owner_ts":' + us(ots).encode() +
                 (b"," if b[1:2] != b"}" else b"") + b[1:])
            client._put(b)
            n += 1
            continue
        if off is not None and base is not None:
            del ev["ts"]
            b = encode_line(ev)
            if b is None:
                continue
            client._put(b'{"ts":' + us(ts).encode() + b"," + b[1:])
        else:
            client.event(ev)
        n += 1
    extra = doc.get("ExtraInfo") if isinstance(doc, dict) else None
    if isinstance(extra, dict) and first is not None and \
            any(k in extra for k in _EXTRA_KEYS):
        args = {k: extra[k] for k in _EXTRA_KEYS if k in extra}
        b = encode_line({"ph": "M", "name": "ExtraInfo", "pid": pid if pid is not None else 0,
                         "tid": 0, "args": args})
        if b is not None:
            client._put(b'{"ts":' + us(first).encode() + b',"dur":' + us(end - first).encode() +
                        b"," + b[1:])
            n += 1
    return n


# Paddle's event types that are not host events (device work, runtime calls)
_NOT_HOST = ("CudaRuntime", "Kernel", "Memcpy", "Memset", "MluRuntime")
# The members of Paddle's ExtraInfo that the daemon reads (its Device Summary's CPU rows)
_EXTRA_KEYS = ("Process Cpu Utilization", "System Cpu Utilization")


def _thread_num(tid):
    """8703 of "8703(C++)" or 8703; None for anything else."""
    if isinstance(tid, bool):
        return None
    if isinstance(tid, int):
        return tid
    m = re.match(r"(\d+)", tid) if isinstance(tid, str) else None
    return int(m.group(1)) if m else None


stream_chrome_trace.kept_us = False


def trace_handler(client=None, dir_name=None):
    """An ``on_trace_ready`` for ``paddle.profiler.Profiler``: exports the window just captured
    as a chrome trace into a temporary directory (under dir_name, default the system's), sends
    its events to the daemon (stream_chrome_trace) and removes the file. Runs in the training
    thread when the window closes, like Paddle's own export_chrome_tracing."""
    def handler(prof):
        c = client if client is not None else get_client()
        try:
            handler.events = _export_window(prof, c, dir_name)
        except Exception as e:
            _count_internal(c, e)
    handler.events = 0
    return handler


def _export_window(prof, client, dir_name=None):
    """Exports prof's window as a chrome trace in a temporary directory, streams its events to
    client and removes the file. Returns the number of events; raises what Paddle raises."""
    d = tempfile.mkdtemp(prefix="stepscope-paddle-", dir=dir_name)
    try:
        path = os.path.join(d, "window.json")
        prof.export(path=path, format="json")
        with open(path, "rb") as f:
            doc = json.load(f)
        return stream_chrome_trace(doc, client)
    finally:
        shutil.rmtree(d, ignore_errors=True)
