# SPDX-License-Identifier: MIT
"""/gpu/temporal, /gpu/kernel-types, /gpu/overlap and /gpu/launches against Holistic Trace Analysis 0.5.0 itself (tests/integ/requirements.txt; the
oracle runs here, in-process, on the very files imported).

Each real Kineto trace (HTA's own sample traces, MIT, and the two H200 CUDA runs of
tests/device/cuda_views.py, with a copy stream and host syncs) is imported with `stepscope
import` into the real daemon; every route's per-rank numbers must equal what HTA's
TraceAnalysis computes on the same file, with the same options.

Rounding: HTA rounds a nanosecond-resolution trace's events to whole microseconds (ts up, end
down; HTA_DISABLE_NS_ROUNDING=1 turns that off). stepscope keeps nanoseconds by default and
reads as HTA does with ?rounding=us (docs/ANALYSIS.md). Both pairs are checked: rounding=ns
against HTA with its rounding off, rounding=us against HTA's default (on the traces written in
whole microseconds the two readings coincide). HTA sums float microseconds (about 4.8e12 us: a
double's step is 2^-10 us, 1 ns), so times may differ by 1 ns per device event summed (the same
bound holds with its rounding on: no float end of these traces floors across a microsecond);
percentages are compared at HTA's 2 decimals.
"""
import copy
import csv
import io
import itertools
import json
import logging
import pathlib
import shutil
import subprocess

import pytest

from conftest import build_dir, clean_env

from hta.trace_analysis import TraceAnalysis  # noqa: E402  (CI installs it: requirements.txt)

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
# name: the files of one job (one per rank)
TRACES = {
    "gpu_5steps": ["gpu_5steps_rank0.json.gz"],
    "gpu_2steps_sampled": ["gpu_2steps_sampled_rank0.json.gz", "gpu_2steps_sampled_rank1.json.gz"],
    "h200_a": ["cuda_views_h200/trace_a.json.gz"],
    "h200_b": ["cuda_views_h200/trace_b.json.gz"],
    "h200_attach_mem": ["cuda_attach_mem_h200/trace.json.gz"],
}


# (name, include_last, rounding) -> HTA's TraceAnalysis as parsed: HTA reads the files (and the
# rounding variable) only there, and parsing a trace takes seconds where a copy takes ms.
_PARSED = {}


def hta(tmp, name, monkeypatch, include_last, rounding):
    """HTA's TraceAnalysis of the trace's files (one folder, as HTA reads a job): a fresh copy
    of the module's one parse of them, so what one analysis leaves on it reaches no other."""
    key = (name, include_last, rounding)
    if key not in _PARSED:
        folder = tmp / ("hta-" + name)
        if not folder.exists():
            folder.mkdir()
            for f in TRACES[name]:
                shutil.copy(DATA / f, folder / pathlib.Path(f).name)
        monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "0" if rounding else "1")
        logging.disable(logging.WARNING)
        try:
            _PARSED[key] = TraceAnalysis(trace_dir=str(folder),
                                         include_last_profiler_step=include_last)
        finally:
            logging.disable(logging.NOTSET)
    return copy.deepcopy(_PARSED[key])


