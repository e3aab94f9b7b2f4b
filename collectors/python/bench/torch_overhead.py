#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How much ``stepscope.torch.attach()`` slows a real PyTorch training loop: A/B, same seed,
interleaved runs, median of the per-pair ratios.

    /usr/bin/python3 collectors/python/bench/torch_overhead.py [--steps 40] [--pairs 21]
        [--interleave N] [--tiny] [--socket PATH] [--threads 1]

Whole runs (default): each pair runs the same loop twice from the same seed (model, optimizer,
data and DataLoader made afresh): once plain (A), once with attach() on the model, optimizer and
DataLoader (B); the order alternates between pairs (AB, BA, ...) so drift in the machine's load
hits both sides alike. --interleave N: two copies of the same training from the same seed, one
attached, stepped in turn for N steps (AB, BA, ...), the ratio taken per step: on a shared
machine, whose load changes faster than a run lasts, this pairs like with like far better.
--tiny: a one-layer model instead of the CNN, so that attach()'s own cost per step stands out.

The loop is an ordinary one: a small CNN on 32x32 images, batch 32, SGD with momentum,
cross-entropy, a DataLoader over an in-memory dataset. The records go to a real consumer: the
daemon at --socket, else a sink process that speaks the protocol (step_overhead.py's). Needs
torch (Debian's python3-torch is enough). The last line is ``attach_overhead_percent=<x>``:
(median of B/A - 1) x 100.
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without pip install

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import stepscope  # noqa: E402
import stepscope.torch  # noqa: E402
from step_overhead import consumer  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.c1(x)))
        x = self.pool(torch.relu(self.c2(x)))
        return self.fc(torch.flatten(x, 1))


class Tiny(nn.Module):
    """A model whose step costs little, so that attach()'s own cost per step stands out."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


SHAPES = {Net: (3, 32, 32), Tiny: (8,)}


def run(steps, client, model=Net):
    """One training run of `steps` steps from seed 0; with attach() when client is given.
    Returns the loop's (wall, process CPU) time in ns, set-up excluded. The CPU time counts every
    thread of the process, the client's sender included."""
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(steps * 32, *SHAPES[model]), torch.randint(0, 2, (steps * 32,)))
    loader = DataLoader(data, batch_size=32, shuffle=True)
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    att = stepscope.torch.attach(net, opt, loader, client=client) if client else None
    t0, c0 = time.perf_counter_ns(), time.process_time_ns()
    for x, y in loader:
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
    t, c = time.perf_counter_ns() - t0, time.process_time_ns() - c0
    if att is not None:
        att.detach()
        assert att.steps == steps, att.steps
    return t, c


def interleaved(steps, client, model=Net):
    """Two copies of the same training from seed 0, one attached (B), one not (A), stepped in
    turn (AB, BA, ...) so that each step of B runs next to the same step of A under the same
    machine load. Returns per step pairs [(A wall ns, B wall ns, A CPU ns, B CPU ns)], the CPU
    being this thread's (the sender thread's work is not in it)."""
    def make():
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(steps * 32, *SHAPES[model]),
                             torch.randint(0, 2, (steps * 32,)))
        loader = DataLoader(data, batch_size=32, shuffle=True)
        net = model()
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        return loader, net, opt
    loss_fn = nn.CrossEntropyLoss()
    (la, na, oa), (lb, nb, ob) = make(), make()
    att = stepscope.torch.attach(nb, ob, lb, client=client)
    sides = {0: (iter(la), na, oa), 1: (iter(lb), nb, ob)}
    pairs = []
    for i in range(steps):
        t = {}
        for side in ((0, 1) if i % 2 == 0 else (1, 0)):
            it, net, opt = sides[side]
            w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
            x, y = next(it)
            opt.zero_grad()
            loss_fn(net(x), y).backward()
            opt.step()
            t[side] = (time.perf_counter_ns() - w0, time.thread_time_ns() - c0)
        pairs.append((t[0][0], t[1][0], t[0][1], t[1][1]))
    del sides
    att.detach()
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=40, help="training steps per run")
    ap.add_argument("--pairs", type=int, default=21, help="A/B pairs")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--socket", help="a running stepscoped (default: a protocol sink process)")
    ap.add_argument("--interleave", type=int, default=0, metavar="N",
                    help="instead of whole runs, N steps of two copies stepped in turn (A/B per step)")
    ap.add_argument("--tiny", action="store_true",
                    help="a one-layer model instead of the CNN: measures attach()'s absolute cost")
    a = ap.parse_args()
    model = Tiny if a.tiny else Net
    torch.set_num_threads(a.threads)

    with consumer(a.socket) as path:
        c = stepscope.Client(socket=path, job="torch_overhead_bench")
        try:
            measure(a, c, model)
        finally:
            c.close(timeout=10)


