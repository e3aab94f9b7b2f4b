# SPDX-License-Identifier: MIT
"""stepscope.mindspore: a MindSpore training callback (see docs/PYTHON.md, section "MindSpore").

    from stepscope.mindspore import StepscopeCallback
    model = mindspore.train.Model(net, loss_fn, optimizer)
    model.train(epochs, dataset, callbacks=[StepscopeCallback()])

One step record per ``on_train_step_begin``/``on_train_step_end`` pair. Importing this module
works without MindSpore installed (the class then derives from
stepscope._hooks.NoFrameworkCallback); no callback raises into training: internal failures are
counted in the client's stats (``internal_errors``).
"""
import glob
import json
import os
import shutil
import tempfile
import time

from ._capture import Captures
from ._client import _count_internal
from ._encode import encode_line, us
from ._hooks import NoFrameworkCallback, StepHook, batch_size, framework_of

try:  # mindspore.train.Callback; absent without MindSpore
    from mindspore.train import Callback as _CallbackBase
except Exception:  # ImportError, or a broken install
    _CallbackBase = NoFrameworkCallback

__all__ = ["StepscopeCallback", "serve_captures", "stream_trace_view"]

_now = time.time_ns


def _param(run_context, name):
    """cb_params.name, or None (cb_params is a dict whose attribute access raises KeyError)."""
    try:
        p = run_context.original_args()
        return p.get(name) if hasattr(p, "get") else getattr(p, name, None)
    except Exception:
        return None


def _pynative():
    try:
        import mindspore
        return mindspore.get_context("mode") == mindspore.PYNATIVE_MODE
    except Exception:
        return False


class StepscopeCallback(_CallbackBase):
    """Sends a step record per training step of ``Model.train``.

    The step runs from the end of the previous step (or the epoch's start) to
    ``on_train_step_end``. Phases: ``dataloader``, from there to ``on_train_step_begin`` (the
    dataset iterator's time); in PyNative mode (MindSpore's default) ``forward`` (the loss
    network's forward hooks), ``backward`` (from the forward's end to the optimizer's start) and
    ``optimizer`` (the optimizer Cell's forward hooks); in graph mode, where the whole train step
    is one compiled graph and Cell hooks do not run, ``compute`` (begin to end of the step).
    ``samples``: the batch's leading dimension; in sink mode, the dataset's batch size times the
    steps the callback step covers. The step number is ``cur_step_num - 1`` (from 0, across
    epochs). In sink mode, the device queue's depth (``get_mbuf_queue_size()``) is sent as queue
    ``get_next`` at each step end. A host CPU sample is sent at a step's end at most every
    ``host_interval`` seconds (0: none). ``captures``: serve the daemon's capture requests
    (serve_captures), MindSpore's profiler output kept under ``capture_dir`` (default: the
    system's temporary directory).
    """

    def __init__(self, client=None, hooks=True, host_interval=1.0, captures=True,
                 capture_dir=None):
        super().__init__()
        self._capture_dir = capture_dir
        self._client = client
        self._captures = captures
        self._host_interval = host_interval
        self._hooks = hooks
        self._hook = None
        self._fetch_t0 = None
        self._last_step_num = 0
        self._open_num = None
        self._cb_t = None

    def _h(self):
        if self._hook is None:
            self._hook = StepHook(
                client=self._client,  # None: the process-wide client, made naming the framework
                close_on_optimizer=False, host_interval=self._host_interval,
                framework=framework_of("mindspore"))
            if self._captures:
                serve_captures(self._hook, output_dir=self._capture_dir)
        return self._hook

    def _fail(self, e):
        try:
            _count_internal(self._h().client, e)
        except Exception:
            pass

    def on_train_begin(self, run_context):
        try:
            h = self._h()
            if not self._hooks or not _pynative():
                return
            net = _param(run_context, "train_network")
            loss_net = getattr(net, "network", None) if net is not None else None
            fwd = loss_net if loss_net is not None else _param(run_context, "network")
            if fwd is not None:
                h.watch_model(fwd)
            opt = _param(run_context, "optimizer")
            if opt is not None:
                h.watch_optimizer_cell(opt)
        except Exception as e:
            self._fail(e)

    def on_train_epoch_begin(self, run_context):
        self._fetch_t0 = _now()

    def on_train_step_begin(self, run_context):
        try:
            t = _now()
            num = _param(run_context, "cur_step_num")
            if num is not None and num == self._open_num:
                return                                  # called twice for one step
            h = self._h()
            t0 = self._fetch_t0 if self._fetch_t0 is not None else t
            h.end(t0)
            s = h.begin(t0)
            if num is not None:
                s.step = max(0, int(num) - 1)
            self._open_num = num
            h._add("dataloader", t - t0)
            s.samples = batch_size(_param(run_context, "train_dataset_element"))
            self._cb_t = t
        except Exception as e:
            self._fail(e)

    def on_train_step_end(self, run_context):
        try:
            t = _now()
            h = self._h()
            s = h._step
            if s is None:
                return
            if not s.phases.keys() - {"dataloader"} and self._cb_t is not None:
                h._add("compute", t - self._cb_t)       # no hook ran (graph mode)
            num = _param(run_context, "cur_step_num")
            if _param(run_context, "dataset_sink_mode"):
                self._sink_step(run_context, s, num)
            if num is not None:
                self._last_step_num = int(num)
            caps = h.captures
            last = caps.last if caps is not None else None
            h.end(t)
            self._open_num = None
            # A capture that ended with this step stopped and analysed MindSpore's profiler in
            # h.end() (about a second): the profiler's cost, not the next step's data loading,
            # so the next step starts after it (the gap is the capture's "stop_ns").
            self._fetch_t0 = _now() if caps is not None and caps.last is not last else t
        except Exception as e:
            self._fail(e)

    def _sink_step(self, run_context, s, num):
        ds = _param(run_context, "train_dataset")
        if s.samples is None and ds is not None and num is not None:
            n = int(num) - self._last_step_num
            bs = ds.get_batch_size()
            if n > 0 and bs:
                s.samples = int(bs) * n
        helper = getattr(ds, "_dataset_helper", None)
        if helper is not None and hasattr(helper, "get_mbuf_queue_size"):
            self._h().client.queue("get_next", int(helper.get_mbuf_queue_size()), step=s.step)

    def on_train_epoch_end(self, run_context):
        self._fetch_t0 = None

    def on_train_end(self, run_context):
        if self._hook is not None:
            self._hook.detach()


