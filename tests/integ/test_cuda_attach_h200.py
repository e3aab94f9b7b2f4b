# SPDX-License-Identifier: MIT
"""/operators and /kernels on a real CUDA run equal torch's own prof.key_averages().

tests/data/kineto/cuda_attach_h200 is what tests/device/cuda_attach.py recorded on an NVIDIA
H200 with torch 2.11.0+cu130 (Kineto): the Kineto window (trace.json.gz), every line the live
collector sent (records.ndjson.gz), torch's key_averages() rows (key_averages.json) and meta.json.
Both paths into the real daemon are checked: the trace imported with the `stepscope` CLI, and the
recorded lines replayed over the socket as the collector sent them (check_cuda_attach.py's
replay). The host rows must be exactly key_averages()' CPU rows: Kineto's GPU mirrors of host
ranges (cat gpu_user_annotation: ProfilerStep#2..#5, Optimizer.step#SGD.step) are CUDA rows for
torch, not host operators (docs/ANALYSIS.md, "Roles").
"""
import pathlib
import subprocess
import sys
import time

from conftest import build_dir, clean_env

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "device"))
import check_cuda_attach as cca  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cuda_attach_h200"


def rows(d, job, route):
    return {r["name"]: r for r in d.get_json(f"/api/v1/jobs/{job}/{route}?limit=100000")["rows"]}


def wait_complete(d, job, n_events, names):
    """Until the job holds every event and a snapshot published after that lists every name."""
    d.wait_for(f"{job} holding {n_events} events", lambda: d.job(job).get("events") == n_events, timeout=60)
    d.wait_for(f"{job}'s tables listing torch's names",
               lambda: names <= set(rows(d, job, "operators")) | set(rows(d, job, "kernels")))
    time.sleep(0.5)  # a few publishes (100 ms) more


def assert_equals_key_averages(d, job, ka, trace):
    host = {a["name"]: a for a in ka if a["device_type"] == "CPU"}
    ops = rows(d, job, "operators")
    assert not [n for n in ops if n.startswith("ProfilerStep#")], sorted(ops)
    assert sorted(ops) == sorted(host), (sorted(set(ops) - set(host)), sorted(set(host) - set(ops)))
    bad = [(n, a["count"], a["self_cpu_us"], a["cpu_total_us"],
            ops[n]["calls"], ops[n]["self_us"], ops[n]["total_us"])
           for n, a in host.items()
           if not (ops[n]["calls"] == a["count"] and cca.close(ops[n]["self_us"], a["self_cpu_us"], a["count"])
                   and cca.close(ops[n]["total_us"], a["cpu_total_us"], a["count"]))]
    assert not bad, bad
    # the Optimizer.step range's GPU mirror must not add calls to its host row
    assert ops["Optimizer.step#SGD.step"]["calls"] == host["Optimizer.step#SGD.step"]["count"] == 4
    assert ops["ProfilerStep*"]["calls"] == 4

    kernel_names = {e["name"] for e in trace if e.get("cat") == "kernel"}
    cuda = {a["name"]: a for a in ka if a["device_type"] == "CUDA" and a["name"] in kernel_names}
    kern = rows(d, job, "kernels")
    assert len(cuda) == 27 and sorted(kern) == sorted(cuda), sorted(set(kern) ^ set(cuda))
    bad = [(n, a["count"], a["self_cuda_us"], kern[n]["calls"], kern[n]["total_us"])
           for n, a in cuda.items()
           if not (kern[n]["calls"] == a["count"] and cca.close(kern[n]["total_us"], a["self_cuda_us"], a["count"]))]
    assert not bad, bad


def test_imported_h200_trace_equals_key_averages(daemon, tmp):
    meta, ka, trace, _ = cca.load(DATA)
    assert (meta["torch"], meta["device"]) == ("2.11.0+cu130", "NVIDIA H200")
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", daemon.socket, "--job", "h200", str(DATA / "trace.json.gz")],
                         capture_output=True, text=True, timeout=120, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    n_events = sum(1 for e in trace if isinstance(e, dict) and "ph" in e)
    wait_complete(daemon, "h200", n_events, {a["name"] for a in ka if a["device_type"] == "CPU"})
    assert_equals_key_averages(daemon, "h200", ka, trace)


def test_replayed_h200_stream_equals_key_averages(daemon):
    meta, ka, trace, lines = cca.load(DATA)
    n, errors = cca.replay(daemon, lines)
    assert n == meta["recorder"]["lines"] and not errors, errors[:3]
    wait_complete(daemon, meta["job"], meta["window_events"],
                  {a["name"] for a in ka if a["device_type"] == "CPU"})
    assert_equals_key_averages(daemon, meta["job"], ka, trace)
