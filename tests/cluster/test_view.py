# SPDX-License-Identifier: MIT
"""The cluster view (issue 16, item 2) end to end: node daemons with --cluster-url ship their
ranks to Debian's clickhouse-server 18.16 (chserver.py) and, with the view on (the default), pull
the other nodes' ranks back as their own sessions. Each node then answers the jobs list and every
job route over all nodes' ranks; the oracle is one daemon that ingests all the ranks itself."""
import os
import time

from ssclient import Client
from test_cluster import (cluster_stats, creds_file, host_pipe_lines, node_args, rank_lines, send,
                          wait_shipped)

NODES = 4
PER_NODE = 8
RANKS = NODES * PER_NODE
SPANS = int(os.environ.get("VIEW_SPANS", "1500"))  # per rank
STEPS = 12
QUEUES = 9


def feed(d, job, ranks, n=SPANS):
    for r in ranks:
        send(d, job, r, rank_lines(r, n), world=RANKS)


def job_path(d, job):
    return "/api/v1/jobs/%d" % d.job(job)["id"]


def wait_view(d, job, spans, ranks=RANKS, timeout=90):
    """Until d holds the job's ranks with every span."""
    return d.wait_for(f"{job} on {d.name} with {ranks} ranks and {spans} spans",
                      lambda: (lambda j: j["ranks"] == ranks and j["spans"] == spans and j)(
                          d.job(job)), timeout=timeout)


ROUTES = ["/steps?limit=100000", "/operators?limit=100000", "/kernels?limit=100000",
          "/breakdown?limit=100000", "/step-trace", "/ranks", "/helper", "/queues",
          "/cluster/step-trace"]


def answers(d, job):
    """The job's answers. Operators and kernels of equal totals are listed in the order they were
    first seen (docs/API.md), which is the order the ranks arrived in, and that differs between
    the oracle and each node: those two tables are compared as sets of rows (by name)."""
    path = job_path(d, job)
    out = {r: d.get_json(path + r) for r in ROUTES}
    for r in ("/operators?limit=100000", "/kernels?limit=100000"):
        out[r]["rows"].sort(key=lambda row: row["name"])
    # A cluster node's /ranks names its step window (every node shipped all STEPS steps here)
    # and each rank's node and host.
    window = out["/ranks"].pop("step_window", STEPS - 1)
    assert window == STEPS - 1, window
    for row in out["/ranks"]["ranks"]:
        node = row.pop("node", None)
        host = row.pop("host", None)
        if d.name == "oracle":
            assert node is None and host is None
        else:
            assert node == f"node{row['rank'] // PER_NODE}" and host == "integ", (d.name, row)
    return out


def same_twice(what, get, ok=lambda now: True, timeout=60):
    """get()'s answer once it is the same twice in a row, 0.3 s apart (and ok). A get() that
    fails an assertion (a live route answers 404 until live publishes what it was sent, within
    100 ms or, on a loaded machine, later) has not settled yet; its error is the cause when
    nothing settles within timeout."""
    deadline = time.monotonic() + timeout
    last = err = None
    while True:
        try:
            now = get()
        except AssertionError as e:
            now, err = None, e
        if now is not None and now == last and ok(now):
            return now
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: answers never settled") from err
        last = now
        time.sleep(0.3)


def settled(d, job, timeout=60):
    """The answers once live analysis has published everything it holds: the same twice."""
    return same_twice(d.name, lambda: answers(d, job),
                      lambda now: now["/steps?limit=100000"]["total"] == RANKS * STEPS, timeout)


def timeline(d, job, rank):
    doc = d.get_json(job_path(d, job) + f"/timeline?rank={rank}")
    evs = doc["traceEvents"]
    for e in evs:
        if e.get("ph") == "X":
            e.pop("args", None)
    doc["otherData"].pop("job_id", None)
    assert sum(e.get("ph") == "X" for e in evs) == SPANS
    return doc


