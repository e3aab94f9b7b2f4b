#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost of ``with client.step():`` holding 4 ``client.phase()`` blocks, A/B against an empty loop.

    python3 collectors/python/bench/step_overhead.py [--steps 100000] [--runs 7] [--socket PATH]

Each run times an empty loop (A) and the instrumented loop (B) back to back, so both see the same
machine state; the result is the median over runs of (B - A) per step. The records go to a real
consumer so the sender thread's work (batching, writes, acks; it shares the GIL with the loop) is
counted too: the daemon at --socket if given, else a sink process that speaks the protocol
(welcome, then an ack after every read). The last line is ``step_overhead_us=<x>``.
"""
import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # run from a checkout without pip install

import stepscope  # noqa: E402

SINK = r"""
import os, socket, sys
path = sys.argv[1]
ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
ls.bind(path); ls.listen(4)
print("ready", flush=True)
while True:
    c, _ = ls.accept()
    seq = None; buf = b""
    while True:
        d = c.recv(1 << 20)
        if not d:
            break
        buf += d
        n = buf.count(b"\n")
        buf = buf[buf.rfind(b"\n") + 1:]
        if seq is None:
            seq = 0; n -= 1
            c.sendall(b'{"welcome":"stepscope/1","job_id":1,"session_id":1,"stream_id":1,"next_seq":0}\n')
        seq += n
        c.sendall(b'{"ack":%d}\n' % seq)
    c.close()
"""


@contextlib.contextmanager
def consumer(socket=None):
    """The socket the benchmark's records go to: `socket` (a running stepscoped) when given, else
    that of a SINK process started here and stopped, with its socket, on exit."""
    if socket is not None:
        yield socket
        return
    tmpdir = tempfile.mkdtemp(prefix="ssbench")
    path = os.path.join(tmpdir, "sink.sock")
    sink = subprocess.Popen([sys.executable, "-c", SINK, path], stdout=subprocess.PIPE, text=True)
    try:
        sink.stdout.readline()
        yield path
    finally:
        sink.kill()
        sink.wait()
        try:
            os.unlink(path)
            os.rmdir(tmpdir)
        except OSError:
            pass


def baseline(n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        pass
    return time.perf_counter_ns() - t0


def instrumented(c, n):
    step, phase = c.step, c.phase
    t0 = time.perf_counter_ns()
    for _ in range(n):
        with step(samples=32):
            with phase("dataloader"):
                pass
            with phase("forward"):
                pass
            with phase("backward"):
                pass
            with phase("optimizer"):
                pass
    return time.perf_counter_ns() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=100000, help="steps per run")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--socket", help="a running stepscoped (default: a protocol sink process)")
    a = ap.parse_args()

    with consumer(a.socket) as path:
        c = stepscope.Client(socket=path, job="step_overhead_bench")
        try:
            measure(a, c)
        finally:
            c.close(timeout=10)


def measure(a, c):
    """Runs the A/B and prints the figures."""
    instrumented(c, 2000)  # warm up: connect, caches
    c.flush(timeout=10)
    diffs, base_ns, inst_ns = [], [], []
    for _ in range(a.runs):
        b = baseline(a.steps)
        i = instrumented(c, a.steps)
        c.flush(timeout=30)  # the next run starts with an empty buffer
        base_ns.append(b / a.steps)
        inst_ns.append(i / a.steps)
        diffs.append((i - b) / a.steps)
    st = c.stats
    print("runs=%d steps_per_run=%d consumer=%s" % (a.runs, a.steps,
                                                   "daemon" if a.socket else "sink"))
    print("baseline_ns_per_step median=%.1f" % statistics.median(base_ns))
    print("instrumented_ns_per_step median=%.1f min=%.1f max=%.1f"
          % (statistics.median(inst_ns), min(inst_ns), max(inst_ns)))
    print("records=%d dropped=%d acked=%d writes=%d lines_per_write=%.0f"
          % (st["records"], st["dropped"], st["acked"], st["writes"],
             st["lines_written"] / max(1, st["writes"])))
    print("step_overhead_us=%.2f" % (statistics.median(diffs) / 1000.0))


if __name__ == "__main__":
    main()
