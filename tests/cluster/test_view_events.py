# SPDX-License-Identifier: MIT
"""The cluster view on a real Kineto GPU trace (issue 16, item 2): a node ships every stored line
of its blocks verbatim, each stored block as one row (stepscope.event_blocks, 0006_event_blocks.sql:
the store's own zstd frame), and a viewing node feeds those lines, args and all phases, not lines
rebuilt from the spans' columns. So on the viewer a pulled rank's /breakdown (kernels linked to
their launches by args.correlation), /kernels, /operators, /steps and its timeline (thread names,
counters, flow events) equal its own node's answers. Blocks a node of 0004/0005 shipped as one
events row per line are still pulled, block by block beside the newer ones; a node older than
0004 (spans only in ClickHouse) is still pulled, its spans rebuilt from the columns."""
import json
import os
import pathlib
import sqlite3
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


def delete_blocks(ch, where):
    """Deletes the event_blocks rows matching where and waits for the mutation to have run."""
    ch.query(f"ALTER TABLE stepscope.event_blocks DELETE WHERE {where}")
    deadline = time.monotonic() + 30
    while ch.scalar(f"SELECT count() FROM stepscope.event_blocks WHERE {where}") != 0:
        assert time.monotonic() < deadline, "the blocks' delete never ran"
        time.sleep(0.2)


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
    # Every line of the trace went to ClickHouse verbatim, not only the X/B spans: one row per
    # stored block (a few dozen, not 108 936), none per line.
    got = {int(r[0]): (int(r[1]), int(r[2])) for r in ch.rows(
        f"SELECT rank, sum(lines), count() FROM stepscope.event_blocks FINAL WHERE job = '{JOB}' "
        "GROUP BY rank")}
    assert {k: v[0] for k, v in got.items()} == {0: own[0]["events"], 1: own[1]["events"]}
    assert all(v[1] <= v[0] / 100 for v in got.values()), got
    assert ch.scalar("SELECT count() FROM stepscope.events") == 0
    # Partitioned by the blocks' month (the trace ran in May 2023; 197001: a block without a ts).
    months = {int(r[0]) for r in ch.rows("SELECT DISTINCT month FROM stepscope.event_blocks")}
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
    delete_blocks(ch, "node = 'nodeA'")
    b = daemons("ob", args=node_args(ch, "nodeB", creds))
    b.wait_for(f"{spans} spans of nodeA's rank on nodeB",
               lambda: (lambda j: j and j["spans"] == spans and j)(b.job(JOB)), timeout=90)
    path = f"/api/v1/jobs/{b.job(JOB)['id']}/kernels?limit=100000"
    want = sorted(a.get_json(f"/api/v1/jobs/{a.job(JOB)['id']}/kernels?limit=100000")["rows"],
                  key=lambda r: r["name"])
    b.wait_for("the kernel table", lambda: sorted(b.get_json(path)["rows"],
                                                   key=lambda r: r["name"]) == want, timeout=30)
    assert detail(b)[0]["events"] == spans < detail(a)[0]["events"]


def stored_blocks(d):
    """[(block, rank, [line, ...])] of d's store, by block: its lines as the node stores them."""
    db = sqlite3.connect(os.path.join(d.data_dir, "stepscope.db"))
    try:
        rows = db.execute("SELECT id, rank, codec, data FROM blocks ORDER BY id").fetchall()
    finally:
        db.close()
    out = []
    for block, rank, codec, data in rows:
        if codec == 1:
            data = subprocess.run(["zstd", "-d", "-c"], input=data, capture_output=True,
                                  check=True).stdout
        out.append((block, rank, data.decode().rstrip("\n").split("\n")))
    return out


def test_blocks_of_older_and_newer_nodes_mixed(ch, daemons, tmp):
    """A node upgraded mid-job: its first blocks are in ClickHouse as one events row per line
    (what nodes of 0004_events and 0005 ship), the later ones as event_blocks rows. The viewer
    takes each block from whichever holds it, in block order, every line once: its answers for
    the rank equal the origin's, args, thread names and flow events included."""
    creds = creds_file(tmp)
    a = daemons("ma", args=node_args(ch, "nodeA", creds, "--cluster-view", "false"))
    import_rank(a, 0, tmp)
    wait_shipped(a)
    blocks = stored_blocks(a)
    assert len(blocks) >= 4, len(blocks)
    old = blocks[:len(blocks) // 2]
    # The first half as an older node shipped it: a row per line, and no block rows.
    body = "".join(json.dumps({"node": "nodeA", "job": JOB, "rank": rank, "block": block,
                               "idx": idx, "month": 202305, "line": line}) + "\n"
                   for block, rank, lines in old for idx, line in enumerate(lines))
    ch.query("INSERT INTO stepscope.events (node, job, rank, block, idx, month, line) "
             "FORMAT JSONEachRow\n" + body)
    last_old = old[-1][0]
    delete_blocks(ch, f"node = 'nodeA' AND block <= {last_old}")
    assert ch.scalar("SELECT count() FROM stepscope.events") == sum(len(b[2]) for b in old)
    assert ch.scalar("SELECT count() FROM stepscope.event_blocks") == len(blocks) - len(old)
    b = daemons("mb", args=node_args(ch, "nodeB", creds, "--cluster-batch-rows", "5000"))
    events = detail(a)[0]["events"]
    b.wait_for(f"{events} lines of nodeA's rank on nodeB",
               lambda: (lambda j: j and j["events"] == events and j)(b.job(JOB)), timeout=90)
    want = settled(a, 0)
    got = settled(b, 0)
    for k in want:
        assert got[k] == want[k], k
    assert cluster_stats(b)["view"]["rows"] == events


def test_damaged_block_is_said_and_costs_only_its_lines(ch, daemons, tmp):
    """An event_blocks row whose frame does not decode (cut short here): the viewer says so in
    its log, leaves that block's lines out, and feeds every other block; its pull keeps going."""
    creds = creds_file(tmp)
    a = daemons("da", args=node_args(ch, "nodeA", creds, "--cluster-view", "false"))
    import_rank(a, 0, tmp)
    wait_shipped(a)
    blocks = stored_blocks(a)
    assert len(blocks) >= 3, len(blocks)
    bad, _, bad_lines = blocks[len(blocks) // 2]
    ch.query("CREATE TABLE stepscope.cut AS stepscope.event_blocks")
    ch.query("INSERT INTO stepscope.cut SELECT node, job, rank, block, month, lines, raw_bytes, "
             "codec, substring(data, 1, 40) FROM stepscope.event_blocks "
             f"WHERE node = 'nodeA' AND block = {bad}")
    delete_blocks(ch, f"node = 'nodeA' AND block = {bad}")
    ch.query("INSERT INTO stepscope.event_blocks SELECT * FROM stepscope.cut")
    ch.query("DROP TABLE stepscope.cut")
    b = daemons("db", args=node_args(ch, "nodeB", creds))
    want = detail(a)[0]["events"] - len(bad_lines)
    b.wait_for(f"{want} lines of nodeA's rank on nodeB",
               lambda: (lambda j: j and j["events"] == want and j)(b.job(JOB)), timeout=90)
    time.sleep(1.5)  # a few more rounds: nothing more comes, and the pull is not failing
    assert b.job(JOB)["events"] == want
    assert not cluster_stats(b)["view"]["failing"]
    assert f"block {bad} (job {JOB}, rank 0) from nodeA is damaged" in b.stderr()
