# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/cluster/flops and /cluster/memory (MindInsight's cluster FLOPs and
peak-memory heatmaps), against the real daemon after a real `stepscope import` of a two-rank
MindSpore cluster folder: data_parallel_run2's rank 1 files, the same files named rank 0 beside
them, and each rank's flops_summary and memory_usage_summary (tests/data/mindspore/
09_cluster_modes/format_samples: rank 0's flops_summary is MindSpore's format sample, the other
three are written from the reference's format, docs/ANALYSIS.md "Cluster FLOPs and memory").
The expected figures are derived here from the files, independently of the daemon."""
import csv
import io
import json
import shutil
from decimal import Decimal

import pytest

from test_cluster_step_trace import CLUSTER, wait_json
from test_import import assert_nothing_sent, run_import

SAMPLES = CLUSTER / "format_samples"
GB = 1 << 30


def two_ranks(tmp, summaries=True):
    d = tmp / "two_ranks"
    shutil.copytree(CLUSTER / "data_parallel_run2", d)
    shutil.copy(d / "step_trace_raw_1_detail_time.csv", d / "step_trace_raw_0_detail_time.csv")
    shutil.copy(d / "ascend_cluster_analyse_data-parallel_1_1_1.csv",
                d / "ascend_cluster_analyse_data-parallel_1_1_0.csv")
    if summaries:
        for f in SAMPLES.glob("*_summary_*.json"):
            shutil.copy(f, d / f.name)
    return d


def load(name):
    return json.loads((SAMPLES / name).read_text(), parse_float=Decimal)


def test_flops_and_memory_of_each_rank(daemon, tmp):
    p = run_import(daemon, two_ranks(tmp))
    assert p.returncode == 0, p.stderr
    # FLOPs: rank 0 has the totals, rank 1 the cube_/vec_ variant (the sums)
    f0, f1 = load("flops_summary_0.json"), load("flops_summary_1.json")
    flops = {0: f0["FLOPs"], 1: f1["cube_FLOPs"] + f1["vec_FLOPs"]}
    fps = {0: f0["FLOPS"], 1: f1["cube_FLOPS"] + f1["vec_FLOPS"]}
    top = max(flops.values())
    ours = wait_json(daemon, "/api/v1/jobs/two_ranks/cluster/flops")
    assert ours["missing_ranks"] == []
    assert [r["rank"] for r in ours["ranks"]] == [0, 1]
    for r in ours["ranks"]:
        k = r["rank"]
        assert Decimal(repr(r["flops_m"])) == flops[k]
        assert Decimal(repr(r["flops_per_second_g"])) == fps[k]
        assert r["flops_norm"] == pytest.approx(float(flops[k] / top), rel=1e-9)
    assert ours["ranks"][0]["flops_utilization"] == float(f0["FLOPS_Utilization"])
    assert ours["ranks"][1]["flops_utilization"] is None
    # memory: bytes = GB x 2^30, rounded; ratio = peak / capacity
    mem = wait_json(daemon, "/api/v1/jobs/two_ranks/cluster/memory")
    assert mem["missing_ranks"] == []
    for r in mem["ranks"]:
        m = load(f"memory_usage_summary_{r['rank']}.json")
        assert r["capacity_bytes"] == int((m["capacity"] * GB).to_integral_value())
        assert r["peak_bytes"] == int((m["peak_mem"] * GB).to_integral_value())
        assert r["static_bytes"] == int((m["static_mem"] * GB).to_integral_value())
        assert r["allocations"] == m["allocations"]
        assert r["deallocations"] == m["deallocations"]
        assert r["peak_ratio"] == pytest.approx(float(m["peak_mem"] / m["capacity"]), rel=1e-9)
    # CSV: the same rows
    st, _, body = daemon.request("/api/v1/jobs/two_ranks/cluster/memory?format=csv")
    assert st == 200
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [int(r["peak_bytes"]) for r in rows] == [r["peak_bytes"] for r in mem["ranks"]]
    st, _, body = daemon.request("/api/v1/jobs/two_ranks/cluster/flops?format=csv")
    assert st == 200
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert rows[1]["flops_utilization"] == ""
    assert float(rows[0]["flops_norm"]) == ours["ranks"][0]["flops_norm"]
    st, _, body = daemon.request("/api/v1/jobs/two_ranks/cluster/flops?format=xml")
    assert st == 400 and b"format" in body


def test_rank_without_files_is_missing_and_none_is_empty(daemon, tmp):
    d = two_ranks(tmp)
    (d / "flops_summary_1.json").unlink()
    assert run_import(daemon, d).returncode == 0
    ours = wait_json(daemon, "/api/v1/jobs/two_ranks/cluster/flops")
    assert [r["rank"] for r in ours["ranks"]] == [0] and ours["missing_ranks"] == [1]
    assert ours["ranks"][0]["flops_norm"] == 1
    d2 = two_ranks(tmp / "x", summaries=False)
    assert run_import(daemon, d2, "--job", "bare").returncode == 0
    wait_json(daemon, "/api/v1/jobs/bare/cluster/step-trace")
    for kind in ("flops", "memory"):  # an empty table, every rank missing (no console 404)
        assert wait_json(daemon, f"/api/v1/jobs/bare/cluster/{kind}") == \
            {"ranks": [], "missing_ranks": [0, 1]}
        st, _, body = daemon.request(f"/api/v1/jobs/bare/cluster/{kind}?format=csv")
        assert st == 200 and body.decode().count("\n") == 1, body
    st, _, _ = daemon.request("/api/v1/jobs/nope/cluster/flops")
    assert st == 404


@pytest.mark.parametrize("name,mutate,where,reason", [
    ("flops_summary_0.json", lambda t: t[:25], "line 1, column 26",
     "unterminated string"),
    ("flops_summary_0.json", lambda t: t.replace("5385.552", "-5385.552"), "line 1, column 32",
     "FLOPS: expected a number >= 0"),
    ("flops_summary_0.json", lambda t: t.replace('"FLOPS"', '"GFLOPS"'), "line 1, column 1",
     "need FLOPs and FLOPS"),
    ("memory_usage_summary_1.json", lambda t: t.replace("27.9", "\"27.9\""), "line 1, column ",
     "expected a number"),
    ("memory_usage_summary_1.json", lambda t: t.replace('"peak_mem": 27.9, ', ""),
     "line 1, column 1", "need capacity and peak_mem"),
    ("memory_usage_summary_0.json", lambda t: "[" + t + "]", "line 1, column 1",
     "expected a JSON object"),
], ids=["truncated", "negative", "no-flops-s", "string", "no-peak", "array"])
def test_bad_summary_is_reported_and_nothing_sent(daemon, tmp, name, mutate, where, reason):
    d = two_ranks(tmp)
    f = d / name
    f.write_text(mutate(f.read_text()))
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    assert f"{f}: {where}" in p.stderr and reason in p.stderr, p.stderr
    assert_nothing_sent(daemon)