def test_every_node_answers_for_all_ranks(ch, daemons, tmp):
    creds = creds_file(tmp)
    nodes = [daemons(f"v{k}", args=node_args(ch, f"node{k}", creds)) for k in range(NODES)]
    oracle = daemons("oracle")
    for k, d in enumerate(nodes):
        feed(d, "train", range(k * PER_NODE, (k + 1) * PER_NODE))
    feed(oracle, "train", range(RANKS))
    want = settled(oracle, "train")
    for d in nodes:
        wait_view(d, "train", RANKS * SPANS)
    import json
    for d in nodes:
        got = settled(d, "train")
        for r in ROUTES:
            if got[r] != want[r]:
                open(f"/tmp/view/{d.name}{r.split('?')[0].replace('/', '_')}.json", "w").write(
                    json.dumps({"got": got[r], "want": want[r]}, indent=1, sort_keys=True))
        assert got == want
    # The jobs list: every node lists the job with all the ranks and the oracle's counts.
    counts = ("ranks", "world_size", "spans", "events", "steps", "queue_samples")
    oj = oracle.job("train")
    orc = {r["rank"]: r for r in oracle.get_json(job_path(oracle, "train"))["ranks_detail"]}
    for k, d in enumerate(nodes):
        j = d.job("train")
        assert {c: j[c] for c in counts} == {c: oj[c] for c in counts}
        assert j["spans"] == RANKS * SPANS and j["ranks"] == RANKS
        detail = d.get_json(job_path(d, "train"))["ranks_detail"]
        assert [r["rank"] for r in detail] == list(range(RANKS))
        for r in detail:
            node = r["rank"] // PER_NODE
            assert r["node"] == f"node{node}", r
            o = orc[r["rank"]]
            assert {c: r[c] for c in ("events", "steps", "trace_start_us", "trace_end_us")} == \
                {c: o[c] for c in ("events", "steps", "trace_start_us", "trace_end_us")}
        # Every line pulled once (no restart here): the other nodes' spans, steps, queue samples.
        view = cluster_stats(d)["view"]
        assert view["rows"] == (RANKS - PER_NODE) * (SPANS + STEPS + QUEUES), view
        assert not view["failing"]  # (last_error may be a table the shipper had not made yet)
        # The timeline of a rank of another node: its events, as the oracle stores them (the
        # spans' shipped members: args are not shipped, docs/ARCHITECTURE.md).
        remote = ((k + 1) % NODES) * PER_NODE + 3
        assert timeline(d, "train", remote) == timeline(oracle, "train", remote)


def ranks_events(d, job):
    return {r["rank"]: (r["events"], r["steps"]) for r in
            d.get_json(job_path(d, job))["ranks_detail"]}


def test_viewing_node_killed_with_9_takes_every_row_once(ch, daemons, tmp):
    """A node killed with -9 while it pulls, and restarted: it goes on from its cursor, and a
    batch the daemon had taken but the cursor not yet saved is dropped by the stream's durable
    sequence number. Then the worst case made certain: the pull cursors lost, everything pulled
    again, nothing doubled."""
    import sqlite3
    creds = creds_file(tmp)
    n = 20000
    a = daemons("ka", args=node_args(ch, "nodeA", creds))
    feed(a, "kv", range(4), n)
    wait_shipped(a)
    # The viewer reads small batches, so that the kill lands mid-way.
    b = daemons("kb", args=node_args(ch, "nodeB", creds, "--cluster-batch-rows", "500"))
    feed(b, "kv", [4], 10)
    b.wait_for("some pulled", lambda: b.job("kv")["spans"] > 2000, timeout=60)
    got = b.job("kv")["spans"]
    b.kill9()
    assert got < 4 * n + 10, "pulled everything before the kill: the test proves nothing"
    b.start()
    total = 4 * n + 10
    wait_view(b, "kv", total, ranks=5)
    want = {r: (n, STEPS) for r in range(4)}
    want[4] = (10, STEPS)
    b.wait_for("every step and queue sample pulled", lambda: ranks_events(b, "kv") == want and
               b.job("kv")["queue_samples"] == 5 * QUEUES, timeout=30)
    b.stop()
    db = sqlite3.connect(os.path.join(b.data_dir, "stepscope.db"))
    assert db.execute("DELETE FROM pull_cursors").rowcount == 1
    db.execute("DELETE FROM pull_streams")
    db.commit()
    db.close()
    b.start()
    # Everything read again from ClickHouse and sent again from sequence number 0: the daemon
    # holds it all already and drops it (its acks are past it at the welcome).
    b.wait_for("pulled again", lambda: sqlite_count(b, "SELECT count(*) FROM pull_cursors "
                                                      "WHERE queue > 0") == 1, timeout=60)
    assert b.job("kv")["spans"] == total
    assert b.job("kv")["queue_samples"] == 5 * QUEUES
    assert ranks_events(b, "kv") == want
    # Node A never got B's pulled copies back as B's own: ClickHouse has each rank once.
    rows = ch.rows("SELECT node, rank, count() FROM stepscope.spans FINAL WHERE job = 'kv' "
                   "GROUP BY node, rank ORDER BY node, rank")
    assert rows == [["nodeA", str(r), str(n)] for r in range(4)] + [["nodeB", "4", "10"]]


