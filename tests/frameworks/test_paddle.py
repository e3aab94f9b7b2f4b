# SPDX-License-Identifier: MIT
"""Real PaddlePaddle (CPU) through stepscope.paddle, against a real stepscoped.

paddle_train.py trains a small CNN in a child process; these tests read what the daemon's API
shows and compare it with what the script knows independently: the batch sizes, the floor of
every phase (each phase sleeps a known time), and Paddle's own operator summary of the profiler
window (StatisticData, the numbers behind Profiler.summary()).
"""
from hookrun import check_job_meta, steps_of, train


def check_phase_floors(row, floors, interval=True):
    """A step whose points come from its phases: interval = dataloader, fp_bp = forward +
    backward, tail = optimizer and the rest; each at least the sleep put in that phase."""
    assert row["source"] == "phases", row
    if interval:
        assert row["interval_us"] >= floors["dataloader"], row
    assert row["fp_bp_us"] >= floors["forward"] + floors["backward"], row
    assert row["tail_us"] >= floors["optimizer"], row
    assert abs(row["interval_us"] + row["fp_bp_us"] + row["tail_us"] - row["total_us"]) < 0.01, row


def test_loop_steps_phases_samples_and_profiler_window(daemon, tmp):
    info = train(daemon, tmp, "paddle_train.py", "loop", "paddle-loop")
    check_job_meta(daemon, "paddle-loop", "paddle", info["version"])
    sizes, floors = info["sizes"], info["floors_us"]
    assert len(sizes) == 40 and sizes[-1] == 4

    rows = steps_of(daemon, "paddle-loop", len(sizes))
    assert [r["step"] for r in rows] == list(range(len(sizes)))
    assert [r["samples"] for r in rows] == sizes
    assert all(r["from"] == "record" and r["rank"] == 0 for r in rows)
    w0, w1 = info["window_steps"]
    for r in rows:
        if w0 <= r["step"] <= w1:
            # inside the profiler window the operators' spans give the points
            assert r["source"] == "trace", r
            assert r["interval_us"] >= floors["dataloader"], r
        else:
            check_phase_floors(r, floors)

    # the window: every event the handler sent is stored, and the operator table matches
    # Paddle's own numbers for the same run
    assert info["window_events"] > 100
    job = daemon.wait_for("the window's events", lambda: (
        daemon.job("paddle-loop") if daemon.job("paddle-loop")["events"] == info["window_events"]
        else None))
    assert job["steps"] == len(sizes)
    ops = daemon.get_json("/api/v1/jobs/paddle-loop/operators?limit=100000")["rows"]
    by_name = {r["name"]: r for r in ops}
    assert not [n for n in by_name if n.endswith(" us]")], "Paddle's duration suffix was kept"
    assert by_name["ProfileStep*"]["calls"] == w1 - w0 + 1
    paddle_ops = info["operators"]
    assert len(paddle_ops) >= 10 and "conv2d dygraph" in paddle_ops, sorted(paddle_ops)
    for name, p in paddle_ops.items():
        assert name in by_name, f"{name} (Paddle: {p}) missing from /operators"
        r = by_name[name]
        assert r["calls"] == p["calls"], (name, r, p)
        assert abs(r["total_us"] - p["cpu_ns"] / 1000) < 0.002, (name, r, p)
        assert abs(r["min_us"] - p["min_ns"] / 1000) < 0.002, (name, r, p)
        assert abs(r["max_us"] - p["max_ns"] / 1000) < 0.002, (name, r, p)

    # the DataLoader's own prefetch queue, sampled once per batch by loader()
    q = daemon.wait_for("queue samples", lambda: daemon.get_json(
        "/api/v1/jobs/paddle-loop-queue/queues")["queues"])
    assert [x["name"] for x in q] == ["dataloader"]
    assert q[0]["samples"] == info["queue_steps"] == 10
    assert q[0]["capacity"] >= 1 and 0 <= q[0]["max_size"] <= q[0]["capacity"]
    assert [p["step"] for p in q[0]["series"]] == list(range(10))


def test_model_fit_callback(daemon, tmp):
    info = train(daemon, tmp, "paddle_train.py", "hapi", "paddle-hapi")
    check_job_meta(daemon, "paddle-hapi", "paddle", info["version"])
    sizes, floors = info["sizes"], info["floors_us"]
    rows = steps_of(daemon, "paddle-hapi", len(sizes))
    assert [r["step"] for r in rows] == list(range(len(sizes)))  # numbered across both epochs
    assert [r["samples"] for r in rows] == sizes
    for r in rows:
        # hapi's DataLoader prefetches in a thread, so the reader's wait has no floor here
        check_phase_floors(r, floors, interval=False)
        assert r["interval_us"] >= 0
    assert daemon.job("paddle-hapi")["events"] == 0  # no profiler: step records only
