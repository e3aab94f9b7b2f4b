# SPDX-License-Identifier: MIT
"""Issue 17's views on a cluster viewer (issue 16, item 2): every GPU, memory, hierarchy and
diff route answers for a rank another node shipped exactly as on that rank's own node.

Two node daemons ship to Debian's clickhouse-server 18.16 (chserver.py) and each pulls the
other's ranks. Real H200 data (tests/data/kineto, tests/data/README.md) lands on different nodes:

- job `views`: rank 0 is cuda_views_h200/trace_a (two CUDA streams, record_shapes, with_stack,
  profile_memory) imported on node A, rank 1 is cuda_attach_mem_h200's window (profile_memory)
  imported on node B;
- job `views-b`: cuda_views_h200/trace_b imported on node B alone (a job wholly remote to A);
- job `nccl`: a sampled 2-step CUDA trace with NCCL kernels (gpu_2steps_sampled), rank 0 on A
  and rank 1 on B (communication for /gpu/overlap and the communication tables);
- job `t113`: a CPU trace with `Call stack` and `Input Dims` args recorded here by Debian's
  torch 1.13 (tests/analyse/torch113_opview_trace.py), imported on B;
- job `cuda-attach`: what attach(memory=True) sent on the H200 (cuda_attach_alloc_h200), replayed
  over node A's socket as the collector sent it, with its `[memory stats]` allocator samples;
- job `pd-cnn`: Paddle 3.3.1 trained live on node B (a CPU profiler window with
  profile_memory=True: Paddle's `[memory]` events, for /summary/memory), and `pd-cnn-pb` the same
  window's protobuf export imported on node A.

For each (job, rank) the viewer's answer to each route equals its origin's, byte for byte once
the job ids (local numbers) are left out; /api/v1/diff of a job local to a node against one
remote to it equals the other node's answer. One ClickHouse and two daemons for the module."""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import integ
from test_cluster import cluster_stats, creds_file, node_args, wait_shipped
from test_view import same_twice

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "kineto"
sys.path.insert(0, str(REPO / "tests" / "device"))
sys.path.insert(0, str(REPO / "tests" / "frameworks"))
import check_cuda_attach as cca  # noqa: E402
import fwutil  # noqa: E402

IMPORTS = {  # node -> [(job, rank, trace)]
    "A": [("views", 0, DATA / "cuda_views_h200" / "trace_a.json.gz"),
          ("nccl", 0, DATA / "gpu_2steps_sampled_rank0.json.gz")],
    "B": [("views", 1, DATA / "cuda_attach_mem_h200" / "trace.json.gz"),
          ("views-b", 0, DATA / "cuda_views_h200" / "trace_b.json.gz"),
          ("nccl", 1, DATA / "gpu_2steps_sampled_rank1.json.gz")],
}
# A CPU trace with call stacks (torch 2's H200 traces have none), recorded by Debian's torch 1.13
# (record_shapes, with_stack) and imported on B.
TORCH113 = REPO / "tests" / "analyse" / "torch113_opview_trace.py"
ALLOC = DATA / "cuda_attach_alloc_h200"  # replayed on A
ALLOC_JOB = "cuda-attach"
# Paddle 3.3.1's CPU window with profile_memory=True (its [memory] events, for Paddle's Memory
# Summary): trained live on B (tests/frameworks/paddle_summary_train.py cnn), its .pb imported on A.
PADDLE = "pd-cnn"
# (job, rank, origin node): the viewer is the other node.
RANKS = [("views", 0, "A"), ("views", 1, "B"), ("views-b", 0, "B"), (ALLOC_JOB, 0, "A"),
         (PADDLE, 0, "B"), (PADDLE + "-pb", 0, "A"), ("nccl", 0, "A"), ("nccl", 1, "B"),
         ("t113", 0, "B")]

