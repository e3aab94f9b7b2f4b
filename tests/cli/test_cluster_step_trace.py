# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/cluster/step-trace: MindInsight's cluster step trace, against the real
daemon, after a real `stepscope import` of MindSpore cluster folders (tests/data/mindspore/
09_cluster_modes, with MindInsight's answers in expected.json) and for a multi-rank job sent over
the protocol (the live path: no MindSpore files, data-parallel from each rank's step trace)."""
import csv
import decimal
import io
import json
import shutil

import pytest

from test_import import DATA, Client, assert_nothing_sent, run_import

CLUSTER = DATA / "mindspore" / "09_cluster_modes"
EXPECTED = json.loads((CLUSTER / "expected.json").read_text())
RUNS = ["data_parallel_run2", "model_parallel_run3", "pipeline_parallel_run4"]
# MindInsight's lists by mode, in its order (reference/mindinsight.md section 1.7); the first
# figure of model- and pipeline-parallel is the step trace's iteration interval.
FIGS = {
    "data-parallel": ["interval_us", "fp_bp_us", "tail_us", "total_us"],
    "model-parallel": ["interval_us", "computation_us", "communication_alone_us"],
    "pipeline-parallel": ["interval_us", "computation_us", "communication_alone_us", "stage_us",
                          "receive_alone_us", "collective_communication_alone_us"],
}


def wait_json(daemon, path, timeout=10.0):
    import time
    deadline = time.monotonic() + timeout
    while True:
        st, _, body = daemon.request(path)
        if st == 200:
            return json.loads(body)
        if time.monotonic() > deadline:
            raise AssertionError(f"{path}: {st} {body[:300]}")
        time.sleep(0.05)


def ms4(us):
    """µs as written in the answer -> ms rounded half up to 4 decimals, exactly (23709.05 µs is
    23.7091 ms, where float rounding of 23.70905 would give 23.709)."""
    d = decimal.Decimal(repr(us)) / 1000
    return float(d.quantize(decimal.Decimal("0.0001"), rounding=decimal.ROUND_HALF_UP))


def mindinsight(run, step):
    key = f"{run} cluster-step-trace-summary step_id={step}" + (" (average)" if step == 0 else "")
    return EXPECTED[key]


@pytest.mark.parametrize("run", RUNS)
def test_every_figure_of_mindinsight(daemon, run):
    p = run_import(daemon, CLUSTER / run)
    assert p.returncode == 0, p.stderr
    for step in (1, 0):
        exp = mindinsight(run, step)
        arg = f"?step={step}" if step else ""
        ours = wait_json(daemon, f"/api/v1/jobs/{run}/cluster/step-trace{arg}")
        assert ours["mode"] == exp["parallel-mode"]
        assert ours["stages"] == exp["stage_num"]
        assert ours["step"] == (step if step else "average")
        # the average of an imported folder is MindSpore's own average rows, as MindInsight's
        assert ours["average_from"] == (None if step else "mindspore")
        assert len(ours["ranks"]) == exp["size"] == len(exp["info"])
        for row, want in zip(ours["ranks"], exp["info"]):
            assert row["rank"] == want["rank_id"]
            # within 1..stages: data_parallel_run2's rank 1 of rank_size 1 is in stage 1, not
            # MindInsight's 1 // 1 + 1 = 2 (docs/ANALYSIS.md "Cluster step trace")
            assert 1 <= row["stage"] <= ours["stages"]
            figs = want.get("step_trace_info") or want["step_bottleneck_info"]
            keys = FIGS[exp["parallel-mode"]]
            assert len(keys) == len(figs)
            # ours in µs (exact), MindInsight's in ms rounded half up to 4 decimals
            got = [ms4(row[k]) for k in keys]
            assert got == figs, (step, keys, got, figs)
        # The CSV form holds the same rows.
        st, _, body = daemon.request(f"/api/v1/jobs/{run}/cluster/step-trace"
                                     f"{arg or '?'}{'&' if arg else ''}format=csv")
        assert st == 200
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert [int(r["rank"]) for r in rows] == [r["rank"] for r in ours["ranks"]]
        for r, o in zip(rows, ours["ranks"]):
            assert [float(r[k]) for k in FIGS[ours["mode"]]] == [o[k] for k in FIGS[ours["mode"]]]


def test_stage_filter_and_bad_parameters(daemon):
    run = "pipeline_parallel_run4"
    assert run_import(daemon, CLUSTER / run).returncode == 0
    doc = wait_json(daemon, f"/api/v1/jobs/{run}/cluster/step-trace?stage=1")
    # rank 1 of 2 ranks in 1 stage: stage 1 // (2 // 1) + 1 = 1
    assert [(r["rank"], r["stage"]) for r in doc["ranks"]] == [(1, 1)]
    st, _, body = daemon.request(f"/api/v1/jobs/{run}/cluster/step-trace?stage=2")
    assert st == 404, body
    for bad in ("step=-1", "stage=x", "format=xml"):
        st, _, body = daemon.request(f"/api/v1/jobs/{run}/cluster/step-trace?{bad}")
        assert st == 400 and bad.split("=")[0].encode() in body, (bad, st, body)
    st, _, _ = daemon.request(f"/api/v1/jobs/{run}/cluster/step-trace?step=9")
    assert st == 404


def test_multi_rank_protocol_job_is_data_parallel(daemon):
    """A job with no MindSpore files (here two ranks over the protocol, as the Python collector
    sends them) answers data-parallel figures from each rank's own step trace."""
    job = "ddp2"
    t0 = 1_700_000_000_000_000
    phases = {0: [(100, 500, 300, 50), (120, 480, 310, 40)],
              1: [(400, 520, 290, 70), (380, 500, 300, 90)]}
    for rank, steps in phases.items():
        with Client(daemon.socket) as c:
            c.hello(job, rank=rank, world_size=2)
            lines, t = [], t0
            for i, (dl, fw, bw, tail) in enumerate(steps, start=1):
                total = dl + fw + bw + tail
                lines.append({"type": "step", "step": i, "begin_us": t, "end_us": t + total,
                              "phases": {"dataloader": dl, "forward": fw, "backward": bw}})
                t += total
            lines.append({"type": "bye"})
            c.send_lines(lines)
            c.read_until_eof()
    for step in (1, 2):
        doc = wait_json(daemon, f"/api/v1/jobs/{job}/cluster/step-trace?step={step}")
        assert doc["mode"] == "data-parallel" and doc["stages"] == 1 and doc["last_step"] == 2
        for row in doc["ranks"]:
            dl, fw, bw, tail = phases[row["rank"]][step - 1]
            assert (row["interval_us"], row["fp_bp_us"], row["tail_us"], row["total_us"]) == \
                (dl, fw + bw, tail, dl + fw + bw + tail)
        assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    avg = daemon.get_json(f"/api/v1/jobs/{job}/cluster/step-trace")
    assert avg["average_from"] == "steps"
    for row in avg["ranks"]:
        one = daemon.get_json(f"/api/v1/jobs/{job}/step-trace?rank={row['rank']}")
        assert (row["interval_us"], row["fp_bp_us"], row["tail_us"], row["total_us"]) == \
            (one["interval_us"], one["fp_bp_us"], one["tail_us"], one["total_us"])


def copy_run(tmp, run):
    dst = tmp / run
    shutil.copytree(CLUSTER / run, dst)
    return dst


@pytest.mark.parametrize("run,mutate,where,reason", [
    ("pipeline_parallel_run4", lambda t: t[:t.index("\n") + 20], "line 2, column ",
     "fields where the header has"),
    ("model_parallel_run3", lambda t: t.replace("651.9051", "651.9x51"), "line 2, column ",
     "computation: expected a number"),
    ("model_parallel_run3", lambda t: t.replace("communication_alone_time", "comm"),
     "line 1, column 1", "no communication_alone_time column"),
    ("model_parallel_run3", lambda t: t[:t.index("\n") + 1], "line ", "no rows"),
    ("data_parallel_run2", lambda t: t.replace("2366808", "-2366808"), "line 2, column ",
     "negative"),
], ids=["truncated", "bad-number", "header", "no-rows", "negative"])
def test_bad_cluster_csv_is_reported_and_nothing_sent(daemon, tmp, run, mutate, where, reason):
    d = copy_run(tmp, run)
    f = next(d.glob("ascend_cluster_analyse_*.csv"))
    f.write_text(mutate(f.read_text()))
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    assert f"{f}: {where}" in p.stderr and reason in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_bad_cluster_file_name_is_reported_and_nothing_sent(daemon, tmp):
    d = copy_run(tmp, "model_parallel_run3")
    f = next(d.glob("ascend_cluster_analyse_*.csv"))
    f.rename(d / "ascend_cluster_analyse_tensor-parallel_1_2_1.csv")
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    assert "ascend_cluster_analyse_tensor-parallel_1_2_1.csv: a cluster file's name" in p.stderr
    assert_nothing_sent(daemon)
