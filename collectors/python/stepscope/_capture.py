# SPDX-License-Identifier: MIT
"""On-demand captures for every integration (stepscope.torch's attach, and the StepHooks of
stepscope.paddle and stepscope.mindspore): the framework-neutral part of docs/PROTOCOL.md section 6. The sender thread queues a request and
reports ``armed``; the training thread, at a step's start, starts the framework's profiler for the
requested step (``recording``), and at the end of the window's last step stops it, streams what
it recorded and reports ``done`` (or ``failed`` with the exception). A framework gives two
functions: ``start(what) -> handle`` and ``stop(handle) -> number of events streamed``.
``keep_as`` names the key under which a finished capture keeps its handle (torch keeps the
profiler, so that ``key_averages()`` can be compared); by default the handle is dropped."""
import collections
import os
import time

__all__ = ["Captures"]


class Captures:
    """Serves the client's capture requests for one StepHook (``hook.captures``)."""

    def __init__(self, client, start, stop, owner="hook", keep_as=None):
        self.client = client
        self._start = start
        self._stop = stop
        self._detached = "the %s is detached" % owner  # why a request fails after close()
        self._keep_as = keep_as
        self._queue = collections.deque()  # requests, from the sender thread
        self._cancelled = set()            # ids the daemon cancelled, from the sender thread
        self._cap = None                   # the capture being recorded
        self.last = None                   # the latest finished one: id, state, steps, events,
                                           # stop_ns (the time its stop() took)
        self._pid = os.getpid()
        self.active = True
        client.on_capture(self.on_request)
        client.on_capture_cancel(self.on_cancel)

    def on_request(self, req):
        """Sender thread: queue for the training thread."""
        c = self.client
        if not self.active or os.getpid() != self._pid:
            c.capture_state(req["id"], "failed", self._detached)
            return
        if not 1 <= req["steps"] <= 1000:
            c.capture_state(req["id"], "failed", "steps must be in 1..1000")
            return
        self._queue.append(req)
        c.capture_state(req["id"], "armed")

    def on_cancel(self, capture_id):
        """Sender thread: the daemon cancelled a window (its part is already "cancelled" there);
        if still queued it is dropped when it comes up, unreported. One recording goes on."""
        self._cancelled.add(capture_id)

    def step_begin(self, step):
        """Training thread, at the start of step: starts the oldest queued capture if this is its
        step (or it asked for the next one); fails those whose step has passed."""
        if self._cap is not None:
            return
        c = self.client
        while self._queue:
            req = self._queue[0]
            if req["id"] in self._cancelled:
                self._queue.popleft()
                self._cancelled.discard(req["id"])
                continue
            start = req["start_step"]
            if start is not None and step < start:
                return
            self._queue.popleft()
            if start is not None and step > start:
                c.capture_state(req["id"], "failed",
                                "step %d has passed (this rank is at step %d)" % (start, step))
                continue
            try:
                handle = self._start(req["what"])
            except Exception as e:
                c.capture_state(req["id"], "failed", "%s: %s" % (type(e).__name__, e))
                continue
            self._cap = {"id": req["id"], "steps": req["steps"], "recorded": 0,
                         "first_step": step, "what": req["what"], "handle": handle}
            c.capture_state(req["id"], "recording", step=step)
            return

    def step_end(self):
        """Training thread, after a step's record: ends the window after its last step."""
        cap = self._cap
        if cap is not None:
            cap["recorded"] += 1
            if cap["recorded"] >= cap["steps"]:
                self._finish("done")

    def _finish(self, state, reason=None):
        cap, self._cap = self._cap, None
        cap["last_step"] = cap["first_step"] + cap["recorded"] - 1
        cap["events"] = 0
        handle = cap.pop("handle")
        if self._keep_as:
            cap[self._keep_as] = handle
        t0 = time.monotonic_ns()
        try:
            cap["events"] = self._stop(handle)
        except Exception as e:
            state, reason = "failed", "%s: %s" % (type(e).__name__, e)
        cap["stop_ns"] = time.monotonic_ns() - t0  # the profiler's stop, export and streaming
        cap["state"] = state
        self.last = cap
        self.client.capture_state(cap["id"], state, reason)

    def close(self):
        """Detach: no more requests; a running window ends failed, queued ones fail."""
        self.active = False
        try:
            self.client._capture_callbacks.remove(self.on_request)
            self.client._cancel_callbacks.remove(self.on_cancel)
        except (AttributeError, ValueError):
            pass
        if self._cap is not None:
            self._finish("failed", "detached after %d of %d steps"
                         % (self._cap["recorded"], self._cap["steps"]))
        while self._queue:
            self.client.capture_state(self._queue.popleft()["id"], "failed", self._detached)
