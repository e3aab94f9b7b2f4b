# SPDX-License-Identifier: MIT
"""The live memory budget (live_max_bytes, docs/ARCHITECTURE.md "Live memory") against a real
daemon on a real socket:

- an ended job past the budget leaves memory (stats live.evictions, live.bytes falls), stays
  listed, and every analysis route answers it byte for byte as before, from one reload
  (live.reloads), however many requests arrive at once;
- a job with a connected stream is never evicted, however small the budget;
- a new session of an evicted job reloads it first, so its analyses hold the old and new data;
- at start-up only the jobs that fit the budget are replayed; the rest load on first use.
"""
import functools
import json
import pathlib
import threading
import time
from decimal import Decimal

import tb_breakdown as tb
from ssclient import Client

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
ROUTES = ["steps?limit=100000", "step-trace?limit=100000", "operators?limit=100000",
          "kernels?limit=100000", "breakdown?limit=100000", "queues", "pipeline", "ranks",
          "helper", "steps?format=csv&limit=100000", "operators?rank=1&limit=100000",
          "summary/device?rank=0"]
T0 = 1_700_000_000_000_000  # us


def queue(name, step, size):
    return {"type": "queue", "name": name, "step": step, "size": size, "capacity": 8,
            "ts_us": T0 + step}


PIPELINE = {"type": "pipeline", "ops": [
    {"id": 0, "name": "DeviceQueueOp", "children": [1], "num_workers": 1},
    {"id": 1, "name": "BatchOp", "children": [], "num_workers": 4, "queue_usage": 0.3}]}


def start_order(line):
    e = json.loads(line, parse_float=Decimal)
    return (Decimal(e.get("ts", 0)), -Decimal(e.get("dur", 0)))


@functools.lru_cache(maxsize=1)
def trace_in_start_order():
    """gpu_5steps_rank0's lines sorted by start_order, once for the module."""
    return tuple(sorted(tb.lines(DATA / "gpu_5steps_rank0.json.gz"), key=start_order))


def records(rank):
    """A real Kineto trace (5 profiler steps, GPU kernels), plus queue samples, a pipeline, step
    records and host samples: every kind of record live keeps. The trace's events are sent in
    start order, as a streaming tracer emits them: live's self times of spans that arrive out of
    start order depend on where the flushes cut them (docs/ARCHITECTURE.md, "Live memory"), and
    a flush of the live stream cuts elsewhere than one of a replay."""
    recs = list(trace_in_start_order())
    recs += [queue("device_queue", s, (s * 3 + rank) % 9) for s in range(20)]
    recs += [queue("get_next", s, (s + rank) % 5) for s in range(20)]
    recs.append(PIPELINE)
    recs += [{"type": "host", "ts_us": T0 + s, "cpu_percent": 50.0 + s + rank,
              "sys_cpu_percent": 20.0 + s} for s in range(5)]
    if rank == 1:
        recs += [{"type": "step", "step": s, "begin_us": T0 + 1000 * s,
                  "end_us": T0 + 1000 * s + 900, "samples": 16} for s in range(30)]
    return recs


def feed(d, job, ranks=2):
    n = 0
    for rank in range(ranks):
        recs = records(rank)
        with Client(d.socket) as c:
            c.hello(job, rank=rank, world_size=ranks, stream="s")
            c.send_lines(recs)
            c.wait_ack(len(recs), timeout=60)
        n += len(recs)
    return n


def answers(d, job, ranks=2):
    base = "/api/v1/jobs/%d/" % d.job(job)["id"]
    out = {}
    for r in ROUTES:
        if "rank=1" in r and ranks < 2:
            continue
        status, _, body = d.request(base + r)
        assert status == 200, (r, status, body[:300])
        out[r] = body
    return out


def settled_answers(d, job, ranks=2):
    """The answers once two rounds a publish apart agree (live publishes every 100 ms). A live
    sender's last ack can come before the publish that shows its rank (docs/ARCHITECTURE.md):
    a rank not published yet (404) is not settled yet either."""
    last, err = None, None
    for _ in range(50):
        try:
            a = answers(d, job, ranks)
        except AssertionError as e:
            a, err = None, e
        if a is not None and a == last:
            return a
        last = a
        time.sleep(0.3)
    raise AssertionError("the answers did not settle (last error: %r)" % (err,))


def live(d):
    return d.stats()["live"]


