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
  feed.py SOCKET capture
                        the job "e2e-cap": two ranks that announce the capture capability
                        (docs/PROTOCOL.md section 6), CAP_BEFORE steps in the past; prints "ok",
                        then serves one capture request: both ranks report armed, prints
                        "ok armed" and holds that state until it reads a line on stdin (the
                        test has seen the page show it); rank 0 sends the requested number of
                        steps from now (with spans), reporting recording then done; rank 1
                        reports failed with CAP_REASON. Prints "ok STEP" (the first captured
                        step) and ends.
  feed.py SOCKET doomed the job "e2e-doomed" (the delete test): one rank, DOOMED_STEPS steps with
                        spans; prints "ok" once they are acknowledged and the client is gone.
  feed.py SOCKET capgone
                        the job "e2e-capgone": one rank that announces the capture capability
                        and sends a step; prints "ok"; when a capture request comes it closes
                        without arming it (a run that ends), prints "ok gone" and ends.
  feed.py SOCKET series the job "e2e-series" (a repeated capture): one rank that announces the
                        capture capability and sends step 0; prints "ok"; arms the series' window
                        0, prints "ok armed ID" and holds until it reads a line; then reports
                        recording at step SERIES_FIRST, sends steps SERIES_FIRST.. of the window
                        and reports done; arms the two later windows the daemon then places,
                        prints "ok armed ID1 START1 ID2 START2"; reads the daemon's
                        capture_cancel lines until both windows are cancelled, prints
                        "ok cancelled ID1 ID2" and ends.
  feed.py SOCKET polish the jobs of the polish test, then prints "ok" (both clients gone):
                        "e2e-torch", a hello naming framework torch, TORCH_STEPS steps of 215 ms
                        whose interval is 1.28 ms and reader cost 0.45 ms (the issue's
                        numbers), spans of the
                        TORCH_TYPES operator types in every step, and a "dataloader" queue that
                        never runs empty (what stepscope.torch.attach() sends); "e2e-stepless",
                        spans and no step at all.
  feed.py SOCKET tail   the job "e2e-tail" (the timeline's first step): one rank, TAIL_SPANS steps
                        with spans, then TAIL_EMPTY more step records without any (a profiler
                        window that ended before training did); prints "ok".
  feed.py SOCKET mixed  the job "e2e-mixed" (the step trace's two definitions): one rank,
                        MIXED_STEPS step records with phases; steps MIXED_WINDOW also have a
                        profiler window (a ProfilerStep#N span over the step and its operators),
                        so they take their points from the trace and the others from their
                        phases; prints "ok".
  feed.py SOCKET hosts  the job "e2e-hosts" (the Cluster page's Hosts card): tests/integ/test_clocks.py's
                        job, five ranks whose hellos name hostA, hostB (its clock 37 ms late) and
                        hostC (5 s late, too few steps to align); prints "ok".
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
FORMULAS = ['=HYPERLINK("http://x","y")', "@SUM(1)"]  # spreadsheet formulas (CSV injection)
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
        lines += [span(f, T0 + 9100 + k, 2) for k, f in enumerate(FORMULAS)]
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


CAP_BEFORE = 10
CAP_REASON = "RuntimeError: profiler already running <in this process>"


def capture_job(sock):
    from ssclient import Client

    def step_lines(step, begin, dur=20_000):
        return [span("aten::conv2d", begin + 2000, 9000), span("aten::relu", begin + 12_000, 3000),
                span("gemm_kernel", begin + 2500, 8000, cat="kernel", tid=7, pid=200),
                {"type": "step", "step": step, "begin_us": begin, "end_us": begin + dur}]

    def send(c, lines):
        c.send_lines(lines)
        c.wait_ack(c.welcome["next_seq"] + c.lines_sent - 1)

    def request(c):
        while True:
            msg = c.read_message(timeout=300)
            if msg is None:
                raise SystemExit("capture feeder: the daemon closed the connection")
            if "capture" in msg:
                return msg["capture"]

    def report(c, cid, state, reason=None):
        rec = {"type": "capture", "id": cid, "state": state}
        if reason:
            rec["reason"] = reason
        send(c, [rec])

    past = int(time.time() * 1e6) - 60_000_000
    ranks = []
    for rank in range(2):
        c = Client(sock)
        c.hello("e2e-cap", rank=rank, world_size=2, capabilities=["capture"])
        lines = []
        for i in range(CAP_BEFORE):
            lines += step_lines(i, past + i * 100_000)
        send(c, lines)
        ranks.append(c)
    print("ok", flush=True)
    reqs = [request(c) for c in ranks]
    cid, n = reqs[0]["id"], reqs[0]["steps"]
    for c in ranks:
        report(c, cid, "armed")
    print("ok armed", flush=True)
    if not sys.stdin.readline():
        raise SystemExit("capture feeder: stdin closed while armed")
    report(ranks[0], cid, "recording")
    begin = int(time.time() * 1e6)
    lines = []
    for k in range(n):
        lines += step_lines(CAP_BEFORE + k, begin + k * 30_000)
    send(ranks[0], lines)
    time.sleep(0.5)
    report(ranks[1], cid, "failed", CAP_REASON)
    report(ranks[0], cid, "done")
    print("ok", CAP_BEFORE, flush=True)
    for c in ranks:
        c.close()


DOOMED_STEPS = 4


def capgone_job(sock):
    from ssclient import Client

    c = Client(sock)
    c.hello("e2e-capgone", capabilities=["capture"])
    c.send_lines([{"type": "step", "step": 0, "begin_us": T0, "end_us": T0 + 1000}])
    c.wait_ack(c.welcome["next_seq"])
    print("ok", flush=True)
    while True:
        msg = c.read_message(timeout=300)
        if msg is None or "capture" in msg:
            break
    c.close()
    print("ok gone", flush=True)
SERIES_FIRST = 5


def series_job(sock):
    from ssclient import Client

    c = Client(sock)
    c.hello("e2e-series", capabilities=["capture"])

    def send(lines):
        c.send_lines(lines)
        c.wait_ack(c.welcome["next_seq"] + c.lines_sent - 1)

    taken = set()  # indexes of c.others handed out (wait_ack reads lines past acks too)

    def next_msg(key):
        while True:
            for i, msg in enumerate(c.others):
                if i not in taken and key in msg:
                    taken.add(i)
                    return msg[key]
            if c.read_message(timeout=300) is None:
                raise SystemExit("series feeder: the daemon closed the connection")

    send([{"type": "step", "step": 0, "begin_us": T0, "end_us": T0 + 1000}])
    print("ok", flush=True)
    w0 = next_msg("capture")
    send([{"type": "capture", "id": w0["id"], "state": "armed"}])
    print("ok armed", w0["id"], flush=True)
    if not sys.stdin.readline():
        raise SystemExit("series feeder: stdin closed while armed")
    send([{"type": "capture", "id": w0["id"], "state": "recording", "step": SERIES_FIRST}])
    now = int(time.time() * 1e6)
    lines = []
    for k in range(w0["steps"]):
        b = now + k * 30_000
        lines += [span("aten::conv2d", b + 2000, 9000),
                  {"type": "step", "step": SERIES_FIRST + k, "begin_us": b, "end_us": b + 20_000}]
    send(lines + [{"type": "capture", "id": w0["id"], "state": "done"}])
    later = [next_msg("capture"), next_msg("capture")]
    send([{"type": "capture", "id": w["id"], "state": "armed"} for w in later])
    print("ok armed", " ".join("%d %d" % (w["id"], w["start_step"]) for w in later), flush=True)
    cancelled = [next_msg("capture_cancel")["id"], next_msg("capture_cancel")["id"]]
    print("ok cancelled", *sorted(cancelled), flush=True)
    c.close()


TORCH_STEPS = 12
TORCH_TYPES = ["conv2d", "relu", "add", "mul", "mm", "sum", "copy_", "view", "cat",
               "max_pool2d", "batch_norm", "linear", "softmax", "addmm", "bmm", "div", "sub",
               "transpose", "reshape", "dropout", "layer_norm", "gelu", "embedding"]


def polish_jobs(sock):
    from ssclient import Client

    with Client(sock) as c:
        c.hello("e2e-torch", framework="torch", framework_version="1.13.1")
        lines = []
        for i in range(TORCH_STEPS):
            b = T0 + i * 215_000
            t = b + 1280
            for k, op in enumerate(TORCH_TYPES):
                lines.append(span("aten::" + op, t, 1000 + 300 * k))
                t += 1000 + 300 * k + 10
            lines += [{"type": "queue", "name": "dataloader", "size": 2, "capacity": 2, "step": i},
                      {"type": "step", "step": i, "begin_us": b, "end_us": b + 215_000,
                       "samples": 32, "phases": {"dataloader": 450, "forward": 90_000,
                                                 "backward": 120_000}}]
        c.send_lines(lines)
        c.wait_ack(len(lines))
    with Client(sock) as c:
        c.hello("e2e-stepless")
        lines = [span("Default/conv%d" % k, T0 + 100 * k, 50 + k) for k in range(40)]
        c.send_lines(lines)
        c.wait_ack(len(lines))
    print("ok", flush=True)


def doomed_job(sock):
    from ssclient import Client

    with Client(sock) as c:
        c.hello("e2e-doomed")
        lines = []
        for i in range(DOOMED_STEPS):
            b = T0 + i * 10_000
            lines += [span("aten::mm", b + 1000, 4000),
                      {"type": "step", "step": i, "begin_us": b, "end_us": b + 10_000}]
        c.send_lines(lines)
        c.wait_ack(len(lines))
    print("ok", flush=True)


TAIL_SPANS = 5
TAIL_EMPTY = 3


def tail_job(sock):
    from ssclient import Client

    with Client(sock) as c:
        c.hello("e2e-tail")
        lines = []
        for i in range(1, TAIL_SPANS + TAIL_EMPTY + 1):
            b = T0 + i * 10_000
            if i <= TAIL_SPANS:
                lines += [span("aten::mm", b + 1000, 4000), span("aten::relu", b + 6000, 2000)]
            lines.append({"type": "step", "step": i, "begin_us": b, "end_us": b + 10_000})
        c.send_lines(lines)
        c.wait_ack(len(lines))
    print("ok", flush=True)


MIXED_STEPS = 12
MIXED_WINDOW = range(5, 9)


def mixed_job(sock):
    from ssclient import Client

    with Client(sock) as c:
        c.hello("e2e-mixed", framework="mindspore")
        lines = []
        for i in range(1, MIXED_STEPS + 1):
            b = T0 + i * 20_000
            if i in MIXED_WINDOW:
                # Operators end well before the optimizer phase does: the trace's tail is longer.
                lines += [span("Default/GetNext", b + 100, 900),
                          span("Default/Conv2D", b + 1500, 6000),
                          span("Default/MatMul", b + 8000, 3000),
                          span(f"ProfilerStep#{i}", b, 20_000, cat="user_annotation")]
            lines.append({"type": "step", "step": i, "begin_us": b, "end_us": b + 20_000, "samples": 16,
                          "phases": {"dataloader": 1000, "forward": 6000, "backward": 9000,
                                     "optimizer": 4000}})
        c.send_lines(lines)
        c.wait_ack(len(lines))
    print("ok", flush=True)


def hosts_job(sock):
    import types

    from test_clocks import send_job

    send_job(types.SimpleNamespace(socket=sock), "e2e-hosts")
    print("ok", flush=True)


if __name__ == "__main__":
    {"main": main_job, "live": live_job, "capture": capture_job,
     "doomed": doomed_job, "polish": polish_jobs, "capgone": capgone_job,
     "tail": tail_job, "mixed": mixed_job, "hosts": hosts_job,
     "series": series_job}[sys.argv[2]](sys.argv[1])
