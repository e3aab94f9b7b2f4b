# SPDX-License-Identifier: MIT
"""Trains a tiny Paddle MLP on the CPU for test_paddle_summary.py.

    python3 paddle_summary_train.py window OUT.json
    python3 paddle_summary_train.py cnn OUT.json

Two jobs: $STEPSCOPE_JOB gets a paddle.profiler window (steps 2..8, a RecordEvent range in every
step) streamed by stepscope.paddle.trace_handler() and nothing else (the same window is also
exported as Paddle's files, OUT.window.json by export_chrome_tracing and OUT.window.pb by
export_protobuf, for `stepscope import`); $STEPSCOPE_JOB-bench gets
step records with phases (stepscope.paddle.attach() and loader(), the reader sleeping READER_S
per batch). OUT.json gets what Paddle itself says about the window: the text prof.summary()
prints, and the exact numbers behind it (StatisticData, in ns).

cnn: a small CNN trained 30 steps under make_scheduler(closed=2, ready=1, record=4, repeat=1)
(steps 3..6 recorded) with profile_memory=True, the window streamed by trace_handler() and exported the same two ways, and
Paddle's summary and numbers in OUT.json. Its window lasts well past 8.4 ms, where Paddle's
float-rounded start_time offsets lose their last ns digits (cli/import/paddle_times.h).
"""
import contextlib
import io
import json
import os
import sys
import time

import numpy as np
import paddle
import paddle.profiler as profiler
from paddle.profiler.profiler_statistic import StatisticData, wrap_tree
from paddle.profiler.profiler_statistic import TracerEventType

import stepscope
import stepscope.paddle as ssp

BATCH = 16
READER_S = 0.004
CNN_BATCH = 128


class Data(paddle.io.Dataset):
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 32)).astype("float32")
        self.y = (np.arange(n) % 10).astype("int64")

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def model():
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Linear(32, 64), paddle.nn.ReLU(), paddle.nn.Linear(64, 10))
    return net, paddle.optimizer.SGD(learning_rate=0.01, parameters=net.parameters())


def exact(prof):
    """Paddle's own numbers for the window, in ns (what summary() prints, unrounded)."""
    sd = StatisticData(prof.profiler_result.get_data(), prof.profiler_result.get_extra_info())
    trs = sd.time_range_summary
    es = sd.event_summary
    overview = {str(t).split(".")[1]: {"ns": v, "calls": trs.call_times[t]}
                for t, v in trs.CPUTimeRangeSum.items()}
    for name, it in es.model_perspective_items.items():
        if name in overview:  # the overview shows the model rows for these types
            overview[name] = {"ns": it.cpu_time, "calls": it.call}
    ops = {name: {"calls": it.call, "ns": it.cpu_time, "min_ns": it.min_cpu_time,
                  "max_ns": it.max_cpu_time, "gpu_ns": it.general_gpu_time, "self_ns": 0,
                  "inner": {n: {"calls": i.call, "ns": i.cpu_time, "min_ns": i.min_cpu_time,
                                "max_ns": i.max_cpu_time, "gpu_ns": i.general_gpu_time,
                                "self_ns": 0}
                            for n, i in it.operator_inners.items()}}
           for name, it in es.items.items()}
    # self time per operator and inner row: Paddle's own per-node self_cpu_time
    # (HostStatisticNode.cal_statistic(): its time less its children's and runtime calls'),
    # summed over the nodes its operator summary groups
    _, threads = wrap_tree(prof.profiler_result.get_data())
    for nodes in threads.values():
        for nd in nodes[1:]:
            if nd.type != TracerEventType.Operator:
                continue
            ops[nd.name]["self_ns"] += nd.self_cpu_time
            for c in nd.children_node:
                if c.type != TracerEventType.Operator:
                    ops[nd.name]["inner"][c.name]["self_ns"] += c.self_cpu_time
    model = {name: {"calls": it.call, "ns": it.cpu_time, "min_ns": it.min_cpu_time,
                    "max_ns": it.max_cpu_time} for name, it in es.model_perspective_items.items()}
    user = {name: {"calls": it.call, "ns": it.cpu_time} for name, it in es.userdefined_items.items()}
    ms = sd.memory_summary
    memory = {str(place): {"peak_allocated": ms.peak_allocation_values[place],
                           "peak_reserved": ms.peak_reserved_values[place],
                           "rows": [[name, it.memory_type, it.allocation_count, it.free_count,
                                     it.allocation_size, it.free_size, it.increase_size]
                                    for items in (ms.allocated_items[place], ms.reserved_items[place])
                                    for name, it in items.items()]}
              for place in ms.allocated_items}
    return {"overview": overview, "operators": ops, "model": model, "user": user,
            "extra": dict(prof.profiler_result.get_extra_info()), "memory": memory}