def imported(d, tmp, name):
    files = [str(DATA / f) for f in TRACES[name]]
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", name] + files,
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return d.job(name)["id"]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_temporal_equals_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    for include_last in (False, True):
        for rounding in (False, True):
            ta = hta(tmp, name, monkeypatch, include_last, rounding)
            want = ta.get_temporal_breakdown(visualize=False).set_index("rank")
            q = "?last_step=" + ("include" if include_last else "exclude")
            q += "&rounding=" + ("us" if rounding else "ns")
            doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal{q}")
            assert doc["last_step"] == ("include" if include_last else "exclude")
            assert doc["rounding"] == ("us" if rounding else "ns")
            got = {r["rank"]: r for r in doc["rows"]}
            assert sorted(got) == sorted(want.index), (name, include_last)
            for rank, ref in want.iterrows():
                row = got[rank]
                kept = sum(len(df[df["stream"].ne(-1)]) for r, df in ta.t.traces.items()
                           if r == rank)
                assert row["device_events_kept"] == kept, (name, rank, include_last)
                tol = kept * 0.001 + 1e-6
                for ours, theirs in (("idle_us", "idle_time(us)"),
                                     ("compute_us", "compute_time(us)"),
                                     ("non_compute_us", "non_compute_time(us)"),
                                     ("kernel_us", "kernel_time(us)")):
                    assert row[ours] == pytest.approx(ref[theirs], abs=tol), \
                        (name, rank, include_last, ours)
                for ours, theirs in (("idle_pct", "idle_time_pctg"),
                                     ("compute_pct", "compute_time_pctg"),
                                     ("non_compute_pct", "non_compute_time_pctg")):
                    assert round(row[ours], 2) == pytest.approx(ref[theirs], abs=0.011), \
                        (name, rank, include_last, ours)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_kernel_types_equal_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    for include_last, rounding, memory in itertools.product((False, True), repeat=3):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        q = "?last_step=%s&rounding=%s&memory=%s" % (
            "include" if include_last else "exclude", "us" if rounding else "ns",
            "include" if memory else "exclude")
        doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types{q}")
        assert doc["memory"] == ("include" if memory else "exclude")
        what = (name, include_last, rounding, memory)
        # HTA's table sums each set of types over the ranks; per rank, HTA run on the rank's
        # trace alone is the same computation (its types are per rank until that sum).
        types_df, _ = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=memory)
        want = {r["kernel_type"]: r["sum"] for _, r in types_df.iterrows() if r["sum"] > 0}
        got = {r["kernel_type"]: r["us"] for r in doc["all_ranks"]}
        assert sorted(got) == sorted(want), what
        n_segments = sum(len(df[df["stream"].ne(-1)]) for df in ta.t.traces.values()) * 2
        # HTA truncates each swept segment to whole microseconds (astype(int)); with its
        # rounding on every time is whole already, so the two are equal to the ns.
        tol = 1e-6 if rounding else n_segments * 1.0
        for k, v in want.items():
            assert got[k] == pytest.approx(v, abs=tol), (what, k)
        pct = {r["kernel_type"]: r["pct"] for r in doc["all_ranks"]}
        want_pct = {r["kernel_type"]: r["percentage"] for _, r in types_df.iterrows() if r["sum"] > 0}
        if rounding:
            for k, v in want_pct.items():
                # HTA rounds to 1 decimal, we give 4: ours within half its last digit.
                assert pct[k] == pytest.approx(v, abs=0.0501), (what, k)
        # Per rank: the rows sum, per rank, to that rank's share.
        per = {}
        for r in doc["rows"]:
            per[r["kernel_type"]] = per.get(r["kernel_type"], 0) + r["us"]
        assert per == pytest.approx(got, abs=1e-3), what


@pytest.mark.parametrize("name", sorted(TRACES))
def test_kernel_metrics_equal_hta(daemon, tmp, monkeypatch, name):
    """/gpu/kernel-types?table=kernels is HTA's per-kernel table (get_gpu_kernel_breakdown()'s
    kernel_metrics_df): per rank and kernel type the top kernels and "others", with HTA's own
    fold and re-aggregation, for its defaults and a smaller num_kernels / duration_ratio."""
    job = imported(daemon, tmp, name)
    for include_last, rounding, memory in itertools.product((False, True), repeat=3):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        for num, ratio in ((10, 0.8), (3, 0.5)):
            q = "?table=kernels&last_step=%s&rounding=%s&memory=%s&num_kernels=%d&duration_ratio=%g" % (
                "include" if include_last else "exclude", "us" if rounding else "ns",
                "include" if memory else "exclude", num, ratio)
            doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types{q}")
            assert (doc["num_kernels"], doc["duration_ratio"]) == (num, ratio)
            _, want = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=memory,
                                                  num_kernels=num, duration_ratio=ratio)
            what = (name, include_last, rounding, memory, num, ratio)
            ref = {(int(r["rank"]), r["kernel_type"], r["name"]): r for _, r in want.iterrows()}
            got = {(r["rank"], r["kernel_type"], r["name"]): r for r in doc["rows"]}
            assert sorted(got) == sorted(ref), what
            assert doc["total"] == len(ref)
            n_events = sum(len(df[df["stream"].ne(-1)]) for df in ta.t.traces.values())
            for k, w in ref.items():
                g = got[k]
                assert g["others"] == (k[2] == "others"), (what, k)
                # a sum of float microseconds: 1 ns per event at most (3 decimals rendered)
                tol = n_events * 0.001 + 0.001
                for ours, theirs in (("sum_us", "sum (us)"), ("max_us", "max (us)"),
                                     ("min_us", "min (us)"), ("mean_us", "mean (us)"),
                                     ("stddev", "stddev")):
                    assert g[ours] == pytest.approx(float(w[theirs]), abs=tol, rel=1e-6), (what, k, ours)
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/gpu/kernel-types?table=kernels&format=csv")
    lines = body.decode().splitlines()
    assert st == 200
    assert lines[0] == "rank,kernel_type,name,others,sum_us,max_us,min_us,mean_us,stddev"
    assert len(lines) == 1 + daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?table=kernels")["total"]
    # CSV carries the records' columns, in order, and the same `others` flag per row
    records = daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?table=kernels&format=records")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert records and all(lines[0].split(",") == list(r) for r in records)
    assert [r["others"] for r in rows] == [json.dumps(r["others"]) for r in records]
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?table=kernels&duration_ratio=2", status=400)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?table=kinds", status=400)


