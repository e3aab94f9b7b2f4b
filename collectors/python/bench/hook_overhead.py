#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of the Paddle step hook (stepscope.paddle.attach + loader()), two ways.

    python3 collectors/python/bench/hook_overhead.py [--socket PATH] [--runs 7] [--paddle-blocks 100]

1. hook_overhead_us: the hook's own cost per step, A/B against the same loop without it, on
   stand-ins that follow Paddle's call order (a Layer calling its forward pre/post hooks, an
   optimizer step, a list as the loader), 50 000 steps per run; no framework needed.
2. paddle_overhead_percent (when Paddle imports): a real Paddle CPU loop (small CNN, batch 32,
   paddle.seed(0)), timed in alternating blocks of 20 steps on one model without the hook (A)
   and with it (B, attached before the block, detached after); the median over blocks of
   (B - A) / A, so both sides see the same machine load. paddle_hook_us_per_step: the median of
   (B - A) per step.

The records go to the daemon at --socket, else to step_overhead.py's protocol sink process.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import stepscope  # noqa: E402
import stepscope.paddle as ssp  # noqa: E402
from step_overhead import SINK  # noqa: E402


class _Layer:
    def __init__(self):
        self.pre, self.post = [], []

    def register_forward_pre_hook(self, fn):
        self.pre.append(fn)

    def register_forward_post_hook(self, fn):
        self.post.append(fn)

    def __call__(self, x):
        for fn in self.pre:
            fn(self, (x,))
        for fn in self.post:
            fn(self, (x,), x)
        return x


class _Opt:
    def step(self):
        pass


class _T:
    shape = [32, 3]


def fake_loop(n, client):
    net, opt = _Layer(), _Opt()
    batches = [_T()] * n
    it = batches
    if client is not None:
        it = ssp.attach(net, opt, client=client).loader(batches)
    t0 = time.perf_counter_ns()
    for x in it:
        net(x)
        opt.step()
    return time.perf_counter_ns() - t0


def paddle_blocks(blocks, n, client):
    """A real Paddle loop, timed in alternating blocks of n steps without (A) and with (B) the
    hook, on one model; returns the per-block lists of A and B times (ns)."""
    import paddle
    paddle.seed(0)
    net = paddle.nn.Sequential(paddle.nn.Conv2D(3, 8, 3, padding=1), paddle.nn.ReLU(),
                               paddle.nn.Flatten(), paddle.nn.Linear(8 * 16 * 16, 10))
    opt = paddle.optimizer.SGD(learning_rate=0.01, parameters=net.parameters())
    loss_fn = paddle.nn.CrossEntropyLoss()
    batches = [(paddle.randn([32, 3, 16, 16]), paddle.randint(0, 10, [32, 1]))] * n

    def run(it):
        t0 = time.perf_counter_ns()
        for bx, by in it:
            loss = loss_fn(net(bx), by)
            loss.backward()
            opt.step()
            opt.clear_grad()
        return time.perf_counter_ns() - t0

    a_ns, b_ns = [], []
    for _ in range(blocks):
        a_ns.append(run(batches))
        hook = ssp.attach(net, opt, client=client)
        b_ns.append(run(hook.loader(batches)))
        hook.detach()
    return a_ns, b_ns


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--socket", help="a running stepscoped (default: a protocol sink process)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--fake-steps", type=int, default=50000)
    ap.add_argument("--paddle-blocks", type=int, default=100)
    a = ap.parse_args()
    sink = None
    path = a.socket
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="ssbench"), "sink.sock")
        sink = subprocess.Popen([sys.executable, "-c", SINK, path], stdout=subprocess.PIPE,
                                text=True)
        sink.stdout.readline()
    c = stepscope.Client(socket=path, job="hook_overhead_bench")
    try:
        fake_loop(2000, c)
        c.flush(timeout=10)
        diffs = []
        for _ in range(a.runs):
            base = fake_loop(a.fake_steps, None)
            hooked = fake_loop(a.fake_steps, c)
            c.flush(timeout=30)
            diffs.append((hooked - base) / a.fake_steps)
        print("fake: runs=%d steps=%d" % (a.runs, a.fake_steps))
        print("hook_overhead_us=%.2f" % (statistics.median(diffs) / 1000.0))
        try:
            import paddle  # noqa: F401
        except Exception as e:
            print("paddle not importable (%s): no real-loop A/B" % e)
            return
        paddle_blocks(3, 20, c)                        # warm up
        a_ns, b_ns = paddle_blocks(a.paddle_blocks, 20, c)
        c.flush(timeout=30)
        ratios = [(y - x) / x for x, y in zip(a_ns, b_ns)]
        print("paddle: blocks=%d steps_per_block=20 step_ms median A=%.3f B=%.3f" % (
            a.paddle_blocks, statistics.median(a_ns) / 20e6, statistics.median(b_ns) / 20e6))
        print("paddle_hook_us_per_step=%.2f" % (
            statistics.median([y - x for x, y in zip(a_ns, b_ns)]) / 20e3))
        print("paddle_overhead_percent=%.2f" % (100 * statistics.median(ratios)))
        st = c.stats
        print("records=%d dropped=%d" % (st["records"], st["dropped"]))
    finally:
        c.close(timeout=10)
        if sink is not None:
            sink.kill()
            sink.wait()


if __name__ == "__main__":
    main()
