# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/memory: torch-tb-profiler's memory view, checked against the plugin itself.

The real torch-tb-profiler 0.4.3 is no test dependency (it pulls tensorboard): its own answer on
each trace, RunProfile.get_memory_stats() and get_memory_curve() in bytes and microseconds, was
written by tests/analyse/tb_profiler_memory.py and committed beside the trace
(`*.tb_memory.json`, tests/data/README.md). Each trace is imported with `stepscope import` into
the real daemon; the operator table must equal the plugin's row for row (calls, size increase,
self size increase, allocation count, self allocation count, allocation size, self allocation
size, per device), the curve its points (time, allocated, reserved), the peak its peak and the
time of it. The H200 run also knows torch.cuda.max_memory_allocated() over the whole loop
(meta.json): the profiler window saw the same peak.
"""
import gzip
import json
import pathlib
import subprocess

import pytest

from conftest import build_dir, clean_env

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = {
    "h200_views_a": ("cuda_views_h200/trace_a.json.gz", "cuda_views_h200/trace_a.tb_memory.json"),
    "h200_attach_mem": ("cuda_attach_mem_h200/trace.json.gz",
                        "cuda_attach_mem_h200/trace.tb_memory.json"),
}


def imported(d, tmp, name, files):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", name] + [str(f) for f in files],
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return d.job(name)["id"]


@pytest.mark.parametrize("name", sorted(TRACES))
def test_memory_equals_tb_profiler(daemon, tmp, name):
    trace, answer = TRACES[name]
    want = json.loads((DATA / answer).read_text())
    job = imported(daemon, tmp, name, [DATA / trace])
    doc = daemon.get_json(f"/api/v1/jobs/{job}/memory?points=100000")
    # The plugin's first_ts is the trace's first event (its X spans and memory events).
    events = json.load(gzip.open(DATA / trace))["traceEvents"]
    first_us = min(e["ts"] for e in events
                   if (e.get("ph") == "X" and "ts" in e) or e.get("name") == "[memory]")
    assert first_us == want["first_ts_us"]
    series = {s["device"]: s for s in doc["devices"] if s["source"] == "trace"}
    assert sorted(series) == sorted(want["devices"])
    rows = {}
    for r in doc["operators"]:
        rows.setdefault(r["device"], []).append(
            [r["name"], r["calls"], r["size_increase"], r["self_size_increase"],
             r["allocation_count"], r["self_allocation_count"], r["allocation_size"],
             r["self_allocation_size"]])
    for dev, ref in want["devices"].items():
        s = series[dev]
        # the table: the plugin's rows (sorted by name, as it sorts them), every figure equal
        assert [[r[0]] + [float(x) for x in r[1:]] for r in rows[dev]] == \
            [[r[0]] + [float(x) for x in r[1:]] for r in ref["stats"]], dev
        # the curve: every point (below the plugin's 10240 and our ?points=, none dropped)
        assert s["points"] == s["kept"] == len(ref["curve"])
        base = round(want["first_ts_us"] * 1000)
        for (ts, alloc, res), (t_us, ref_alloc, ref_res) in zip(s["curve"], ref["curve"]):
            assert alloc == ref_alloc and res == ref_res
            assert abs((ts - base) / 1000 - t_us) < 1e-3  # the plugin's float us
        assert s["peak_allocated"] == ref["peak"]
        assert abs((s["peak_ts_ns"] - base) / 1000 - ref["peak_ts_us"]) < 1e-3
    if name == "h200_attach_mem":
        meta = json.loads((DATA / "cuda_attach_mem_h200" / "meta.json").read_text())
        assert series["GPU0"]["peak_allocated"] == meta["max_memory_allocated"]
        # the peak falls in a ProfilerStep# of the window
        assert series["GPU0"]["peak_step"] is not None


def test_memory_downsampled_keeps_the_peak(daemon, tmp):
    trace, answer = TRACES["h200_views_a"]
    want = json.loads((DATA / answer).read_text())["devices"]["GPU0"]
    job = imported(daemon, tmp, "h200_views_a", [DATA / trace])
    for points in (10, 37, 100):
        doc = daemon.get_json(f"/api/v1/jobs/{job}/memory?points={points}&device=GPU0")
        s = doc["devices"][0]
        assert s["points"] == len(want["curve"]) and s["kept"] <= points
        assert s["peak_allocated"] == want["peak"]
        assert max(p[1] for p in s["curve"]) == want["peak"]
        assert [p[0] for p in s["curve"]] == sorted(p[0] for p in s["curve"])
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/memory?format=csv")
    assert st == 200
    lines = body.decode().strip().split("\n")
    assert lines[0].startswith("device,name,calls,size_increase")
    assert len(lines) - 1 == len(want["stats"])
    rec = daemon.get_json(f"/api/v1/jobs/{job}/memory?format=records&table=devices")
    assert rec[0]["device"] == "GPU0" and rec[0]["peak_allocated"] == want["peak"]
    daemon.get_json(f"/api/v1/jobs/{job}/memory?table=nope", status=400)
    # a device the rank has no memory events on (a typo, the CPU of a GPU-only trace) is a 404
    # naming the parameter, as a rank it lacks is, not an empty view that reads as "no memory"
    for dev in ("gpu0", "GPU9", "CPU"):
        doc = daemon.get_json(f"/api/v1/jobs/{job}/memory?device={dev}", status=404)
        assert doc["error"]["message"].startswith("device: "), doc
    # a rank with no memory event at all keeps its empty answer whatever the device (a live job
    # before its first window)
    cpu = imported(daemon, tmp, "no_memory",
                   [pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" /
                    "cpu_only_rank34.json.gz"])
    empty = daemon.get_json(f"/api/v1/jobs/{cpu}/memory?rank=34&device=GPU0")
    assert empty["devices"] == [] and empty["events"] == 0


def test_real_cuda_allocator_series_equals_torchs_peaks(daemon):
    """The real allocator on a GPU: tests/data/kineto/cuda_attach_alloc_h200 is what
    tests/device/cuda_attach.py --memory recorded on an NVIDIA H200 (torch 2.11, CUDA 13): every
    line attach(memory=True) sent, with a "[memory stats]" sample of torch.cuda.memory_stats() at
    each step's end. Replayed over the socket as sent, /memory's GPU0 allocator series has one
    point per step, and its peaks are torch.cuda.max_memory_allocated()/max_memory_reserved()
    after the loop (meta.json); the window's own trace peak is the same bytes."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "device"))
    import check_cuda_attach as cca

    meta, _, trace, lines = cca.load(DATA / "cuda_attach_alloc_h200")
    n_alloc = sum(1 for ln in lines if b'"[memory stats]"' in ln)
    assert n_alloc == meta["recorded"] == 12
    n, errors = cca.replay(daemon, lines)
    assert n == meta["recorder"]["lines"] and not errors, errors[:3]
    job = meta["job"]
    daemon.wait_for("every line held",
                    lambda: daemon.job(job).get("events") == meta["window_events"] + n_alloc, timeout=60)
    def series():
        doc = daemon.get_json(f"/api/v1/jobs/{job}/memory?points=100000")
        return {(s["device"], s["source"]): s for s in doc["devices"]}
    daemon.wait_for("the allocator series", lambda: ("GPU0", "allocator") in series(), timeout=30)
    s = series()
    a = s[("GPU0", "allocator")]
    assert a["points"] == meta["recorded"]
    assert a["peak_allocated"] == meta["max_memory_allocated"] == 85185024
    assert a["peak_reserved"] == meta["max_memory_reserved"]
    assert s[("GPU0", "trace")]["peak_allocated"] == cca.trace_peaks(trace)["GPU0"] == a["peak_allocated"]
