# SPDX-License-Identifier: MIT
"""The cluster view on a real Kineto GPU trace (issue 16, item 2): a node ships every stored line
of its blocks verbatim (stepscope.events, 0004_events.sql) and a viewing node feeds those lines,
args and all phases, not lines rebuilt from the spans' columns. So on the viewer a pulled rank's
/breakdown (kernels linked to their launches by args.correlation), /kernels, /operators, /steps
and its timeline (thread names, counters, flow events) equal its own node's answers. A node older
than 0004 (spans only in ClickHouse) is still pulled, its spans rebuilt from the columns."""
import json
import pathlib
import subprocess
import time

from conftest import integ
from test_cluster import cluster_stats, creds_file, node_args, wait_shipped
from test_view import same_twice

REPO = pathlib.Path(__file__).resolve().parents[2]
TRACE = REPO / "tests" / "data" / "kineto" / "gpu_5steps_rank0.json.gz"
JOB = "gpu"


def import_rank(d, rank, tmp):
    cli = integ.build_dir() / "cli" / "stepscope"
    r = subprocess.run([str(cli), "import", "--quiet", "--socket", str(d.socket), "--job", JOB,
                        "--rank", str(rank), str(TRACE)], env=integ.clean_env(tmp),
                       capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()


def detail(d):
    return {r["rank"]: r for r in d.get_json(f"/api/v1/jobs/{JOB}")["ranks_detail"]}


def answers(d, rank):
    """What a user reads of one rank: the routes that read args (breakdown), the kernel and
    operator tables, the steps and the whole timeline."""
    path = f"/api/v1/jobs/{d.job(JOB)['id']}"
    out = {}
    for r in ("/breakdown", "/kernels?limit=100000", "/operators?limit=100000",
              "/steps?limit=100000"):
        sep = "&" if "?" in r else "?"
        out[r] = d.get_json(f"{path}{r}{sep}rank={rank}")
    for r in ("/kernels?limit=100000", "/operators?limit=100000"):
        out[r]["rows"].sort(key=lambda row: (row["name"], json.dumps(row, sort_keys=True)))
    doc = d.get_json(f"{path}/timeline?rank={rank}")
    doc["otherData"].pop("job_id", None)
    out["/timeline"] = doc
    row = detail(d)[rank]
    out["events"] = (row["events"], row["steps"], row["trace_start_us"], row["trace_end_us"])
    return out


def settled(d, rank):
    return same_twice(d.name, lambda: answers(d, rank))


def pulled(d, timeout=90):
    """Until d holds both ranks and its pulled rows stopped growing (the puller caught up)."""
    deadline = time.monotonic() + timeout
    seen = []
    while len(seen) < 6 or len(set(seen[-6:])) > 1 or not seen[-1] or seen[-1][0] != 2:
        assert time.monotonic() < deadline, f"{d.name} never caught up: {seen[-6:]}"
        time.sleep(0.5)
        j = d.job(JOB)
        seen.append((j["ranks"], j["events"], cluster_stats(d)["view"]["rows"]) if j else None)


def test_pulled_kineto_rank_answers_as_on_its_node(ch, daemons, tmp):
    creds = creds_file(tmp)
    a = daemons("ea", args=node_args(ch, "nodeA", creds))
    b = daemons("eb", args=node_args(ch, "nodeB", creds))
    import_rank(a, 0, tmp)
    spans = 2 * a.job(JOB)["spans"]  # the same trace for both ranks
    import_rank(b, 1, tmp)
    wait_shipped(a)
    wait_shipped(b)
    own = {0: detail(a)[0], 1: detail(b)[1]}
    for viewer, origin, rank in ((b, a, 0), (a, b, 1)):
        pulled(viewer)
        assert viewer.job(JOB)["spans"] == spans
        want = settled(origin, rank)
        got = settled(viewer, rank)
        # The trace's own events: kernels linked to launches, thread names, flow arrows.
        evs = want["/timeline"]["traceEvents"]
        phs = {e.get("ph") for e in evs}
        assert {"X", "M", "s", "f"} <= phs, phs
        assert any(e.get("ph") == "X" and "correlation" in e.get("args", {}) for e in evs)
        assert want["/breakdown"]["average"]["kernel_us"] > 0, want["/breakdown"]["average"]
        for k in want:
            assert got[k] == want[k], (viewer.name, k)
        view = cluster_stats(viewer)["view"]
        assert view["rows"] >= own[rank]["events"] and not view["failing"], view
    # Every line of the trace went to ClickHouse verbatim, not only the X/B spans.
    lines = {int(r[0]): int(r[1]) for r in ch.rows(
        f"SELECT rank, count() FROM stepscope.events FINAL WHERE job = '{JOB}' GROUP BY rank")}
    assert lines == {0: own[0]["events"], 1: own[1]["events"]}
    # Partitioned by the lines' month (the trace ran in May 2023; 197001: lines without a ts).
    months = {int(r[0]) for r in ch.rows("SELECT DISTINCT month FROM stepscope.events")}
    assert 202305 in months and months <= {197001, 202305}, months


def test_node_without_events_rows_is_rebuilt_from_spans(ch, daemons, tmp):
    """A node that shipped before 0004_events (its spans, no lines): the viewer rebuilds the
    spans from the columns, as before, and pulls every one; the lines (args, metadata) are not
    there to feed."""
    creds = creds_file(tmp)
    a = daemons("oa", args=node_args(ch, "nodeA", creds, "--cluster-view", "false"))
    import_rank(a, 0, tmp)
    wait_shipped(a)
    spans = a.job(JOB)["spans"]
    ch.query("ALTER TABLE stepscope.events DELETE WHERE node = 'nodeA'")
    deadline = time.monotonic() + 30
    while ch.query("SELECT count() FROM stepscope.events WHERE node = 'nodeA'").strip() != "0":
        assert time.monotonic() < deadline, "the events' delete never ran"
        time.sleep(0.2)
    b = daemons("ob", args=node_args(ch, "nodeB", creds))
    b.wait_for(f"{spans} spans of nodeA's rank on nodeB",
               lambda: (lambda j: j and j["spans"] == spans and j)(b.job(JOB)), timeout=90)
    path = f"/api/v1/jobs/{b.job(JOB)['id']}/kernels?limit=100000"
    want = sorted(a.get_json(f"/api/v1/jobs/{a.job(JOB)['id']}/kernels?limit=100000")["rows"],
                  key=lambda r: r["name"])
    b.wait_for("the kernel table", lambda: sorted(b.get_json(path)["rows"],
                                                   key=lambda r: r["name"]) == want, timeout=30)
    assert detail(b)[0]["events"] == spans < detail(a)[0]["events"]
