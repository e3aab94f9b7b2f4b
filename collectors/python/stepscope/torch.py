# SPDX-License-Identifier: MIT
"""PyTorch integration: always-on step records through hooks, and a profiler trace handler.

    import stepscope.torch
    att = stepscope.torch.attach(model, optimizer, loader)     # before the training loop
    for x, y in loader:                                        # unchanged
        ...

    prof = torch.profiler.profile(..., on_trace_ready=stepscope.torch.trace_handler())

Importing this module does not import torch: ``attach`` imports it when called, and
``trace_handler`` only uses the profiler object it is given. Nothing here raises into the training loop: every hook catches its own failures and
counts them in the client's ``stats["internal_errors"]``. See docs/PYTHON.md.
"""
import atexit
import collections
import decimal
import json
import os
import sys
import tempfile
import time
import weakref

from ._capture import Captures
from ._client import _count_internal
from ._encode import encode_line, us

__all__ = ["attach", "trace_handler", "Attachment"]

_time_ns = time.time_ns

_attachments = weakref.WeakSet()
_HISTORY = 4096  # steps an Attachment remembers for trace_handler (Attachment.history)
_iter_classes = {}  # DataLoader iterator class -> its timed subclass


def _client_or_default(client):
    if client is not None:
        return client
    import stepscope
    return stepscope.get_client()


def _default_client_naming_torch():
    """The process-wide client; when this makes it, its first hello names torch."""
    import stepscope
    try:
        import torch
    except ImportError:
        return stepscope.get_client()
    return stepscope.attach(framework="torch", framework_version=torch.__version__)


def _warn(msg):
    try:
        sys.stderr.write("stepscope.torch: %s\n" % msg)
        sys.stderr.flush()
    except Exception:
        pass


def _batch_size(b, depth=0):
    """The first dimension of the first tensor (or array) in a batch (itself, or inside its lists,
    tuples and dict values, three levels deep, eight items per level); None if there is none."""
    shape = getattr(b, "shape", None)
    if shape is not None:
        try:
            return int(shape[0]) if len(shape) > 0 else None
        except Exception:
            return None
    if depth < 3:
        if isinstance(b, dict):
            b = list(b.values())
        if isinstance(b, (list, tuple)):
            for x in b[:8]:
                n = _batch_size(x, depth + 1)
                if n is not None:
                    return n
    return None


def _prefetch_depth(it):
    """(ready batches, capacity) of a multi-process DataLoader iterator, or None.

    Ready = batches the workers have finished that the loop has not taken yet: those waiting in
    the result queue plus those received out of order and parked in _task_info."""
    if getattr(it, "_num_workers", 0) <= 0:
        return None
    q = getattr(it, "_data_queue", None)
    if q is None:
        return None
    try:
        size = q.qsize()
    except (NotImplementedError, OSError):
        return None
    info = getattr(it, "_task_info", None)
    if info:
        size += sum(1 for v in info.values() if len(v) == 2)
    cap = getattr(it, "_prefetch_factor", 2) * it._num_workers
    return size, cap


def _timed_iter_class(cls):
    """A subclass of a DataLoader iterator class whose __next__ reports to its attachment."""
    sub = _iter_classes.get(cls)
    if sub is not None:
        return sub
    base_next = cls.__next__
    base_del = getattr(cls, "__del__", None)

    def __next__(self):
        att = self.__dict__.get("_stepscope_att")
        if att is None or not att.active:
            return base_next(self)
        t0 = att._before_next(self)
        try:
            data = base_next(self)
        except StopIteration:
            att._loader_done(t0)
            raise
        att._after_next(t0, data)
        return data

    def __del__(self):
        try:
            att = self.__dict__.get("_stepscope_att")
            if att is not None:
                att._loader_dropped(id(self))
        except Exception:  # e.g. at interpreter shutdown
            pass
        if base_del is not None:
            base_del(self)

    sub = type(cls.__name__, (cls,), {"__next__": __next__, "__del__": __del__,
                                      "__module__": cls.__module__,
                                      "__qualname__": cls.__qualname__})
    _iter_classes[cls] = sub
    return sub


