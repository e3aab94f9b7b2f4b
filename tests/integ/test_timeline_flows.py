# SPDX-License-Identifier: MIT
"""CPU→GPU links in the timeline export (issue 17 item 4), with a real daemon and real Kineto
traces imported by the real `stepscope import`.

Kineto links a runtime launch (cudaLaunchKernel, cudaMemcpyAsync...) to its kernel twice: by
`args.correlation` on both X events, and by a flow pair (`ph` "s" on the launch's thread at its
`ts`, `ph` "f" with `bp` "e" on the kernel's stream at the kernel's `ts`, `cat` "ac2g", one `id`).
Perfetto and chrome://tracing draw the arrow from the pair only. The export keeps the flow
events of its window: every pair whose two ends lie in it goes out whole, ids as in the trace,
and a pair crossing the window's edge (a launch late in a step whose kernel runs in the next:
most of gpu_5steps_rank0's, whose GPU runs a step behind) goes out as its one end inside, which
the viewers leave without an arrow (the dashboard's timeline says the other end is outside).
"""
import gzip
import json
import pathlib
import subprocess

import pytest

from conftest import build_dir

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = {"views-a": DATA / "cuda_views_h200" / "trace_a.json.gz",
          "k5": DATA / "gpu_5steps_rank0.json.gz"}


def stepscope_import(d, path, job):
    r = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import",
                        "--socket", d.socket, "--job", job, "--quiet", str(path)],
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr


def pairs_in(events, lo=float("-inf"), hi=float("inf")):
    """The flow pairs ((cat, id) with one "s" and one "f") whose two ends lie in [lo, hi)."""
    ends = {}
    for e in events:
        if e.get("ph") in ("s", "f") and lo <= e["ts"] < hi:
            ends.setdefault((e.get("cat"), e["id"]), []).append(
                (e["ph"], e["pid"], e["tid"], e["ts"]))
    return {k: sorted(v) for k, v in ends.items()
            if sorted(p[0] for p in v) == ["f", "s"]}


@pytest.mark.parametrize("job", sorted(TRACES))
def test_export_keeps_the_flow_pairs_of_its_window(daemon, job):
    path = TRACES[job]
    with gzip.open(path, "rt") as f:
        orig = json.load(f)["traceEvents"]
    stepscope_import(daemon, path, job)
    b = f"/api/v1/jobs/{job}"
    daemon.wait_for("steps", lambda: daemon.get_json(b + "/steps")["total"] > 0)
    steps = daemon.get_json(b + "/steps?limit=1000")["rows"]
    # The whole trace, then each step's window.
    windows = [(None, float("-inf"), float("inf"))] + [
        (s["step"], s["start_us"], s["end_us"]) for s in steps]
    total = 0
    for step, lo, hi in windows:
        q = "/timeline?max_bytes=67108864" if step is None else f"/timeline?step={step}"
        doc = daemon.get_json(b + q)
        assert not doc["otherData"]["truncated"]
        got = doc["traceEvents"]
        want = pairs_in(orig, lo, hi)
        have = pairs_in(got)
        assert have == want, (step, len(have), len(want))
        assert len(have) == len(want)
        # Each end in the window goes out, alone when its pair crosses the edge.
        ends = sorted((e["ph"], e.get("cat"), e["id"], e["ts"]) for e in orig
                      if e.get("ph") in ("s", "f") and lo <= e["ts"] <= hi)
        assert sorted((e["ph"], e.get("cat"), e["id"], e["ts"]) for e in got
                      if e.get("ph") in ("s", "f")) == ends
        total += len(want)
    assert total > 0
