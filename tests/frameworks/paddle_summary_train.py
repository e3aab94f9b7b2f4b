# SPDX-License-Identifier: MIT
"""Trains a tiny Paddle MLP on the CPU for test_paddle_summary.py.

    python3 paddle_summary_train.py window OUT.json

Two jobs: $STEPSCOPE_JOB gets a paddle.profiler window (steps 2..8, a RecordEvent range in every
step) streamed by stepscope.paddle.trace_handler() and nothing else (the same window is also
exported as Paddle's files, OUT.window.json by export_chrome_tracing and OUT.window.pb by
export_protobuf, for `stepscope import`); $STEPSCOPE_JOB-bench gets
step records with phases (stepscope.paddle.attach() and loader(), the reader sleeping READER_S
per batch). OUT.json gets what Paddle itself says about the window: the text prof.summary()
prints, and the exact numbers behind it (StatisticData, in ns).
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
from paddle.profiler.profiler_statistic import StatisticData

import stepscope
import stepscope.paddle as ssp

BATCH = 16
READER_S = 0.004


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
                  "max_ns": it.max_cpu_time,
                  "inner": {n: {"calls": i.call, "ns": i.cpu_time} for n, i in it.operator_inners.items()}}
           for name, it in es.items.items()}
    model = {name: {"calls": it.call, "ns": it.cpu_time, "min_ns": it.min_cpu_time,
                    "max_ns": it.max_cpu_time} for name, it in es.model_perspective_items.items()}
    user = {name: {"calls": it.call, "ns": it.cpu_time} for name, it in es.userdefined_items.items()}
    return {"overview": overview, "operators": ops, "model": model, "user": user}


def run_window(net, opt, handler):
    loader = paddle.io.DataLoader(Data(BATCH * 10), batch_size=BATCH, num_workers=0)
    loss_fn = paddle.nn.CrossEntropyLoss()
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=(2, 9),
                             on_trace_ready=handler)
    prof.start()
    for x, y in loader:
        with profiler.RecordEvent("my_forward"):
            out = net(x)
        loss = loss_fn(out, y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        prof.step(num_samples=BATCH)
    prof.stop()
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, op_detail=True, thread_sep=False,
                     time_unit="ms")
    return text.getvalue(), exact(prof)


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

    def handler(prof):
        prof.export(path=out + ".window.json", format="json")
        prof.export(path=out + ".window.pb", format="pb")
        live(prof)

    text, numbers = run_window(net, opt, handler)
    client = stepscope.get_client()
    bclient = stepscope.Client(job=os.environ["STEPSCOPE_JOB"] + "-bench")
    bench_steps = run_bench(net, opt, bclient)
    acked = client.close(timeout=60) and bclient.close(timeout=60)
    json.dump({"summary_text": text, "exact": numbers, "window_events": live.events,
               "window_steps": [2, 8], "bench_steps": bench_steps, "reader_s": READER_S,
               "acked": acked, "stats": client.stats, "bstats": bclient.stats},
              open(out, "w"), default=str)


if __name__ == "__main__":
    assert sys.argv[1] == "window", sys.argv
    main(sys.argv[2])