class Attachment:
    """What ``attach()`` returns: the hooks on one model, optimizer and DataLoader.

    A step runs from the DataLoader's ``next()`` that yields its batch to the next ``next()``
    (or to the end of the loader; if the loop breaks out, to the end of the step's last
    optimizer step or backward). Without a DataLoader, a step opens at the model's forward and
    closes at the end of the optimizer step. Phases: ``dataloader`` (time in ``next()``),
    ``forward`` (the model's top-level forward), ``backward`` (from the first gradient of one of
    the model's parameters to the end of that autograd pass), ``optimizer`` (``optimizer.step()``).
    """

    def __init__(self, client, samples=None, host_interval=1.0, queue_name="dataloader",
                 memory=True):
        self.client = client
        self._memory = memory    # allocator samples at each step's end (_memory_sample())
        self.active = False
        self._samples_fn = samples
        self._host_interval_ns = int(host_interval * 1e9) if host_interval else 0
        self._queue_name = queue_name
        self._handles = []
        self._restore = []
        self._torch = None
        self._engine_cb = None
        self._loader_mode = False
        self._step = None        # the open _Step
        self._prev = None        # the client's current step before ours opened
        self._last_ns = 0        # end of the latest hooked activity in the open step
        self._fwd_depth = 0
        self._fwd_t0 = 0
        self._bw_t0 = None
        self._bw_first = None
        self._param_handles = None  # gradient hooks on every parameter until the first backward
        self._opt_t0 = 0
        self._next_host = 0
        self._depth = None       # the prefetch queue depth seen by the latest next()
        self._next_src = None    # id() of the iterator of the latest next()
        self._step_src = None    # id() of the iterator whose next() opened the open step
        self._pid = os.getpid()
        self.steps = 0           # step records made
        # (step, begin ns, end ns) of the latest steps, for trace_handler's step numbering
        self.history = collections.deque(maxlen=_HISTORY)
        self.captures = None     # Captures, once attached (docs/PYTHON.md "Capture")

    # -- step bookkeeping ------------------------------------------------------------------

    def _open(self, t, samples):
        c = self.client
        s = c.step(samples=samples)
        s.begin = t
        self._prev = c._step
        c._step = s
        self._step = s
        self._last_ns = t
        self._fwd_depth = 0
        self._bw_t0 = None
        if self.captures is not None:
            self.captures.step_begin(s.step)
        return s

    def _take(self):
        """Detaches the open step from the attachment and the client; returns it."""
        s = self._step
        self._step = None
        c = self.client
        if c._step is s:
            c._step = self._prev
        self._prev = None
        return s

    def _close(self, end):
        if self._step is None:
            return
        c = self.client
        s = self._take()
        c._emit_step(s, end)
        self.history.append((s.step, s.begin, end))
        self.steps += 1
        if self.captures is not None:
            self.captures.step_end()
        if self._host_interval_ns and end >= self._next_host:
            self._next_host = end + self._host_interval_ns
            c.host_sample()
        if self._memory:
            self._memory_sample(s.step, end)

    def _memory_sample(self, step, end):
        """What the CUDA caching allocator reports (torch.cuda.memory_stats()) for each device
        it holds memory on, as a "[memory stats]" counter event closing ``step`` at ``end``
        (docs/PROTOCOL.md 10): current and peak allocated and reserved bytes. Nothing when CUDA
        is unavailable or not initialised (a CPU job, or before its first CUDA call: asking would
        initialise it); never raises."""
        try:
            cuda = getattr(self._torch, "cuda", None)
            if cuda is None or not cuda.is_available() or not cuda.is_initialized():
                return
            for d in range(cuda.device_count()):
                st = cuda.memory_stats(d)
                peak_res = st.get("reserved_bytes.all.peak", 0)
                if not peak_res:
                    continue  # the allocator never held memory there
                self.client._put_str(memory_stats_line(
                    self._pid, end, step, d, st.get("allocated_bytes.all.current", 0),
                    st.get("reserved_bytes.all.current", 0),
                    st.get("allocated_bytes.all.peak", 0), peak_res))
        except Exception as e:
            _count_internal(self.client, e)

    def _close_at_end(self):
        """Closes the open step when the loop is over (iterator dropped, detach, exit): at its
        last hooked activity. A step that only fetched its batch (the loop broke out right after
        next()) was not trained on and is not recorded."""
        s = self._step
        if s is None:
            return
        if len(s.phases) > 1 or (s.phases and "dataloader" not in s.phases) or not self._loader_mode:
            self._close(self._last_ns)
            return
        self._take()
        c = self.client
        if c._next_step == s.step + 1:
            c._next_step = s.step

    def _add(self, name, d):
        s = self._step
        if s is not None:
            ph = s.phases
            ph[name] = ph.get(name, 0) + d

    # -- on-demand capture (docs/PYTHON.md "Capture"; the logic is stepscope/_capture.py) ----

    @property
    def last_capture(self):
        """The latest finished capture: id, state, first_step, last_step, events, what, and the
        stopped ``profiler`` (for ``key_averages()``); None before the first."""
        return self.captures.last if self.captures is not None else None

    def _start_profiler(self, what):
        torch = self._torch
        P = torch.profiler
        acts = [P.ProfilerActivity.CPU]
        if ("cuda" in what or "device" in what) and torch.cuda.is_available():
            acts.append(P.ProfilerActivity.CUDA)
        kw = {"record_shapes": "shapes" in what, "with_stack": "stack" in what,
              "profile_memory": "memory" in what}
        if "flops" in what:
            kw["with_flops"] = True
        if "modules" in what:
            kw["with_modules"] = True
        prof = P.profile(activities=acts, **kw)
        prof.start()
        return prof

    def _stop_profiler(self, prof):
        """Stops the window's profiler and streams it through trace_handler's path."""
        prof.stop()
        return _stream_window(self.client, prof, None)[0]

    # -- DataLoader ------------------------------------------------------------------------

    def _before_next(self, it):
        t0 = _time_ns()
        try:
            self._next_src = id(it)
            self._depth = _prefetch_depth(it)
            if self._step is not None:
                self._close(t0)
        except Exception as e:
            _count_internal(self.client, e)
        return t0

    def _after_next(self, t0, data):
        t1 = _time_ns()
        try:
            fn = self._samples_fn
            n = fn(data) if fn is not None else _batch_size(data)
            s = self._open(t0, n)
            self._step_src = self._next_src
            s.phases["dataloader"] = t1 - t0
            self._last_ns = t1
            d = self._depth
            if d is not None:
                self.client.queue(self._queue_name, d[0], d[1])
        except Exception as e:
            _count_internal(self.client, e)

    def _loader_done(self, t0):
        try:
            if self._step is not None:
                self._close(t0)
        except Exception as e:
            _count_internal(self.client, e)

    def _loader_dropped(self, src):
        """An iterator was dropped: the step it opened is over (not a step of another one)."""
        try:
            if src == self._step_src and os.getpid() == self._pid:
                self._close_at_end()
        except Exception as e:
            _count_internal(self.client, e)

    def _adopt(self, it):
        """Makes a DataLoader iterator report to this attachment (swaps in the timed subclass)."""
        try:
            if self.active and os.getpid() == self._pid:
                if it.__class__ not in _iter_classes.values():
                    it.__class__ = _timed_iter_class(it.__class__)
                it.__dict__["_stepscope_att"] = self
        except Exception as e:
            _count_internal(self.client, e)
        return it

    def _get_iterator(self, orig):
        def get_iterator():
            return self._adopt(orig())
        return get_iterator

    # -- model -----------------------------------------------------------------------------

    def _fwd_pre(self, module, inputs):
        try:
            if self._fwd_depth == 0:
                t = _time_ns()
                if self._step is None and not self._loader_mode:
                    self._open(t, _batch_size(inputs))
                self._fwd_t0 = t
            self._fwd_depth += 1
        except Exception as e:
            _count_internal(self.client, e)

    def _fwd_post(self, module, inputs, output):
        try:
            self._fwd_depth -= 1
            if self._fwd_depth > 0:
                return
            self._fwd_depth = 0
            if self._step is None:
                return
            t = _time_ns()
            self._add("forward", t - self._fwd_t0)
            self._last_ns = t
        except Exception as e:
            _count_internal(self.client, e)

    def _param_grad(self, i):
        """A gradient hook on parameter i: the first one of a backward pass starts the phase and
        queues _backward_done for the end of the autograd pass."""
        def hook(grad):
            try:
                if self._bw_t0 is None and self._step is not None:
                    self._bw_t0 = _time_ns()
                    self._bw_first = i
                    self._engine_cb(self._backward_done)
            except Exception as e:
                _count_internal(self.client, e)
        return hook

    def _backward_done(self):
        try:
            t0 = self._bw_t0
            if t0 is not None:
                self._bw_t0 = None
                t = _time_ns()
                self._add("backward", t - t0)
                self._last_ns = t
                if self._param_handles and self._bw_first is not None:
                    # Backward passes reach the parameters in the same order every step: keep
                    # only the hook of the one that came first (one Python call per pass).
                    keep = self._bw_first
                    for k, h in enumerate(self._param_handles):
                        if k != keep:
                            h.remove()
                    self._handles.append(self._param_handles[keep])
                    self._param_handles = None
        except Exception as e:
            _count_internal(self.client, e)

    # -- optimizer -------------------------------------------------------------------------

    def _opt_pre(self, *args):
        try:
            self._opt_t0 = _time_ns()
        except Exception as e:
            _count_internal(self.client, e)

    def _opt_post(self, *args):
        try:
            t = _time_ns()
            if self._step is not None:
                self._add("optimizer", t - self._opt_t0)
                self._last_ns = t
                if not self._loader_mode:
                    self._close(t)
        except Exception as e:
            _count_internal(self.client, e)

    def _hook_optimizer(self, optimizer):
        if hasattr(optimizer, "register_step_pre_hook") and hasattr(optimizer, "register_step_post_hook"):
            self._handles.append(optimizer.register_step_pre_hook(self._opt_pre))
            self._handles.append(optimizer.register_step_post_hook(self._opt_post))
            return
        # torch < 2.0: a bound method in the instance, so that LR schedulers (which wrap
        # optimizer.step through its __func__ and __self__) keep working.
        import types
        orig = optimizer.step
        att = self

        def step(self_, *a, **kw):
            att._opt_pre()
            try:
                return orig(*a, **kw)
            finally:
                att._opt_post()

        for a in ("_with_counter", "_wrapped_by_lr_sched"):  # an LR scheduler's marks
            if getattr(orig, a, None):
                setattr(step, a, getattr(orig, a))
        had = "step" in optimizer.__dict__
        optimizer.step = types.MethodType(step, optimizer)

        def restore():
            if had:
                optimizer.step = orig
            else:
                optimizer.__dict__.pop("step", None)
        self._restore.append(restore)

    # -- life cycle ------------------------------------------------------------------------

    def _install(self, torch, model, optimizer, dataloader):
        self._torch = torch
        try:
            self._engine_cb = torch.autograd.Variable._execution_engine.queue_callback
        except AttributeError:
            self._engine_cb = None
        self.active = True
        if model is not None:
            self._handles.append(model.register_forward_pre_hook(self._fwd_pre))
            self._handles.append(model.register_forward_hook(self._fwd_post))
            if self._engine_cb is not None:
                params = [p for p in model.parameters() if p.requires_grad]
                self._param_handles = [p.register_hook(self._param_grad(i))
                                       for i, p in enumerate(params)]
        if optimizer is not None:
            self._hook_optimizer(optimizer)
        self.captures = Captures(self.client, self._start_profiler, self._stop_profiler,
                                 owner="attachment", keep_as="profiler")
        if dataloader is not None and callable(getattr(dataloader, "_get_iterator", None)):
            orig = dataloader._get_iterator
            dataloader._get_iterator = self._get_iterator(orig)
            self._loader_mode = True

            def restore():
                dataloader.__dict__.pop("_get_iterator", None)
                it = getattr(dataloader, "_iterator", None)  # persistent workers
                if it is not None:
                    it.__dict__.pop("_stepscope_att", None)
            self._restore.append(restore)
            it = getattr(dataloader, "_iterator", None)  # persistent workers, already started
            if it is not None:
                self._adopt(it)
        elif dataloader is not None:
            _warn("%s is not a torch DataLoader: steps follow the optimizer, no dataloader phase"
                  % type(dataloader).__name__)
        _attachments.add(self)

    def close_step(self):
        """Records the open step now (ending at its last hooked activity; see _close_at_end).
        Called by detach() and at exit; useful before leaving a loop that will not ask the
        loader again."""
        try:
            if os.getpid() == self._pid:
                self._close_at_end()
        except Exception as e:
            _count_internal(self.client, e)

    def detach(self):
        """Records the open step, removes every hook and restores the optimizer and DataLoader."""
        self.close_step()
        self.active = False
        if self.captures is not None:
            self.captures.close()
        for h in self._handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []
        for h in self._param_handles or ():
            try:
                h.remove()
            except Exception:
                pass
        self._param_handles = None
        for r in self._restore:
            try:
                r()
            except Exception:
                pass
        self._restore = []

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        self.detach()
        return False