def measure_interleaved(a, c, model):
    """Runs interleaved() and prints the figures: medians of the per-step B/A ratios."""
    interleaved(5, c, model)  # warm up
    pairs = interleaved(a.interleave, c, model)[2:]  # the first steps warm the allocator
    c.flush(timeout=30)
    print("torch=%s model=%s threads=%d interleaved_steps=%d consumer=%s"
          % (torch.__version__, model.__name__, a.threads, len(pairs),
             "daemon" if a.socket else "sink"))
    out = {}
    for label, ka, kb in (("wall", 0, 1), ("cpu", 2, 3)):
        ratios = [p[kb] / p[ka] for p in pairs]
        q = statistics.quantiles(ratios, n=4)
        out[label] = statistics.median(ratios)
        print("%s: plain_ms_per_step=%.3f attached_ms_per_step=%.3f ratio median=%.4f "
              "q1=%.4f q3=%.4f added_us_per_step median=%.1f"
              % (label, statistics.median(p[ka] for p in pairs) / 1e6,
                 statistics.median(p[kb] for p in pairs) / 1e6, out[label], q[0], q[2],
                 statistics.median((p[kb] - p[ka]) / 1e3 for p in pairs)))
    st = c.stats
    print("records=%d dropped=%d internal_errors=%d"
          % (st["records"], st["dropped"], st["internal_errors"]))
    print("attach_cpu_overhead_percent=%.2f" % ((out["cpu"] - 1.0) * 100.0))
    print("attach_overhead_percent=%.2f" % ((out["wall"] - 1.0) * 100.0))


def measure(a, c, model):
    """Runs the warm-up and the A/B pairs and prints the figures."""
    if a.interleave:
        return measure_interleaved(a, c, model)
    run(5, None, model)  # warm up both paths: allocator, kernels, the connection
    run(5, c, model)
    c.flush(timeout=10)
    wall, cpu = ([], [], [], []), ([], [], [], [])  # B/A, A ms/step, B ms/step, B-A us/step
    for i in range(a.pairs):
        if i % 2 == 0:
            ta = run(a.steps, None, model)
            tb = run(a.steps, c, model)
        else:
            tb = run(a.steps, c, model)
            ta = run(a.steps, None, model)
        c.flush(timeout=30)
        for k, series in enumerate((wall, cpu)):
            series[0].append(tb[k] / ta[k])
            series[1].append(ta[k] / a.steps / 1e6)
            series[2].append(tb[k] / a.steps / 1e6)
            series[3].append((tb[k] - ta[k]) / a.steps / 1e3)
    st = c.stats
    print("torch=%s model=%s threads=%d pairs=%d steps_per_run=%d consumer=%s"
          % (torch.__version__, model.__name__, a.threads, a.pairs, a.steps,
             "daemon" if a.socket else "sink"))
    for label, (ratios, a_ms, b_ms, d_us) in (("wall", wall), ("cpu", cpu)):
        q = statistics.quantiles(ratios, n=4)
        print("%s: plain_ms_per_step=%.3f attached_ms_per_step=%.3f ratio median=%.4f "
              "q1=%.4f q3=%.4f added_us_per_step median=%.1f"
              % (label, statistics.median(a_ms), statistics.median(b_ms),
                 statistics.median(ratios), q[0], q[2], statistics.median(d_us)))
    print("records=%d dropped=%d internal_errors=%d"
          % (st["records"], st["dropped"], st["internal_errors"]))
    print("attach_cpu_overhead_percent=%.2f" % ((statistics.median(cpu[0]) - 1.0) * 100.0))
    print("attach_overhead_percent=%.2f" % ((statistics.median(wall[0]) - 1.0) * 100.0))


if __name__ == "__main__":
    main()