def wait_evicted(d, job):
    """Waits until job is out of live memory: its eviction counted after the last reload."""
    def out():
        st = live(d)
        return st if st["evictions"] > st["reloads"] and st["bytes"] < 50_000 else None
    return d.wait_for(f"{job} evicted", out, timeout=30)


def test_evicted_job_answers_byte_identical_after_reload(daemons):
    d = daemons("ev", args=["--live-max-bytes", "0"])
    feed(d, "old")
    before = settled_answers(d, "old")
    assert b'"step":' in before["steps?limit=100000"] and b'"queues"' in before["queues"]
    held = live(d)["bytes"]
    assert held > 1_000_000, held  # two ranks of a real trace, honestly accounted
    # Unused for 2 s and no stream connected: evicted, and its memory released.
    st = wait_evicted(d, "old")
    assert st["bytes"] < held // 10
    reloads = st["reloads"]  # rank 1's hello may have reloaded it after rank 0 ended
    assert [j["name"] for j in d.jobs()] == ["old"]  # still listed, from the store
    # Sixteen concurrent requests: one reload, everyone answered.
    base = "/api/v1/jobs/%d/" % d.job("old")["id"]
    results = []

    def get():
        results.append(d.request(base + "steps?limit=100000"))

    ts = [threading.Thread(target=get) for _ in range(16)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert [s for s, _, _ in results] == [200] * 16
    assert all(b == before["steps?limit=100000"] for _, _, b in results)
    assert live(d)["reloads"] == reloads + 1
    after = answers(d, "old")
    for r in ROUTES:
        assert after[r] == before[r], r
    assert live(d)["reloads"] == reloads + 1
    # /metrics counts it.
    _, _, m = d.request("/metrics")
    assert b"stepscope_live_reloads_total %d\n" % (reloads + 1) in m
    assert b"stepscope_live_evictions_total " in m
    # Evicted again once unused; answered again the same.
    wait_evicted(d, "old")
    assert answers(d, "old") == before
    assert live(d)["reloads"] == reloads + 2


def test_streaming_job_is_never_evicted(daemons):
    d = daemons("st", args=["--live-max-bytes", "0"])
    feed(d, "ended", ranks=1)
    c = Client(d.socket)
    try:
        c.hello("streaming", stream="s")
        recs = records(0)
        c.send_lines(recs)
        c.wait_ack(len(recs), timeout=60)
        d.wait_for("the ended job evicted", lambda: live(d)["evictions"] == 1, timeout=30)
        time.sleep(3)  # well past the 2 s grace, with the budget at 0
        st = live(d)
        assert st["evictions"] == 1 and st["reloads"] == 0, st
        assert st["bytes"] > 1_000_000  # the streaming job is still held
        base = "/api/v1/jobs/%d/" % d.job("streaming")["id"]
        assert d.get_json(base + "operators")["total"] > 0
        assert live(d)["reloads"] == 0
    finally:
        c.close()
    # Once it ends it goes too.
    wait_evicted(d, "streaming")


def test_new_session_of_an_evicted_job_adds_to_it(daemons):
    d = daemons("rs", args=["--live-max-bytes", "0"])
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1,
           "ts": T0 + 100 * i, "dur": 10} for i in range(10)]
    with Client(d.socket) as c:
        c.hello("resumed", stream="a")
        c.send_lines(ev[:6])
        c.wait_ack(6)
    wait_evicted(d, "resumed")
    with Client(d.socket) as c:
        c.hello("resumed", stream="b")
        c.send_lines(ev[6:])
        c.wait_ack(4)
        assert live(d)["reloads"] == 1
        base = "/api/v1/jobs/%d/" % d.job("resumed")["id"]
        d.wait_for("10 calls", lambda: d.get_json(base + "operators")["rows"][0]["calls"] == 10)


def test_startup_replays_within_the_budget(daemons):
    d = daemons("up")
    feed(d, "a", ranks=1)
    feed(d, "b", ranks=1)
    want = settled_answers(d, "a", ranks=1)
    d.stop()
    d.extra_args = ["--live-max-bytes", "1"]
    d.start()
    # The most recent job fits (the first is always replayed), "a" waits for its first use.
    st = live(d)
    assert st["reloads"] == 0 and st["bytes"] > 0
    assert answers(d, "a", ranks=1) == want
    assert live(d)["reloads"] == 1