def memory_stats_line(pid, ts_ns, step, device, allocated, reserved, peak_allocated,
                      peak_reserved):
    """The "[memory stats]" counter event of one CUDA device (docs/PROTOCOL.md 10), as a line."""
    return ('{"ph":"C","name":"[memory stats]","cat":"memory_stats","pid":%d,"tid":0,"ts":%s,'
            '"step":%d,"args":{"Device Type":1,"Device Id":%d,"Total Allocated":%d,'
            '"Total Reserved":%d,"Peak Allocated":%d,"Peak Reserved":%d}}\n' % (
                pid, us(int(ts_ns)), step, device, allocated, reserved, peak_allocated,
                peak_reserved))


def attach(model, optimizer, dataloader, client=None, samples=None, host_interval=1.0,
           memory=True):
    """Step records with dataloader, forward, backward and optimizer phases and samples, from
    hooks on ``model`` (forward pre/post hooks, a gradient hook on its parameters), ``optimizer``
    (step pre/post hooks, or a wrapper on torch < 2.0) and ``dataloader`` (its iterators' next()),
    sent by ``client`` (default: ``stepscope.get_client()``). Any of the three may be None.

    ``samples(batch) -> int`` overrides the batch size (default: the first dimension of the first
    tensor in the batch). A host CPU sample is taken at most every ``host_interval`` seconds at a
    step's end (0: none). With ``num_workers > 0`` every step also records the DataLoader's
    prefetch queue depth (``queue`` records named ``dataloader``). With ``memory`` (default) and
    CUDA in use, every step's end also sends what the CUDA caching allocator reports
    (``torch.cuda.memory_stats()``: current and peak allocated and reserved bytes per device;
    ``/memory``'s ``allocator`` series). Returns an ``Attachment``
    (``detach()`` undoes everything). Never raises: on failure it warns on stderr and returns an
    inactive Attachment."""
    att = None
    try:
        if client is None:
            client = _default_client_naming_torch()
        att = Attachment(client, samples=samples, host_interval=host_interval, memory=memory)
        import torch
        client._name_framework("torch", torch.__version__)  # a client made before: its next hello
        att._install(torch, model, optimizer, dataloader)
    except Exception as e:
        _warn("attach failed, training continues without step records: %r" % (e,))
        if att is not None:
            try:
                att.detach()
            except Exception:
                pass
    return att


