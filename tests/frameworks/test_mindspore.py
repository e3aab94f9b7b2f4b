# SPDX-License-Identifier: MIT
"""Real MindSpore (CPU) through stepscope.mindspore.StepscopeCallback, against a real stepscoped.

mindspore_train.py runs Model.train in a child process; the tests compare the daemon's /steps
with what the script knows: the batch sizes, and the floor of the phases it slowed down.
"""
from hookrun import check_job_meta, steps_of, train


def test_pynative_steps_phases_samples(daemon, tmp):
    info = train(daemon, tmp, "mindspore_train.py", "pynative", "ms-pynative")
    check_job_meta(daemon, "ms-pynative", "mindspore", info["version"])
    sizes, floors = info["sizes"], info["floors_us"]
    assert len(sizes) == 24 and sizes[11] == 4
    rows = steps_of(daemon, "ms-pynative", len(sizes))
    # cur_step_num - 1: numbered from 0 across both epochs
    assert [r["step"] for r in rows] == list(range(len(sizes)))
    assert [r["samples"] for r in rows] == sizes
    for r in rows:
        assert r["from"] == "record" and r["source"] == "phases", r
        # interval = the dataloader phase (the iterator's wait: the pipeline prefetches, so no
        # floor), fp_bp = forward (the loss network's hooks, slowed by FORWARD_S) + backward,
        # tail = the optimizer Cell's hooks (slowed by OPTIMIZER_S)
        assert r["interval_us"] > 0, r
        assert r["fp_bp_us"] >= floors["forward"], r
        assert r["tail_us"] >= floors["optimizer"], r
        assert abs(r["interval_us"] + r["fp_bp_us"] + r["tail_us"] - r["total_us"]) < 0.01, r
    # consecutive steps: each begins where the previous one ended (within an epoch)
    for a, b in zip(rows, rows[1:]):
        if b["step"] != 12:
            assert b["start_us"] == a["end_us"], (a, b)


def test_graph_mode_steps_and_samples(daemon, tmp):
    info = train(daemon, tmp, "mindspore_train.py", "graph", "ms-graph")
    check_job_meta(daemon, "ms-graph", "mindspore", info["version"])
    sizes = info["sizes"]
    rows = steps_of(daemon, "ms-graph", len(sizes))
    assert [r["step"] for r in rows] == list(range(len(sizes)))
    assert [r["samples"] for r in rows] == sizes
    for r in rows:
        # one compiled graph per step: dataloader and compute phases, no forward/backward split,
        # so the step trace has no points
        assert r["from"] == "record" and r["source"] == "none" and r["total_us"] > 0, r
