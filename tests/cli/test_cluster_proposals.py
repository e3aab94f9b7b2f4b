# SPDX-License-Identifier: MIT
"""MindInsight's cluster proposals (reference/mindinsight.md section 4.3) in /helper, against the
real daemon after a real `stepscope import` of MindSpore cluster folders built from
tests/data/mindspore/09_cluster_modes (MindInsight's cluster fixtures, whose expected.json holds
no proposals), its format_samples and hccl_sample (MindSpore's hccl_raw_0.csv). The expected
figures are derived here from the files: the average rows (step_trace_raw's 0 row, in 10 ns
counts; the cluster file's last row, in ms; hccl_raw's "-" row), the flops summaries, with
MindInsight's thresholds and rounding (values 4 dp, percents 2)."""
import csv
import io
import json
import shutil

from test_cluster_communication import HCCL, exact
from test_cluster_flops_memory import SAMPLES
from test_cluster_step_trace import CLUSTER, wait_json
from test_import import run_import


def build(tmp, run, name, layout, ranks=(0, 1), flops=True, intervals=None, hccl=None):
    """run's rank-1 files as ranks `ranks`, the cluster file named <mode>_<layout>_<r>; with
    intervals, rank r's step_trace average row gets iteration_interval intervals[r] (counts);
    each rank's hccl_raw is hccl[r] (text; absent: none), by default MindSpore's sample."""
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
        text = HCCL.read_text() if hccl is None else hccl.get(r)
        if text is not None:
            (d / f"hccl_raw_{r}.csv").write_text(text)
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


def hccl_rows(text):
    return list(csv.reader(io.StringIO(text)))


def with_average_of_step(text, step):
    """hccl_raw text whose average row ("-") carries step's link_info: a real row of the file."""
    rows = hccl_rows(text)
    src = next(r for r in rows if r[0] == str(step))
    rows[-1][3] = src[3]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def mindinsight_cluster_link(texts):
    """MindInsight's _rank_link_analyze (parallel_proposer.py) over the ranks' hccl_raw average
    rows, ranks in order, each file's links in its order: per link type, a rank's own link
    left out, the link whose bandwidth is below the type's mean by the largest share > 0.2."""
    links = []
    for r in sorted(texts):
        avg = hccl_rows(texts[r])[-1]
        assert avg[0] == "-"
        info = json.loads(avg[3], parse_float=str)
        links += [(sd, ty, v[2]) for sd, types in info.items() for ty, v in types.items()]
    out = []
    for ty in dict.fromkeys(t for sd, t, _ in links if sd.split("-")[0] != sd.split("-")[1]):
        mine = [(sd, bw) for sd, t, bw in links if t == ty and sd.split("-")[0] != sd.split("-")[1]]
        avg = sum(float(bw) for _, bw in mine) / len(mine)
        best = None
        for sd, bw in mine:
            p = (avg - float(bw)) / avg
            if p > 0.2 and (best is None or p > best[2]):
                best = (sd, bw, p)
        if best:
            src, dst = (int(x) for x in best[0].split("-"))
            out.append({"src_rank": src, "des_rank": dst, "link_type": ty, "bw": best[1],
                        "percent": round(best[2] * 100, 2)})
    return out


def test_cluster_link_the_slowest_link(daemon, tmp):
    """Rank 0: MindSpore's hccl_raw_0.csv; rank 1: the same file whose average row carries its
    step 6 (a short last step, its 1-0 SDMA link at 38.1 GB/s against 188.0). Rank 1's own 0-0
    link (21.0 GB/s) is slower still and is left out, as MindInsight leaves it out."""
    texts = {0: HCCL.read_text(), 1: with_average_of_step(HCCL.read_text(), 6)}
    d = build(tmp, "data_parallel_run2", "cl", "1_2", hccl=texts)
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "cl")
    exp = mindinsight_cluster_link(texts)
    assert [(e["src_rank"], e["des_rank"], e["link_type"]) for e in exp] == [(1, 0, "SDMA")]
    e = exp[0]
    s = got["cluster_link"]
    assert s["view"] == "cluster-links" and s["subject"] is None
    assert (ev(s, "src_rank"), ev(s, "dst_rank")) == (1, 0)
    # MindInsight's val is the file's KB/s; ours the link table's bytes/s (KB/s x 1000), to the
    # 10 significant digits of every evidence value (the message has it whole)
    assert ev(s, "band_width_bytes_per_s") == float(f"{exact(e['bw'], 3):.10g}")
    assert ev(s, "percent") == e["percent"]
    assert f"SDMA link 1-0 is {exact(e['bw'], 3)} B/s, which is {e['percent']:.2f}% lower" \
        in s["message"]
    # the figure is the link table's own row
    links = wait_json(daemon, "/api/v1/jobs/cl/cluster/links?src_rank=1&dst_rank=0&rank=1")
    assert exact(e["bw"], 3) in [l["band_width_bytes_per_s"] for l in links["links"]]
    assert "cluster_proposal_skipped" not in got


def test_cluster_link_silent_and_skipped(daemon, tmp):
    # both ranks with MindSpore's sample: one 1-0 SDMA bandwidth, nothing below the mean
    d = build(tmp, "data_parallel_run2", "cm", "1_2")
    assert run_import(daemon, d).returncode == 0
    assert mindinsight_cluster_link({0: HCCL.read_text(), 1: HCCL.read_text()}) == []
    got = helper(daemon, "cm")
    assert "cluster_link" not in got and "cluster_proposal_skipped" not in got
    # rank 1 without hccl_raw: not analysed, the reason said (MindInsight's warning)
    d = build(tmp, "data_parallel_run2", "cn", "1_2", hccl={0: HCCL.read_text()})
    assert run_import(daemon, d).returncode == 0
    got = helper(daemon, "cn")
    assert "cluster_link" not in got
    assert "cluster_link is not analysed, rank(s) 1 have no hccl_raw" in \
        got["cluster_proposal_skipped"]["message"]
