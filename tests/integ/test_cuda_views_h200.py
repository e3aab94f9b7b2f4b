# SPDX-License-Identifier: MIT
"""/operators and /kernels of two real CUDA runs recorded with memory, shapes, stacks, a copy
stream and host syncs equal torch's own prof.key_averages() of each.

tests/data/kineto/cuda_views_h200 is what tests/device/cuda_views.py recorded on an NVIDIA H200
with torch 2.11.0+cu130 (tests/data/README.md): run a (batch 16) and run b (batch 32, one more
layer), each a Kineto window with `[memory]` instant events, input shapes, Python stacks and
module annotations, the next batch copied on a side stream. Each trace is imported with the
`stepscope` CLI into the real daemon, and compared row by row with torch's table as
tests/device/check_cuda_attach.py compares them (host rows: calls, self and total; kernels:
calls and device time).
"""
import gzip
import json
import pathlib
import subprocess
import sys

import pytest

from conftest import build_dir, clean_env

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "device"))
import check_cuda_attach as cca  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cuda_views_h200"


@pytest.mark.parametrize("run", ["a", "b"])
def test_memory_profiled_h200_run_equals_key_averages(daemon, tmp, run):
    meta = json.loads((DATA / "meta.json").read_text())
    assert (meta["torch"], meta["device"]) == ("2.11.0+cu130", "NVIDIA H200")
    ka = json.loads(gzip.decompress((DATA / "tables.json.gz").read_bytes()))[run]["key_averages"]
    doc = json.loads(gzip.decompress((DATA / f"trace_{run}.json.gz").read_bytes()))
    trace = doc["traceEvents"]
    assert any(e.get("name") == "[memory]" for e in trace)  # the input is what it claims to be
    job = "views-" + run
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import",
                          "--quiet", "--socket", daemon.socket, "--job", job,
                          str(DATA / f"trace_{run}.json.gz")],
                         capture_output=True, text=True, timeout=120, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    cca.failures.clear()
    cca.compare_operators(daemon, job, ka, trace)
    cca.compare_kernels(daemon, job, ka, trace)
    assert not cca.failures, cca.failures