# -- on-demand capture ----------------------------------------------------------------------------

def _ns(v):
    """A trace_view.json time (µs as a number or as text, "1795407905712426.280") -> int ns."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v * 1000
    if isinstance(v, float):
        return int(round(v * 1000))
    try:
        whole, _, frac = str(v).strip().partition(".")
        sign = -1 if whole.startswith("-") else 1
        return sign * (abs(int(whole)) * 1000 + int((frac + "000")[:3] or 0))
    except (ValueError, TypeError):
        return None


SCOPE_CAT = "scope_layer"


def _scope_pids(events):
    """The pids whose process_name metadata is "Scope Layer"."""
    pids = set()
    for ev in events:
        try:
            if (ev.get("ph") == "M" and ev.get("name") == "process_name"
                    and ev["args"]["name"] == "Scope Layer"):
                pids.add(ev.get("pid"))
        except (AttributeError, KeyError, TypeError):
            pass
    return pids


def stream_trace_view(events, client):
    """Sends the events of a MindSpore ``trace_view.json`` (a Chrome trace list, or an object with
    ``traceEvents``) to client. MindSpore 2.x writes ``ts`` and ``dur`` as text ("123.456"): they
    are sent as numbers, ``ts`` exact to the ns. The spans of its "Scope Layer" process (the
    network's scope hierarchy: ``Default``, ``network-WithLossCell``, ...; one thread per depth),
    which MindSpore gives no cat, are sent with cat ``scope_layer``, so that the daemon does not
    count them as operators. Returns the number of events sent."""
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    events = events if isinstance(events, list) else []
    scope = _scope_pids(events)
    n = 0
    for ev in events:
        if not isinstance(ev, dict) or "ph" not in ev:
            continue
        ev = dict(ev)
        if ev["ph"] != "M" and ev.get("pid") in scope:
            ev["cat"] = SCOPE_CAT
        ts = _ns(ev.pop("ts")) if "ts" in ev else None
        if "dur" in ev:
            d = _ns(ev["dur"])
            ev["dur"] = d / 1000 if d is not None else 0
        b = encode_line(ev)
        if b is None:
            continue
        client._put(b'{"ts":' + us(ts).encode() + b"," + b[1:] if ts is not None else b)
        n += 1
    return n


def serve_captures(hook, output_dir=None, keep=True):
    """Makes hook (a StepHook) serve capture requests with ``mindspore.Profiler``: made with
    ``start_profile=False`` in a new directory (``stepscope-mindspore-*`` under output_dir, else
    under the system's temporary directory) and started at the window's first step; after its
    last step stopped and analysed (in the training thread: about a second), its
    ``ASCEND_PROFILER_OUTPUT/trace_view.json`` streamed (stream_trace_view). The directory is
    MindSpore's profiler output (its ``cpu_op_*`` tables, the timeline, ...): it is kept, its
    path in ``captures.last["output_dir"]``, unless keep is False. A profiler that cannot start,
    or writes no trace_view.json on this device, fails the capture with MindSpore's reason."""
    client = hook.client
    profilers = {}  # output directory -> its mindspore.Profiler, while a window records

    def start(what):
        import mindspore
        d = tempfile.mkdtemp(prefix="stepscope-mindspore-", dir=output_dir)
        try:
            prof = mindspore.Profiler(start_profile=False, output_path=d)
            prof.start()
        except BaseException:
            shutil.rmtree(d, ignore_errors=True)  # ours, and nothing profiled in it
            raise
        profilers[d] = prof
        return d

    def stop(d):
        prof = profilers.pop(d)
        try:
            prof.stop()
            prof.analyse()
            files = sorted(glob.glob(os.path.join(glob.escape(d), "*", "ASCEND_PROFILER_OUTPUT",
                                                  "trace_view.json")))
            if not files:
                raise RuntimeError("mindspore.Profiler wrote no trace_view.json on this device")
            with open(files[0], "rb") as f:
                return stream_trace_view(json.load(f), client)
        finally:
            if not keep:
                shutil.rmtree(d, ignore_errors=True)

    hook.captures = Captures(client, start, stop, keep_as="output_dir")
    return hook.captures