def sqlite_count(d, sql):
    import sqlite3
    db = sqlite3.connect(os.path.join(d.data_dir, "stepscope.db"), timeout=10)
    try:
        return db.execute(sql).fetchone()[0]
    finally:
        db.close()


def step_lines(steps, slow_until):
    """Step records whose first slow_until steps take 3 ms and the later ones 0.9 ms: a node
    whose later steps are not here yet would look slow over all the steps it has."""
    return [{"type": "step", "step": s, "begin_us": 1.7e15 + 5000.0 * s,
             "end_us": 1.7e15 + 5000.0 * s + (3000.0 if s < slow_until else 900.0)}
            for s in steps]


def test_lagging_node_is_never_a_straggler(ch, daemons, tmp):
    """One node's daemon stopped (SIGSTOP: it ships nothing more) while the others go on: every
    viewer counts only the steps every node shipped past, so the lagging node's ranks, whose
    later (faster) steps are not here, are not stragglers; the job's answer says how far each
    node is behind."""
    import signal
    creds = creds_file(tmp)
    nodes = [daemons(f"l{k}", args=node_args(ch, f"node{k}", creds)) for k in range(NODES)]
    ranks = {k: [2 * k, 2 * k + 1] for k in range(NODES)}
    for k, d in enumerate(nodes):
        for r in ranks[k]:
            send(d, "lag", r, step_lines(range(6), 6), world=2 * NODES)
    for d in nodes:
        d.wait_for("every rank's first steps", lambda d=d: d.job("lag")["ranks"] == 2 * NODES and
                   all(r["steps"] == 6 for r in d.get_json(job_path(d, "lag"))["ranks_detail"]),
                   timeout=60)
    lagging = nodes[2]
    lagging.proc.send_signal(signal.SIGSTOP)
    try:
        for k, d in enumerate(nodes):
            if d is not lagging:
                for r in ranks[k]:
                    send(d, "lag", r, step_lines(range(6, STEPS), 6), world=2 * NODES)
        viewer = nodes[0]
        others = [r for k in ranks if k != 2 for r in ranks[k]]
        # Live analysis has every step the viewer holds: the lagging node's 6 per rank, the
        # others' STEPS.
        viewer.wait_for("the other nodes' later steps", lambda: viewer.get_json(
            job_path(viewer, "lag") + "/steps?limit=100000")["total"] ==
            2 * 6 + len(others) * STEPS, timeout=60)
        doc = viewer.get_json(job_path(viewer, "lag") + "/ranks")
        assert doc["step_window"] == 5
        assert doc["stragglers"] == 0, [r for r in doc["ranks"] if r["straggler"]]
        assert all(r["steps"] == 6 for r in doc["ranks"])
        # /helper reads the same window: every rank's steps 0-5 took 3 ms, so no straggler there
        # either (without the window ranks 4 and 5 would be, at 3 ms against 1.95 ms).
        helper = viewer.get_json(job_path(viewer, "lag") + "/helper?rank=4")
        assert helper["inputs"]["ranks"] == 2 * NODES
        assert "rank_straggler" not in [s["code"] for s in helper["suggestions"]], helper
        view = viewer.get_json(job_path(viewer, "lag"))["cluster_view"]
        assert view["step_window"] == 5 and view["conflicts"] == []
        assert {n["node"]: (n["ranks"], n["last_step"], n["steps_behind"]) for n in view["nodes"]} \
            == {f"node{k}": (2, 5 if k == 2 else STEPS - 1, STEPS - 6 if k == 2 else 0)
                for k in range(NODES)}
    finally:
        lagging.proc.send_signal(signal.SIGCONT)
    # Caught up: the window moves on to the last step. The lagging node's later steps are slow
    # too (3 ms), so its ranks are real stragglers now, and both /ranks and /helper say so on the
    # viewer, of ranks it pulled: 3 ms against the threshold 1.2 x the mean of the rank means,
    # 1.2 x (6 x 1.95 + 2 x 3) / 8 = 2.655 ms.
    for r in ranks[2]:
        send(lagging, "lag", r, step_lines(range(6, STEPS), STEPS), world=2 * NODES)
    viewer.wait_for("the window at the last step", lambda: viewer.get_json(
        job_path(viewer, "lag") + "/ranks")["step_window"] == STEPS - 1, timeout=60)
    doc = viewer.get_json(job_path(viewer, "lag") + "/ranks")
    assert [r["rank"] for r in doc["ranks"] if r["straggler"]] == ranks[2]
    assert abs(doc["threshold_us"] - 2655) < 1e-6, doc["threshold_us"]
    helper = viewer.get_json(job_path(viewer, "lag") + "/helper")
    flagged = [s for s in helper["suggestions"] if s["code"] == "rank_straggler"]
    assert [s["subject"] for s in flagged] == ranks[2], helper
    assert [(e["value"], round(e["threshold"], 6)) for e in
            (s["evidence"][0] for s in flagged)] == [(3, 2.655)] * 2


