# SPDX-License-Identifier: MIT
"""Step records from framework hooks, shared by stepscope.paddle and stepscope.mindspore.

Imports no framework: the hooks are installed through the duck-typed methods the frameworks
document (``register_forward_pre_hook``, ``register_forward_post_hook`` or
``register_forward_hook``, an optimizer's ``step``/``minimize``). Nothing here raises into the
training loop: failures are counted in the client's stats.
"""
import sys
import time

from . import attach, get_client
from ._client import _count_internal

__all__ = ["StepHook", "batch_size", "framework_of", "NoFrameworkCallback"]

_now = time.time_ns


def framework_of(module):
    """(module, its __version__) when module is already imported, else None (imports nothing)."""
    m = sys.modules.get(module)
    v = getattr(m, "__version__", None)
    return (module, str(v)) if v is not None else None


def batch_size(batch):
    """The leading dimension of the first array-like leaf of a batch (tensor, list, tuple, dict),
    or None."""
    try:
        for _ in range(8):
            if isinstance(batch, dict):
                batch = next(iter(batch.values()))
            elif isinstance(batch, (list, tuple)):
                batch = batch[0]
            else:
                break
        shape = batch.shape
        if callable(shape):  # DenseTensor.shape() in static graph
            shape = shape()
        n = int(shape[0])
        return n if n >= 0 else None
    except Exception:
        return None


