# SPDX-License-Identifier: MIT
"""/kernels/details and /comm-ops against torch-tb-profiler 0.4.3's own answers (its kernel
view and its distributed view's Communication Operations Stats), HTA 0.5.0 live, and torch's
own key_averages().

The plugin is no test dependency: tests/analyse/tb_profiler_kernels.py ran it on each trace and
its answer is committed beside the trace (*.tb_kernels.json, gpu_2steps_sampled.tb_comm_ops.json;
tests/data/README.md). Each trace is imported with `stepscope import` into the real daemon.

tb-profiler rounds its table to whole microseconds (blocks per SM and occupancy to 2 decimals);
stepscope answers in µs to the nanosecond, so each figure is compared after the plugin's own
rounding (Python's round(), half to even), to within the one unit a float sum may straddle.
"""
import collections
import gzip
import json
import logging
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import build_dir, clean_env

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = {  # job: (its files, the plugin's answer)
    "gpu_5steps": (["gpu_5steps_rank0.json.gz"], "gpu_5steps_rank0.tb_kernels.json"),
    "h200_a": (["cuda_views_h200/trace_a.json.gz"], "cuda_views_h200/trace_a.tb_kernels.json"),
    "gpu_2steps_sampled": (["gpu_2steps_sampled_rank0.json.gz", "gpu_2steps_sampled_rank1.json.gz"],
                           None),
}


def imported(d, tmp, name):
    files = [str(DATA / f) for f in TRACES[name][0]]
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", name] + files,
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return d.job(name)["id"]


def near(got, want, unit=1):
    """got (unrounded) equals want (the plugin's rounded figure) to within one unit."""
    return abs(got - want) <= unit + 1e-9


def cases():
    for name, (files, answer) in TRACES.items():
        if answer:
            yield name, 0, answer
    yield "gpu_2steps_sampled", 0, "gpu_2steps_sampled_rank0.tb_kernels.json"
    yield "gpu_2steps_sampled", 1, "gpu_2steps_sampled_rank1.tb_kernels.json"


@pytest.mark.parametrize("name,rank,answer", list(cases()))
def test_kernel_table_equals_tb_profiler(daemon, tmp, name, rank, answer):
    ref = json.loads((DATA / answer).read_text())
    job = imported(daemon, tmp, name)
    doc = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?rank={rank}")
    assert doc["group"] == "name" and doc["rank"] == rank and doc["spans_cut"] == 0
    assert doc["has_blocks_per_sm"] == ref["has_blocks_per_sm"]
    assert doc["has_occupancy"] == ref["has_occupancy"]
    assert abs(doc["tensor_core_pct"] - ref["tc_used_ratio"] * 100) < 1e-3
    got = {r["name"]: r for r in doc["rows"]}
    want = {r["Name"]: r for r in ref["kernels"]}
    assert sorted(got) == sorted(want)
    assert doc["total"] == len(want) and doc["kernels"] == sum(r["Calls"] for r in want.values())
    for k, w in want.items():
        g = got[k]
        assert g["tensor_cores"] == (w["Tensor Cores Used"] == "Yes"), k
        assert g["calls"] == w["Calls"], k
        assert near(g["total_us"], w["Total Duration (us)"]), k
        assert near(g["mean_us"], w["Mean Duration (us)"]), k
        assert near(g["max_us"], w["Max Duration (us)"]), k
        assert near(g["min_us"], w["Min Duration (us)"]), k
        if ref["has_blocks_per_sm"]:
            assert near(g["blocks_per_sm"], w["Mean Blocks Per SM"], 0.01), k
        if ref["has_occupancy"]:
            assert near(g["occupancy_pct"], w["Mean Est. Achieved Occupancy (%)"], 0.01), k
    # rows by total, as the plugin sorts them
    totals = [r["total_us"] for r in doc["rows"]]
    assert totals == sorted(totals, reverse=True)


def key(name, grid, block, regs, smem):
    return (name, str(grid), str(block), str(regs or 0), str(smem or 0))


