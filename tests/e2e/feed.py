#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Feeds the e2e test's daemon through real clients.

  feed.py SOCKET main   the job "e2e-main" over tests/integ/ssclient.py (exact protocol lines):
                        two ranks of STEPS steps each (rank 1 a straggler), operator and kernel
                        spans (one named <img src=x onerror=alert(1)>, and enough names to page),
                        host and device queue samples, a pipeline record; waits for the acks.
  feed.py SOCKET live   the job "e2e-live" through the Python collector (collectors/python):
                        one step at once, then one more step per line read on stdin, flushed;
                        prints "ok N" after step N is acknowledged. Ends at EOF.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integ"))
sys.path.insert(0, os.path.join(ROOT, "collectors", "python"))

STEPS = 60
T0 = 1_700_000_000_000_000  # us
HOSTILE = "<img src=x onerror=alert(1)>"
DATA = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def span(name, ts, dur, cat="cpu_op", tid=1, pid=100, **args):
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def main_job(sock):
    from ssclient import Client

    for rank, step_us in ((0, 10_000), (1, 16_000)):
        c = Client(sock)
        c.hello("e2e-main", rank=rank, world_size=2)
        lines = []
        for i in range(STEPS):
            b = T0 + i * step_us
            # Spans in end order, then the step record (as a tracer emits them).
            lines += [
                span(DATA, b, 1000),
                span("aten::relu", b + 2000, 500),
                span("aten::conv2d", b + 1500, 3000, **{"Input Dims": [[32, 3, 224, 224]]}),
                span(HOSTILE, b + 4600, 400),
                span("aten::sgd", b + 6000, 2000),
                span("gemm_kernel", b + 1600, 2500, cat="kernel", tid=7, pid=200),
                span("relu_kernel", b + 4200, 300, cat="kernel", tid=7, pid=200),
                {"type": "queue", "name": "device_queue", "size": i % 4, "capacity": 8, "step": i},
                {"type": "queue", "name": "get_next", "size": 1 + i % 3, "capacity": 4, "step": i},
                {"type": "step", "step": i, "begin_us": b, "end_us": b + step_us, "samples": 32},
            ]
        # 25 more operator names, once each in step 0, so the All table has pages.
        lines += [span(f"aten::extra_{k:02d}", T0 + 9000 + k, 1 + k) for k in range(25)]
        lines.append({"type": "pipeline", "ops": [
            {"id": 0, "name": "DeviceQueueOp", "children": [1], "num_workers": 1},
            {"id": 1, "name": "BatchOp", "children": [2], "num_workers": 4, "queue_usage": 0.2},
            {"id": 2, "name": "MapOp", "children": [3], "num_workers": 8, "queue_usage": 0.9},
            {"id": 3, "name": "GeneratorOp", "children": [], "num_workers": 1, "queue_usage": 0.95},
        ]})
        c.send_lines(lines)
        c.wait_ack(len(lines))
        c.close()
    print("ok", flush=True)


def live_job(sock):
    os.environ["STEPSCOPE_SOCKET"] = sock
    import stepscope

    client = stepscope.Client(job="e2e-live")
    n = 0

    def one_step():
        nonlocal n
        with client.step(samples=8):
            with client.phase("forward"):
                time.sleep(0.002)
            with client.phase("backward"):
                time.sleep(0.003)
        n += 1
        client.flush()
        print("ok", n, flush=True)

    one_step()
    for _ in sys.stdin:
        one_step()
    client.close()


if __name__ == "__main__":
    {"main": main_job, "live": live_job}[sys.argv[2]](sys.argv[1])
