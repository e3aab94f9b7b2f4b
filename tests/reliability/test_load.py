# SPDX-License-Identifier: MIT
"""Load (issue 7, item 2): 1000 concurrent client connections and 10 jobs x 8 ranks streaming a
simulated training run with the daemon's RSS sampled. Slow HTTP clients (slowloris, stalled
readers) are in test_slow_http.py."""
import http.client
import json
import os
import threading
import time

import pytest

from relutil import SCALE, raise_fd_limit, rss_kib
from ssclient import Client, dumps, x_event

TS0 = 1700000000000000


def test_1000_concurrent_connections(daemons, figures):
    n = 1000
    assert raise_fd_limit(4 * n) >= 2 * n + 64, "cannot raise the fd limit for this test"
    # The daemon inherits the raised limit; max_connections is the documented cap.
    d = daemons("conn", args=["--max-connections", str(n)])
    clients = []
    t0 = time.monotonic()
    try:
        for i in range(n):
            c = Client(d.socket, timeout=60)
            clients.append(c)
            c.hello("many", rank=i, world_size=n, stream="s", read_welcome=False)
        for c in clients:
            c.read_welcome()
        connect_s = time.monotonic() - t0
        d.wait_for(f"{n} open connections",
                   lambda: d.stats()["connections"]["open"] == n, timeout=30)
        # One past the cap: answered with an error and closed.
        with Client(d.socket, timeout=10) as extra:
            extra.read_until_eof(timeout=10)
            assert extra.errors, "the connection past max_connections got no error"
            refused = extra.errors[0]
        # Every one of them can still send and be acknowledged, all at once.
        for i, c in enumerate(clients):
            c.send_lines([x_event(k, pid=i) for k in range(5)])
        t1 = time.monotonic()
        for c in clients:
            assert c.wait_ack(5) == 5
            assert c.errors == []
        ack_s = time.monotonic() - t1
        assert d.job("many")["events"] == 5 * n
        st, _, _ = d.request("/api/v1/health")
        assert st == 200
        figures(connections=n, connect_and_welcome_s=round(connect_s, 3),
                all_acked_s=round(ack_s, 3), refused=refused, rss_kib=rss_kib(d.proc.pid))
    finally:
        for c in clients:
            c.close()
    d.wait_for("connections closed", lambda: d.stats()["connections"]["open"] == 0, timeout=30)


def _rank_stream(sock_path, job, rank, steps, ops_per_step, step_us, stop, sent):
    """One rank of a simulated run: per step a ProfilerStep span and ops_per_step kernels, with
    simulated timestamps (step_us apart), sent as fast as the daemon acknowledges."""
    with Client(sock_path, timeout=120) as c:
        c.hello(job, rank=rank, world_size=8, stream=f"r{rank}")
        lines = 0
        for s in range(steps):
            if stop.is_set():
                break
            base = TS0 + s * step_us
            batch = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                      "pid": rank, "tid": 1, "ts": base, "dur": step_us - 10}]
            gap = (step_us - 20) / ops_per_step
            for k in range(ops_per_step):
                batch.append({"ph": "X", "cat": "kernel", "name": f"op_{k % 40}", "pid": rank,
                              "tid": 7, "ts": base + 5 + k * gap, "dur": gap * 0.8})
            c.send_lines(batch)
            lines += len(batch)
            if s % 20 == 19:
                c.wait_ack(lines)
        c.wait_ack(lines)
        sent[(job, rank)] = lines