def train_window(net, opt, batches, scheduler, handler, memory=False):
    """Trains on batches under a CPU profiler window (with memory: profile_memory=True);
    returns Paddle's printed summary of it and its numbers (exact())."""
    loss_fn = paddle.nn.CrossEntropyLoss()
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=scheduler,
                             on_trace_ready=handler, profile_memory=memory)
    prof.start()
    for x, y in batches:
        with profiler.RecordEvent("my_forward"):
            logits = net(x)
        loss = loss_fn(logits, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        prof.step(num_samples=len(x))
    prof.stop()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, op_detail=True, thread_sep=False,
                     time_unit="ms")
    return text.getvalue(), exact(prof)


def exporting(out, live):
    """An on_trace_ready that exports the window to OUT.window.json and OUT.window.pb, then
    runs live (stepscope.paddle.trace_handler())."""
    def handler(prof):
        prof.export(path=out + ".window.json", format="json")
        prof.export(path=out + ".window.pb", format="pb")
        live(prof)
    return handler


def cnn():
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Conv2D(1, 16, 3), paddle.nn.ReLU(), paddle.nn.Conv2D(16, 16, 3),
                               paddle.nn.ReLU(), paddle.nn.MaxPool2D(2), paddle.nn.Flatten(),
                               paddle.nn.Linear(16 * 12 * 12, 10))
    return net, paddle.optimizer.Adam(parameters=net.parameters())


def run_cnn(out):
    net, opt = cnn()
    live = ssp.trace_handler()
    rng = np.random.default_rng(0)
    x = paddle.to_tensor(rng.standard_normal((CNN_BATCH, 1, 28, 28)).astype("float32"))
    y = paddle.to_tensor((np.arange(CNN_BATCH) % 10).astype("int64"))
    text, numbers = train_window(net, opt, [(x, y)] * 30,
                                 profiler.make_scheduler(closed=2, ready=1, record=4, repeat=1),
                                 exporting(out, live), memory=True)
    client = stepscope.get_client()
    acked = client.close(timeout=60)
    json.dump({"summary_text": text, "exact": numbers, "window_events": live.events,
               "kept_us": ssp.stream_chrome_trace.kept_us, "acked": acked, "stats": client.stats},
              open(out, "w"), default=str)


class SlowData(Data):
    def __getitem__(self, i):
        time.sleep(READER_S / BATCH)
        return super().__getitem__(i)


def run_timer(out):
    """attach() beside a timer_only Profiler stepped with prof.step(num_samples): OUT.json gets
    the batch and reader costs Paddle's timer recorded, step by step."""
    import paddle.profiler.timer as pt
    net, opt = model()
    client = stepscope.get_client()
    loader = paddle.io.DataLoader(SlowData(BATCH * 15 + 8), batch_size=BATCH, num_workers=0)
    hook = ssp.attach(net, opt, loader, client=client)  # its fetches pass through hook.loader()
    got = {"batch": [], "reader": [], "samples": []}
    rb, rr = pt.Event.record_batch, pt.Event.record_reader

    def record_batch(self, usetime, num_samples=None):
        got["batch"].append(usetime)
        got["samples"].append(num_samples)
        return rb(self, usetime, num_samples)

    def record_reader(self, usetime):
        got["reader"].append(usetime)
        return rr(self, usetime)
    pt.Event.record_batch, pt.Event.record_reader = record_batch, record_reader
    loss_fn = paddle.nn.CrossEntropyLoss()
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], timer_only=True)
    prof.start()
    for x, y in loader:
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        prof.step(num_samples=len(x))
    prof.stop()
    hook.detach()
    pt.Event.record_batch, pt.Event.record_reader = rb, rr
    acked = client.close(timeout=60)
    json.dump(dict(got, acked=acked, stats=client.stats), open(out, "w"), default=str)


def slow_reader(loader):
    for batch in loader:
        time.sleep(READER_S)
        yield batch


def run_bench(net, opt, client):
    loss_fn = paddle.nn.CrossEntropyLoss()
    hook = ssp.attach(net, opt, client=client)
    n = 0
    # 15 batches of 16 and one of 8: 16 steps, the first 10 of them warm-up
    for x, y in hook.loader(slow_reader(paddle.io.DataLoader(Data(BATCH * 15 + 8),
                                                             batch_size=BATCH, num_workers=0))):
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        n += 1
    hook.detach()
    return n


def main(out):
    net, opt = model()
    live = ssp.trace_handler()
    loader = paddle.io.DataLoader(Data(BATCH * 10), batch_size=BATCH, num_workers=0)
    text, numbers = train_window(net, opt, loader, (2, 9), exporting(out, live))
    client = stepscope.get_client()
    bclient = stepscope.Client(job=os.environ["STEPSCOPE_JOB"] + "-bench")
    bench_steps = run_bench(net, opt, bclient)
    acked = client.close(timeout=60) and bclient.close(timeout=60)
    json.dump({"summary_text": text, "exact": numbers, "window_events": live.events,
               "window_steps": [2, 8], "bench_steps": bench_steps, "reader_s": READER_S,
               "acked": acked, "stats": client.stats, "bstats": bclient.stats},
              open(out, "w"), default=str)


if __name__ == "__main__":
    {"window": main, "cnn": run_cnn, "timer": run_timer}[sys.argv[1]](sys.argv[2])
