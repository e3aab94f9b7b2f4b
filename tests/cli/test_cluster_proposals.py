# SPDX-License-Identifier: MIT
"""MindInsight's cluster proposals (reference/mindinsight.md section 4.3) in /helper, against the
real daemon after a real `stepscope import` of MindSpore cluster folders built from
tests/data/mindspore/09_cluster_modes (MindInsight's cluster fixtures, whose expected.json holds
no proposals) and its format_samples. The expected figures are derived here from the files:
the average rows (step_trace_raw's 0 row, in 10 ns counts; the cluster file's last row, in ms)
and the flops summaries, with MindInsight's thresholds and rounding (values 4 dp, percents 2)."""
import json
import shutil

from test_cluster_flops_memory import SAMPLES
from test_cluster_step_trace import CLUSTER, wait_json
from test_import import run_import


def build(tmp, run, name, layout, ranks=(0, 1), flops=True, intervals=None):
    """run's rank-1 files as ranks `ranks`, the cluster file named <mode>_<layout>_<r>; with
    intervals, rank r's step_trace average row gets iteration_interval intervals[r] (counts)."""
    d = tmp / name
    d.mkdir()
    src = CLUSTER / run
    st = (src / "step_trace_raw_1_detail_time.csv").read_text()
    cl = next(src.glob("ascend_cluster_analyse_*.csv"))
    mode = cl.name.split("_")[3]
    for r in ranks:
        text = st
        if intervals:
            lines = text.splitlines()
            f = lines[-1].split(",")
            f[6] = str(intervals[r])
            lines[-1] = ",".join(f)
            text = "\n".join(lines) + "\n"
        (d / f"step_trace_raw_{r}_detail_time.csv").write_text(text)
        shutil.copy(cl, d / f"ascend_cluster_analyse_{mode}_{layout}_{r}.csv")
        if flops:
            shutil.copy(SAMPLES / f"flops_summary_{r}.json", d / f"flops_summary_{r}.json")
    return d


def helper(daemon, job):
    wait_json(daemon, f"/api/v1/jobs/{job}/cluster/step-trace")
    return {s["code"]: s for s in wait_json(daemon, f"/api/v1/jobs/{job}/helper")["suggestions"]}


def ev(s, name):
    return next(e["value"] for e in s["evidence"] if e["name"] == name)


def flops_s():
    f0 = json.loads((SAMPLES / "flops_summary_0.json").read_text())
    f1 = json.loads((SAMPLES / "flops_summary_1.json").read_text())
    return {0: f0["FLOPS"], 1: f1["cube_FLOPS"] + f1["vec_FLOPS"]}, \
        {0: f0["FLOPs"], 1: f1["cube_FLOPs"] + f1["vec_FLOPs"]}


def test_data_parallel_step_interval_and_flops(daemon, tmp):
    iv = {0: 2000000, 1: 1243211}  # rank 0's average interval 20 ms, rank 1's MindSpore's
    d = build(tmp, "data_parallel_run2", "dp", "1_2", intervals=iv)
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "dp")
    avg = sum(iv.values()) / 2
    s = got["cluster_step_interval"]
    assert s["subject"] == 0 and s["view"] == "cluster"
    assert ev(s, "interval_ms") == round(iv[0] / 1e5, 4)
    assert ev(s, "percent") == round((iv[0] / avg - 1) * 100, 2)
    assert f"{round((iv[0] / avg - 1) * 100, 2):.2f}% higher" in s["message"]
    fs, _ = flops_s()
    favg = sum(fs.values()) / 2
    s = got["cluster_flops_per_second"]
    assert s["subject"] == 1
    assert ev(s, "flops_per_second_g") == round(fs[1], 4)
    assert ev(s, "percent") == round((favg - fs[1]) / favg * 100, 2)
    # the average rows' fp_and_bp and tail are 0 (MindSpore's): no data-parallel rate
    assert "cluster_data_parallel_communication_rate" not in got
    assert "rank_step_interval_high" not in got  # replaced on a cluster job
    assert "cluster_proposal_skipped" not in got


def cluster_avg(run):
    cl = next((CLUSTER / run).glob("ascend_cluster_analyse_*.csv")).read_text().splitlines()
    return [float(x) for x in cl[-1].split(",")]


def test_model_parallel_rate(daemon, tmp):
    d = build(tmp, "model_parallel_run3", "mp", "1_2")
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "mp")
    comp, comm = cluster_avg("model_parallel_run3")
    rate = 2 * comm / (2 * comp + 2 * comm)
    s = got["cluster_model_parallel_communication_rate"]
    assert ev(s, "rate_pct") == round(rate * 100, 2)
    assert s["evidence"][0]["threshold"] == 10


def test_pipeline_parallel_rates_and_stage_flops(daemon, tmp):
    d = build(tmp, "pipeline_parallel_run4", "pp", "2_2")  # rank 0 stage 1, rank 1 stage 2
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "pp")
    comp, comm, _, recv, coll = cluster_avg("pipeline_parallel_run4")
    s = got["cluster_pipeline_between_stage_communication_rate"]
    assert ev(s, "rate_pct") == round(recv / (comp + comm) * 100, 2)
    s = got["cluster_pipeline_within_stage_communication_rate"]
    assert ev(s, "rate_pct") == round(coll / (comp + comm) * 100, 2) and ev(s, "stage") == 1
    _, fl = flops_s()  # one rank a stage: each stage's average is its rank's FLOPs
    avg = (fl[0] + fl[1]) / 2
    s = got["cluster_pipeline_stage_flops"]
    assert ev(s, "stage") == 1 and ev(s, "flops_m") == round(fl[0], 4)
    assert ev(s, "percent") == round((fl[0] / avg - 1) * 100, 2)


def test_missing_files_skip_with_reason(daemon, tmp):
    d = build(tmp, "pipeline_parallel_run4", "pq", "2_2")
    (d / "flops_summary_1.json").unlink()
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "pq")
    assert "cluster_flops_per_second" not in got and "cluster_pipeline_stage_flops" not in got
    s = got["cluster_proposal_skipped"]
    assert s["message"].startswith("Please collect all device files")
    assert "rank(s) 1 have no flops_summary" in s["message"]
    # the rates need no FLOPs: still there
    assert "cluster_pipeline_between_stage_communication_rate" in got
