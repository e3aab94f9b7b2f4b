# SPDX-License-Identifier: MIT
"""`stepscope import DIR` on MindSpore profiler folders, against the real daemon.

Golden values come from tests/data/mindspore/*/expected.json (what MindInsight's own
analysers return on those exact files); where MindInsight has a documented quirk
(reference/mindinsight.md section 7, docs/ANALYSIS.md) the test checks the correct value instead
and says so. Native MindSpore 2.x and Paddle outputs are generated at test time when the
framework is installed (skipped otherwise)."""
import csv
import json
import math
import re
import shutil
import struct
import subprocess
import sys
import time

import pytest

import integ_conftest as integ
from test_import import (DATA, SPLIT, assert_nothing_sent, job_or_none, metadata_last, q,
                         run_import, timeline)

MS = DATA / "mindspore"


def assert_ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"


def expected(folder):
    return json.loads((MS / folder / "expected.json").read_text())


def wait_json(daemon, path, ready=lambda d: True, timeout=10.0):
    """Live routes republish within ~0.1 s of the records being acked: poll until ready."""
    deadline = time.monotonic() + timeout
    while True:
        st, _, body = daemon.request(path)
        if st == 200:
            doc = json.loads(body)
            if ready(doc):
                return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"{path}: {st} {body[:300]}")
        time.sleep(0.05)


def ms(us):
    return us / 1000.0


def close(a, b, tol=1.01e-4):
    return math.isclose(a, b, abs_tol=tol)


def step_trace_rows(folder, rank):
    rows = list(csv.DictReader(open(MS / folder / f"step_trace_raw_{rank}_detail_time.csv")))
    return [r for r in rows if r["step_num"] not in ("-", "0")]


# -- step trace ---------------------------------------------------------------------------------

def test_step_trace_small_matches_mindinsight(daemon):
    exp = expected("01_step_trace_small")
    p = run_import(daemon, MS / "01_step_trace_small")
    assert_ok(p)
    job = "01_step_trace_small"
    n = exp["summary"]["total_steps"]
    steps = wait_json(daemon, f"/api/v1/jobs/{job}/steps", lambda d: d["total"] == n)
    assert [r["step"] for r in steps["rows"]] == list(range(1, n + 1))
    # MindInsight's summary is MindSpore's precomputed average row: the mean over steps 2..20
    # (docs/ANALYSIS.md "Which mean"); ours over the same steps matches it to the 4th decimal.
    avg = daemon.get_json(f"/api/v1/jobs/{job}/step-trace?from=2&to={n}")
    s = exp["summary"]
    assert avg["n_steps"] == n - 1 and avg["points"]["source"] == "trace"
    for key, ours in (("total_time", avg["total_us"]), ("iteration_interval", avg["interval_us"]),
                      ("fp_and_bp", avg["fp_bp_us"]), ("tail", avg["tail_us"])):
        assert close(ms(ours), s[key]), (key, ms(ours), s[key])
    for stage, key in (("interval", "iteration_interval"), ("fp_bp", "fp_and_bp"), ("tail", "tail")):
        pct = next(x["percent"] for x in avg["stages"] if x["name"] == stage)
        assert f"{round(pct, 2)}%" == s[key + "_percent"], (stage, pct)
    # Every step: the main line exactly, and each communication segment (sent as a span on the
    # "Step Trace" process) at the start and duration MindInsight draws, relative to the step.
    comm = {}
    for e in timeline(daemon, job):
        if e.get("ph") == "X" and e.get("cat") == "step_trace" and e["tid"].startswith("stream_"):
            comm.setdefault(e["args"]["step"], []).append(e)
    starts = {int(r["step_num"]): int(r["start_point"]) * 10 / 1000 for r in step_trace_rows(
        "01_step_trace_small", 0)}
    # Per-stage series over all steps (MindInsight's proc_*_all_steps), from /steps.
    for key, col in (("iteration_interval", "interval_us"), ("fp_and_bp", "fp_bp_us"),
                     ("tail", "tail_us")):
        series = exp[f"proc_{key}_all_steps"]["info"][key]
        assert len(series) == n
        for want, row in zip(series, steps["rows"]):
            assert close(ms(row[col]), want), (key, row["step"], want, row[col])
    graphs = [int(k[len("graph_step_"):]) for k in exp if k.startswith("graph_step_")]
    assert len(graphs) > 2
    for k in (k for k in graphs if k > 0):
        g = exp[f"graph_step_{k}"]["training_trace_graph"]
        one = daemon.get_json(f"/api/v1/jobs/{job}/step-trace?step={k}")
        assert close(ms(one["total_us"]), g[0][0]["duration"])
        main = {x["name"]: x for x in g[1]}
        assert close(ms(one["interval_us"]), main["iteration_interval"]["duration"])
        assert close(ms(one["fp_bp_us"]), main["fp_and_bp"]["duration"])
        assert close(ms(one["tail_us"]), main["tail"]["duration"])
        want = sorted((seg["name"], seg["start"], seg["duration"])
                      for line in g[2:] for seg in line if seg["name"])
        got = sorted((e["name"], ms(e["ts"] - starts[k]), ms(e["dur"])) for e in comm[k])
        assert [w[0] for w in want] == [x[0] for x in got]
        for w, x in zip(want, got):
            assert close(w[1], x[1]) and close(w[2], x[2]), (k, w, x)


def segments(doc):
    """/step-trace's reduce lines as MindInsight's training_trace_graph lines 2.. (ms)."""
    return [[(g["name"] or "", ms(g["start_us"]), ms(g["dur_us"])) for g in line["segments"]]
            for line in doc["lines"]]


def test_step_trace_reduce_lines_and_mindinsight_average(daemon):
    """The all-reduce lines MindInsight draws under the step trace (one per stream: stream_10,
    stream_11; the ops and the gaps between them, from fp to the step's end) come back from
    /step-trace for every step MindInsight answered, and for the average: MindInsight's
    average (graph_step_0, MindSpore's average row) leaves out step 1, which ?skip=1 does; the
    default average includes every step (125.9 ms here, step 1 having no interval)."""
    exp = expected("01_step_trace_small")
    assert_ok(run_import(daemon, MS / "01_step_trace_small"))
    job = "01_step_trace_small"
    wait_json(daemon, f"/api/v1/jobs/{job}/steps", lambda d: d["total"] == 20)
    for key in (k for k in exp if k.startswith("graph_step_")):
        k = int(key[len("graph_step_"):])
        g = exp[key]["training_trace_graph"]
        doc = daemon.get_json(f"/api/v1/jobs/{job}/step-trace?" + ("skip=1" if k == 0 else f"step={k}"))
        assert doc["skip"] == (1 if k == 0 else 0)
        assert close(ms(doc["total_us"]), g[0][0]["duration"]), (k, doc["total_us"])
        got, want = segments(doc), [[(x["name"], x["start"], x["duration"]) for x in line]
                                    for line in g[2:]]
        assert [len(x) for x in got] == [len(x) for x in want], (k, got, want)
        for gl, wl in zip(got, want):
            for a, b in zip(gl, wl):
                assert a[0] == b[0] and close(a[1], b[1]) and close(a[2], b[2]), (k, a, b)
        assert [x["stream"] for x in doc["lines"]] == [10, 11]
    every = daemon.get_json(f"/api/v1/jobs/{job}/step-trace")
    mi = daemon.get_json(f"/api/v1/jobs/{job}/step-trace?skip=1")
    assert (every["first_step"], every["n_steps"], every["skip"]) == (1, 20, 0)
    assert (mi["first_step"], mi["n_steps"]) == (2, 19)
    assert round(ms(every["total_us"]), 1) == 125.9
    assert close(ms(mi["total_us"]), exp["summary"]["total_time"])
    assert f"{round(next(x['percent'] for x in mi['stages'] if x['name'] == 'tail'), 2)}%" == \
        exp["summary"]["tail_percent"]
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/step-trace?step=3&skip=1")
    assert st == 400 and b"step: not together with from/to/skip" in body


def test_step_trace_single_step_point_names_and_bogus_average(daemon):
    exp = expected("02_step_trace_single_step")
    p = run_import(daemon, MS / "02_step_trace_single_step")
    assert_ok(p)
    job = "02_step_trace_single_step"
    path = f"/api/v1/jobs/{job}/step-trace?rank=1"
    avg = wait_json(daemon, path, lambda d: d["points"]["source"] == "trace")
    info = exp["graph_step_1"]["point_info"]
    assert avg["points"]["fp_start"] == info["fp_start"]
    assert avg["points"]["bp_end"] == info["bp_end"]
    assert avg["points"]["fp_origin"] == "env_stepscope"
    g = exp["graph_step_1"]["training_trace_graph"]
    assert close(ms(avg["total_us"]), g[0][0]["duration"])
    assert close(ms(avg["fp_bp_us"]), g[1][1]["duration"])
    assert close(ms(avg["tail_us"]), g[1][2]["duration"])
    # Quirk: this file's average row is "0,0,0,0,0,0,1243211,0,0" (an interval of 12.4321 ms
    # and a total of 0), which MindInsight shows as the summary. The mean of the one step is
    # the step itself, so we report that.
    assert exp["summary"]["total_time"] == 0.0 and exp["summary"]["iteration_interval"] == 12.4321
    assert avg["interval_us"] == 0 and avg["total_us"] > 0