@pytest.mark.parametrize("name", sorted(TRACES))
def test_overlap_equals_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    for include_last, rounding in itertools.product((False, True), repeat=2):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        want = ta.get_comm_comp_overlap(visualize=False).set_index("rank")
        q = "?last_step=%s&rounding=%s" % ("include" if include_last else "exclude",
                                            "us" if rounding else "ns")
        doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/overlap{q}")
        got = {r["rank"]: r for r in doc["rows"]}
        assert sorted(got) == sorted(want.index)
        for rank, ref in want.iterrows():
            what = (name, rank, include_last, rounding)
            row = got[rank]
            if ref["comp_comm_overlap_pctg"] != ref["comp_comm_overlap_pctg"]:  # NaN: no comm
                assert row["overlap_pct"] is None and row["communication_us"] == 0, what
                continue
            # HTA gives the percentage only, at 2 decimals.
            assert round(row["overlap_pct"], 2) == pytest.approx(ref["comp_comm_overlap_pctg"],
                                                                 abs=0.011), what


@pytest.mark.parametrize("name", sorted(TRACES))
def test_launches_equal_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    ranks = len(TRACES[name])
    for include_last, rounding, memory in itertools.product((False, True), repeat=3):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        want = ta.get_cuda_kernel_launch_stats(ranks=list(range(ranks)), visualize=False,
                                               include_memory_events=memory)
        q = "?last_step=%s&rounding=%s&memory=%s&format=records" % (
            "include" if include_last else "exclude", "us" if rounding else "ns",
            "include" if memory else "exclude")
        rows = daemon.get_json(f"/api/v1/jobs/{job}/gpu/launches{q}")
        for rank in range(ranks):
            what = (name, rank, include_last, rounding, memory)
            ours = sorted((r["correlation"], r["cpu_duration_us"], r["gpu_duration_us"],
                           r["launch_delay_us"]) for r in rows if r["rank"] == rank)
            theirs = sorted(want[rank][["correlation", "cpu_duration", "gpu_duration",
                                        "launch_delay"]].itertuples(index=False, name=None))
            assert [t[0] for t in ours] == [int(t[0]) for t in theirs], what
            for o, t in zip(ours, theirs):
                # float microseconds in HTA: 1 ns per time (3 ns for the delay, a difference of 3)
                assert o[1:] == pytest.approx(t[1:], abs=0.0031), (what, o, t)
            # HTA's flags (its plots' definitions) from its own numbers, with its cutoffs
            flagged = [r for r in rows if r["rank"] == rank]
            by = {}
            for r in flagged:
                by.setdefault(r["correlation"], []).append(r)
            for c, cpu, gpu, delay in theirs:
                r = by[int(c)][0]
                if abs(cpu - 50) > 0.01:
                    assert r["runtime_outlier"] == (cpu > 50), what
                if abs(delay - 100) > 0.01:
                    assert r["delay_outlier"] == (delay > 100), what
                if abs(gpu - cpu) > 0.01 and abs(cpu - 50) > 0.01:
                    assert r["short"] == (cpu <= 50 and gpu < cpu), what