class StepHook:
    """Step records from a dygraph train loop, without the profiler.

    A step runs from the start of a batch fetch (``loader()``), or from the first forward when the
    loader is not wrapped, to the end of the optimizer's ``step()``/``minimize()`` (or, with no
    optimizer watched, to the next fetch). Its phases, in µs in the record: ``dataloader`` (the
    fetch), ``forward`` (the model's forward, from its forward pre/post hooks), ``backward`` (from
    the end of the last forward to the optimizer's start: loss and backward), ``optimizer``.
    ``samples`` is the batch's leading dimension (summed over accumulated batches). A host CPU
    sample (``client.host_sample()``) is taken at a step's end at most every ``host_interval``
    seconds (0: none).
    """

    def __init__(self, model=None, optimizer=None, client=None, close_on_optimizer=True,
                 queue_name="dataloader", host_interval=1.0, framework=None, dataloader=None):
        if client is None:  # the process-wide client; a new one names the framework at once
            client = attach(framework=framework[0], framework_version=framework[1]) \
                if framework else get_client()
        self.client = client
        try:
            self._host_ns = int(max(0.0, float(host_interval or 0)) * 1e9)
        except Exception:
            self._host_ns = 10 ** 9
        self._next_host = 0
        if framework is not None:
            self.set_framework(*framework)
        self.close_on_optimizer = close_on_optimizer
        self.queue_name = queue_name
        self._step = None        # the client's open step object
        self._fwd_t0 = None      # start of the forward in progress
        self._fwd_depth = 0
        self._fwd_end = None     # end of the last forward of the open step
        self._opt_depth = 0
        self._opt_t0 = None
        self._handles = []       # forward hook handles
        self._patched = []       # (object, attribute name)
        self._loaders = []       # (loader, its own class)
        self._optimizer_seen = False
        self.timer_steps = False  # steps bounded by the framework's own timer (stepscope.paddle)
        self.timer_read = None    # the step whose fetch that timer timed
        self.fetch_timed_here = False  # loader() times the fetch in progress itself
        self.captures = None     # a _capture.Captures serving on-demand captures, or None
        if model is not None:
            self.watch_model(model)
        if optimizer is not None:
            self.watch_optimizer(optimizer)
        if dataloader is not None:
            self.watch_loader(dataloader)

    def set_framework(self, name, version):
        """Names the framework in the client's hello (kept when one was given already)."""
        try:
            self.client._name_framework(name, version)
        except Exception as e:
            _count_internal(self.client, e)

    # -- steps ------------------------------------------------------------------------------

    def begin(self, t=None, samples=None):
        """Opens a step starting at t (ns, time.time_ns()) unless one is open; returns it."""
        s = self._step
        if s is None:
            s = self.client.step(samples=samples)
            s.__enter__()
            if t is not None:
                s.begin = t
            self._step = s
            self._fwd_end = None
            if self.captures is not None:
                self.captures.step_begin(s.step)
        elif samples is not None:
            s.samples = samples if s.samples is None else s.samples + samples
        return s

    def end(self, t=None):
        """Closes the open step (its end: t, or now) and sends its record."""
        s = self._step
        if s is None:
            return
        self._step = None
        self._fwd_end = None
        c = s._c
        if t is None:
            t = _now()
        if c._step is s:  # unless the user's own client.step() is open inside it
            c._step = s._prev
        s._prev = None
        c._emit_step(s, t)
        if self.captures is not None:
            self.captures.step_end()
        if self._host_ns and t >= self._next_host:
            self._next_host = t + self._host_ns
            c.host_sample()

    def _add(self, name, ns):
        s = self._step
        if s is not None and ns > 0:
            ph = s.phases
            ph[name] = ph.get(name, 0) + ns

    def loader(self, iterable):
        """Yields iterable's batches, timing each fetch as the ``dataloader`` phase of the step
        it opens, and sampling a Paddle DataLoader's prefetch queue depth once per batch."""
        it = iter(iterable)
        # a Paddle DataLoader's own iterator: its timer's reader cost is this fetch, less our
        # overhead; anything around it (a generator) is timed here
        direct = type(it).__name__.startswith("_DataLoaderIter")
        while True:
            t0 = _now()
            self.fetch_timed_here = not direct
            try:
                batch = next(it)
            except StopIteration:
                self.fetch_timed_here = False
                if self.timer_steps:
                    return
                try:
                    s = self._step
                    if s is not None and (not s.phases.keys() - {"dataloader"}):
                        self._abandon()      # only a fetch that found nothing: not a step
                    else:
                        self.end(t0)
                except Exception as e:
                    _count_internal(self.client, e)
                return
            self.fetch_timed_here = False
            if self.timer_steps:  # the timer bounds the steps (stepscope.paddle._TimerHook)
                try:
                    t1, st = _now(), self._step
                    if st is not None:
                        if self.timer_read is not st:  # the timer did not time this fetch
                            self._add("dataloader", t1 - t0)
                        n = batch_size(batch)
                        if n is not None:
                            st.samples = n if st.samples is None else st.samples + n
                except Exception as e:
                    _count_internal(self.client, e)
                yield batch
                continue
            try:
                t1 = _now()
                if self._step is not None and not (self.close_on_optimizer and
                                                   self._optimizer_seen):
                    self.end(t0)             # no optimizer: the next fetch ends the step
                self.begin(t0, batch_size(batch))
                self._add("dataloader", t1 - t0)
                self._sample_queue(it)
            except Exception as e:
                _count_internal(self.client, e)
            yield batch

    def watch_loader(self, loader):
        """Makes every ``for batch in loader`` go through ``loader()``: the object's class becomes
        a subclass whose ``__iter__`` wraps the original iterator (``detach()`` restores it)."""
        try:
            cls = type(loader)
            hook = self

            def __iter__(self_):
                return hook.loader(cls.__iter__(self_))
            loader.__class__ = type(cls.__name__, (cls,), {
                "__iter__": __iter__, "__module__": cls.__module__,
                "__qualname__": cls.__qualname__})
            self._loaders.append((loader, cls))
        except Exception as e:
            _count_internal(self.client, e)
        return self

    def _abandon(self):
        s = self._step
        self._step = None
        self._fwd_end = None
        if s is not None:
            if s._c._step is s:
                s._c._step = s._prev
            s._prev = None

    def _sample_queue(self, it):
        q = getattr(it, "_blocking_queue", None)
        if q is None or not hasattr(q, "size"):
            return
        cap = getattr(it, "_outstanding_capacity", None) or getattr(
            it, "_blocking_queue_capacity", None)
        self.client.queue(self.queue_name, int(q.size()), cap)

    # -- forward hooks ------------------------------------------------------------------------

    def watch_model(self, model):
        """Times model's forward through ``register_forward_pre_hook`` and
        ``register_forward_post_hook`` (paddle.nn.Layer) or ``register_forward_hook``
        (mindspore.nn.Cell)."""
        try:
            post = getattr(model, "register_forward_post_hook", None)  # Paddle
            if post is None:
                post = model.register_forward_hook                      # MindSpore, torch
            self._handles.append(model.register_forward_pre_hook(self._fwd_pre))
            self._handles.append(post(self._fwd_post))
        except Exception as e:
            _count_internal(self.client, e)
        return self

    def _fwd_pre(self, layer, inputs):
        try:
            self._fwd_depth += 1
            if self._fwd_depth == 1:
                t = _now()
                if self._step is None and self.close_on_optimizer and not self.timer_steps:
                    self.begin(t, batch_size(inputs))  # no loader wrapped: forward opens it
                self._fwd_t0 = t
        except Exception as e:
            _count_internal(self.client, e)
        return None

    def _fwd_post(self, layer, inputs, outputs):
        try:
            self._fwd_depth -= 1
            if self._fwd_depth <= 0:
                self._fwd_depth = 0
                t = _now()
                if self._fwd_t0 is not None:
                    self._add("forward", t - self._fwd_t0)
                    self._fwd_end = t
                self._fwd_t0 = None
        except Exception as e:
            _count_internal(self.client, e)
        return None

    # -- optimizer ----------------------------------------------------------------------------

    def watch_optimizer(self, optimizer):
        """Wraps the optimizer's ``step`` and ``minimize`` (instance attributes; ``detach()``
        restores them)."""
        for name in ("step", "minimize"):
            try:
                orig = getattr(optimizer, name, None)
                if orig is None or not callable(orig):
                    continue
                setattr(optimizer, name, self._wrap_optimizer_call(orig))
                self._patched.append((optimizer, name))
            except Exception as e:
                _count_internal(self.client, e)
        return self

    def watch_optimizer_cell(self, optimizer):
        """Times an optimizer that is itself a module (mindspore.nn.Optimizer, a Cell) through
        its forward pre/post hooks."""
        try:
            self._handles.append(optimizer.register_forward_pre_hook(
                lambda cell, inputs: self._opt_begin()))
            self._handles.append(optimizer.register_forward_hook(
                lambda cell, inputs, outputs: self._opt_end()))
        except Exception as e:
            _count_internal(self.client, e)
        return self

    def _wrap_optimizer_call(self, orig):
        hook = self

        def call(*args, **kwargs):
            hook._opt_begin()
            try:
                return orig(*args, **kwargs)
            finally:
                hook._opt_end()
        call.__wrapped__ = orig
        return call

    def _opt_begin(self):
        try:
            self._optimizer_seen = True
            self._opt_depth += 1
            if self._opt_depth == 1:
                t = _now()
                if self._fwd_end is not None:
                    self._add("backward", t - self._fwd_end)
                    self._fwd_end = None
                self._opt_t0 = t
        except Exception as e:
            _count_internal(self.client, e)

    def _opt_end(self):
        try:
            self._opt_depth -= 1
            if self._opt_depth <= 0:
                self._opt_depth = 0
                t = _now()
                if self._opt_t0 is not None:
                    self._add("optimizer", t - self._opt_t0)
                self._opt_t0 = None
                if self.close_on_optimizer and not self.timer_steps:
                    self.end(t)
        except Exception as e:
            _count_internal(self.client, e)

    def detach(self):
        """Removes the hooks, restores the optimizer and the loader; closes an open step."""
        for h in self._handles:
            try:
                h.remove()
            except Exception:
                pass
        self._handles = []
        for obj, name in self._patched:
            try:
                delattr(obj, name)
            except Exception:
                pass
        self._patched = []
        for obj, cls in self._loaders:
            try:
                obj.__class__ = cls
            except Exception:
                pass
        self._loaders = []
        try:
            self.end()
            if self.captures is not None:
                self.captures.close()
        except Exception as e:
            _count_internal(self.client, e)


class NoFrameworkCallback:
    """The callback base when the framework is not installed: every ``on_*`` hook the class does
    not define is a no-op, and set_model/set_params keep what they get (as paddle.Model's
    callbacks expect)."""
    model = None
    params = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)
