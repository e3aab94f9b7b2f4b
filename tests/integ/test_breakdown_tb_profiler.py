# SPDX-License-Identifier: MIT
"""/breakdown against the real torch-tb-profiler 0.4.3's own numbers on the same traces.

tests/data/kineto/*.tb_profiler.json hold what the released plugin's overview computes per step
(RunProfileData.parse(): steps_names, steps_costs, avg_costs), written by
tests/analyse/tb_profiler_steps.py (tests/data/README.md). CI does not install the plugin.

- With the plugin's reading of the categories given as role rules (tb_profiler_0_4_3.roles), a
  trace imported with `stepscope import` into the real daemon gives exactly the plugin's steps,
  names and per-step costs: the step/attribution algorithm is the plugin's.
- With the default rules the same import differs from 0.4.3 only as docs/ANALYSIS.md says
  ("Where we differ"): the same host steps, no GPU-mirror steps, runtime calls counted.
"""
import json
import pathlib
import subprocess

import pytest

from conftest import build_dir, clean_env
from test_live_breakdown import settled

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = {"gpu_5steps_rank0": (DATA / "gpu_5steps_rank0.json.gz",
                               DATA / "gpu_5steps_rank0.tb_profiler.json"),
          "cuda_attach_h200": (DATA / "cuda_attach_h200" / "trace.json.gz",
                               DATA / "cuda_attach_h200" / "trace.tb_profiler.json")}
COLUMNS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
           "other", "total")
# The plugin reads ts/dur as doubles (about 4.8e12 us here: a double's step is 2^-10 us), and
# each of its per-step costs is a sum of range lengths; ours are exact. 0.01 us is far below
# the overview's own display (whole microseconds for the average) and far above that error.
TOL_US = 0.01


def imported(d, tmp, job, trace):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import",
                          "--quiet", "--socket", d.socket, "--job", job, str(trace)],
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return settled(d, "/api/v1/jobs/%d/breakdown?limit=100000" % d.job(job)["id"], timeout=30)


def costs(row):
    return {c: row[c + "_us"] for c in COLUMNS}


@pytest.mark.parametrize("name", sorted(TRACES))
def test_breakdown_with_tb_0_4_3_roles_equals_real_tb_profiler(daemons, tmp, name):
    trace, want_path = TRACES[name]
    want = json.loads(want_path.read_text())
    assert want["producer"].startswith("torch-tb-profiler 0.4.3,")
    d = daemons("tb", args=["--role-rules", str(DATA / "tb_profiler_0_4_3.roles")])
    doc = imported(d, tmp, name, trace)
    assert doc["steps_dropped"] == 0
    assert [str(r["step"]) for r in doc["rows"]] == [s["step"] for s in want["steps"]]
    for got, ref in zip(doc["rows"], want["steps"]):
        assert costs(got) == pytest.approx({c: ref[c] for c in COLUMNS}, abs=TOL_US), got["step"]
    assert {c: doc["average"][c + "_us"] for c in COLUMNS} == \
        pytest.approx(want["average"], abs=TOL_US)
    # The overview's "Average Step Time" is round(avg total).
    assert round(doc["average"]["total_us"]) == round(want["average"]["total"])


@pytest.mark.parametrize("name", sorted(TRACES))
def test_default_breakdown_differs_from_tb_0_4_3_only_as_documented(daemon, tmp, name):
    trace, want_path = TRACES[name]
    want = json.loads(want_path.read_text())
    doc = imported(daemon, tmp, name, trace)
    tb_steps = list(dict.fromkeys(s["step"] for s in want["steps"]))
    # 0.4.3 also takes each gpu_user_annotation mirror of ProfilerStep#N as a step N; the host
    # steps are the same, and none is trimmed on these traces.
    assert [str(r["step"]) for r in doc["rows"]] == tb_steps
    host = {}
    for s in want["steps"]:
        host.setdefault(s["step"], s)  # a host step starts before its GPU mirror
    for got in doc["rows"]:
        ref = host[str(got["step"])]
        # The same host step; 0.4.3 keeps it as it is (it links no device event to a
        # cuda_runtime launch, so it stretches nothing), we stretch it over the device work.
        assert got["host_end_us"] - got["host_start_us"] == pytest.approx(ref["total"],
                                                                         abs=TOL_US)
        # cuda_runtime (and cuda_driver) calls are runtime to us, nothing to 0.4.3.
        assert got["runtime_us"] > 0 and ref["runtime"] == 0
        assert sum(got[c + "_us"] for c in COLUMNS[:-1]) == pytest.approx(got["total_us"],
                                                                          abs=1e-6)