# -- profiler traces ----------------------------------------------------------------------------

def _trace_events(path):
    """(events, legacy, base_ns) of an exported trace: legacy is True for torch's bare array
    (torch without Kineto); base_ns is Kineto's baseTimeNanoseconds (the wall-clock time its
    ``ts`` count from), or None."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        import gzip
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    if isinstance(doc, list):
        return doc, True, None
    if isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list):
        base = doc.get("baseTimeNanoseconds")
        if base.__class__ is not int or base <= 0:
            base = None
        return doc["traceEvents"], False, base
    raise ValueError("not a Chrome trace")


_DAY_US = 86400 * 10**6


def _trace_start_us(prof, now_ns):
    """The wall-clock time (µs) that a legacy export's ts count from: the profiler results'
    trace_start_us() (torch.profiler.profile keeps them in prof.profiler, the autograd profiler
    in itself); None when the profiler has none or it is not on the wall clock (not within a day
    before now)."""
    for p in (getattr(prof, "profiler", None), prof):
        res = getattr(p, "kineto_results", None)
        fn = getattr(res, "trace_start_us", None)
        if fn is None:
            continue
        try:
            t = fn()
        except Exception:
            continue
        if t.__class__ is int and 0 <= now_ns // 1000 - t <= _DAY_US:
            return t
    return None


def _rebase_legacy(events, start_us, now_ns):
    """torch without Kineto writes ts in whole microseconds from the profiler's start. Adds
    start_us (the wall-clock start, _trace_start_us) to every whole ts, so that spans lie where
    they ran, on the clock of attach()'s step records. Without start_us, shifts them so that the
    window ends at now_ns (an upper bound: the handler runs after the window). Durations and
    nesting stay exactly as torch measured them."""
    if start_us is None:
        last = None
        for ev in events:
            ts = ev.get("ts") if isinstance(ev, dict) else None
            if ts.__class__ is not int:
                if ts is None or isinstance(ts, bool):
                    continue
                return  # not whole microseconds: leave as written
            d = ev.get("dur", 0)
            end = ts + (d if d.__class__ is int else 0)
            if last is None or end > last:
                last = end
        if last is None:
            return
        start_us = now_ns // 1000 - last
    for ev in events:
        if isinstance(ev, dict) and ev.get("ts").__class__ is int:
            ev["ts"] += start_us


class _ExactTs:
    """A ts moved by Kineto's baseTimeNanoseconds, kept as exact decimal text (the sum of a
    16-digit µs count and a fraction does not fit a float); _send writes it into the line."""
    __slots__ = ("text", "us", "orig")

    def __init__(self, ts, base_ns):
        self.orig = ts  # as written: orders the spans exactly (us is a float of the sum)
        d = decimal.Decimal(ts if ts.__class__ is int else repr(float(ts)))
        d += decimal.Decimal(base_ns) / 1000
        self.text = format(d.normalize(), "f")
        self.us = float(d)


def _rebase_kineto(events, base_ns, now_ns):
    """Kineto (torch >= 2.1) writes ts relative to baseTimeNanoseconds: adds it back, so that
    spans lie on the wall clock of attach()'s step records. Leaves ts that are on the wall clock
    already (the first one within a day of now) as written."""
    for ev in events:
        ts = ev.get("ts") if isinstance(ev, dict) else None
        if _is_num(ts) and not isinstance(ts, bool):
            if abs(ts * 1000 - now_ns) <= _DAY_US * 1000:
                return
            break
    for ev in events:
        if isinstance(ev, dict):
            ts = ev.get("ts")
            if _is_num(ts) and not isinstance(ts, bool):
                ev["ts"] = _ExactTs(ts, base_ns)


def _ts_us(ev):
    ts = ev.get("ts")
    return ts.us if ts.__class__ is _ExactTs else ts


def _ts_order(ev):
    """ts for ordering: as written where _rebase_kineto moved it (the same shift for all)."""
    ts = ev.get("ts")
    return ts.orig if ts.__class__ is _ExactTs else ts


_STEP_PREFIX = "ProfilerStep#"
_NO_STEP = "ProfilerStep (no step)"  # a ProfilerStep range outside every attach() step


def _step_number(name):
    if name.__class__ is str and name.startswith(_STEP_PREFIX):
        n = name[len(_STEP_PREFIX):]
        if n.isdigit():
            return int(n)
    return None


def _renumber_steps(events, history):
    """Gives each ProfilerStep#N range of the window the number of attach()'s step it overlaps
    most (history: (step, begin ns, end ns), the latest last; end None for the open step), so that
    the job has one step numbering (docs/ANALYSIS.md "Step identity"). The range keeps torch's
    label in args["profiler_step"]; its GPU mirror (cat gpu_user_annotation) follows it. Each
    attach() step takes one range, the one overlapping it most: a range that overlaps no step, or
    less of its step than another range does (the one torch closes when the profiler stops after
    the loop's last step: from the last prof.step() to the stop), stands for no step of the job
    and is renamed _NO_STEP, so that neither its torch label nor a second range can stand for an
    attach() step. Returns {N: step}."""
    if not history:
        return {}
    hist = sorted(history, key=lambda h: h[1])
    begins = [h[1] for h in hist]
    import bisect
    best = {}
    labels = set()
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X" or ev.get("cat") == "gpu_user_annotation":
            continue
        n = _step_number(ev.get("name"))
        ts, dur = _ts_us(ev), ev.get("dur")
        if n is None or not _is_num(ts) or not _is_num(dur):
            continue
        labels.add(n)
        a, b = ts * 1000.0, (ts + dur) * 1000.0
        i = bisect.bisect_right(begins, b)
        while i > 0:
            i -= 1
            step, sb, se = hist[i]
            se = float("inf") if se is None else se
            if se <= a:
                break
            ov = min(b, se) - max(a, sb)
            if ov > 0 and ov > best.get(n, (0.0, None))[0]:
                best[n] = (ov, step)
    owner = {}  # attach() step -> (overlap, label) of the range that stands for it
    for n, (ov, step) in best.items():
        if ov > owner.get(step, (0.0, None))[0]:
            owner[step] = (ov, n)
    mapping = {n: step for step, (ov, n) in owner.items()}
    if not mapping:
        return mapping
    for ev in events:
        if isinstance(ev, dict):
            n = _step_number(ev.get("name"))
            if n is not None and (n in mapping or n in labels):
                ev["name"] = _STEP_PREFIX + str(mapping[n]) if n in mapping else _NO_STEP
                args = ev.get("args")
                if not isinstance(args, dict):
                    args = ev["args"] = {}
                args["profiler_step"] = n
    return mapping


def _step_history(c):
    """The step history of the active attachment that sends through c, the open step last."""
    for a in list(_attachments):
        if a.client is c and a.active:
            h = list(a.history)
            if a._step is not None:
                h.append((a._step.step, a._step.begin, None))
            return h
    return []


def _is_num(v):
    return (v.__class__ is int or v.__class__ is float) and v == v


def _torch_order(events):
    """Each thread's ("pid", "tid") complete ('X') events sorted stably by (ts, -dur), torch's
    _populate_cpu_children order, into the places that thread's X events hold; every other event
    stays where it is. Kineto writes a thread's spans out of that order, and the daemon nests
    spans exactly (torch's walk) only when they arrive in it (docs/ARCHITECTURE.md). The same
    order as `stepscope import` sends a file in (cli/import/span_order.h). For equal starts
    (ts, -dur) is (start, -end). Returns events itself when every thread is in order already."""
    places = {}
    unordered = False
    last = {}
    for i, ev in enumerate(events):
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        ts, dur = _ts_order(ev), ev.get("dur")
        if not (_is_num(ts) and _is_num(dur)):
            continue
        key = (repr(ev.get("pid")), repr(ev.get("tid")))
        k = (ts, -dur)
        if key in last and k < last[key]:
            unordered = True
        last[key] = k
        places.setdefault(key, []).append(i)
    if not unordered:
        return events
    out = list(events)
    for idx in places.values():
        ordered = sorted(idx, key=lambda i: (_ts_order(events[i]), -events[i]["dur"]))
        for at, i in zip(idx, ordered):
            out[at] = events[i]
    return out


def _send(c, ev):
    ts = ev.get("ts")
    if ts.__class__ is not _ExactTs:
        c.event(ev)
        return
    rest = {"ts": 0}
    rest.update((k, v) for k, v in ev.items() if k != "ts")
    b = encode_line(rest)
    if b is None or not b.startswith(b'{"ts":0'):
        ev["ts"] = ts.us
        c.event(ev)
        return
    c._put(b'{"ts":' + ts.text.encode() + b[len(b'{"ts":0'):])


def _stream_window(c, prof, keep_dir):
    """Exports a finished profiler window and sends its events through c, on the wall clock and
    with attach()'s step numbers (see trace_handler). Returns (events sent, the kept file or
    None); raises on failure."""
    now = _time_ns()  # before the export, which takes a while
    d = keep_dir or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="stepscope-trace-", suffix=".json", dir=d)
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        events, legacy, base_ns = _trace_events(path)
    finally:
        if not keep_dir:
            try:
                os.unlink(path)
            except OSError:
                pass
    if legacy:
        _rebase_legacy(events, _trace_start_us(prof, now), now)
    elif base_ns is not None:
        _rebase_kineto(events, base_ns, now)
    _renumber_steps(events, _step_history(c))
    events = _torch_order(events)
    n = 0
    for ev in events:
        if isinstance(ev, dict) and "ph" in ev:
            _send(c, ev)
            n += 1
    return n, (path if keep_dir else None)


def trace_handler(client=None, keep_dir=None):
    """An ``on_trace_ready`` for ``torch.profiler.profile`` that streams the captured window to
    the daemon through ``client`` (default: ``stepscope.get_client()``, looked up at the call).

    The window is exported with the profiler's own ``export_chrome_trace`` (a temp file, removed
    afterwards unless ``keep_dir`` names a directory to keep it in) and every event is sent
    as written, each thread's spans in torch's order (_torch_order), so the daemon holds the
    same operators, in the same order, as ``stepscope import`` of that file would, but on the
    wall clock: legacy traces (torch without Kineto) from the profiler's recorded start
    (_rebase_legacy), Kineto's from its baseTimeNanoseconds (_rebase_kineto). When an active
    attach() sends through the same client, each ProfilerStep#N range is renumbered to the
    attach() step it overlaps most (_renumber_steps). Also callable with a finished
    ``torch.autograd.profiler.profile``. Returns the number of events sent; never raises."""

    def handler(prof):
        c = None
        try:
            c = _client_or_default(client)
            n, handler.last_path = _stream_window(c, prof, keep_dir)
            handler.events_sent += n
            return n
        except Exception as e:
            if c is not None:
                _count_internal(c, e)
            _warn("trace_handler could not stream the profiler window: %r" % (e,))
            return 0

    handler.events_sent = 0
    handler.last_path = None
    return handler


def _atexit():
    for a in list(_attachments):
        a.close_step()


atexit.register(_atexit)