@pytest.mark.parametrize("name,rank,answer", list(cases()))
def test_kernels_by_operator_equal_tb_profiler(daemon, tmp, name, rank, answer):
    """The plugin's table by (kernel, operator, grid, block, registers, shared memory): 0.4.3
    links a runtime call to its operator by the call's External id, which Kineto of torch >= 1.13
    sets to the correlation, so on these traces it puts every kernel under CallTreeRoot. Per
    (kernel, grid, block, registers, shared memory), summed over the operators, stepscope's
    rows hold the same kernels: same calls, time, means. On the H200 trace (with_stack,
    with_modules) 0.4.3 lists every kernel three times (540 calls in this table, 180 in its
    kernel table): stepscope counts each once (docs/ANALYSIS.md)."""
    ref = json.loads((DATA / answer).read_text())
    assert {r["Operator"] for r in ref["kernels_by_operator"]} == {"CallTreeRoot"}
    times = (sum(r["Calls"] for r in ref["kernels_by_operator"]) //
             sum(r["Calls"] for r in ref["kernels"]))
    assert times == (3 if name == "h200_a" else 1)
    job = imported(daemon, tmp, name)
    doc = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?rank={rank}&group=operator")
    assert doc["group"] == "operator"
    sums = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0, None])
    for r in doc["rows"]:
        s = sums[key(r["name"], r["grid"], r["block"], r["registers_per_thread"],
                     r["shared_memory"])]
        s[0] += r["calls"]
        s[1] += r["total_us"]
        s[2] += (r["blocks_per_sm"] or 0) * r["total_us"]
        s[3] += (r["occupancy_pct"] or 0) * r["total_us"]
        s[4] += r["operator"] is None
    for w in ref["kernels_by_operator"]:
        k = (w["Name"], w["Grid"], w["Block"], w["Register Per Thread"], w["Shared Memory"])
        assert k in sums, k
        calls, total, bsm, occ, _ = sums[k][:5]
        assert calls * times == w["Calls"], k
        assert near(total * times, w["Total Duration (us)"], times), k
        if ref["has_blocks_per_sm"] and total:
            assert near(bsm / total, w["Mean Blocks Per SM"], 0.01), k
        if ref["has_occupancy"] and total:
            assert near(occ / total, w["Mean Est. Achieved Occupancy (%)"], 0.01), k
    assert len(sums) == len(ref["kernels_by_operator"])
    # kernels whose call lies in no operator (nor step) are listed with operator null
    assert 0 < doc["launched"] <= doc["kernels"]
    unlaunched = sum(r["calls"] for r in doc["rows"] if r["operator"] is None)
    assert unlaunched == doc["kernels"] - doc["launched"]


def test_kernels_by_operator_equal_key_averages(daemon, tmp):
    """The operator a kernel is listed under is the one torch itself charges its time to: per
    host operator, its kernels' time is key_averages()' self CUDA time of that operator, less
    the memcpy and memset time torch counts there too (not kernels: three operators here, their
    difference summing to the trace's memcpy and memset time). torch also lists kernel time
    under two runtime calls (cudaStreamIsCapturing, cudaStreamWaitEvent), which launch none."""
    ka = json.loads(gzip.decompress((DATA / "cuda_views_h200" / "tables.json.gz").read_bytes()))
    want = {r["name"]: r["self_cuda_us"] for r in ka["a"]["key_averages"]
            if r["device_type"] == "CPU" and r["self_cuda_us"] > 0 and
            not r["name"].startswith("cuda")}
    trace = json.loads(gzip.decompress((DATA / "cuda_views_h200" / "trace_a.json.gz").read_bytes()))
    copies = sum(e["dur"] for e in trace["traceEvents"]
                 if e.get("cat") in ("gpu_memcpy", "gpu_memset"))
    job = imported(daemon, tmp, "h200_a")
    doc = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?group=operator")
    assert doc["launched"] == doc["kernels"] == 180
    got = collections.defaultdict(float)
    for r in doc["rows"]:
        got[re.sub(r"#\d+$", "*", r["operator"])] += r["total_us"]
    assert set(got) <= set(want)
    with_copies = {"aten::copy_", "aten::_local_scalar_dense", "aten::convolution_backward"}
    for op, us in want.items():
        if op in with_copies:
            assert got[op] < us, op
        else:
            assert abs(got[op] - us) < 0.002, op
    assert abs(sum(want[op] - got[op] for op in with_copies) - copies) < 0.002


def test_kernel_details_csv_records_and_errors(daemon, tmp):
    job = imported(daemon, tmp, "gpu_5steps")
    doc = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?group=operator")
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/kernels/details?group=operator&format=csv")
    assert st == 200 and hdr["content-type"].startswith("text/csv")
    lines = body.decode().splitlines()
    assert lines[0] == ("name,operator,grid,block,registers_per_thread,shared_memory,tensor_cores,"
                        "calls,total_us,mean_us,max_us,min_us,blocks_per_sm,occupancy_pct")
    assert len(lines) == 1 + len(doc["rows"])
    recs = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?format=records")
    assert recs == daemon.get_json(f"/api/v1/jobs/{job}/kernels/details")["rows"]
    daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?group=type", status=400)
    daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?rank=7", status=404)


