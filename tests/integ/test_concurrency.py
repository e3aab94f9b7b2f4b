# SPDX-License-Identifier: MIT
"""Many clients at once: totals exact per job and per rank."""
import threading

from ssclient import Client, x_event

CLIENTS = 50
EVENTS = 2000


def _find_rank_list(detail):
    """The per-rank list in a /api/v1/jobs/{id} answer: the first list of objects with "rank"."""
    stack = [detail]
    while stack:
        v = stack.pop()
        if isinstance(v, list) and v and all(isinstance(x, dict) and "rank" in x for x in v):
            return v
        if isinstance(v, dict):
            stack.extend(v.values())
    return None


def test_50_clients_2000_events_each(daemon):
    # Two jobs of 25 ranks each; rank r of job j sends EVENTS events on tid r.
    jobs = {"conc_a": 25, "conc_b": 25}
    failures = []
    barrier = threading.Barrier(CLIENTS)

    def client(job, rank, world):
        try:
            with Client(daemon.socket, timeout=120) as c:
                w = c.hello(job, rank=rank, world_size=world)
                assert w["next_seq"] == 0
                barrier.wait(timeout=60)
                c.send_lines((x_event(i, tid=rank, name=f"r{rank}_{i % 7}") for i in range(EVENTS)),
                             batch_bytes=16384)
                c.wait_ack(EVENTS, timeout=120)
                assert c.errors == [], c.errors[:3]
        except BaseException as e:  # reported by the main thread
            failures.append(f"{job} rank {rank}: {e!r}")

    threads = [threading.Thread(target=client, args=(job, r, world))
               for job, world in jobs.items() for r in range(world)]
    assert len(threads) == CLIENTS
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures, failures[:5]

    for name, world in jobs.items():
        job = daemon.job(name)
        assert job["events"] == world * EVENTS
        assert job["spans"] == world * EVENTS
        assert job["ranks"] == world
        assert job["world_size"] == world
        assert job["sessions"] == world
        detail = daemon.get_json(f"/api/v1/jobs/{job['id']}")
        ranks = _find_rank_list(detail)
        assert ranks is not None, f"no per-rank list in /api/v1/jobs/{job['id']}: {detail!r}"[:800]
        assert sorted(r["rank"] for r in ranks) == list(range(world))
        for r in ranks:
            assert r["events"] == EVENTS, r
    st = daemon.stats()
    assert st["records"]["trace"] == CLIENTS * EVENTS
    assert st["acknowledged"] == CLIENTS * EVENTS
    assert st["hellos"] == CLIENTS
    assert st["connections"]["accepted"] == CLIENTS
    daemon.wait_for("open connections back to 0", lambda: daemon.stats()["connections"]["open"] == 0)