def test_rank_shipped_by_two_nodes_is_kept_once_and_named(ch, daemons, tmp):
    """Ranks are the job's global ranks: when two nodes ship the same (job, rank), a viewer keeps
    one copy (its own; else the first node by name), never merges them, and names the other in
    the job's cluster_view.conflicts."""
    creds = creds_file(tmp)
    a = daemons("ca", args=node_args(ch, "nodeA", creds))
    b = daemons("cb", args=node_args(ch, "nodeB", creds))
    feed(a, "dup", [0], 100)
    feed(a, "dup", [1], 100)
    feed(b, "dup", [1], 200)
    feed(b, "dup", [2], 300)
    for d in (a, b):
        wait_shipped(d)
    c = daemons("cc", args=node_args(ch, "nodeC", creds))
    want = {"nodeA": {0: 100, 1: 100, 2: 300}, "nodeB": {0: 100, 1: 200, 2: 300},
            "nodeC": {0: 100, 1: 100, 2: 300}}
    kept = {"nodeA": "nodeA", "nodeB": "nodeB", "nodeC": "nodeA"}
    for d, name in ((a, "nodeA"), (b, "nodeB"), (c, "nodeC")):
        d.wait_for(f"{name}: the three ranks", lambda d=d: {
            r["rank"]: r["events"] for r in d.get_json(job_path(d, "dup"))["ranks_detail"]}
            == want[name], timeout=60)
        doc = d.get_json(job_path(d, "dup"))
        other = "nodeB" if kept[name] == "nodeA" else "nodeA"
        assert doc["cluster_view"]["conflicts"] == [{"rank": 1, "node": other,
                                                     "kept": kept[name]}]
        assert [r["node"] for r in doc["ranks_detail"]] == ["nodeA", kept[name], "nodeB"]
        assert doc["spans"] == sum(want[name].values())