def test_80_ranks_simulated_training_rss_bounded(daemon, figures):
    """10 jobs x 8 ranks, each a simulated run of `steps` steps of 1 s (simulated time), sent as
    fast as acknowledged; RSS sampled every 0.5 s of wall time. What bounds memory is the live
    aggregates' per-rank caps (daemon/live/live.h), not time: until a rank reaches them RSS grows
    with the spans it keeps (about 130 bytes per event measured, docs/RELIABILITY.md). The test
    holds that growth under 400 bytes per stored event and publishes the samples."""
    steps = int(900 * SCALE)        # CI: 15 simulated minutes per rank; long script: 1 h and more
    ops = 40
    stop = threading.Event()
    sent = {}
    threads = [threading.Thread(target=_rank_stream, daemon=True,
                                args=(daemon.socket, f"sim{j}", r, steps, ops, 1000000, stop, sent))
               for j in range(10) for r in range(8)]
    samples = []
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        samples.append((round(time.monotonic() - t0, 1), rss_kib(daemon.proc.pid)))
        time.sleep(0.5)
        if time.monotonic() - t0 > 900:
            stop.set()
            raise AssertionError("the simulated run did not finish in 900 s")
    wall = time.monotonic() - t0
    samples.append((round(wall, 1), rss_kib(daemon.proc.pid)))
    assert len(sent) == 80
    total = sum(sent.values())
    for j in range(10):
        assert daemon.job(f"sim{j}")["events"] == sum(v for (job, _), v in sent.items()
                                                      if job == f"sim{j}")
    half = len(samples) // 2
    first = max(kib for _, kib in samples[:half])
    second = max(kib for _, kib in samples[half:])
    idle = rss_kib(daemon.proc.pid)
    figures(streams=80, simulated_s_per_rank=steps, events=total, wall_s=round(wall, 1),
            events_per_s=round(total / wall), rss_first_half_max_kib=first,
            rss_second_half_max_kib=second, rss_after_kib=idle,
            rss_samples=samples[:: max(1, len(samples) // 40)])
    per_event = (max(kib for _, kib in samples) - samples[0][1]) * 1024 / total
    figures(rss_growth_bytes_per_event=round(per_event, 1))
    assert per_event < 400, f"RSS grew by {per_event:.0f} bytes per stored event"


@pytest.mark.skipif(SCALE < 4, reason="long variant (2 x 1.64 M spans, minutes): "
                                      "tests/bench/reliability.sh runs it")
def test_ranks_past_the_live_caps_rss_plateaus(daemon, figures):
    """2 ranks streaming 40 000 simulated steps each (1.64 M spans per rank, past
    LIVE_RANK_SPANS_MAX and LIVE_BD_SPANS_MAX): once the caps are reached RSS stops growing. The
    last quarter of the run may not add more than 10 % to the RSS of the three-quarter mark."""
    steps = 40000
    stop = threading.Event()
    sent = {}
    threads = [threading.Thread(target=_rank_stream, daemon=True,
                                args=(daemon.socket, "plateau", r, steps, 40, 1000000, stop, sent))
               for r in range(2)]
    for t in threads:
        t.start()
    samples = []  # (events stored, RSS KiB)
    t0 = time.monotonic()
    while any(t.is_alive() for t in threads):
        time.sleep(1.0)
        samples.append((daemon.job("plateau")["events"] if daemon.jobs() else 0,
                        rss_kib(daemon.proc.pid)))
        if time.monotonic() - t0 > 1200:
            stop.set()
            raise AssertionError("the run did not finish in 1200 s")
    total = sum(sent.values())
    samples.append((daemon.job("plateau")["events"], rss_kib(daemon.proc.pid)))
    assert samples[-1][0] == total
    at_3q = max(kib for ev, kib in samples if ev <= total * 3 // 4)
    last_q = max(kib for ev, kib in samples if ev > total * 3 // 4)
    figures(events=total, rss_at_three_quarters_kib=at_3q, rss_last_quarter_max_kib=last_q,
            rss_samples=samples[:: max(1, len(samples) // 30)])
    assert last_q <= at_3q * 11 // 10, f"RSS still growing past the caps: {at_3q} -> {last_q} KiB"


def _ingest_round(daemon, prefix, steps):
    stop = threading.Event()
    sent = {}
    threads = [threading.Thread(target=_rank_stream, daemon=True,
                                args=(daemon.socket, f"{prefix}{j}", r, steps, 40, 1000000, stop,
                                      sent))
               for j in range(10) for r in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert len(sent) == 80, "a rank did not finish"
    return sum(sent.values())


def test_deleting_ended_jobs_bounds_rss_over_many_jobs(daemon, figures):
    """The live state of an ended job stays in memory until the job is deleted (DELETE
    /api/v1/jobs/{job}). Ingest 10 jobs x 8 ranks, delete them, ingest as much again: the second
    round reuses the memory the first freed, so it adds less than half of what the first added."""
    steps = int(400 * SCALE)
    rss0 = rss_kib(daemon.proc.pid)
    events = _ingest_round(daemon, "first", steps)
    rss1 = rss_kib(daemon.proc.pid)
    for j in range(10):
        conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=60)
        try:
            conn.request("DELETE", f"/api/v1/jobs/first{j}", headers={"X-Requested-With": "t"})
            r = conn.getresponse()
            r.read()
            assert r.status == 204, (j, r.status)
        finally:
            conn.close()
    rss_deleted = rss_kib(daemon.proc.pid)
    assert _ingest_round(daemon, "second", steps) == events
    rss2 = rss_kib(daemon.proc.pid)
    figures(events_per_round=events, rss_start_kib=rss0, rss_after_first_kib=rss1,
            rss_after_delete_kib=rss_deleted, rss_after_second_kib=rss2)
    assert rss1 - rss0 > 0
    assert rss2 - rss_deleted < (rss1 - rss0) // 2, (
        f"the second round added {rss2 - rss_deleted} KiB, the first {rss1 - rss0} KiB")


def _sanitized(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def test_live_budget_bounds_rss_over_many_jobs(daemons, figures):
    """With a live memory budget (live_max_bytes, 32 MiB here), 10 jobs x 8 ranks streaming one
    job after another (BUDGET_JOBS: more): ended jobs are evicted, so the daemon's RSS no longer
    grows with the number of jobs. Without the budget each job adds its whole live state (the
    first job's growth, about 15 MiB, is the reference). Asserted: live.bytes ends under the
    budget; RSS stays under the start RSS plus the budget plus 64 MiB of fixed overhead (SQLite's
    page caches, the store's batches, the allocator's slack); the last five jobs add less than
    two jobs' worth (without the budget: five); an evicted job answers, from a reload."""
    mib = int(os.environ.get("BUDGET_MIB", "32"))  # 0: no budget (tests/bench/live_budget.sh)
    budget = mib << 20 if mib else 1 << 50
    steps = int(300 * SCALE)
    d = daemons("budget", args=["--live-max-bytes", str(budget)])
    rss0 = rss_kib(d.proc.pid)
    per_job, live_bytes, samples = [], [], []
    t0 = time.monotonic()
    for j in range(int(os.environ.get("BUDGET_JOBS", "10"))):
        stop = threading.Event()
        sent = {}
        threads = [threading.Thread(target=_rank_stream, daemon=True,
                                    args=(d.socket, f"b{j}", r, steps, 40, 1000000, stop, sent))
                   for r in range(8)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            samples.append((round(time.monotonic() - t0, 1), j, rss_kib(d.proc.pid)))
            time.sleep(0.5)
        for t in threads:
            t.join(timeout=600)
        assert len(sent) == 8, "a rank did not finish"
        per_job.append(rss_kib(d.proc.pid))
        live_bytes.append(d.stats()["live"]["bytes"])
    if not mib:
        figures(budget_mib=0, steps_per_rank=steps, rss_start_kib=rss0, rss_after_job_kib=per_job,
                live_bytes_after_job=live_bytes)
        return
    # Once every job has ended and the grace has passed, the budget holds.
    st = d.wait_for("live under budget", lambda: (s := d.stats()["live"])["bytes"] <= budget and s,
                    timeout=30)
    assert st["evictions"] >= 6, st
    last = max(kib for _, j, kib in samples if j >= 5)
    last = max([last] + per_job[5:])
    figures(budget_mib=mib, steps_per_rank=steps, rss_start_kib=rss0,
            rss_after_job_kib=per_job, live_bytes_after_job=live_bytes,
            rss_max_last5_kib=last, evictions=st["evictions"], reloads=st["reloads"],
            rss_samples=samples[:: max(1, len(samples) // 40)])
    if not _sanitized(d.proc.pid):  # ASan's quarantine holds what eviction frees
        assert last <= rss0 + (budget >> 10) + 64 * 1024, (rss0, last)
        assert last - per_job[4] < 2 * (per_job[0] - rss0), (rss0, per_job, last)
    # An evicted job still answers, from a reload.
    doc = d.get_json("/api/v1/jobs/%d/steps?rank=3" % d.job("b0")["id"])
    assert doc["total"] == steps
    assert d.stats()["live"]["reloads"] == st["reloads"] + 1