def test_comm_ops_equal_tb_profiler(daemon, tmp):
    """link=external_id is the plugin's own rule (a kernel joins a communication op when its
    External id is the op's); on this torch 2 trace it links none, so each op is its host span,
    and the plugin lists only its ten op names (nccl:all_reduce here)."""
    ref = json.loads((DATA / "gpu_2steps_sampled.tb_comm_ops.json").read_text())["workers"]
    job = imported(daemon, tmp, "gpu_2steps_sampled")
    doc = daemon.get_json(f"/api/v1/jobs/{job}/comm-ops?link=external_id")
    assert doc["link"] == "external_id" and doc["ranks"] == [0, 1]
    for worker, rows in ref.items():
        rank = int(worker[len("worker"):])
        got = {r["name"]: r for r in doc["rows"] if r["rank"] == rank}
        assert rows
        for w in rows:
            g = got[w["Name"]]
            assert g["calls"] == w["Calls"]
            assert g["total_bytes"] == w["Total Size (bytes)"]
            assert near(g["avg_bytes"], w["Avg Size (bytes)"])
            assert near(g["latency_us"], w["Total Latency (us)"])
            assert near(g["avg_latency_us"], w["Avg Latency (us)"])
            assert near(g["transfer_us"], w["Data Transfer Time (us)"])
            assert near(g["avg_transfer_us"], w["Avg Data Transfer Time (us)"])
            assert near(g["wait_us"], w["Total Latency (us)"] - w["Data Transfer Time (us)"])
            assert g["unmatched"] == 0


def test_comm_ops_launch_link(daemon, tmp):
    """The default link counts the NCCL kernel each op launched: every communication op of both
    ranks has exactly one here, so its latency is the union of its host span and that kernel,
    and the kernels' time is what /kernels/details lists under those ops."""
    job = imported(daemon, tmp, "gpu_2steps_sampled")
    doc = daemon.get_json(f"/api/v1/jobs/{job}/comm-ops")
    ext = daemon.get_json(f"/api/v1/jobs/{job}/comm-ops?link=external_id")
    assert doc["link"] == "launch"
    names = {(r["rank"], r["name"]) for r in doc["rows"]}
    assert names == {(r, n) for r in (0, 1)
                     for n in ("nccl:all_to_all", "nccl:all_reduce", "nccl:_all_gather_base")}
    by = {(r["rank"], r["name"]): r for r in ext["rows"]}
    for r in doc["rows"]:
        assert r["calls"] == by[(r["rank"], r["name"])]["calls"]
        assert r["latency_us"] > by[(r["rank"], r["name"])]["latency_us"]
        assert 0 < r["transfer_us"] <= r["latency_us"]
        assert r["unmatched"] == 0
    for rank in (0, 1):
        ops = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?rank={rank}&group=operator")
        launched = collections.defaultdict(float)
        for k in ops["rows"]:
            if k["operator"] and k["operator"].startswith("nccl:"):
                launched[k["operator"]] += k["total_us"]
        for r in doc["rows"]:
            if r["rank"] == rank:
                # host span and kernel overlap little: the kernel's time is within the latency
                assert launched[r["name"]] <= r["latency_us"] + 1e-6
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/comm-ops?format=csv&rank=1")
    lines = body.decode().splitlines()
    assert st == 200 and lines[0].startswith("rank,name,calls,total_bytes")
    assert len(lines) == 4 and all(line.startswith("1,") for line in lines[1:])
    daemon.get_json(f"/api/v1/jobs/{job}/comm-ops?link=kernel", status=400)


def test_bounds_as_the_summaries(daemon, tmp):
    """The tables read the store with the summaries' bounds: max_spans caps the spans kept
    (the rest counted in spans_cut), and a rank read past its share is said, not hidden."""
    job = imported(daemon, tmp, "gpu_5steps")
    full = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details")
    assert full["spans_cut"] == 0 and full["spans_read"] > 1000
    cut = daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?max_spans=1000")
    assert cut["spans_read"] == 1000
    assert cut["spans_cut"] == full["spans_read"] - 1000
    assert cut["kernels"] < full["kernels"]
    comm = daemon.get_json(f"/api/v1/jobs/{job}/comm-ops?max_spans=1000")
    assert comm["spans_read"] == 1000 and comm["spans_cut"] > 0
    daemon.get_json(f"/api/v1/jobs/{job}/kernels/details?max_spans=0", status=400)