def test_rows_in_clickhouse_twice_are_pulled_once(ch, daemons, tmp):
    """A node that shipped everything twice (its cursor lost after ClickHouse took each batch)
    leaves two copies of each row until a merge; the puller reads without FINAL and takes each
    row once."""
    import sqlite3
    creds = creds_file(tmp)
    a = daemons("ta", args=node_args(ch, "nodeT", creds, "--cluster-view", "false"))
    feed(a, "twice", [0, 1], 3000)
    wait_shipped(a)
    a.stop()
    db = sqlite3.connect(os.path.join(a.data_dir, "stepscope.db"))
    db.execute("DELETE FROM ship_cursors")
    db.commit()
    db.close()
    for table in ("spans", "steps", "queue_samples", "sessions", "event_blocks"):
        ch.query(f"SYSTEM STOP MERGES stepscope.{table}")
    try:
        a.start()
        wait_shipped(a)
        assert ch.scalar("SELECT count() FROM stepscope.spans WHERE job = 'twice'") == 2 * 2 * 3000
        b = daemons("tb", args=node_args(ch, "nodeV", creds))
        wait_view(b, "twice", 2 * 3000, ranks=2)
        want = {0: (3000, STEPS), 1: (3000, STEPS)}
        b.wait_for("steps and queue samples once", lambda: ranks_events(b, "twice") == want and
                   b.job("twice")["queue_samples"] == 2 * QUEUES, timeout=30)
        time.sleep(1.5)  # a few more rounds: nothing more comes
        assert b.job("twice")["spans"] == 2 * 3000 and ranks_events(b, "twice") == want
    finally:
        for table in ("spans", "steps", "queue_samples", "sessions", "event_blocks"):
            ch.query(f"SYSTEM START MERGES stepscope.{table}")


def test_remote_ranks_host_samples_and_pipelines(ch, daemons, tmp):
    """Host samples and pipeline records are shipped and pulled like queue samples: a viewer
    answers a remote rank's /pipeline, its helper's host CPU and pipeline evidence, and the
    device summary's host CPU as the rank's own node and a single-daemon oracle do."""
    creds = creds_file(tmp)
    a = daemons("ha", args=node_args(ch, "nodeA", creds))
    b = daemons("hb", args=node_args(ch, "nodeB", creds))
    oracle = daemons("horacle")
    for d, ranks in ((a, [0, 1]), (b, [2, 3])):
        for r in ranks:
            send(d, "hp", r, rank_lines(r, 50) + host_pipe_lines(r), world=4)
    for r in range(4):
        send(oracle, "hp", r, rank_lines(r, 50) + host_pipe_lines(r), world=4)
    counts = ("ranks", "spans", "queue_samples", "host_samples", "pipelines")
    want_job = {c: oracle.job("hp")[c] for c in counts}
    assert want_job["host_samples"] == 4 * 5 and want_job["pipelines"] == 4 * 2
    routes = [f"/pipeline?rank={r}" for r in range(4)] + \
        [f"/summary/device?rank={r}" for r in range(4)]

    def get(d):
        out = {r: d.get_json(job_path(d, "hp") + r) for r in routes}
        for r in range(4):  # the helper's evidence from the host and pipeline records
            ev = d.get_json(job_path(d, "hp") + f"/helper?rank={r}")["inputs"]
            out[f"helper{r}"] = {k: ev[k] for k in ("host_cpu_percent", "pipeline_ops")}
        return out

    want = same_twice("oracle", lambda: get(oracle))
    for r in range(4):  # the figures are there to compare
        assert want[f"helper{r}"]["host_cpu_percent"] is not None and \
            want[f"helper{r}"]["pipeline_ops"] == 2, want[f"helper{r}"]
        assert want[f"/summary/device?rank={r}"]["cpu_source"] == "host", want
    for d in (a, b):
        d.wait_for(f"{d.name}: every host sample and pipeline record",
                   lambda d=d: {c: d.job("hp")[c] for c in counts} == want_job, timeout=90)
        got = same_twice(d.name, lambda d=d: get(d))
        assert got == want