def test_step_trace_survives_kill9(daemon):
    """The FP/BP names travel in the hello's env: after kill -9 the daemon replays them with the
    stored records, so the step trace keeps the file's points and numbers."""
    assert_ok(run_import(daemon, MS / "02_step_trace_single_step"))
    path = "/api/v1/jobs/02_step_trace_single_step/step-trace?rank=1"
    before = wait_json(daemon, path, lambda d: d["points"]["source"] == "trace")
    daemon.restart()
    after = wait_json(daemon, path, lambda d: d["points"]["source"] == "trace")
    assert after == before
    p = run_import(daemon, MS / "02_step_trace_single_step")
    assert_ok(p)
    assert "0 sent, 3 already held" in p.stdout, p.stdout


# -- data queues ----------------------------------------------------------------------------------

def test_minddata_queues_match_mindinsight(daemon):
    exp = expected("04_minddata_queues")
    assert_ok(run_import(daemon, MS / "04_minddata_queues"))
    job = "04_minddata_queues"
    doc = wait_json(daemon, f"/api/v1/jobs/{job}/queues?rank=1", lambda d: len(d["queues"]) == 2)
    qs = {x["name"]: x for x in doc["queues"]}
    gn, dq = qs["get_next"], qs["device_queue"]
    assert [x["size"] for x in gn["series"]] == exp["queue_info?type=get_next"]["info"]["queue"]
    assert gn["empty"] == exp["queue_info?type=get_next"]["summary"]["queue_summary"]["empty_queue"]
    dsum = exp["queue_info?type=device_queue"]["summary"]["queue_summary"]
    assert [x["size"] for x in dq["series"]] == exp["queue_info?type=device_queue"]["info"]["queue"]
    assert (dq["empty"], dq["full"]) == (dsum["empty_queue"], dsum["full_queue"])
    ps = exp["process_summary"]
    status = next(k for k in ("data_process", "data_transmission", "device_queue_warning")
                  if ps[k]["status"] == "warning")
    assert doc["verdicts"][0]["status"] == status
    assert doc["verdicts"][0]["host_total"] == ps["device_queue_info"]["summary"]["total_batch"]
    assert doc["verdicts"][0]["device_total"] == ps["get_next_queue_info"]["summary"]["total_batch"]
    # The time records: GetNext spans (ms in MindInsight) and the device queue's cost counters.
    ev = timeline(daemon, job)
    getnext = [ms(e["dur"]) for e in ev if e.get("ph") == "X" and e["tid"] == "GetNext"]
    assert getnext == exp["minddata_op?type=get_next"]["info"]["get_next"]
    costs = {}
    for e in ev:
        if e.get("ph") == "C" and e["name"] == "device_queue_time_ms":
            for k, v in e["args"].items():
                if k != "step":
                    costs.setdefault(k, []).append(v)
    dq_op = exp["minddata_op?type=device_queue"]["info"]
    for k in ("total_cost", "push_cost", "get_cost"):
        assert costs[k] == dq_op[k], k
    # Quirk: MindInsight returns get_next's avg_cost as a string; ours are numbers.
    avg = float(exp["minddata_op?type=get_next"]["summary"]["time_summary"]["avg_cost"])
    assert close(sum(getnext) / len(getnext), avg)


# -- operator tables --------------------------------------------------------------------------------

def kernels(daemon, job):
    doc = wait_json(daemon, f"/api/v1/jobs/{job}/kernels?rank=1&limit=100000",
                    lambda d: d["total"] > 0)
    return {r["name"]: r for r in doc["rows"]}


def test_aicore_detail_matches_mindinsight(daemon):
    exp = expected("06_op_stats")["small_dev1 aicore_detail all"]
    assert_ok(run_import(daemon, MS / "06_op_stats" / "small_dev1"))
    rows = kernels(daemon, "small_dev1")
    cols = exp["col_name"]
    assert len(rows) == exp["size"]
    events = {}
    for e in timeline(daemon, "small_dev1"):
        if e.get("ph") == "X":
            events.setdefault(e["name"], e)
    for obj in exp["object"]:
        row = dict(zip(cols, obj))
        ours = rows[row["op_name"]]
        assert ours["calls"] == row["execution_frequency"]
        assert close(ours["avg_us"], row["avg_execution_time"], 1e-3)
        args = events[row["op_name"]]["args"]
        assert args["kernel_name"] == row["kernel_name"] and args["kernel_type"] == row["kernel_type"]
        assert json.loads(args["op_info"]) == row["op_info"]
        assert args["MFLOPs(10^6 cube)"] == row["MFLOPs(10^6 cube)"]
        assert args["GFLOPS(10^9 cube)"] == row["GFLOPS(10^9 cube)"]
        # Quirk: MindInsight's "MFLOPs(10^6 vector)" column holds "FLOPS utilization(cube)" (its
        # columns are shifted by one); flops_1.txt says 333, which is what we keep.
        assert row["MFLOPs(10^6 vector)"] == 33.0 and args["MFLOPs(10^6 vector)"] == 333


def test_aicore_types_match_mindinsight(daemon):
    exp = expected("06_op_stats")["run1_dev1 aicore_type sort total_time desc"]
    assert_ok(run_import(daemon, MS / "06_op_stats" / "run1_dev1"))
    rows = kernels(daemon, "run1_dev1")
    by_type = {}
    for e in timeline(daemon, "run1_dev1"):
        if e.get("ph") == "X":
            t = by_type.setdefault(e["args"]["kernel_type"], [0, 0.0])
            t[0] += 1
            t[1] += e["dur"]
    assert sum(r["calls"] for r in rows.values()) == sum(v[0] for v in by_type.values())
    for obj in exp["object"]:
        row = dict(zip(exp["col_name"], obj))
        calls, total = by_type[row["kernel_type"]]
        assert calls == row["execution_frequency"], row
        assert close(total, row["total_time"], 0.006), (row, total)
        # Quirk: total_percent is the file's percent times 100 again (7380.0 for 73.80 %); we do
        # not compute it from this table, the kernel table's percent is in [0, 100].
    assert all(0 <= r["percent"] <= 100 for r in rows.values())


def test_timelines_of_one_device_in_a_folder(daemon, tmp):
    """A folder of one device kind's timelines imports them; each file imported on its own gives
    MindInsight's timeline of its device_type."""
    exp = expected("11_timeline")
    for kind in ("ascend", "gpu"):
        d = tmp / f"tl-{kind}"
        d.mkdir()
        shutil.copy(MS / "11_timeline" / f"{kind}_timeline_display_0.json", d)
        p = run_import(daemon, d)
        assert_ok(p)
        assert p.stdout.count(f'job "{d.name}"') == 1, p.stdout
        got = timeline(daemon, d.name)
        want = exp[f"timeline?device_type={kind}&scope_name_num=0"]
        assert sorted(map(json.dumps, got)) == sorted(map(json.dumps, want))
        # one clock: the rank's time range is the file's own (the GPU file spans 4.5 s, the
        # Ascend one 6 s), not the 50 years between the two clocks
        rk = daemon.get_json(f"/api/v1/jobs/{d.name}")["ranks_detail"][0]
        assert rk["trace_end_us"] - rk["trace_start_us"] < 10e6, rk


def test_timelines_of_two_devices_in_a_folder_are_refused(daemon):
    """11_timeline holds an Ascend and a GPU timeline, two devices on two clocks (the Ascend one
    counts from 0, the GPU one from the epoch): one rank of one job spanned 50 years. MindInsight
    shows them as separate profiles; the import refuses the mix, names both files, says how to
    import each, and sends nothing."""
    d = MS / "11_timeline"
    p = run_import(daemon, "--job", "x", d)
    assert p.returncode == 3, p.stdout + p.stderr
    for name in ("ascend_timeline_display_0.json", "gpu_timeline_display_0.json"):
        assert f"stepscope import {d / name} --job" in p.stderr, p.stderr
    assert "two devices' timelines" in p.stderr and "different clocks" in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_reimport_adds_nothing(daemon):
    assert_ok(run_import(daemon, MS / "01_step_trace_small"))
    p = run_import(daemon, MS / "01_step_trace_small")
    assert_ok(p)
    assert "0 sent, 140 already held" in p.stdout, p.stdout
    wait_json(daemon, "/api/v1/jobs/01_step_trace_small/steps", lambda d: d["total"] == 20)


# -- bad input ----------------------------------------------------------------------------------------

def copy_folder(tmp, folder, name="run"):
    dst = tmp / name
    shutil.copytree(MS / folder, dst)
    (dst / "expected.json").unlink()
    return dst


STEP_CSV = "step_trace_raw_0_detail_time.csv"