# Every issue-17 route of one rank (`rank=` is added).
ROUTES = [
    "/gpu/temporal",
    "/gpu/temporal?last_step=include&rounding=us",
    "/gpu/kernel-types",
    "/gpu/kernel-types?memory=exclude",
    "/gpu/kernel-types?table=kernels&num_kernels=100000",
    "/gpu/kernel-types?table=kernels&format=csv",
    "/gpu/overlap",
    "/gpu/launches?limit=100000",
    "/gpu/launches?format=csv",
    "/gpu/idle",
    "/gpu/idle?format=csv",
    "/gpu/queue?points=100000",
    "/gpu/queue?format=csv&table=series",
    "/kernels/details",
    "/kernels/details?group=operator",
    "/kernels/details?group=operator&format=csv",
    "/comm-ops",
    "/comm-ops?format=csv",
    "/memory?points=100000",
    "/memory?format=csv&table=curve",
    "/summary/memory",
    "/tree?kind=operator",
    "/tree?kind=module",
    "/operator-view?limit=100000",
    "/operator-view?group_by=input_shape&limit=100000",
    "/operator-view?group_by=stack&limit=100000",
    "/timeline?max_bytes=67108864",
]


def strip_ids(doc):
    """doc without its job ids: a job's number is local to each daemon."""
    if isinstance(doc, dict):
        return {k: strip_ids(v) for k, v in doc.items() if k != "job_id"}
    if isinstance(doc, list):
        return [strip_ids(v) for v in doc]
    return doc


def get(d, path):
    st, hdr, body = d.request(path)
    assert st == 200, f"{d.name} GET {path}: {st} {body[:300]!r}"
    if hdr.get("content-type", "").startswith("application/json"):
        return strip_ids(json.loads(body))
    return body.decode()


def route(job, rank, r):
    sep = "&" if "?" in r else "?"
    return f"/api/v1/jobs/{job}{r}{sep}rank={rank}"


def events(d, job, rank):
    """The rank's events on d; None while d has no such job or rank (a viewer before its pull:
    the origin's shipping has caught up, the viewer's next pull is up to 500 ms away)."""
    st, _, body = d.request(f"/api/v1/jobs/{job}")
    if st == 404:
        return None
    assert st == 200, f"{d.name} GET /api/v1/jobs/{job}: {st} {body[:300]!r}"
    for row in json.loads(body)["ranks_detail"]:
        if row["rank"] == rank:
            return row["events"]
    return None


