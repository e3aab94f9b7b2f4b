# SPDX-License-Identifier: MIT
"""kill -9 of the daemon during 8-client ingest, then restart: every acknowledged record is stored
exactly once (issue 7, item 1). The clients replay from their oldest unacknowledged line with a
hello carrying stream and seq; the count is checked twice, by /api/v1/jobs events and by the
timeline export (each event has a distinct ts per rank: a duplicate or a loss changes the set).
"""
import json
import time

import pytest

from relutil import RUNS, SCALE
from replayclient import TS0, ReplayingRank

RANKS = 8


def _timeline_ts(daemon, job_id, rank):
    st, _, body = daemon.request(f"/api/v1/jobs/{job_id}/timeline?rank={rank}"
                                 f"&max_bytes=67108864")
    assert st == 200, body[:300]
    doc = json.loads(body)
    return [e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X"]


@pytest.mark.parametrize("run", range(RUNS))
def test_kill9_during_8_client_ingest_loses_and_duplicates_nothing(daemon, figures, run):
    per_rank = int(25000 * SCALE)
    job = f"kill9_{run}"
    ranks = [ReplayingRank(daemon.socket, job, r, RANKS, per_rank) for r in range(RANKS)]
    t0 = time.monotonic()
    for r in ranks:
        r.start()
    # Kill once a part is acknowledged and the rest is in flight (written, not yet acked).
    target = per_rank * RANKS // 4
    deadline = time.monotonic() + 60
    while sum(r.acked for r in ranks) < target:  # polled tightly: a fast machine acks 1 M/s
        assert time.monotonic() < deadline, f"{sum(r.acked for r in ranks)} acked after 60 s"
        time.sleep(0.002)
    acked_at_kill = sum(r.acked for r in ranks)
    ingest_s = time.monotonic() - t0
    daemon.kill9()
    assert acked_at_kill < per_rank * RANKS, "ingest finished before the kill; raise the scale"
    daemon.start()
    for r in ranks:
        r.join(timeout=180)
    for r in ranks:
        assert not r.is_alive(), f"rank {r.rank} still sending after 180 s (acked {r.acked})"
        assert r.failure is None, r.failure
        assert r.errors == [], r.errors[:3]
        assert r.acked == per_rank
    # A fast rank may finish before the kill; the run counts when some were cut mid-stream.
    cut = sum(1 for r in ranks if r.connects >= 2)
    assert cut >= 1, "no rank reconnected: the kill came too late"
    assert sum(r.replayed for r in ranks) > 0, "nothing was resent: nothing was in flight"

    j = daemon.job(job)
    assert j["events"] == per_rank * RANKS, f"stored {j['events']}, sent {per_rank * RANKS}"
    expected = [TS0 + i * 10 for i in range(per_rank)]
    for rank in range(RANKS):
        ts = _timeline_ts(daemon, j["id"], rank)
        assert len(ts) == per_rank, f"rank {rank}: {len(ts)} events in the export, {per_rank} sent"
        assert sorted(ts) == expected, f"rank {rank}: the exported set differs (loss + duplicate)"
    st = daemon.stats()
    replayed = sum(r.replayed for r in ranks)
    figures(run=run, events=per_rank * RANKS, acked_at_kill=acked_at_kill, ranks_cut=cut,
            ingest_events_per_s_before_kill=round(acked_at_kill / ingest_s),
            replayed_lines=replayed, duplicates_dropped=st["duplicates"],
            stored=j["events"], lost=per_rank * RANKS - j["events"])
    # Every replayed line the daemon had already stored was dropped, not stored again.
    assert st["duplicates"] <= replayed