def test_csv_rank_and_bad_parameters(daemon, tmp):
    job = imported(daemon, tmp, "gpu_2steps_sampled")
    doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal?rank=1")
    assert [r["rank"] for r in doc["rows"]] == [1]
    status, headers, body = daemon.request(f"/api/v1/jobs/{job}/gpu/temporal?format=csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    lines = body.decode().splitlines()
    assert lines[0].startswith("rank,kernel_us,idle_us,compute_us,non_compute_us,")
    full = daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal")["rows"]
    for line, row in zip(lines[1:], full):
        f = dict(zip(lines[0].split(","), line.split(",")))
        assert int(f["rank"]) == row["rank"]
        assert float(f["idle_us"]) == row["idle_us"]
        assert float(f["compute_pct"]) == row["compute_pct"]
    assert len(lines) == 1 + len(full)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal?rank=7", status=404)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal?last_step=all", status=400)

    # Kernel types: HTA's TraceAnalysis default counts memory events; CSV holds the JSON's rows.
    kt = daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types")
    assert kt["memory"] == "include" and any(r["kernel_type"] == "MEMORY" for r in kt["rows"])
    status, headers, body = daemon.request(f"/api/v1/jobs/{job}/gpu/kernel-types?format=csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    lines = body.decode().splitlines()
    assert lines[0] == "rank,kernel_type,us,pct"
    assert [ln.split(",")[:2] for ln in lines[1:]] == \
        [[str(r["rank"]), r["kernel_type"]] for r in kt["rows"]]
    for ln, r in zip(lines[1:], kt["rows"]):
        assert float(ln.split(",")[2]) == r["us"] and float(ln.split(",")[3]) == r["pct"]
    one = daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?rank=1&memory=exclude")
    assert {r["rank"] for r in one["rows"]} == {1}
    assert sum(r["pct"] for r in one["rows"]) == pytest.approx(100, abs=1e-3)
    assert not any("MEMORY" in r["kernel_type"] for r in one["rows"])
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types?memory=yes", status=400)

    # Overlap: CSV holds the JSON's rows; it takes no memory option (HTA's never counts memory).
    ov = daemon.get_json(f"/api/v1/jobs/{job}/gpu/overlap")["rows"]
    status, headers, body = daemon.request(f"/api/v1/jobs/{job}/gpu/overlap?format=csv")
    lines = body.decode().splitlines()
    assert lines[0] == "rank,communication_us,overlap_us,overlap_pct"
    assert [[float(x) for x in ln.split(",")] for ln in lines[1:]] == \
        [[r["rank"], r["communication_us"], r["overlap_us"], r["overlap_pct"]] for r in ov]
    assert daemon.get_json(f"/api/v1/jobs/{job}/gpu/overlap?memory=include")["rows"] == ov

    # Launches: paged JSON, CSV of every row (names quoted as RFC 4180), summary over all rows.
    la = daemon.get_json(f"/api/v1/jobs/{job}/gpu/launches?limit=5&offset=3")
    whole = daemon.get_json(f"/api/v1/jobs/{job}/gpu/launches?format=records")
    assert la["total"] == len(whole) and la["rows"] == whole[3:8]
    assert [(x["rank"], x["launches"]) for x in la["summary"]] == \
        [(r, sum(1 for w in whole if w["rank"] == r)) for r in (0, 1)]
    assert sum(x["delay_outliers"] for x in la["summary"]) == sum(w["delay_outlier"] for w in whole)
    import csv
    import io
    status, headers, body = daemon.request(f"/api/v1/jobs/{job}/gpu/launches?format=csv")
    got = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(got) == len(whole)
    for g, w in zip(got, whole):
        assert (g["kernel"], float(g["launch_delay_us"]), g["short"] == "true") == \
            (w["kernel"], w["launch_delay_us"], w["short"])
    strict = daemon.get_json(f"/api/v1/jobs/{job}/gpu/launches?runtime_cutoff_us=0&limit=1")
    assert sum(x["runtime_outliers"] for x in strict["summary"]) == \
        sum(1 for w in whole if w["cpu_duration_us"] > 0)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/launches?delay_cutoff_us=-1", status=400)


def test_live_window_equals_hta(daemon, tmp, monkeypatch):
    """The live path: the lines stepscope.torch.attach() and trace_handler() sent on the H200
    (profile_memory=True; tests/device/cuda_attach.py --memory), replayed over the socket as the
    collector sent them, give the same /gpu/temporal and /gpu/kernel-types as HTA on the window's
    own trace file."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "device"))
    import check_cuda_attach as cca
    meta, _, _, lines = cca.load(DATA / "cuda_attach_mem_h200")
    assert meta["profile_memory"] and meta["max_memory_allocated"] > 0
    job = __import__("json").loads(lines[0])["job"]
    n, errors = cca.replay(daemon, lines)
    assert not errors and n == len(lines) - 1
    daemon.wait_for("every event held", lambda: daemon.job(job).get("events") == meta["window_events"], timeout=60)
    ta = hta(tmp, "h200_attach_mem", monkeypatch, False, False)
    ref = ta.get_temporal_breakdown(visualize=False).iloc[0]
    kept = sum(len(df[df["stream"].ne(-1)]) for df in ta.t.traces.values())

    def matches():
        rows = daemon.get_json(f"/api/v1/jobs/{job}/gpu/temporal")["rows"]
        return len(rows) == 1 and rows[0]["device_events_kept"] == kept and rows[0]
    row = daemon.wait_for("the window's device events in /gpu/temporal", matches, timeout=30)
    for ours, theirs in (("idle_us", "idle_time(us)"), ("compute_us", "compute_time(us)"),
                         ("non_compute_us", "non_compute_time(us)"), ("kernel_us", "kernel_time(us)")):
        assert row[ours] == pytest.approx(ref[theirs], abs=kept * 0.001 + 1e-6), ours
    types_df, _ = ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
    want = {r["kernel_type"]: r["sum"] for _, r in types_df.iterrows() if r["sum"] > 0}
    got = {r["kernel_type"]: r["us"] for r in
           daemon.get_json(f"/api/v1/jobs/{job}/gpu/kernel-types")["all_ranks"]}
    assert sorted(got) == sorted(want)
    for k, v in want.items():
        assert got[k] == pytest.approx(v, abs=kept * 2.0), k
    # Per stream: the stream of each live device event (its tid, kept in the span's spare byte)
    check_idle(daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle"), ta, 0, "live")
    series, summary, full = hta_queue(ta, 0, 2)
    rows = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue?max_queue=2")["rows"]
    assert sorted(r["stream"] for r in rows) == sorted(int(s) for s in series.stream.unique())
    for r in rows:
        ref = summary.loc[(0, r["stream"])]["queue_length"]
        assert (r["count"], r["max"]) == (ref["count"], ref["max"])
        assert r["mean"] == pytest.approx(ref["mean"], abs=1e-4)
        assert r["full_us"] == pytest.approx(full[r["stream"]][0], abs=0.0051)


IDLE_TRACES = ["gpu_5steps", "h200_a", "h200_attach_mem"]


def hta_idle(ta, rank, stats=True):
    """HTA's idle time breakdown of rank: {(stream, category): (idle_time, ratio)} and its
    per-interval stats {(stream, category): describe() row}."""
    df, st = ta.get_idle_time_breakdown(ranks=[rank], visualize=False,
                                        show_idle_interval_stats=stats)
    want = {(int(r["stream"]), r["idle_category"]): (r["idle_time"], r["idle_time_ratio"])
            for _, r in df.iterrows()}
    intervals = {(int(r["stream"]), cat): r for cat, r in st.iterrows()} if stats else {}
    return want, intervals


def check_idle(doc, ta, rank, what):
    want, intervals = hta_idle(ta, rank)
    got = {(r["stream"], r["idle_category"]): r for r in doc["rows"] if r["rank"] == rank}
    # HTA lists a stream's categories that occur; we list all three (0 and no interval else).
    assert {s for s, _ in got} == {s for s, _ in want}, what
    for key, row in got.items():
        t, ratio = want.get(key, (0.0, 0.0))
        n = row["intervals"]["count"]
        # HTA sums float microseconds, rounded to 2 decimals: 1 ns per interval.
        assert row["idle_us"] == pytest.approx(t, abs=0.0051 + n * 0.001), (what, key)
        if row["idle_pct"] is not None:
            assert row["idle_pct"] / 100 == pytest.approx(ratio, abs=0.0051), (what, key)
        ref = intervals.get(key)
        if ref is None:
            assert n == 0, (what, key)
            continue
        assert n == ref["count"], (what, key)
        for ours, theirs in (("mean_us", "mean"), ("std_us", "std"), ("min_us", "min"),
                             ("p25_us", "25%"), ("p50_us", "50%"), ("p75_us", "75%"),
                             ("max_us", "max")):
            if ref[theirs] != ref[theirs]:  # NaN
                assert row["intervals"][ours] is None, (what, key, ours)
            else:  # HTA rounds the stats to 2 decimals
                assert row["intervals"][ours] == pytest.approx(ref[theirs], abs=0.0051), \
                    (what, key, ours)


@pytest.mark.parametrize("name", IDLE_TRACES)
def test_idle_equals_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    for include_last, rounding in itertools.product((False, True), repeat=2):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        q = "?last_step=%s&rounding=%s" % ("include" if include_last else "exclude",
                                            "us" if rounding else "ns")
        doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle{q}")
        assert doc["consecutive_kernel_delay_us"] == 30
        assert [r["streams_folded_events"] for r in doc["ranks"]] == [0] * len(TRACES[name])
        for rank in range(len(TRACES[name])):
            check_idle(doc, ta, rank, (name, rank, include_last, rounding))
    # HTA's consecutive_kernel_delay, in its trace's unit (us), moves kernel waits to other.
    ta = hta(tmp, name, monkeypatch, False, False)
    doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle?consecutive_kernel_delay_us=5")
    df, _ = ta.get_idle_time_breakdown(consecutive_kernel_delay=5, visualize=False)
    want = {(int(r["stream"]), r["idle_category"]): r["idle_time"] for _, r in df.iterrows()}
    for r in doc["rows"]:
        if r["rank"] == 0:
            assert r["idle_us"] == pytest.approx(want.get((r["stream"], r["idle_category"]), 0),
                                                 abs=0.0051 + r["intervals"]["count"] * 0.001)


def hta_queue(ta, rank, max_queue):
    """HTA's queue length summary and time at max_queue per stream of rank."""
    ql = ta.get_queue_length_time_series(ranks=[rank])
    summary = ta.get_queue_length_summary(ranks=[rank])
    full = {}
    for stream in ql[rank].stream.unique():
        one = {rank: ql[rank][ql[rank].stream == stream]}
        df = ta.get_time_spent_blocked_on_full_queue(one, max_queue_length=max_queue)
        full[int(stream)] = (df.iloc[0]["duration_at_max_queue_length"],
                             df.iloc[0]["relative_duration_at_max_queue_length"]) if len(df) else (0, 0)
    return ql[rank], summary, full


@pytest.mark.parametrize("name", IDLE_TRACES)
def test_queue_equals_hta(daemon, tmp, monkeypatch, name):
    job = imported(daemon, tmp, name)
    for include_last, rounding in itertools.product((False, True), repeat=2):
        ta = hta(tmp, name, monkeypatch, include_last, rounding)
        q = "?last_step=%s&rounding=%s&max_queue=2&points=100000" % (
            "include" if include_last else "exclude", "us" if rounding else "ns")
        doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue{q}")
        assert doc["max_queue"] == 2
        for rank in range(len(TRACES[name])):
            what = (name, rank, include_last, rounding)
            series, summary, full = hta_queue(ta, rank, 2)
            got = {r["stream"]: r for r in doc["rows"] if r["rank"] == rank}
            assert sorted(got) == sorted(int(s) for s in series.stream.unique()), what
            for stream, row in got.items():
                ref = summary.loc[(rank, stream)]["queue_length"]
                s = series[series.stream == stream]
                # At equal times HTA's order is its unstable sort's (numpy quicksort), ours puts
                # launches first: a point inside a run of g changes at one instant may differ
                # by up to g (the run's last point, the only one that lasts, is the same).
                runs = s.groupby("ts").size()
                tol = float(runs.max()) if runs.max() > 1 else 0.0
                assert row["count"] == ref["count"] == row["points"] == row["kept"], (what, stream)
                for k, theirs in (("mean", "mean"), ("std", "std"), ("min", "min"),
                                  ("p25", "25%"), ("p50", "50%"), ("p75", "75%"), ("max", "max")):
                    assert row[k] == pytest.approx(ref[theirs], abs=tol * 1.01 + 1e-4), \
                        (what, stream, k)
                ours, theirs = sorted(row["series"]["queue_length"]), sorted(s.queue_length.tolist())
                if tol == 0:  # the whole series, point by point
                    assert ours == theirs, (what, stream)
                else:
                    assert max(abs(a - b) for a, b in zip(ours, theirs)) <= tol, (what, stream)
                assert row["full_us"] == pytest.approx(full[stream][0], abs=0.0051), (what, stream)
                # HTA's relative time is over its whole trace's span (every event); ours over
                # the spans the breakdown keeps (no python_function): equal or a little more.
                assert row["full_pct"] == pytest.approx(full[stream][1] * 100, rel=0.1, abs=1e-4), \
                    (what, stream)


def test_idle_queue_csv_points_and_streams_past_the_table(daemon, tmp):
    """CSV and records hold the JSON's rows; ?points= bounds the series and keeps its extremes;
    a rank with more streams than a span record can name (254) reports the events left out."""
    import csv
    import io
    import json
    job = imported(daemon, tmp, "gpu_5steps")
    idle = daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle")
    status, headers, body = daemon.request(f"/api/v1/jobs/{job}/gpu/idle?format=csv")
    assert status == 200 and headers["content-type"].startswith("text/csv")
    got = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(int(g["stream"]), g["idle_category"], float(g["idle_us"])) for g in got] == \
        [(r["stream"], r["idle_category"], r["idle_us"]) for r in idle["rows"]]
    assert [int(g["intervals"]) for g in got] == [r["intervals"]["count"] for r in idle["rows"]]
    full = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue?points=100000")
    few = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue?points=40")
    assert few["max_points"] == 40
    for a, b in zip(full["rows"], few["rows"]):
        assert (a["stream"], a["points"], a["max"], a["mean"]) == (b["stream"], b["points"], b["max"], b["mean"])
        assert b["kept"] == len(b["series"]["ts_us"]) <= 40
        assert b["kept"] == a["points"] or a["points"] > 40
        s = b["series"]
        assert max(s["queue_length"]) == a["max"] and min(s["queue_length"]) == a["min"]
        assert s["ts_us"][0] == a["series"]["ts_us"][0] and s["ts_us"][-1] == a["series"]["ts_us"][-1]
        assert s["ts_us"] == sorted(s["ts_us"])
    status, _, body = daemon.request(f"/api/v1/jobs/{job}/gpu/queue?format=csv&table=series&points=40")
    pts = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(pts) == sum(r["kept"] for r in few["rows"])
    assert [float(p["ts_us"]) for p in pts if int(p["stream"]) == few["rows"][0]["stream"]] == \
        few["rows"][0]["series"]["ts_us"]
    rec = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue?format=records")
    assert [(r["stream"], r["count"], r["full_us"]) for r in rec] == \
        [(r["stream"], r["count"], r["full_us"]) for r in full["rows"]]
    for bad in ("points=3", "max_queue=0", "table=points"):
        daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue?{bad}", status=400)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle?consecutive_kernel_delay_us=-1", status=400)
    daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle?rank=3", status=404)

    # 260 streams, two kernels each, launched one after the other: streams past the 254th are
    # left out and counted.
    ev = []
    for s in range(260):
        for k in range(2):
            c = s * 2 + k
            t = 10.0 * c
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t, "dur": 2, "args": {"correlation": c}})
            ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 100 + s,
                       "ts": t + 5, "dur": 3, "args": {"correlation": c, "stream": 100 + s,
                                                       "device": 0}})
    path = tmp / "streams.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet", "--socket",
                          daemon.socket, "--job", "streams", str(path)],
                         capture_output=True, text=True, timeout=60, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    job = daemon.job("streams")["id"]
    doc = daemon.get_json(f"/api/v1/jobs/{job}/gpu/idle")
    assert doc["ranks"][0]["streams_folded_events"] == 6 * 2
    assert doc["ranks"][0]["on_streams"] == 254 * 2
    assert sorted({r["stream"] for r in doc["rows"]}) == list(range(100, 354))
    q = daemon.get_json(f"/api/v1/jobs/{job}/gpu/queue")
    assert len(q["rows"]) == 254 and q["ranks"][0]["streams_folded_events"] == 12
    assert all(r["series"]["queue_length"] == [1, 0, 1, 0] for r in q["rows"])
