# SPDX-License-Identifier: MIT
"""Trains a small Paddle model on the CPU through stepscope.paddle (run by test_paddle.py).

    python3 paddle_train.py loop OUT.json   # a hand-written loop: attach() + loader(), with a
                                            # paddle.profiler window (steps 10..14) streamed by
                                            # trace_handler(), then a short run with
                                            # attach(model, opt, DataLoader) sampling its queue,
                                            # under job $STEPSCOPE_JOB-queue
    python3 paddle_train.py hapi OUT.json   # paddle.Model.fit with StepscopeCallback

Every phase has a known floor, so the test can tell the phases apart: the reader sleeps
READER_S per batch, the model's forward FORWARD_S, its backward (a PyLayer) BACKWARD_S, the
optimizer's step OPTIMIZER_S. OUT.json gets what the script knows independently: batch sizes,
the steps of the profiler window and Paddle's own operator summary for it (StatisticData, the
numbers behind Profiler.summary()).
"""
import json
import os
import sys
import time

import numpy as np
import paddle
import paddle.profiler as profiler

import stepscope
import stepscope.paddle as ssp

READER_S, FORWARD_S, BACKWARD_S, OPTIMIZER_S = 0.006, 0.003, 0.002, 0.0015
BATCH = 8


class SlowGrad(paddle.autograd.PyLayer):
    """Identity whose backward takes at least BACKWARD_S."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        time.sleep(BACKWARD_S)
        return g * 1.0


class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(1, 4, 3, padding=1)
        self.fc = paddle.nn.Linear(4 * 8 * 8, 4)

    def forward(self, x):
        time.sleep(FORWARD_S)
        h = paddle.nn.functional.relu(SlowGrad.apply(self.conv(x)))
        return self.fc(paddle.flatten(h, 1))


class SlowSGD(paddle.optimizer.SGD):
    def step(self):
        time.sleep(OPTIMIZER_S)
        return super().step()

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        time.sleep(OPTIMIZER_S)
        return super().minimize(loss, startup_program, parameters, no_grad_set)


class Data(paddle.io.Dataset):
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 1, 8, 8)).astype("float32")
        self.y = (np.arange(n) % 4).astype("int64").reshape(n, 1)

    def __getitem__(self, i):
        return self.x[i], self.y[i]

    def __len__(self):
        return len(self.x)


def slow_reader(loader):
    for batch in loader:
        time.sleep(READER_S)
        yield batch


def paddle_operator_summary(prof):
    """Paddle's own per-operator numbers for the window (what Profiler.summary() prints)."""
    from paddle.profiler.profiler_statistic import StatisticData
    sd = StatisticData(prof.profiler_result.get_data(), prof.profiler_result.get_extra_info())
    return {name: {"calls": it.call, "cpu_ns": it.cpu_time, "min_ns": it.min_cpu_time,
                   "max_ns": it.max_cpu_time} for name, it in sd.event_summary.items.items()}


FLOORS_US = {"dataloader": READER_S * 1e6, "forward": FORWARD_S * 1e6,
             "backward": BACKWARD_S * 1e6, "optimizer": OPTIMIZER_S * 1e6}


def run_loop(out):
    paddle.seed(0)
    net = Net()
    opt = SlowSGD(learning_rate=0.01, parameters=net.parameters())
    loss_fn = paddle.nn.CrossEntropyLoss()
    data = Data(316)                                  # 39 batches of 8, then one of 4
    loader = paddle.io.DataLoader(data, batch_size=BATCH, shuffle=False, num_workers=0)
    handler = ssp.trace_handler()
    prof = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=(10, 15),
                             on_trace_ready=handler)
    hook = ssp.attach(net, opt)
    sizes = []
    prof.start()
    for x, y in hook.loader(slow_reader(loader)):
        sizes.append(int(x.shape[0]))
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        prof.step()
    prof.stop()
    hook.detach()
    client = stepscope.get_client()
    ops = paddle_operator_summary(prof)

    # attach(..., dataloader): a plain loop over the DataLoader; its prefetch queue is sampled
    # once per batch
    qclient = stepscope.Client(job=os.environ["STEPSCOPE_JOB"] + "-queue")
    dl = paddle.io.DataLoader(Data(80), batch_size=BATCH, num_workers=0)
    qhook = ssp.attach(net, opt, dl, client=qclient)
    qsteps = 0
    for x, y in dl:
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        qsteps += 1
    qhook.detach()
    assert type(dl) is paddle.io.DataLoader and "step" not in vars(opt)

    acked = client.close(timeout=60) and qclient.close(timeout=60)
    json.dump({"version": paddle.__version__, "sizes": sizes, "window_steps": [10, 14], "window_events": handler.events,
               "operators": ops, "queue_steps": qsteps, "acked": acked,
               "floors_us": FLOORS_US, "stats": client.stats, "qstats": qclient.stats},
              open(out, "w"), default=str)


def run_hapi(out):
    paddle.seed(0)
    net = Net()
    model = paddle.Model(net)
    model.prepare(SlowSGD(learning_rate=0.01, parameters=net.parameters()),
                  paddle.nn.CrossEntropyLoss())
    cb = ssp.StepscopeCallback()
    model.fit(Data(92), batch_size=BATCH, epochs=2, shuffle=False, verbose=0, callbacks=[cb])
    client = stepscope.get_client()
    acked = client.close(timeout=60)
    json.dump({"version": paddle.__version__, "sizes": ([BATCH] * 11 + [4]) * 2, "acked": acked, "floors_us": FLOORS_US,
               "stats": client.stats},
              open(out, "w"), default=str)


if __name__ == "__main__":
    {"loop": run_loop, "hapi": run_hapi}[sys.argv[1]](sys.argv[2])