@pytest.mark.parametrize("mutate,line,reason", [
    (lambda t: t[:t.index("\n", len(t) // 2) - 7], None, "fields where the header has"),
    (lambda t: t.replace("45017085658", "4501708x658", 1), 3, 'end_point: expected a number'),
    (lambda t: t.replace("\n2,", "\n1,", 1), 3, "does not follow step 1"),
    (lambda t: t.replace("45013070937,45014785314", "45014785314,45013070937", 1), 3,
     "points out of order"),
    (lambda t: t.replace("step_num", "stepnum", 1), 1, 'no column "step_num"'),
    (lambda t: "", None, "empty file"),
    (lambda t: t[:100] + "\0" + t[100:], 1, "NUL byte"),
], ids=["truncated", "bad-number", "step-order", "point-order", "header", "empty", "nul"])
def test_bad_step_trace_is_reported_and_nothing_sent(daemon, tmp, mutate, line, reason):
    d = copy_folder(tmp, "01_step_trace_small")
    text = (d / STEP_CSV).read_text()
    bad = mutate(text)
    (d / STEP_CSV).write_text(bad)
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    where = f"{d / STEP_CSV}: line {line}, column " if line else f"{d / STEP_CSV}: "
    if line is None and bad:
        where = f"{d / STEP_CSV}: line {bad.count(chr(10)) + 1}, column "
    assert where in p.stderr and reason in p.stderr, p.stderr
    assert_nothing_sent(daemon)


@pytest.mark.parametrize("name,text,reason", [
    ("device_queue_profiling_1.txt", "0 1 1 4 10\n1 64 1\n", "line 2, column 1: expected 5 fields"),
    ("device_queue_profiling_1.txt", "7 1 1 4 10\n", "line 1, column 1: record type 7"),
    ("minddata_aicpu_1.txt", "GetNext_dequeue_wait 10 5 3\n", "line 1, column 25: end is before start"),
    ("step_trace_point_info.json", '{"fp_start": "a", "bp_end": ', "line 1, column 29: unexpected end"),
    # A list of names closed twice: the second ']' was taken as part of the list.
    ("step_trace_point_info.json", '{"fp_start": ["a", "b"]], "bp_end": "c"}',
     "line 1, column 24: expected ',' or '}'"),
    ("minddata_pipeline_raw_1.csv",
     "op_id,op_type,num_workers,output_queue_size,output_queue_average_size,output_queue_length,"
     "output_queue_usage_rate,sample_interval,parent_id,children_id\n"
     '0,Batch,4,"[1, 2",1.5,64,0.02,10,-1,"[1]"\n', "line 2, column 11: output_queue_size: character 6 of the cell: expected ','"),
    ("framework_raw_1.csv", 'task_id,full_kernel_name,kernel_type\n1,"Default/a-op1,x\n',
     "line 2, column 3: quoted field never closed"),
    ("minddata_cpu_utilization_1.json", '{"device_info": {"idle_utilization": [1, "x"]}}',
     "line 1, column 42: expected a number"),
    # One span per call: a count that cannot fit is refused before anything is expanded.
    ("aicore_intermediate_1_detail.csv", "full_op_name,execution_time,execution_frequency\n"
     "a,0.001,333333343\n", "line 2, column 9: execution_frequency 333333343: one record per call"),
])
def test_bad_files_are_reported_and_nothing_sent(daemon, tmp, name, text, reason):
    d = copy_folder(tmp, "04_minddata_queues")
    (d / name).write_text(text)
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    assert f"{d / name}: {reason}" in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_one_bad_folder_imports_none(daemon, tmp):
    good = copy_folder(tmp, "04_minddata_queues", "good")
    bad = copy_folder(tmp, "01_step_trace_small", "bad")
    (bad / STEP_CSV).write_text((bad / STEP_CSV).read_text()[:-30])
    p = run_import(daemon, "--job", "pair", good, bad)
    assert p.returncode == 3 and str(bad / STEP_CSV) in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_folder_without_profiler_files(daemon, tmp):
    (tmp / "empty").mkdir()
    (tmp / "empty" / "notes.txt").write_text("hello\n")
    p = run_import(daemon, tmp / "empty")
    assert p.returncode == 3 and "no MindSpore profiler files" in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_pipeline_and_cpu_utilization(daemon, tmp):
    d = tmp / "md"
    d.mkdir()
    (d / "minddata_pipeline_raw_0.csv").write_text(
        "op_id,op_type,num_workers,output_queue_size,output_queue_average_size,"
        "output_queue_length,output_queue_usage_rate,sample_interval,parent_id,children_id\n"
        '0,Batch,4,"[8, 8, 7]",7.67,8,0.958,10,-1,"[1]"\n'
        '1,Map,2,"[1, 0, 1]",0.67,8,0.083,10,0,"[2]"\n'
        '2,Generator,1,"[8, 8, 8]",8,8,1.0,10,1,"[]"\n')
    (d / "minddata_cpu_utilization_0.json").write_text(json.dumps({
        "sampling_interval": 1000, "cpu_processor_num": 4, "time_stamp": [1, 2],
        "device_info": {"user_utilization": [10, 20], "idle_utilization": [75, 40.5]},
        "process_info": {"user_utilization": [10, 20], "sys_utilization": [2.5, 5]}}))
    assert_ok(run_import(daemon, d))
    doc = wait_json(daemon, "/api/v1/jobs/md/pipeline?rank=0", lambda d: d.get("ops"))
    ops = {o["id"]: o for o in doc["ops"]}
    assert ops[0]["type"] == "Batch" and ops[0]["children"] == [1] and ops[0]["num_workers"] == 4
    assert ops[1]["queue_usage"] == 0.083 and ops[1]["queue_capacity"] == 8
    # Map's output queue is nearly empty while Generator's is full: MindInsight flags Map.
    assert [(b["op_id"], b["reason"]) for b in doc["bottlenecks"]] == [(1, "child_fuller")]
    # Host records: sys_cpu_percent = 100 - idle, so the helper's mean is (25 + 59.5) / 2.
    helper = wait_json(daemon, "/api/v1/jobs/md/helper?rank=0",
                       lambda d: d["inputs"]["host_cpu_percent"] is not None)
    assert close(helper["inputs"]["host_cpu_percent"], 42.25, 1e-9)


# -- what current PyPI MindSpore and Paddle write on the CPU (generated here) -------------------------

MS_SCRIPT = """
import sys, numpy as np, mindspore as ms
from mindspore import nn
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(0)
net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 2)])
loss_fn = nn.MSELoss()
opt = nn.SGD(net.trainable_params(), 0.01)


def forward(x, y):
    return loss_fn(net(x), y)


grad = ms.value_and_grad(forward, None, opt.parameters)

@ms.jit
def step(x, y):
    loss, g = grad(x, y)
    opt(g)
    return loss

prof = ms.Profiler(output_path=sys.argv[1])
for _ in range(5):
    step(ms.Tensor(np.random.randn(4, 8).astype(np.float32)),
         ms.Tensor(np.random.randn(4, 2).astype(np.float32)))
prof.analyse()
"""

PADDLE_SCRIPT = """
import sys, paddle, paddle.profiler as profiler
paddle.seed(0)
m = paddle.nn.Sequential(paddle.nn.Linear(8, 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 2))
opt = paddle.optimizer.SGD(parameters=m.parameters())
def ready(prof):  # the window in both of Paddle's export formats
    profiler.export_chrome_tracing(sys.argv[1])(prof)
    profiler.export_protobuf(sys.argv[1])(prof)
p = profiler.Profiler(targets=[profiler.ProfilerTarget.CPU], scheduler=(1, 4), on_trace_ready=ready)
p.start()
for _ in range(5):
    loss = m(paddle.randn([4, 8])).mean()
    loss.backward()
    opt.step()
    opt.clear_grad()
    p.step()
p.stop()
"""


def generate(tmp_path_factory, module, script):
    """Runs script with the python3 on PATH (where pip put the frameworks) into a fresh folder."""
    probe = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{module} is not installed")
    out = tmp_path_factory.mktemp(module)
    (out / "train.py").write_text(script)  # MindSpore's graph mode reads the source file
    p = subprocess.run([sys.executable, str(out / "train.py"), str(out / "prof")],
                       capture_output=True, text=True, timeout=600, cwd=out)
    assert p.returncode == 0, p.stderr[-3000:]
    return out / "prof"


@pytest.fixture(scope="module")
def mindspore_output(tmp_path_factory):
    return generate(tmp_path_factory, "mindspore", MS_SCRIPT)


@pytest.fixture(scope="module")
def paddle_output(tmp_path_factory):
    return generate(tmp_path_factory, "paddle", PADDLE_SCRIPT)


@pytest.fixture(scope="module")
def paddle_long_output(tmp_path_factory):
    """PADDLE_SCRIPT with 0.3 s asleep in each step: the window's offsets reach past 2**23 ns,
    where Paddle's float rounding moves the start_time it prints (paddle_printed_offset_ns),
    on any machine, loaded or not."""
    script = PADDLE_SCRIPT.replace("import sys,", "import sys, time,").replace(
        "    p.step()", "    time.sleep(0.3)\n    p.step()")
    assert "time.sleep" in script
    return generate(tmp_path_factory, "paddle", script)


def test_mindspore_profiler_cpu_output(daemon, mindspore_output):
    """mindspore.Profiler (2.x) on the CPU writes <out>/<host>_<pid>_<time>_ascend_ms/ with
    FRAMEWORK/cpu_op_execute_timestamp_0.txt (every op execution) and the op tables MindSpore
    derives from it: the imported operator table must equal those tables."""
    framework = next(mindspore_output.glob("*_ascend_ms/FRAMEWORK"))
    p = run_import(daemon, "--job", "ms2", mindspore_output)
    assert_ok(p)
    assert "cpu_op_execute_timestamp_0.txt" in p.stdout and "0 rejected" in p.stdout
    types = list(csv.DictReader(open(framework / "cpu_op_type_info_0.csv")))
    doc = wait_json(daemon, "/api/v1/jobs/ms2/operators?group=type&limit=100000",
                    lambda d: d["total"] >= len(types))
    rows = {r["name"]: r for r in doc["rows"]}
    assert len(types) > 3
    # trace_view's "Scope Layer" spans (Default, Gradients, ...) are a hierarchy over the
    # operators, not operators: no row of their own, and no share of the percentages
    assert not set(rows) & scope_names(mindspore_output), doc["rows"]
    assert len(rows) == len(types), sorted(rows)
    for t in types:
        r = rows[t["op_type"]]
        assert r["calls"] == int(t["type_occurrences"]), t
        # MindSpore prints its tables with 6 significant digits.
        assert math.isclose(r["total_us"], float(t["total_compute_time"]) * 1000,
                            rel_tol=1e-5, abs_tol=2e-3), (t, r)
        assert math.isclose(r["percent"], float(t["percent"]) * 100,
                            rel_tol=1e-4, abs_tol=1e-4), (t, r)
    detail = list(csv.DictReader(open(framework / "cpu_op_detail_info_0.csv")))
    by_name = {r["name"]: r for r in daemon.get_json(
        "/api/v1/jobs/ms2/operators?limit=100000")["rows"]}
    assert len(by_name) == len(detail), sorted(by_name)
    # the training's host and pid, as MindSpore names its run folder <host>_<pid>_<time>_ascend_ms
    # (the pid is also cpu_op_detail_info's last column)
    host, pid, _ = framework.parent.name[:-len("_ascend_ms")].rsplit("_", 2)
    assert {d["pid"] for d in detail} == {pid}
    r = daemon.get_json("/api/v1/jobs/ms2")["ranks_detail"][0]
    assert (r["host"], r["pid"]) == (host, int(pid)), r
    for d in detail:
        r = by_name[d["full_op_name"]]
        assert r["calls"] == int(d["op_occurrences"]), d
        assert math.isclose(r["total_us"], float(d["op_total_time(ms)"]) * 1000,
                            rel_tol=1e-5, abs_tol=2e-3), (d, r)


def scope_names(output):
    """The names of the spans of trace_view.json's "Scope Layer" process."""
    tv = json.loads(next(output.glob("*_ascend_ms/ASCEND_PROFILER_OUTPUT/trace_view.json"))
                    .read_text())
    pids = {e["pid"] for e in tv if e["ph"] == "M" and e["name"] == "process_name"
            and e["args"]["name"] == "Scope Layer"}
    names = {e["name"] for e in tv if e["ph"] == "X" and e["pid"] in pids}
    assert "Default" in names, names
    return names


def paddle_offset_ns(text):
    """Paddle's "1677.816 us" -> 1677816."""
    num, unit = text.split(" ")
    whole, _, frac = num.partition(".")
    digits = {"ns": 0, "us": 3, "ms": 6, "s": 9}[unit]
    return int(whole) * 10 ** digits + int((frac + "0" * digits)[:digits] or 0)


def test_mindspore_trace_view(daemon, mindspore_output):
    """MindSpore 2.x on the CPU also writes ASCEND_PROFILER_OUTPUT/trace_view.json: a Chrome
    trace (ts and dur as decimal strings) whose "CPU OP" process repeats the timestamp file's
    executions, 37 ns later on its clock here, and whose "Scope Layer" process has spans the
    timestamp file does not. The import sends the operators once (from the timestamp file) and
    the other events with ts and dur as numbers, moved onto the timestamp file's clock."""
    run = next(mindspore_output.glob("*_ascend_ms"))
    tv = json.loads((run / "ASCEND_PROFILER_OUTPUT" / "trace_view.json").read_text())
    cpu = {e["pid"] for e in tv if e["ph"] == "M" and e["name"] == "process_name"
           and e["args"]["name"] == "CPU OP"}
    starts = sorted(int(t.split(",")[0]) for line in
                    open(run / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt")
                    for t in line.strip().split(";")[2].split())
    tv_ops = sorted(ns(e["ts"]) for e in tv if e["ph"] == "X" and e["pid"] in cpu)
    assert len(tv_ops) == len(starts) > 20
    shift = tv_ops[0] - starts[0]
    assert tv_ops[-1] - starts[-1] == shift
    others = [e for e in tv if e["pid"] not in cpu]
    assert len([e for e in others if e["ph"] == "X"]) > 10
    p = run_import(daemon, "--job", "ms-tv", mindspore_output)
    assert_ok(p)
    assert ("(cpu_framework_0.txt, cpu_op_execute_timestamp_0.txt, trace_view.json)"
            in p.stdout), p.stdout
    assert f"{len(starts) + len(others)} records" in p.stdout, p.stdout
    st, _, body = daemon.request("/api/v1/jobs/ms-tv/timeline?limit=100000")
    got = json.loads(body, parse_float=str, parse_int=str)["traceEvents"]
    assert st == 200
    # the operators once, from the timestamp file (pid "CPU OP"), none from trace_view's pid
    assert sorted(ns(e["ts"]) for e in got if e["pid"] == "CPU OP" and e["ph"] == "X") == starts
    assert not [e for e in got if e["pid"] in {str(c) for c in cpu}]
    # the rest as trace_view has it, ts moved by the shift (exact, compared in ns)
    def key(e, moved):
        return (e["name"], str(e["pid"]), str(e.get("tid")),
                ns(e["ts"]) - moved if "ts" in e else None, ns(e["dur"]) if "dur" in e else None)
    want = sorted(key(e, shift) for e in others if e["ph"] == "X")
    assert sorted(key(e, 0) for e in got if e["ph"] == "X" and e["pid"] != "CPU OP") == want
    # cpu_framework_0.txt has one line per execution in the order they ran (";;graph;" for one
    # it does not name): the k-th execution's input shapes are the k-th line's, as "Input Dims"
    lines = [l.rstrip("\r\n").split(";") for l in open(run / "FRAMEWORK" / "cpu_framework_0.txt")
             if l.strip()]
    execs = sorted((int(t.split(",")[0]), line.split(";")[0]) for line in
                   open(run / "FRAMEWORK" / "cpu_op_execute_timestamp_0.txt")
                   for t in line.strip().split(";")[2].split())
    assert len(lines) == len(execs)

    def dims(v):
        v = v.split(":", 1)[1]
        return [] if v == "NoShape" else (
            [int(d) for d in v[1:-1].split(",") if d.strip()] if re.fullmatch(r"\[[0-9, ]*\]", v)
            else v)
    want = {}
    for f, (start, full) in zip(lines, execs):
        if f[1]:
            assert full.rsplit("/", 1)[-1] == f[1], (f, full)
        if f[3:] != [""] * len(f[3:]):  # a line with inputs
            want[start] = [dims(x) for x in f[3:] if x]

    def num(x):  # got was read with parse_int=str
        return [num(y) for y in x] if isinstance(x, list) else int(x) if x.isdigit() else x
    have = {ns(e["ts"]): num(e["args"]["Input Dims"]) for e in got
            if e["pid"] == "CPU OP" and e["ph"] == "X" and "Input Dims" in e["args"]}
    assert len(want) > 10 and have == want, (have, want)
    # the first Dense's MatMul: input, weight (and two inputs without a shape)
    assert [[4, 8], [16, 8], [], []] in have.values()
    # MindSpore gives the "Scope Layer" spans no cat: they arrive with cat scope_layer (role
    # scope: not operators)
    scope = {str(e["pid"]) for e in tv if e["ph"] == "M" and e["name"] == "process_name"
             and e["args"]["name"] == "Scope Layer"}
    assert {e.get("cat") for e in got if e["ph"] == "X" and e["pid"] in scope} == {"scope_layer"}


def ns(text):
    """A decimal µs text ("1795415463091014.778") in ns, exactly."""
    whole, _, frac = str(text).partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def paddle_pb_host_starts(path):
    """The exact start ns of the host events of a *.paddle_trace.pb, by (name, start in whole
    µs), decoded here from the wire format (nodetree.proto: NodeTreesProto 3 thread_trees,
    ThreadNodeTreeProto 2 host_nodes, HostTraceEventNode 3 host_trace_event,
    HostTraceEventProto 1 name, 3 start_ns), independently of the importer."""
    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            if key & 7 == 0:
                v, i = varint(b, i)
            elif key & 7 == 2:
                n, i = varint(b, i)
                v, i = b[i:i + n], i + n
            else:
                v, i = None, i + {1: 8, 5: 4}[key & 7]
            yield key >> 3, v

    def varint(b, i):
        v = shift = 0
        while True:
            v, i, shift = v | (b[i] & 127) << shift, i + 1, shift + 7
            if b[i - 1] < 128:
                return v, i
    starts = {}
    for f, tree in fields(path.read_bytes()):
        for g, node in fields(tree) if f == 3 else ():
            for h, ev in fields(node) if g == 2 else ():
                if h == 3:
                    d = dict(fields(ev))
                    starts.setdefault((d[1].decode(), d[3] // 1000), []).append(d[3])
    return starts


def paddle_name(name):
    """An event's name without the "[1.658 ms]" Paddle's chrome trace appends."""
    return re.sub(r"\[-?[0-9.]+ ?(?:ns|us|ms|s)\]$", "", name)


def paddle_printed_offset_ns(off):
    """The start_time Paddle's chrome-trace logger prints for an event off ns into the window:
    "%.3f us" of nsToUsFloat(start, window start) = (float)(start - window start) / 1000,
    computed in float (Paddle's profiler utils.h), as ns."""
    return paddle_offset_ns("%.3f us" % f32(f32(off) / 1000))


def paddle_slack_ns(off):
    """How far Paddle's printed offset of off ns can be from the exact one: (float)off is off by
    at most off / 2**24 ns (24 bits of mantissa), the float quotient by 1000 by as much again,
    "%.3f" by half a ns; the error is whole ns, so at most floor(off / 2**23 + 1/2). Below 2**23
    ns that is 0: the printed offset is exact."""
    return (abs(off) + 2 ** 22) // 2 ** 23


@pytest.mark.parametrize("window", ["short", "long"])
def test_paddle_profiler_chrome_output(daemon, window, request):
    """paddle.profiler's export_chrome_tracing (3.x) ends traceEvents with an empty "{}": it is
    skipped. Every real event arrives as it was written but for two members, as the live
    collector sends them: "name" without its "[1.658 ms]" and "ts", which Paddle truncates to
    the µs, rebuilt to the ns from args.start_time, Paddle's float-rounded offset from the
    window's start. The oracle is the same window's *.paddle_trace.pb (exact ns): each rebuilt
    ts is within what the JSON allows of its twin there: its offset's rounding
    (paddle_slack_ns) plus the width of the window starts that fit every event's ts and offset.
    The long window (0.3 s asleep per step) has offsets past 2**23 ns on every run, so the
    rounded case is always checked, not only when the machine happens to be slow."""
    out = request.getfixturevalue("paddle_output" if window == "short" else "paddle_long_output")
    path = next(out.glob("*.json"))
    exact = paddle_pb_host_starts(next(out.glob("*.paddle_trace.pb")))
    events = json.loads(path.read_text())["traceEvents"]
    real = [e for e in events if e != {}]
    assert len(real) < len(events)
    timed = [e for e in real if "start_time" in e.get("args", {})]
    assert len(timed) > 100

    def twins(e):  # the .pb's host events of e's name that started in e's µs
        return exact.get((paddle_name(e["name"]), e["ts"]), [])
    # The window's true start, from the events whose printed offsets are exact (under 2**23
    # ns): the one start their twins agree on.
    starts = {t - paddle_offset_ns(e["args"]["start_time"]) for e in timed
              if paddle_offset_ns(e["args"]["start_time"]) < 2 ** 23
              for t in twins(e)}
    common = [s for s in starts if all(
        any(paddle_printed_offset_ns(t - s) == paddle_offset_ns(e["args"]["start_time"])
            for t in twins(e)) for e in timed)]
    # Paddle's formula gives every JSON offset from its twin's exact one, for one start only
    assert len(common) == 1, (len(starts), common)
    start = common[0]

    def twin(e):
        off = paddle_offset_ns(e["args"]["start_time"])
        t = [t for t in twins(e) if paddle_printed_offset_ns(t - start) == off]
        assert t and max(abs(off - (x - start)) for x in t) <= paddle_slack_ns(off), (e, t)
        return t
    offs = [paddle_offset_ns(e["args"]["start_time"]) for e in timed]
    moved = sum(paddle_offset_ns(e["args"]["start_time"]) != twin(e)[0] - start for e in timed)
    if window == "long":
        assert max(offs) > 2 ** 24 and moved > 0, (max(offs), moved)
    # The starts every event allows: ts - offset is the start less 0 to 999 ns (truncation),
    # give or take the offset's rounding.
    lo = max(e["ts"] * 1000 - o - paddle_slack_ns(o) for e, o in zip(timed, offs))
    hi = min(e["ts"] * 1000 - o + paddle_slack_ns(o) for e, o in zip(timed, offs)) + 999
    assert lo <= start <= hi, (lo, start, hi)
    p = run_import(daemon, "--job", f"pd-{window}", path)
    assert_ok(p)
    assert f"{len(real)} events" in p.stdout and "paddle (paddle)" in p.stdout, p.stdout
    # every event but ts as written, the name without its suffix
    got = timeline(daemon, f"pd-{window}")
    strip = lambda e: dict(e, name=paddle_name(e["name"]), ts=0)  # noqa: E731
    assert sum(strip(e)["name"] != e["name"] for e in real) >= len(timed)
    assert sorted(json.dumps(strip(e), sort_keys=True) for e in got if e["name"] != "ExtraInfo") == \
        sorted(json.dumps(strip(e), sort_keys=True) for e in real)
    # ... and after them the file's ExtraInfo CPU figures, one record over the window's host
    # events as rebuilt (docs/PROTOCOL.md 9)
    extra = [e for e in got if e["name"] == "ExtraInfo"]
    doc_extra = json.loads(path.read_text())["ExtraInfo"]
    keys = ("Process Cpu Utilization", "System Cpu Utilization")
    assert [e["args"] for e in extra] == [{k: doc_extra[k] for k in keys}], extra
    # ts, read as text (a double does not hold 16 digits and 3 decimals), against the twins
    st, _, body = daemon.request(f"/api/v1/jobs/pd-{window}/timeline?limit=100000")
    text = json.loads(body, parse_float=str, parse_int=str)["traceEvents"]
    assert st == 200
    xs = [e for e in text if e.get("ph") == "X"]
    extra = [e for e in text if e["name"] == "ExtraInfo"]
    assert ns(extra[0]["ts"]) == min(ns(e["ts"]) for e in xs)
    assert abs(ns(extra[0]["ts"]) + ns(extra[0]["dur"]) -
               max(ns(e["ts"]) + ns(e["dur"]) for e in xs)) <= 2
    worst, rebuilt = 0, 0
    for g in text:
        if "start_time" not in g.get("args", {}):
            continue
        g_ns = ns(g["ts"])
        e = [e for e in timed if e["args"] == g["args"] and e["tid"] == g["tid"] and
             strip(e)["name"] == g["name"]]
        assert e, g
        o = paddle_offset_ns(e[0]["args"]["start_time"])
        err = min(abs(g_ns - t) for x in e for t in twin(x))
        # the start chosen in [lo, hi] is at most hi - lo from the true one
        assert err <= hi - lo + paddle_slack_ns(o), (g, err, hi - lo, paddle_slack_ns(o))
        worst, rebuilt = max(worst, err), rebuilt + (g_ns % 1000 != 0)
    assert rebuilt > len(timed) / 2, rebuilt
    print(f"{window}: {len(timed)} events, offsets to {max(offs)} ns, {moved} rounded, "
          f"starts allowed {hi - lo} ns wide, worst rebuilt ts {worst} ns from the .pb")
    # Validated in two halves: the times rebuilt from both halves' offsets, the same events.
    p = run_import(daemon, "--job", f"pd-{window}-halves", path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" in p.stderr and "paddle (paddle)" in p.stdout, p.stderr
    assert timeline(daemon, f"pd-{window}-halves") == metadata_last(got)


def f32(x):
    """x rounded to a C float (IEEE binary32, to nearest)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def paddle_json_dur(dur_us):
    """The "dur" Paddle's chrome-trace logger writes for an event of dur_us (whole ns):
    "%.3f" of nsToUsFloat(ns) = (float)ns / 1000, computed in float (Paddle's profiler
    utils.h). A float has 24 bits: from 8192 us on its step is over half a ns, past 2**24 ns the
    ns themselves are rounded, so the JSON's dur of a range that long can be 1 or 2 ns off the
    exact one. (Rounding the double quotient to a float gives the float quotient: 53 >= 2 * 24
    + 2 bits.)"""
    ns = round(dur_us * 1000)
    return float("%.3f" % f32(f32(ns) / 1000))


def test_paddle_profiler_protobuf_output(daemon, paddle_output, tmp):
    """paddle.profiler's export_protobuf (3.x) writes *.paddle_trace.pb: its host events are the
    JSON twin's X events (same names without the suffix, categories, threads and durations),
    with times in whole ns where the JSON truncates ts to the µs and writes dur from a float
    (paddle_json_dur). A damaged copy is refused with the byte offset and nothing is sent."""
    pb = next(paddle_output.glob("*.paddle_trace.pb"))
    twin = [e for e in json.loads(next(paddle_output.glob("*.json")).read_text())["traceEvents"]
            if e.get("ph") == "X"]
    bad = tmp / "cut.paddle_trace.pb"
    raw = pb.read_bytes()
    bad.write_bytes(raw[:len(raw) * 2 // 3])
    p = run_import(daemon, bad)
    assert p.returncode == 3 and re.search(r"cut\.paddle_trace\.pb: byte \d+: \S+: ", p.stderr), p.stderr
    assert "nothing was imported" in p.stderr
    assert_nothing_sent(daemon)
    p = run_import(daemon, pb)
    assert_ok(p)
    job = pb.name[:-len(".paddle_trace.pb")]
    # the X events and the ExtraInfo record (docs/PROTOCOL.md 9) after them
    assert f"{len(twin) + 1} events, job \"{job}\"" in p.stdout and "paddle (paddle-protobuf)" in p.stdout, p.stdout
    got = timeline(daemon, job)
    assert [e["name"] for e in got if e["ph"] != "X"] == ["ExtraInfo"]
    got = [e for e in got if e["ph"] == "X"]
    assert len(got) == len(twin) > 100
    key = lambda e: (paddle_name(e["name"]), e["cat"], e["pid"], e["tid"], e["dur"])  # noqa: E731
    assert sorted(key(dict(e, dur=paddle_json_dur(e["dur"]))) for e in got) == sorted(map(key, twin))
    # ts: the JSON's whole µs is the ns time truncated (compared as text: a double does not
    # hold 16 digits and 3 decimals)
    st, _, body = daemon.request(f"/api/v1/jobs/{q(job)}/timeline?limit=100000")
    ts_ns = [int(m.group(1)) * 1000 + int((m.group(2) or "").ljust(3, "0"))
             for m in re.finditer(r'"ts":(\d+)(?:\.(\d+))?', body.decode())]
    ts_ns.remove(min(ts_ns))  # the ExtraInfo record's: the window's first host event's
    assert st == 200 and sorted(t // 1000 for t in ts_ns) == sorted(e["ts"] for e in twin)
    assert any(t % 1000 for t in ts_ns)
    # imported again: nothing new (same file, same stream)
    p = run_import(daemon, pb)
    assert_ok(p)
    assert "0 sent" in p.stdout, p.stdout
    # a valid export without events (only its version) imports as nothing, not as JSON
    empty = tmp / "empty.pb"
    empty.write_bytes(b"\x0a\x051.0.2")
    p = run_import(daemon, empty)
    assert_ok(p)
    assert "0 events" in p.stdout and "paddle-protobuf" in p.stdout, p.stdout


def test_ranks_from_file_names_and_rank_option(daemon, tmp):
    d = tmp / "two"
    d.mkdir()
    (d / "device_queue_profiling_0.txt").write_text("1 8 1 0 10\n1 8 2 8 20\n")
    (d / "device_queue_profiling_3.txt").write_text("1 8 1 4 10\n")
    p = run_import(daemon, "--rank", "1", d)
    assert p.returncode == 2 and "--rank applies to a folder of one rank" in p.stderr, p.stderr
    assert_nothing_sent(daemon)
    p = run_import(daemon, d)
    assert_ok(p)
    assert "rank 0 of 4" in p.stdout and "rank 3 of 4" in p.stdout, p.stdout
    doc = wait_json(daemon, "/api/v1/jobs/two/queues", lambda x: len(x["queues"]) == 2)
    assert {(x["rank"], x["samples"], x["empty"], x["full"]) for x in doc["queues"]} == {
        (0, 2, 1, 1), (3, 1, 0, 0)}
    one = tmp / "one"
    one.mkdir()
    (one / "device_queue_profiling_3.txt").write_text("1 8 1 4 10\n")
    assert_ok(run_import(daemon, "--rank", "5", one))
    doc = wait_json(daemon, "/api/v1/jobs/one/queues", lambda x: len(x["queues"]) == 1)
    assert doc["queues"][0]["rank"] == 5


# -- files in the shape MindSpore writes them (issue 14, item 3) --------------------------------------
# MindSpore writes its intermediate CSV files with Python's csv.writer: CRLF line endings, and
# Python's None as an empty cell. These tests write them the same way (csv.writer, None -> "").

def write_ms_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)  # lineterminator "\r\n", as MindSpore's files have
        w.writerow(header)
        for r in rows:
            w.writerow(r)
    assert b"\r\n" in path.read_bytes()


PIPELINE_HEADER = ["op_id", "op_type", "num_workers", "output_queue_size",
                   "output_queue_average_size", "output_queue_length", "output_queue_usage_rate",
                   "sample_interval", "parent_id", "children_id"]


def pipeline_row(op_id, op_type, workers, sizes, length, parent, children, interval=10):
    """One row as MindSpore's minddata_pipeline_parser._get_op_info() builds it: no queue
    metrics -> every queue cell None; a leaf's children None; the root's parent None."""
    avg = sum(sizes) / len(sizes) if sizes else None
    usage = avg / length if avg is not None and length else None
    return [op_id, op_type, workers, sizes, avg, length, usage, interval, parent,
            children if children else None]


def test_real_pipeline_raw_with_empty_cells_imports(daemon, tmp):
    d = tmp / "md-real"
    d.mkdir()
    write_ms_csv(d / "minddata_pipeline_raw_0.csv", PIPELINE_HEADER, [
        pipeline_row(0, "DeviceQueue", 1, None, None, None, [1]),     # root: no output queue
        pipeline_row(1, "Batch", 4, [60, 62, 64], 64, 0, [2]),
        pipeline_row(2, "Map", 8, [2, 0, 1, 1], 16, 1, [3, 4]),
        pipeline_row(3, "TFReader", 4, [16, 16, 15], 16, 2, None),    # leaves
        pipeline_row(4, "TFReader", 4, [3, 2, 1], 16, 2, None),
    ])
    text = (d / "minddata_pipeline_raw_0.csv").read_bytes().decode()
    assert ",,,,," in text and text.endswith(",\r\n")  # empty queue cells, empty children_id
    p = run_import(daemon, d)
    assert_ok(p)
    doc = wait_json(daemon, "/api/v1/jobs/md-real/pipeline?rank=0", lambda x: x.get("ops"))
    ops = {o["id"]: o for o in doc["ops"]}
    assert [ops[i]["children"] for i in range(5)] == [[1], [2], [3, 4], [], []]
    assert [ops[i]["parent"] for i in range(5)] == [-1, 0, 1, 2, 2]
    assert ops[0]["queue_usage"] is None and ops[0]["num_workers"] == 1
    assert close(ops[1]["queue_usage"], 62 / 64, 1e-6)
    # MindInsight's rules on it: Map's input queue (TFReader 3's, 0.979) is fuller than its own
    # (0.0625) by more than 0.1, and TFReader 4 is a leaf below 0.6.
    assert sorted((b["op_id"], b["reason"]) for b in doc["bottlenecks"]) == [
        (2, "child_fuller"), (4, "leaf_low")]
    # and the helper's pipeline rule reads the real folder's ops
    helper = daemon.get_json("/api/v1/jobs/md-real/helper?rank=0")
    assert helper["inputs"]["pipeline_ops"] == 5


def test_cpu_utilization_process_figure_is_sent(daemon, tmp):
    """minddata_cpu_utilization_<r>.json: process_info's user and sys are a share of the whole
    machine; times cpu_processor_num they are the protocol's % of one core."""
    d = tmp / "cpu-real"
    d.mkdir()
    (d / "minddata_cpu_utilization_0.json").write_text(json.dumps({
        "sampling_interval": 1000, "cpu_processor_num": 8, "time_stamp": [10.5, 11.5, 12.5],
        "device_info": {"user_utilization": [30, 40, 50], "sys_utilization": [5, 5, 6],
                        "io_utilization": [0, 1, 0], "idle_utilization": [65, 54, 44],
                        "runable_processes": [3, 4, 2], "context_switch_count": [900, 1000, 1100]},
        "process_info": {"user_utilization": [10, 12.5, 15], "sys_utilization": [1, 1.5, 2]},
        "op_info": [{"op_id": 1, "metrics": {"user_utilization": [4, 5, 6],
                                             "sys_utilization": [1, 1, 1]}}]}))
    assert_ok(run_import(daemon, d))
    dev = wait_json(daemon, "/api/v1/jobs/cpu-real/summary/device?rank=0",
                    lambda x: x.get("host_samples"))
    rows = {r["device"]: r for r in dev["rows"]}
    # process: mean of (user + sys) * 8 = mean(88, 112, 136) = 112 % of one core
    assert close(rows["CPU(Process)"]["utilization_pct"], 112.0, 1e-6), rows
    # system: mean of 100 - idle = mean(35, 46, 56)
    assert close(rows["CPU(System)"]["utilization_pct"], 137 / 3, 1e-4), rows


AICPU_HEADER = ["serial_number", "op_type", "total_time", "dispatch_time", "execution_time",
                "run_start", "run_end"]


AICPU_ROWS = [  # serial, op, total, dispatch, execution, run_start, run_end
    [1, "InitData", 7.906, 0.012, 7.85, 154907895000.12, 154907902850.12],
    [2, "GetNext-op6", 0.05, 0.011, 0.003, 154907895300.5, 154907895303.5],
    [3, "GetNext-op6", 0.07, 0.013, 0.004, 154907895610.25, 154907895614.25],
    [4, "DropoutGenMask-op281", 0.2, 0.02, 0.15, 154907896000.0, 154907896150.0],
    [5, "DropoutGenMask-op281", 0.4, 0.04, 0.1, 154907896500.0, 154907896600.0],
]


def write_aicpu_txt(path, rows):
    """output_data_preprocess_aicpu_<r>.txt as MindSpore's DataPreProcessParser writes it
    (fwrite_format: the header joined by blanks, each row's str()s joined by blanks, then the
    "AI CPU Total Time(ms):" line)."""
    header = ["serial_number", "node_type_name", "total_time(ms)", "dispatch_time(ms)",
              "execution_time(ms)", "run_start", "run_end"]
    lines = [" ".join(header)] + [" ".join(map(str, r)) for r in rows]
    lines.append(" ".join(["AI CPU Total Time(ms):", format(sum(r[2] for r in rows), ".6f")]))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("files", ["txt", "csv+txt"])
def test_aicpu_from_output_data_preprocess_txt(daemon, tmp, files):
    """Without aicpu_intermediate_<r>.csv the import reads the table it is copied from,
    output_data_preprocess_aicpu_<r>.txt, to the same figures; with both, the .csv alone (each
    task once)."""
    d = copy_folder(tmp, "04_minddata_queues", "aicpu-" + files.replace("+", "-"))
    write_aicpu_txt(d / "output_data_preprocess_aicpu_1.txt", AICPU_ROWS)
    if files == "csv+txt":
        write_ms_csv(d / "aicpu_intermediate_1.csv", AICPU_HEADER, AICPU_ROWS)
    p = run_import(daemon, d)
    assert_ok(p)
    used = "aicpu_intermediate_1.csv" if files == "csv+txt" else "output_data_preprocess_aicpu_1.txt"
    assert used in p.stdout and (files == "txt" or "output_data_preprocess" not in p.stdout), p.stdout
    job = d.name
    doc = wait_json(daemon, f"/api/v1/jobs/{job}/kernels?rank=1&sort=total", lambda x: x["total"] >= 3)
    assert [(r["name"], r["calls"]) for r in doc["rows"]] == [
        ("InitData", 1), ("DropoutGenMask-op281", 2), ("GetNext-op6", 2)]
    assert close(sum(r["total_us"] for r in doc["rows"]), sum(r[2] for r in AICPU_ROWS) * 1000, 1e-6)
    ev = [e for e in timeline(daemon, job) if e.get("ph") == "X" and e["pid"] == "AI CPU"]
    assert [e["ts"] for e in ev] == [r[5] for r in AICPU_ROWS]


def test_aicpu_totals_and_clock_match_mindinsight(daemon, tmp):
    """aicpu_intermediate_<r>.csv as MindSpore writes it (Integrator._parse_aicpu_time copies
    output_data_preprocess_aicpu_<r>.txt's rows: times in ms, run_start/run_end in µs of the
    clock GetNext's minddata_aicpu_<r>.txt uses). MindInsight's AI CPU type table sums
    total_time (not execution_time) per type, its detail averages total_time and dispatch_time."""
    d = copy_folder(tmp, "04_minddata_queues", "aicpu")
    rows = AICPU_ROWS
    write_ms_csv(d / "aicpu_intermediate_1.csv", AICPU_HEADER, rows)
    assert_ok(run_import(daemon, d))
    doc = wait_json(daemon, "/api/v1/jobs/aicpu/kernels?rank=1&limit=100", lambda x: x["total"] >= 3)
    got = {r["name"]: r for r in doc["rows"]}
    total = sum(r[2] for r in rows)
    for name in ("InitData", "GetNext-op6", "DropoutGenMask-op281"):
        mine = [r for r in rows if r[1] == name]
        t_us = sum(r[2] for r in mine) * 1000
        assert got[name]["calls"] == len(mine)
        assert close(got[name]["total_us"], t_us, 1e-6), (name, got[name])
        assert close(got[name]["avg_us"], t_us / len(mine), 1e-6)
        # MindInsight's percent: round(total / all * 100, 2)
        assert round(got[name]["percent"], 2) == round(sum(r[2] for r in mine) / total * 100, 2)
    # ordered by total as MindInsight orders them: InitData, DropoutGenMask, GetNext
    by_total = daemon.get_json("/api/v1/jobs/aicpu/kernels?rank=1&sort=total")["rows"]
    assert [r["name"] for r in by_total] == ["InitData", "DropoutGenMask-op281", "GetNext-op6"]
    ev = [e for e in timeline(daemon, "aicpu") if e.get("ph") == "X"]
    aicpu = [e for e in ev if e["pid"] == "AI CPU"]
    getnext = [e for e in ev if e.get("tid") == "GetNext"]
    # the AI CPU spans sit on the GetNext records' clock (µs), not 1000x later
    assert [e["ts"] for e in aicpu] == [r[5] for r in rows]
    assert abs(aicpu[1]["ts"] - getnext[0]["ts"]) < 10
    # dispatch and execution times travel with each span
    assert [(e["args"]["dispatch_time_us"], e["args"]["execution_time_us"]) for e in aicpu] == [
        (round(r[3] * 1000, 3), round(r[4] * 1000, 3)) for r in rows]


def mindinsight_aicpu(rows):
    """MindInsight's AI CPU tables computed by hand from its formulas (reference/mindinsight.md
    section 1.3; AicpuTypeAnalyser, AicpuDetailAnalyser): each ms value through _format_float_data
    (< 1: 6 decimals, else 3), a row's kernel_type its name up to the first '-'. Type: total_time =
    sum(total_time) * 1000 (µs), execution_frequency = count, percent = round(total / all * 100, 2).
    Detail (per name): avg_execution_time = mean(total_time) * 1000 (µs; MindInsight's column name,
    its value is total_time's mean), dispatch_time = mean(dispatch_time) * 1000, frequency."""
    def fmt(v):
        return round(v, 6) if v < 1 else round(v, 3)
    types, names = {}, {}
    for r in rows:
        t = types.setdefault(r[1].split("-")[0], [0.0, 0])
        t[0] += r[2] * 1000
        t[1] += 1
        n = names.setdefault(r[1], [0.0, 0.0, 0.0, 0])
        n[0] += fmt(r[2])
        n[1] += fmt(r[3])
        n[2] += r[4]
        n[3] += 1
    all_us = sum(v[0] for v in types.values())
    type_rows = {k: {"total_us": round(v[0], 3), "calls": v[1],
                     "percent": round(round(v[0], 3) / all_us * 100, 2)} for k, v in types.items()}
    detail = {k: {"kernel_type": k.split("-")[0], "avg_us": round(v[0] / v[3] * 1000, 3),
                  "dispatch_avg_us": round(v[1] / v[3] * 1000, 3),
                  "exec_avg_us": round(v[2] / v[3] * 1000, 3), "calls": v[3]}
              for k, v in names.items()}
    return type_rows, detail


AICPU_ROWS_TABLE = AICPU_ROWS + [  # a second op of the GetNext type, a second InitData
    [6, "GetNext-op7", 0.03, 0.009, 0.002, 154907897000.0, 154907897002.0],
    [7, "InitData", 1.2345, 0.0155, 1.1, 154907898000.0, 154907899100.0],
]


@pytest.mark.parametrize("shape", ["csv", "txt"])
def test_aicpu_dispatch_table_matches_mindinsight(daemon, tmp, shape):
    """MindInsight's AI CPU tables (issue 14 item 3: dispatch time was carried per task in the
    spans' args but tabled nowhere): /summary/aicpu gives the type table (total, calls, percent)
    and the detail table per op (mean total_time, mean dispatch_time, mean execution_time,
    calls), equal to MindInsight's formulas applied by hand to the same rows, from the file as
    MindSpore writes it (aicpu_intermediate_<r>.csv with CRLF, or its blank-separated source
    output_data_preprocess_aicpu_<r>.txt)."""
    d = copy_folder(tmp, "04_minddata_queues", "aicpu-table-" + shape)
    rows = AICPU_ROWS_TABLE
    if shape == "csv":
        write_ms_csv(d / "aicpu_intermediate_1.csv", AICPU_HEADER, rows)
    else:
        write_aicpu_txt(d / "output_data_preprocess_aicpu_1.txt", rows)
    assert_ok(run_import(daemon, d))
    job = d.name
    wait_json(daemon, f"/api/v1/jobs/{job}/kernels?rank=1", lambda x: x["total"] >= 4)
    doc = daemon.get_json(f"/api/v1/jobs/{job}/summary/aicpu?rank=1")
    want_types, want_detail = mindinsight_aicpu(rows)
    assert doc["kind"] == "aicpu" and doc["tasks"] == len(rows) and doc["spans_cut"] == 0
    # the GetNext wait spans of the same folder (no dispatch time) are not AI CPU tasks
    assert close(doc["total_us"], sum(r[2] for r in rows) * 1000, 1e-3)
    got_types = {t["kernel_type"]: t for t in doc["types"]}
    assert set(got_types) == set(want_types) == {"InitData", "GetNext", "DropoutGenMask"}
    for k, w in want_types.items():
        g = got_types[k]
        assert g["calls"] == w["calls"] and close(g["total_us"], w["total_us"], 1e-3), (k, g, w)
        assert round(g["percent"], 2) == w["percent"], (k, g, w)
    # MindInsight's type order: total_time desc
    assert [t["kernel_type"] for t in doc["types"]] == sorted(
        want_types, key=lambda k: -want_types[k]["total_us"])
    got = {r["kernel_name"]: r for r in doc["rows"]}
    assert set(got) == set(want_detail)
    for k, w in want_detail.items():
        g = got[k]
        assert g["kernel_type"] == w["kernel_type"] and g["calls"] == w["calls"], (k, g, w)
        mine = [r for r in rows if r[1] == k]
        for col, i in (("avg_us", 2), ("dispatch_avg_us", 3), ("exec_avg_us", 4)):
            # the exact mean of the file's values ...
            assert close(g[col], sum(r[i] for r in mine) / len(mine) * 1000, 1e-3), (k, col, g)
            # ... which is MindInsight's but for its rounding of each value >= 1 ms to 3
            # decimals (_format_float_data) before averaging: InitData's 1.2345 ms is 1234 µs
            # there (docs/ANALYSIS.md)
            assert abs(g[col] - w[col]) <= 0.5 + 1e-3, (k, col, g, w)
            if all(r[i] < 1 for r in mine):
                assert close(g[col], w[col], 1e-3), (k, col, g, w)
    # MindInsight's detail order: avg_execution_time desc
    assert [r["kernel_name"] for r in doc["rows"]] == sorted(
        want_detail, key=lambda k: -want_detail[k]["avg_us"])
    # CSV gives the detail rows, every one
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/summary/aicpu?rank=1&format=csv")
    assert st == 200
    lines = body.decode().strip().splitlines()
    assert lines[0] == "kernel_name,kernel_type,calls,total_us,avg_us,dispatch_avg_us,exec_avg_us"
    assert len(lines) == 1 + len(want_detail)
    # text: both tables
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/summary/aicpu?rank=1&format=text&time_unit=us")
    text = body.decode()
    assert st == 200
    assert "AI CPU Type Summary" in text and "AI CPU Detail" in text and "GetNext-op7" in text


def test_aicore_operator_types_in_the_operator_views(daemon):
    """MindInsight's central view, the AI Core operator types (aicore_type, sorted by total
    time): a MindSpore Ascend folder has no host operators, so /operators answers its device
    operators (side "device"), and group=type gives MindInsight's rows: kernel_type,
    total_time (µs), execution_frequency, avg_time, in MindInsight's order.
    Quirk: MindInsight's total_percent is the type file's percent times 100 (5760.0 for
    57.60 %), and that percent's denominator is larger than the sum of the operators' times
    (MindSpore adds output_op_compute_time's "total" line to it, docs/ANALYSIS.md); ours is
    the share of the AI Core time the table holds, so the order is the same."""
    exp = expected("06_op_stats")["run1_dev1 aicore_type sort total_time desc"]
    assert_ok(run_import(daemon, MS / "06_op_stats" / "run1_dev1"))
    want = [dict(zip(exp["col_name"], o)) for o in exp["object"]]
    for path in ("/api/v1/jobs/run1_dev1/operators?group=type&sort=total&limit=100",
                 "/api/v1/jobs/run1_dev1/kernels?group=type&sort=total&limit=100"):
        doc = wait_json(daemon, path, lambda d: d["total"] == exp["size"])
        if "operators" in path:
            assert doc["side"] == "device" and doc["group"] == "type"
        got = doc["rows"]
        assert [r["name"] for r in got] == [w["kernel_type"] for w in want]
        for r, w in zip(got, want):
            assert r["calls"] == w["execution_frequency"], (r, w)
            assert close(r["total_us"], w["total_time"], 0.006), (r, w)
            assert close(r["avg_us"], w["avg_time"], 0.001), (r, w)
            assert close(r["percent"], r["total_us"] / sum(x["total_us"] for x in got) * 100,
                         1e-3)
        assert got[0]["percent"] > want[0]["total_percent"] / 100
    # the overview pie's query: top 5 types by self time (= total on the device) and Other
    top = daemon.get_json("/api/v1/jobs/run1_dev1/operators?group=type&sort=self&top=5&limit=6")
    assert [r["name"] for r in top["rows"]] == [w["kernel_type"] for w in want[:5]] + ["Other"]
    assert close(top["rows"][-1]["total_us"], sum(w["total_time"] for w in want[5:]), 0.02)
    # the host side is asked for explicitly: none here
    assert daemon.get_json("/api/v1/jobs/run1_dev1/operators?side=host")["total"] == 0
    st, _, body = daemon.request("/api/v1/jobs/run1_dev1/operators?side=gpu")
    assert st == 400 and b"side: host or device" in body


def test_pipeline_queue_and_cpu_figures_as_mindinsight_shows(daemon, tmp):
    """What MindInsight's data-process page shows, from the same real-shaped files: per op the
    output queue size series, its average size and the sampling interval (op-queue and
    /minddata-pipeline/queue), and the CPU view (minddata-cpu-utilization-summary): the system's
    user, sys, io, idle, runnable and context-switch series, the process's user and sys, and
    user and sys per pipeline op (op_id -1, the threads outside the pipeline, left out), each
    with its average (MindInsight rounds it, round(mean); we give the mean)."""
    d = tmp / "md-cpu"
    d.mkdir()
    rows = [
        pipeline_row(0, "DeviceQueue", 1, None, None, None, [1], 20),
        pipeline_row(1, "Batch", 4, [60, 62, 64, 63], 64, 0, [2], 20),
        pipeline_row(2, "Map", 8, [2, 0, 1, 1], 16, 1, None, 20),
    ]
    write_ms_csv(d / "minddata_pipeline_raw_0.csv", PIPELINE_HEADER, rows)
    cpu = {"sampling_interval": 1000, "cpu_processor_num": 8, "time_stamp": [1.5, 2.5, 3.5],
           "device_info": {"user_utilization": [30, 41, 52], "sys_utilization": [5, 6, 8],
                           "io_utilization": [0, 1, 0], "idle_utilization": [65, 52, 40],
                           "runable_processes": [3, 4, 2],
                           "context_switch_count": [900, 1000, 1150]},
           "process_info": {"user_utilization": [10, 12.5, 15], "sys_utilization": [1, 1.5, 2]},
           "op_info": [{"op_id": -1, "metrics": {"user_utilization": [9, 9, 9],
                                                 "sys_utilization": [1, 1, 1]}},
                       {"op_id": 1, "metrics": {"user_utilization": [4, 5, 7],
                                                "sys_utilization": [1, 1, 2]}},
                       {"op_id": 2, "metrics": {"user_utilization": [20, 30, 40],
                                                "sys_utilization": [2, 3, 4]}}]}
    (d / "minddata_cpu_utilization_0.json").write_text(json.dumps(cpu))
    assert_ok(run_import(daemon, d))
    base = "/api/v1/jobs/md-cpu/pipeline?rank=0"
    doc = wait_json(daemon, base, lambda x: x.get("ops"))
    ops = {o["id"]: o for o in doc["ops"]}
    # the root has no output queue: no figures (MindInsight shows its usage as 0)
    assert ops[0]["queue_usage"] is None and ops[0]["queue_size_avg"] is None
    assert ops[0]["queue_samples"] == 0 and ops[0]["sample_interval_ms"] == 20
    for r in rows[1:]:
        o = ops[r[0]]
        assert close(o["queue_size_avg"], r[4], 1e-9) and o["queue_samples"] == len(r[3])
        assert o["sample_interval_ms"] == r[7] and "queue_size" not in o  # series on request
        one = daemon.get_json(f"{base}&op={r[0]}")
        mine = next(x for x in one["ops"] if x["id"] == r[0])
        assert mine["queue_size"] == r[3]
    by_op = {x["op_id"]: x["metrics"] for x in cpu["op_info"]}
    for i in (1, 2):
        assert close(ops[i]["cpu_user_avg"], sum(by_op[i]["user_utilization"]) / 3, 1e-9)
        assert close(ops[i]["cpu_sys_avg"], sum(by_op[i]["sys_utilization"]) / 3, 1e-9)
    assert daemon.get_json(f"{base}&op=2")["ops"][2]["cpu_user"] == [20, 30, 40]
    c = doc["cpu"]
    assert (c["sampling_interval_ms"], c["processors"]) == (1000, 8)
    names = {"user": "user_utilization", "sys": "sys_utilization", "io": "io_utilization",
             "idle": "idle_utilization", "runnable": "runable_processes",
             "context_switch": "context_switch_count"}
    for ours, theirs in names.items():
        want = cpu["device_info"][theirs]
        assert c[ours] == want, ours
        assert close(c[ours + "_avg"], sum(want) / len(want), 1e-9), ours
    for ours, theirs in (("process_user", "user_utilization"), ("process_sys", "sys_utilization")):
        want = cpu["process_info"][theirs]
        assert c[ours] == want and close(c[ours + "_avg"], sum(want) / len(want), 1e-9)
    # CSV: the averages as columns
    st, _, body = daemon.request(base + "&format=csv")
    lines = body.decode().splitlines()
    assert lines[0].endswith(",queue_avg_size,sample_interval_ms,cpu_user_avg,cpu_sys_avg")
    assert lines[2].split(",")[-4:] == ["62.25", "20", "5.333333333", "1.333333333"]