def import_trace(d, job, rank, path):
    r = subprocess.run([str(integ.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                        "--socket", str(d.socket), "--job", job, "--rank", str(rank), str(path)],
                       env=integ.clean_env(d.tmp), capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()


@pytest.fixture(scope="module")
def nodes(ch_server):
    """Nodes A and B, each with its own data; returns {"A": daemon, "B": daemon} once each
    holds every rank of the other with as many events as its origin."""
    if not integ.daemon_binary().exists():
        pytest.fail(f"{integ.daemon_binary()} is not built")
    if ch_server.proc is None or ch_server.proc.poll() is not None:
        ch_server.start()
    ch_server.reset()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssg.", dir="/tmp"))
    f = integ.DaemonFactory(tmp)
    try:
        creds = creds_file(tmp)
        ds = {n: f(f"g{n.lower()}", args=node_args(ch_server, f"node{n}", creds)) for n in "AB"}
        for n, jobs in IMPORTS.items():
            for job, rank, path in jobs:
                import_trace(ds[n], job, rank, path)
        meta, _, _, lines = cca.load(ALLOC)
        assert meta["job"] == ALLOC_JOB
        n, errors = cca.replay(ds["A"], lines)
        assert not errors, errors[:3]
        out = tmp / f"{PADDLE}.json"
        fwutil.run_script(sys.executable, fwutil.HERE / "paddle_summary_train.py", ["cnn", out],
                          fwutil.script_env(ds["B"], PADDLE))
        assert json.loads(out.read_text())["acked"] is True
        import_trace(ds["A"], PADDLE + "-pb", 0, tmp / f"{PADDLE}.json.window.pb")
        fwutil.run_script(fwutil.SYSTEM_PYTHON, TORCH113, [tmp / "t113.json", tmp / "ka.json"],
                          integ.clean_env(tmp))
        import_trace(ds["B"], "t113", 0, tmp / "t113.json")
        for d in ds.values():
            wait_shipped(d)
        for job, rank, origin in RANKS:
            want = events(ds[origin], job, rank)
            assert want
            viewer = ds["B" if origin == "A" else "A"]
            deadline = time.monotonic() + 120
            while events(viewer, job, rank) != want:
                assert time.monotonic() < deadline, (
                    f"{job} rank {rank}: {events(viewer, job, rank)} events on {viewer.name}, "
                    f"{want} on its node; {viewer.name}'s view {cluster_stats(viewer)['view']}; "
                    f"blocks {blocks(ch_server, job, rank)}; stderr {viewer.stderr()[-2000:]}")
                time.sleep(0.2)
        yield ds
    finally:
        problems = f.teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    assert not problems, "\n".join(problems)


def blocks(ch, job, rank):
    """The origin's stored blocks of a rank in ClickHouse, (node, block, lines, copies): what a
    viewer that misses events should have pulled."""
    return ch.rows(f"SELECT node, block, lines, count() FROM stepscope.event_blocks WHERE job = "
                   f"'{job}' AND rank = {rank} GROUP BY node, block, lines ORDER BY block")


def settled(d, path):
    return same_twice(f"{d.name} {path}", lambda: get(d, path))


def same(origin, viewer, path):
    """Asserts the viewer's answer to path equals the origin's, settled: the origin answers the
    same before and after the viewer, or else the same twice 0.3 s apart, and the viewer gets
    15 s to come to it."""
    try:
        want = get(origin, path)
        if get(viewer, path) == want and get(origin, path) == want:
            return
    except AssertionError:
        pass  # not answering yet: settled() waits for it
    want = settled(origin, path)
    got = None
    deadline = time.monotonic() + 15
    while got != want and time.monotonic() < deadline:
        got = get(viewer, path)
        time.sleep(0.2 if got != want else 0)
    assert got == want, (viewer.name, path)


@pytest.mark.parametrize("job,rank,origin", RANKS, ids=[f"{j}-{r}" for j, r, _ in RANKS])
@pytest.mark.parametrize("r", ROUTES)
def test_remote_rank_answers_as_on_its_node(nodes, job, rank, origin, r):
    same(nodes[origin], nodes["B" if origin == "A" else "A"], route(job, rank, r))


JOB_ROUTES = ["/gpu/temporal", "/gpu/kernel-types", "/gpu/kernel-types?format=csv",
              "/gpu/kernel-types?table=kernels", "/gpu/overlap",
              "/gpu/launches?limit=100000", "/gpu/idle", "/gpu/queue", "/comm-ops",
              "/comm-ops?link=external_id"]


@pytest.mark.parametrize("job", ["views", "nccl"])
@pytest.mark.parametrize("r", JOB_ROUTES)
def test_job_of_two_nodes_answers_alike_on_both(nodes, job, r):
    """Without `rank=` the GPU routes answer for every rank of the job (kernel-types' all_ranks
    sums them; /comm-ops' transfer time compares the ranks' calls): the job whose ranks lie on
    both nodes answers the same on each."""
    same(nodes["A"], nodes["B"], f"/api/v1/jobs/{job}{r}")


@pytest.mark.parametrize("job,rank,origin", RANKS[:3], ids=[f"{j}-{r}" for j, r, _ in RANKS[:3]])
def test_remote_rank_timeline_windows_keep_flow_pairs(nodes, job, rank, origin):
    """The export of each step's window, its flow pairs (launch -> kernel arrows) included, is
    the origin's on the viewer."""
    viewer = nodes["B" if origin == "A" else "A"]
    steps = settled(nodes[origin], route(job, rank, "/steps?limit=1000"))["rows"]
    assert steps
    for s in steps:
        same(nodes[origin], viewer, route(job, rank, f"/timeline?step={s['step']}"))


def test_the_answers_compared_are_not_empty(nodes):
    """The comparisons above hold real figures: kernels linked to launches on both streams,
    memory curves (the allocator's too), Paddle's memory summary, an operator tree, flow pairs."""
    a, b = nodes["A"], nodes["B"]
    for job, rank, d in (("views", 0, a), ("views", 1, b), ("views-b", 0, b)):
        t = get(d, route(job, rank, "/gpu/temporal"))["rows"][0]
        assert t["kernel_us"] > 0 and t["device_events_kept"] > 0, (job, rank, t)
        assert get(d, route(job, rank, "/gpu/launches"))["total"] > 0
        assert get(d, route(job, rank, "/gpu/kernel-types"))["rows"]
        assert get(d, route(job, rank, "/gpu/kernel-types?table=kernels"))["rows"]
        mem = get(d, route(job, rank, "/memory"))
        assert any(s["source"] == "trace" and s["points"] > 0 for s in mem["devices"]), mem["devices"]
        assert mem["operators"]
        assert get(d, route(job, rank, "/tree?kind=operator"))["nodes"]
        assert get(d, route(job, rank, "/kernels/details"))["rows"]
        assert any(r["idle_us"] > 0 for r in get(d, route(job, rank, "/gpu/idle"))["rows"])
        assert any(r["points"] > 0 for r in get(d, route(job, rank, "/gpu/queue"))["rows"])
        # record_shapes: cuda_views_h200's runs (not cuda_attach_mem_h200's)
        if (job, rank) != ("views", 1):
            assert get(d, route(job, rank, "/operator-view?group_by=input_shape"))["rows"]
        tl = get(d, route(job, rank, "/timeline?max_bytes=67108864"))
        ends = {}
        for e in tl["traceEvents"]:
            if e.get("ph") in ("s", "f"):
                ends.setdefault((e.get("cat"), e["id"]), set()).add(e["ph"])
        assert sum(1 for v in ends.values() if v == {"s", "f"}) > 0, (job, rank)
    for rank, d in ((0, a), (1, b)):
        o = get(d, route("nccl", rank, "/gpu/overlap"))["rows"][0]
        assert o["communication_us"] > 0 and o["overlap_pct"] is not None, o
        c = get(d, route("nccl", rank, "/comm-ops"))["rows"]
        assert c and any(r["wait_us"] > 0 for r in c), c
    assert get(b, route("t113", 0, "/operator-view?group_by=stack"))["rows"]
    assert get(a, route("views", 0, "/tree?kind=module"))["module_spans"] > 0
    for job, d in ((PADDLE, b), (PADDLE + "-pb", a)):
        pm = get(d, route(job, 0, "/summary/memory"))
        assert pm["rows"] and pm["memory_events_counted"] > 0, (job, pm)
        assert [s["device"] for s in get(d, route(job, 0, "/memory"))["devices"]] == ["CPU"]
    mem = get(a, route(ALLOC_JOB, 0, "/memory"))
    alloc = [s for s in mem["devices"] if s["source"] == "allocator"]
    meta = json.loads((ALLOC / "meta.json").read_text())
    assert [(s["device"], s["points"], s["peak_allocated"]) for s in alloc] == [
        ("GPU0", meta["recorded"], meta["max_memory_allocated"])]


@pytest.mark.parametrize("q", ["base=views&exp=views-b", "base=views&exp=views-b&rank=0",
                               "base=views-b&exp=views&rank=0&format=csv",
                               "base=views&exp=views-b&base_steps=2-4&exp_steps=3-6",
                               "base=views&exp=views-b&base_rank=1&exp_rank=0&exp_steps=3",
                               "base=nccl&exp=nccl&base_rank=0&exp_rank=1"])
def test_diff_of_a_local_and_a_remote_job(nodes, q):
    """views rank 0 is A's own and views-b is B's (nccl: rank 0 A's, rank 1 B's): on each node
    one side of the diff is local and the other pulled; both nodes answer alike, with step
    ranges (read from the stored spans) too."""
    same(nodes["A"], nodes["B"], f"/api/v1/diff?{q}")


def test_live_paddle_operators_equal_on_the_viewer(nodes):
    """pd-cnn was trained live on B, its lines cut by B's socket reads; A pulled the same lines in
    the blocks B stored, so A's live analysis met them in other batches. Self time is walked
    across batches (docs/ANALYSIS.md "Self time": a span of a later batch nests in the spans of
    earlier ones), so every operator row, self time included, is B's on A. Rows of equal totals
    are listed in first-seen order, which differs between the nodes: compared by name."""
    path = route(PADDLE, 0, "/operators?limit=100000")

    def rows(d):
        doc = get(d, path)
        return doc, sorted(doc["rows"], key=lambda r: r["name"])

    want_doc, want = rows(nodes["B"])
    assert want and any(r["self_us"] < r["total_us"] for r in want), want  # nested operators
    deadline = time.monotonic() + 15
    while (got := rows(nodes["A"])[1]) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    assert got == want, [(w, g) for w, g in zip(want, got) if w != g][:5]
