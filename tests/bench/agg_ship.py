#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What shipping the per-step aggregates (ClickHouse's step_ranks) costs a node while a big job
runs, side by side for two builds (issue 16, item 1; docs/PERFORMANCE.md "Per-step aggregates").

Since 4f67735 a round sends every step row whose bytes changed since it was last sent (a sum per
step per rank), where before it sent a rank's last 3 steps each round and took the others as
settled (which lost the growth of an early step: the CI failure that commit fixed). This bench
measures what the comparison costs.

Per build, alternating which goes first each round:
1. A fresh stepscope database in one Debian clickhouse-server (tests/cluster/chserver.py) and a
   fresh node (stepscoped --cluster-url, its own data dir).
2. RANKS ranks of job "agg", each a connection sending STEPS steps: a ProfilerStep#N span with
   two operators and a kernel inside, and a step record; then until the node shipped them all
   (step_ranks holds RANKS x STEPS rows, FINAL).
3. For SECONDS, every 0.25 s one more step per rank (the job keeps changing, so every round
   looks at every row of every rank), then until ClickHouse has those too.
4. Measured over 3: the node's CPU seconds (/proc/PID/stat), its cluster.aggregate_rows and
   cluster.bytes increments, and the wall time from the last step sent until ClickHouse held it.

Environment: BUILD_DIR (build-rel), BEFORE_BUILD_DIR (the build to compare with, required),
RANKS (16), STEPS (5000), SECONDS (20), REPEAT (2). Last line:
    agg_ship: after cpu_s=<C> rows=<R> bytes=<B> catchup_s=<T> before cpu_s=... ratio_cpu=<after/before>
(medians over the rounds).
"""
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import threading
import time

from ship import REPO, cpu_s, start_daemon, stats  # tests/bench/ship.py

sys.path.insert(0, str(REPO / "tests" / "integ"))
from chserver import ClickHouse  # noqa: E402
from ssclient import Client  # noqa: E402

AFTER = pathlib.Path(os.environ.get("BUILD_DIR", "build-rel"))
BEFORE = os.environ.get("BEFORE_BUILD_DIR")
RANKS = int(os.environ.get("RANKS", "16"))
STEPS = int(os.environ.get("STEPS", "5000"))
SECONDS = float(os.environ.get("SECONDS", "20"))
REPEAT = int(os.environ.get("REPEAT", "2"))
T0 = 1.7e15


def step_lines(rank, step):
    """One step of a rank: ProfilerStep#N (1000 µs) holding two operators and a kernel, and its
    step record."""
    t = T0 + step * 1000.0
    pid = tid = rank
    return [
        {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid,
         "tid": tid, "ts": t, "dur": 990.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": pid, "tid": tid,
         "ts": t + 10.0, "dur": 400.0 + rank},
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": pid, "tid": tid,
         "ts": t + 500.0, "dur": 100.0},
        {"ph": "X", "cat": "kernel", "name": "implicit_gemm", "pid": 100 + rank, "tid": 7,
         "ts": t + 30.0, "dur": 300.0},
        {"type": "step", "step": step, "begin_us": t, "end_us": t + 990.0, "samples": 32},
    ]


def rows_in_ch(ch):
    return int(ch.scalar("SELECT count() FROM stepscope.step_ranks FINAL WHERE job = 'agg'"))


def wait_rows(ch, want, timeout=600):
    t = time.monotonic()
    while rows_in_ch(ch) < want:
        assert time.monotonic() - t < timeout, (rows_in_ch(ch), want)
        time.sleep(0.1)


def one(ch, root, name, build):
    ch.reset()
    tmp = root / name
    tmp.mkdir()
    p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "bench"], build)
    try:
        clients = [Client(str(tmp / "d.sock")) for _ in range(RANKS)]
        for r, c in enumerate(clients):
            c.hello("agg", rank=r, world_size=RANKS)
        sent = [0] * RANKS

        def send(r, first, n):
            lines = [ln for s in range(first, first + n) for ln in step_lines(r, s)]
            clients[r].send_lines(lines)
            sent[r] += len(lines)

        threads = [threading.Thread(target=send, args=(r, 0, STEPS)) for r in range(RANKS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r, c in enumerate(clients):
            c.wait_ack(sent[r], timeout=600)
        wait_rows(ch, RANKS * STEPS)
        s0, cpu0 = stats(url)["cluster"], cpu_s(p.pid)
        step, t_end = STEPS, time.monotonic() + SECONDS
        while time.monotonic() < t_end:
            for r in range(RANKS):
                send(r, step, 1)
            step += 1
            time.sleep(0.25)
        for r, c in enumerate(clients):
            c.wait_ack(sent[r], timeout=600)
        t_last = time.monotonic()
        wait_rows(ch, RANKS * step)
        catchup = time.monotonic() - t_last
        s1, cpu1 = stats(url)["cluster"], cpu_s(p.pid)
        for c in clients:
            c.close()
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(60)
    got = {"cpu_s": cpu1 - cpu0, "rows": s1["aggregate_rows"] - s0["aggregate_rows"],
           "bytes": s1["bytes"] - s0["bytes"], "catchup_s": catchup, "steps_added": step - STEPS}
    print(f"  {name}: {got}", file=sys.stderr)
    return got


def main():
    if not BEFORE:
        sys.exit("agg_ship.py: set BEFORE_BUILD_DIR to the build to compare with")
    sides = {"after": AFTER if AFTER.is_absolute() else REPO / AFTER,
             "before": pathlib.Path(BEFORE)}
    with tempfile.TemporaryDirectory(prefix="ssagg.") as d:
        root = pathlib.Path(d)
        ch = ClickHouse(root / "clickhouse")
        ch.start()
        try:
            print(f"agg_ship.py: {RANKS} ranks x {STEPS} steps, then {SECONDS:.0f} s of one step "
                  f"per rank every 0.25 s; {REPEAT} rounds, {os.cpu_count()} CPUs", file=sys.stderr)
            res = {k: [] for k in sides}
            for k in range(REPEAT):
                order = list(sides) if k % 2 == 0 else list(sides)[::-1]
                for name in order:
                    res[name].append(one(ch, root, f"{name}{k}", sides[name]))
        finally:
            ch.stop()
    med = {n: {f: statistics.median(r[f] for r in rs) for f in rs[0]} for n, rs in res.items()}
    out = " ".join(f"{n} " + " ".join(f"{f}={v:.3f}" if isinstance(v, float) else f"{f}={v}"
                                      for f, v in m.items()) for n, m in med.items())
    ratio = med["after"]["cpu_s"] / med["before"]["cpu_s"] if med["before"]["cpu_s"] else float("nan")
    print(f"agg_ship: {out} ratio_cpu={ratio:.2f}")


if __name__ == "__main__":
    main()
