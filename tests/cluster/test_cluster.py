# SPDX-License-Identifier: MIT
"""Cluster shipping (issue 16, items 1 and 5) end to end: real stepscoped nodes, each with its own
data dir and --node name, shipping to Debian's clickhouse-server 18.16 started by the test on
loopback ports (chserver.py). ClickHouse must hold every committed row exactly once, whatever
fails: the engine stopped and restarted mid-ingest, a node killed with -9 before it saved its
cursor, an insert refused (a read-only user), ClickHouse's disk full."""
import http.client
import json
import os
import pathlib
import signal
import sys
import time
import urllib.parse

import pytest

from chserver import ClickHouse
from ssclient import Client, x_event

SPANS = int(os.environ.get("CLUSTER_SPANS", "20000"))  # per rank
STEPS = 12
QUEUES = 9
ESCAPED = 'q"\\\u00e9\U0001F600'


def node_args(ch, name, creds, *extra):
    return ["--cluster-url", ch.url, "--cluster-credentials-file", str(creds), "--node", name,
            "--cluster-retry-max-ms", "1000", *extra]


def creds_file(tmp, user="ship", password="s3cret"):
    p = tmp / f"creds-{user}"
    p.write_text(f"{user}:{password}\n")
    p.chmod(0o600)
    return p


def rank_lines(rank, n, first=0):
    """n spans of a rank (numbered from first, so a later call continues), then its steps and
    queue samples when first is 0."""
    lines = [x_event(i, name=f"op_{rank}_{i % 23}", tid=rank, pid=rank) for i in range(first, first + n)]
    if first == 0 and n:
        # One name with JSON escapes (a quote, a backslash, \u00e9 and a surrogate pair, as
        # json.dumps writes them by default): ClickHouse must get the text, not the escapes.
        lines[0] = json.dumps(x_event(0, name=ESCAPED, tid=rank, pid=rank)).encode()
    if first == 0:
        lines += [{"type": "step", "step": s, "begin_us": 1.7e15 + 1000.0 * s,
                   "end_us": 1.7e15 + 1000.0 * s + 900.5, "samples": 32} for s in range(STEPS)]
        lines += [{"type": "queue", "name": "device_queue", "size": q % 4, "capacity": 8,
                   "step": q, "ts_us": 1.7e15 + 1000.0 * q} for q in range(QUEUES)]
    return lines


def host_pipe_lines(rank):
    """A rank's host samples (process and system CPU, RSS) and two pipeline records (the later
    one replaces the first in live), each distinct per rank."""
    lines = [{"type": "host", "ts_us": 1.7e15 + 1000.0 * i, "cpu_percent": 12.5 + rank + i / 3,
              "sys_cpu_percent": 40.25 + rank / 7 + i, "rss_bytes": (1 << 30) + rank * 4096 + i}
             for i in range(5)]
    for k in range(2):
        lines.append({"type": "pipeline", "ts_us": 1.7e15 + 2000.0 * k, "ops": [
            {"id": 0, "name": "BatchOp", "children": [1], "num_workers": 4 + k,
             "queue_sizes": [3, 5 + rank % 3], "queue_capacity": 8},
            {"id": 1, "name": "GeneratorOp", "children": [], "num_workers": 1,
             "queue_usage": 0.5 + rank / 100}]})
    return lines


def send(d, job, rank, lines, world=8, stream=None):
    with Client(d.socket) as c:
        c.hello(job, rank=rank, world_size=world, stream=stream, seq=0 if stream else None)
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)


def cluster_stats(d):
    s = d.stats()["cluster"]
    assert s is not None, "no cluster object in /api/v1/stats"
    return s


def wait_shipped(d, timeout=60):
    """Until the node has nothing pending and its last attempt worked. The gauge is as of the
    shipper's last look (every 200 ms while idle): wait one look past the acks first."""
    time.sleep(0.5)
    d.wait_for("shipping caught up",
               lambda: (lambda s: s["pending_rows"] == 0 and not s["failing"] and s)(cluster_stats(d)),
               timeout=timeout)


def ch_counts(ch, table, job, final=True):
    """{(node, rank): rows} of a job in ClickHouse."""
    rows = ch.rows(f"SELECT node, rank, count() FROM stepscope.{table} {'FINAL' if final else ''} "
                   f"WHERE job = '{job}' GROUP BY node, rank ORDER BY node, rank")
    return {(r[0], int(r[1])): int(r[2]) for r in rows}


def test_four_nodes_eight_ranks_every_row_once(ch, daemons, tmp):
    creds = creds_file(tmp)
    nodes = [daemons(f"n{k}", args=node_args(ch, f"node{k}", creds)) for k in range(4)]
    for k, d in enumerate(nodes):
        for r in (2 * k, 2 * k + 1):
            send(d, "train", r, rank_lines(r, SPANS))
    expected_spans, expected_steps, expected_queues = {}, {}, {}
    for k, d in enumerate(nodes):
        wait_shipped(d)
        # Its own ranks whole (the other nodes' come in too, pulled: test_view.py).
        detail = d.get_json("/api/v1/jobs/train")["ranks_detail"]
        own = {r["rank"]: r["events"] for r in detail if r["node"] == f"node{k}"}
        assert own == {2 * k: SPANS, 2 * k + 1: SPANS}
        for r in (2 * k, 2 * k + 1):
            expected_spans[(f"node{k}", r)] = SPANS
            expected_steps[(f"node{k}", r)] = STEPS
            expected_queues[(f"node{k}", r)] = QUEUES
        s = cluster_stats(d)
        assert s["rows"] == 2 * (SPANS + STEPS + QUEUES)
        assert s["retries"] == 0 and s["last_error"] is None
    # Each node's own ranks only: the ranks it pulled from the others are never shipped again.
    assert ch_counts(ch, "spans", "train") == expected_spans
    assert ch_counts(ch, "steps", "train") == expected_steps
    assert ch_counts(ch, "queue_samples", "train") == expected_queues
    # Nothing doubled even before a merge: without a failure every row was inserted once.
    assert ch_counts(ch, "spans", "train", final=False) == expected_spans
    # The rows are the events sent: names, times (ns, from fractional microseconds), durations.
    got = ch.rows("SELECT name, ts_ns, dur_ns, pid, tid FROM stepscope.spans FINAL "
                  "WHERE job = 'train' AND rank = 5 ORDER BY ts_ns LIMIT 3")
    # The first name is the escaped one, compared byte for byte (hex: TSV would escape it).
    assert ch.query("SELECT hex(name) FROM stepscope.spans FINAL WHERE job = 'train' AND "
                    "rank = 5 ORDER BY ts_ns LIMIT 1").strip() == ESCAPED.encode().hex().upper()
    got[0][0] = "op_5_0"
    # x_event(i): ts 1700000000000000 + 10.5 i us, dur 2.25 + i % 5 us.
    assert got == [[f"op_5_{i}", str(1700000000000000000 + 10500 * i), str(2250 + 1000 * (i % 5)),
                    "5", "5"] for i in range(3)]
    steps = ch.rows("SELECT step, begin_ns, end_ns, samples FROM stepscope.steps FINAL "
                    "WHERE job = 'train' AND rank = 0 ORDER BY step LIMIT 2")
    assert steps == [["0", "1700000000000000000", "1700000000000900500", "32"],
                     ["1", "1700000000001000000", "1700000000001900500", "32"]]
    # Every migration applied (nodes starting together may each record one: harmless).
    assert ch.scalar("SELECT max(version) FROM stepscope.schema_migrations") == 7


def test_engine_stopped_and_restarted_mid_ingest(ch, daemons, tmp):
    creds = creds_file(tmp)
    d = daemons("n", args=node_args(ch, "nodeA", creds, "--cluster-batch-rows", "5000"))
    send(d, "outage", 0, rank_lines(0, SPANS))
    wait_shipped(d)
    ch.stop(signal.SIGKILL)
    # Ingest goes on while the engine is down: every line acked, served locally.
    t0 = time.monotonic()
    send(d, "outage", 1, rank_lines(1, SPANS))
    assert time.monotonic() - t0 < 30
    assert d.job("outage")["spans"] == 2 * SPANS
    d.wait_for("the failure shown", lambda: cluster_stats(d)["failing"], timeout=20)
    s = cluster_stats(d)
    assert s["pending_rows"] > 0 and s["retries"] >= 1 and s["lag_ms"] > 0
    assert "cannot reach ClickHouse" in s["last_error"]
    # The cluster view's puller is away from ClickHouse too, and says so.
    d.wait_for("the view failing", lambda: cluster_stats(d)["view"]["failing"], timeout=20)
    assert "cannot read from ClickHouse" in cluster_stats(d)["view"]["last_error"]
    ch.start()
    wait_shipped(d, timeout=90)
    assert ch_counts(ch, "spans", "outage") == {("nodeA", 0): SPANS, ("nodeA", 1): SPANS}
    assert ch_counts(ch, "steps", "outage") == {("nodeA", 0): STEPS, ("nodeA", 1): STEPS}
    s = cluster_stats(d)
    assert s["last_error"] and not s["failing"] and s["lag_ms"] == 0
    d.wait_for("the view back", lambda: not cluster_stats(d)["view"]["failing"], timeout=20)


def test_node_killed_with_9_resumes_from_its_cursor(ch, daemons, tmp):
    creds = creds_file(tmp)
    # Small batches at a bounded rate, so that the kill lands mid-way through the backlog.
    args = node_args(ch, "nodeK", creds, "--cluster-batch-rows", "2000",
                     "--cluster-max-rows-per-s", "40000")
    d = daemons("k", args=args)
    n = 4 * SPANS
    send(d, "killed", 3, rank_lines(3, n))
    d.wait_for("some batches shipped", lambda: cluster_stats(d)["batches"] >= 3, timeout=30)
    before = cluster_stats(d)["rows"]
    assert before < n, "shipped everything before the kill: the test proves nothing"
    d.kill9()
    d.start()
    wait_shipped(d, timeout=90)
    after = cluster_stats(d)["rows"]
    # The new process shipped only what the cursor had not passed. At the kill at least
    # `before` rows were taken (more may have been between the read and the kill), and the
    # batch in flight may be sent again when ClickHouse had taken it but the cursor was not
    # saved (a batch is whole blocks of ~1 MiB of lines past 2000 rows: some thousands of spans).
    total = n + STEPS + QUEUES
    assert 0 < after <= total - before + 10000, (before, after)
    assert ch_counts(ch, "spans", "killed") == {("nodeK", 3): n}
    assert ch_counts(ch, "steps", "killed") == {("nodeK", 3): STEPS}
    # A batch sent twice collapses once merged: the raw count equals the exact one after it.
    ch.query("OPTIMIZE TABLE stepscope.spans FINAL")
    assert ch_counts(ch, "spans", "killed", final=False) == {("nodeK", 3): n}


def test_refused_insert_is_reported_and_backed_off(ch, daemons, tmp):
    # The read-only user may read but not create or insert: ClickHouse answers Code 164.
    creds = creds_file(tmp, "reader", "r")
    d = daemons("ro", args=node_args(ch, "nodeR", creds))
    t0 = time.monotonic()
    send(d, "refused", 0, rank_lines(0, 1000))
    assert d.job("refused")["spans"] == 1000  # served locally all the same
    # Backoff 250, 500, 1000, 1000 ms... (cluster_retry_max_ms 1000 here): at the cap within a
    # few attempts, then one attempt a second, not a storm.
    d.wait_for("the backoff at its cap", lambda: cluster_stats(d)["backoff_ms"] == 1000,
               timeout=30)
    time.sleep(3.0)
    s = cluster_stats(d)
    elapsed = time.monotonic() - t0
    assert s["failing"] and s["rows"] == 0
    assert "readonly" in s["last_error"] and "Code: 164" in s["last_error"], s["last_error"]
    assert 4 <= s["retries"] <= 4 + elapsed, (s, elapsed)
    metrics = d.request("/metrics")[2].decode()
    assert "stepscope_cluster_failing 1" in metrics
    assert "stepscope_cluster_pending_rows " in metrics


def test_full_disk_reported_backed_off_and_nothing_lost(daemons, tmp):
    """ClickHouse's data disk full (a 32 MB tmpfs under its data path, filled by a file): every
    INSERT fails (errno 28, "No space left on device", Code 75). The node keeps serving locally,
    shows the error in /stats and /metrics, retries on the backoff schedule (not a storm), and
    once the filler is gone ships the backlog whole, each row once."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "reliability"))
    from mounts import free_bytes, tmpfs

    root = tmp / "chfull"
    (root / "data").mkdir(parents=True)
    with tmpfs(root / "data", "32m") as data:
        ch = ClickHouse(root)
        ch.start()
        try:
            d = daemons("full", args=node_args(ch, "nodeF", creds_file(tmp)))
            send(d, "full", 0, rank_lines(0, 1000))
            wait_shipped(d)
            filler = data / "filler"
            with open(filler, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 16))
                except OSError:
                    pass
            assert free_bytes(data) < (1 << 16)
            t0 = time.monotonic()
            send(d, "full", 1, rank_lines(1, 5000))
            assert d.job("full")["spans"] == 6000  # served locally all the same
            d.wait_for("the backoff at its cap", lambda: cluster_stats(d)["backoff_ms"] == 1000,
                       timeout=30)
            s = cluster_stats(d)
            assert s["failing"] and "No space left on device" in s["last_error"], s["last_error"]
            # Backoff 250, 500, 1000, 1000 ms...: a window of 8 s at the cap holds at most 9
            # attempts (the first may start at its beginning), and at least a few.
            r0, w0 = s["retries"], time.monotonic()
            time.sleep(8.0)
            s = cluster_stats(d)
            window = time.monotonic() - w0
            assert 3 <= s["retries"] - r0 <= window + 1, (s, window)
            assert s["retries"] <= 4 + (time.monotonic() - t0), s
            assert s["pending_rows"] > 0 and s["lag_ms"] > 0
            metrics = d.request("/metrics")[2].decode()
            assert "stepscope_cluster_failing 1" in metrics
            assert "stepscope_cluster_backoff_seconds 1.000" in metrics
            # Space back: the backlog goes, each row once (nothing taken twice: a failed INSERT
            # leaves no part behind, and the parts already taken are not sent again).
            filler.unlink()
            wait_shipped(d, timeout=60)
            want = {("nodeF", 0): 1000, ("nodeF", 1): 5000}
            assert ch_counts(ch, "spans", "full") == want
            assert ch_counts(ch, "spans", "full", final=False) == want
            assert ch_counts(ch, "steps", "full", final=False) == {("nodeF", 0): STEPS,
                                                                  ("nodeF", 1): STEPS}
            assert ch_counts(ch, "queue_samples", "full", final=False) == {("nodeF", 0): QUEUES,
                                                                          ("nodeF", 1): QUEUES}
            s = cluster_stats(d)
            assert not s["failing"] and s["rows"] == 6000 + 2 * (STEPS + QUEUES)
        finally:
            ch.stop()


def test_dropped_table_reported_then_recreated(ch, daemons, tmp):
    """A table dropped behind the node's back: the insert is refused (Code 60), reported and
    backed off; the next attempt checks the schema first, makes the table again and ships."""
    creds = creds_file(tmp)
    d = daemons("drop", args=node_args(ch, "nodeD", creds))
    send(d, "dropped", 0, rank_lines(0, 1000))
    wait_shipped(d)
    ch.query("DROP TABLE stepscope.spans")
    send(d, "dropped", 1, rank_lines(1, 1000))
    d.wait_for("the refusal shown", lambda: "Code: 60" in (cluster_stats(d)["last_error"] or ""),
               timeout=20)
    wait_shipped(d, timeout=30)
    s = cluster_stats(d)
    assert s["retries"] >= 1 and not s["failing"]
    # What the dropped table held is gone from ClickHouse (the node still has it); rank 1, sent
    # after the drop, is there whole.
    assert ch_counts(ch, "spans", "dropped") == {("nodeD", 1): 1000}
    assert d.job("dropped")["spans"] == 2000


def delete_job(d, job):
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    try:
        conn.request("DELETE", "/api/v1/jobs/" + urllib.parse.quote(job, safe=""),
                     headers={"X-Requested-With": "test"})
        return conn.getresponse().status
    finally:
        conn.close()


def test_job_delete_propagated(ch, daemons, tmp):
    """DELETE /api/v1/jobs/{job} on a node deletes that node's rows of the job in ClickHouse
    (every table), not other nodes' rows of a job of the same name, nor its other jobs; a job
    made again under that name afterwards ships whole; a delete made while the engine is away
    waits in the node's store, across a kill -9, and is carried out once it is back."""
    creds = creds_file(tmp)
    # Shipping only: a node with the cluster view holds the other's rank of "it's" through its
    # puller's connection, and a job with a connected client is not deleted (409).
    a = daemons("da", args=node_args(ch, "nodeX", creds, "--cluster-view", "false"))
    b = daemons("db", args=node_args(ch, "nodeY", creds, "--cluster-view", "false"))
    send(a, "kept", 0, rank_lines(0, 1000))
    # The newest rows of node X: once deleted, SQLite gives their rowids to the next rows.
    send(a, "it's", 1, rank_lines(1, 2000) + host_pipe_lines(1))
    send(b, "it's", 2, rank_lines(2, 1000) + host_pipe_lines(2))
    for d in (a, b):
        wait_shipped(d)
    tables = ("spans", "steps", "queue_samples", "host_samples", "pipelines", "step_ranks")
    a.wait_for("the aggregates shipped", lambda: set(ch_counts(ch, "step_ranks", "it\\'s")) ==
               {("nodeX", 1), ("nodeY", 2)}, timeout=30)
    kept = {t: ch_counts(ch, t, "kept", final=False) for t in tables}
    assert kept["spans"] == {("nodeX", 0): 1000} and kept["step_ranks"]

    assert delete_job(a, "it's") == 204
    want = {"spans": {("nodeY", 2): 1000}, "steps": {("nodeY", 2): STEPS},
            "queue_samples": {("nodeY", 2): QUEUES}, "host_samples": {("nodeY", 2): 5},
            "pipelines": {("nodeY", 2): 2}}
    a.wait_for("node X's rows of the job deleted in ClickHouse", lambda: all(
        set(ch_counts(ch, t, "it\\'s", final=False)) == {("nodeY", 2)} for t in tables), timeout=60)
    for t, rows in want.items():
        assert ch_counts(ch, t, "it\\'s", final=False) == rows
    assert {t: ch_counts(ch, t, "kept", final=False) for t in tables} == kept
    s = cluster_stats(a)
    assert s["deletes"] == 1 and s["pending_deletes"] == 0 and not s["failing"], s
    assert cluster_stats(b)["deletes"] == 0

    # The same name again on node X: a new job, shipped whole (its rows take the deleted rows'
    # rowids), which the delete made before it does not touch.
    send(a, "it's", 3, rank_lines(3, 1500))
    wait_shipped(a)
    assert ch_counts(ch, "spans", "it\\'s") == {("nodeX", 3): 1500, ("nodeY", 2): 1000}
    assert ch_counts(ch, "steps", "it\\'s") == {("nodeX", 3): STEPS, ("nodeY", 2): STEPS}

    # The engine away: the delete waits in the node's store, across a kill -9.
    ch.stop(signal.SIGKILL)
    assert delete_job(a, "kept") == 204
    a.wait_for("the delete pending", lambda: (lambda s: s["pending_deletes"] == 1 and s["failing"])(
        cluster_stats(a)), timeout=20)
    a.kill9()
    a.start()
    assert cluster_stats(a)["pending_deletes"] == 1
    ch.start()
    a.wait_for("the delete carried out", lambda: cluster_stats(a)["pending_deletes"] == 0,
               timeout=60)
    a.wait_for("node X's rows of kept deleted in ClickHouse", lambda: not any(
        ch_counts(ch, t, "kept", final=False) for t in tables), timeout=60)
    assert cluster_stats(a)["deletes"] == 1
    assert ch_counts(ch, "spans", "it\\'s") == {("nodeX", 3): 1500, ("nodeY", 2): 1000}


def test_credentials_never_in_the_url(daemons, tmp):
    d = daemons("bad", start=False, args=["--cluster-url", "http://ship:s3cret@127.0.0.1:1/"])
    r = d.run_to_exit()
    assert r.returncode == 2
    assert b"cluster_credentials_file" in r.stderr


def test_uncompressed_request_bodies(ch, daemons, tmp):
    """cluster_compression none: RowBinary bodies as they are (no Content-Encoding), the same
    rows in ClickHouse as with gzip; a value other than gzip or none is refused at start."""
    bad = daemons("badz", start=False, args=["--cluster-compression", "zstd"])
    r = bad.run_to_exit()
    assert r.returncode == 2 and b"cluster_compression" in r.stderr, r.stderr
    creds = creds_file(tmp)
    d = daemons("raw", args=node_args(ch, "nodeN", creds, "--cluster-compression", "none"))
    send(d, "raw", 6, rank_lines(6, 3000))
    wait_shipped(d)
    assert ch_counts(ch, "spans", "raw", final=False) == {("nodeN", 6): 3000}
    assert ch_counts(ch, "steps", "raw", final=False) == {("nodeN", 6): STEPS}
    assert ch.query("SELECT hex(name) FROM stepscope.spans WHERE job = 'raw' ORDER BY ts_ns "
                    "LIMIT 1").strip() == ESCAPED.encode().hex().upper()
    # The bytes sent are the RowBinary rows themselves: over 40 a span (node, job, names...).
    assert cluster_stats(d)["bytes"] > 40 * 3000


def test_rows_shipped_twice_collapse(ch, daemons, tmp):
    """The worst case of a retry, made certain: the cursor is lost after ClickHouse took every
    batch (as if each node crashed between the INSERT and the cursor save), so the node ships
    all of it again. The raw count doubles; FINAL, and a merge, give each row once."""
    import sqlite3
    creds = creds_file(tmp)
    d = daemons("twice", args=node_args(ch, "nodeT", creds, "--cluster-batch-rows", "3000"))
    send(d, "twice", 4, rank_lines(4, SPANS))
    wait_shipped(d)
    d.stop()
    db = sqlite3.connect(os.path.join(d.data_dir, "stepscope.db"))
    assert db.execute("DELETE FROM ship_cursors").rowcount == 1
    db.commit()
    db.close()
    # A block's lines are one row of event_blocks (0006): its blocks as first shipped.
    blocks = ch_counts(ch, "event_blocks", "twice")
    assert blocks and blocks[("nodeT", 4)] >= 1
    lines = ch.scalar("SELECT sum(lines) FROM stepscope.event_blocks WHERE job = 'twice'")
    assert lines == SPANS  # every trace line of the rank, once
    # No background merge until the raw count was read: the copies must be there to collapse.
    tables = ("spans", "steps", "queue_samples", "event_blocks")
    for table in tables:
        ch.query(f"SYSTEM STOP MERGES stepscope.{table}")
    d.start()
    wait_shipped(d)
    assert cluster_stats(d)["rows"] == SPANS + STEPS + QUEUES
    assert ch_counts(ch, "spans", "twice", final=False) == {("nodeT", 4): 2 * SPANS}
    assert ch_counts(ch, "spans", "twice") == {("nodeT", 4): SPANS}
    assert ch_counts(ch, "steps", "twice") == {("nodeT", 4): STEPS}
    assert ch_counts(ch, "queue_samples", "twice") == {("nodeT", 4): QUEUES}
    # A retried block insert: two rows of each block until a merge, one with FINAL.
    twice = {k: 2 * v for k, v in blocks.items()}
    assert ch_counts(ch, "event_blocks", "twice", final=False) == twice
    assert ch_counts(ch, "event_blocks", "twice") == blocks
    assert ch.scalar("SELECT sum(lines) FROM stepscope.event_blocks FINAL "
                     "WHERE job = 'twice'") == SPANS
    for table in tables:
        ch.query(f"SYSTEM START MERGES stepscope.{table}")
        ch.query(f"OPTIMIZE TABLE stepscope.{table} FINAL")
    assert ch_counts(ch, "spans", "twice", final=False) == {("nodeT", 4): SPANS}
    assert ch_counts(ch, "steps", "twice", final=False) == {("nodeT", 4): STEPS}
    assert ch_counts(ch, "event_blocks", "twice", final=False) == blocks
    assert ch.scalar("SELECT sum(lines) FROM stepscope.event_blocks WHERE job = 'twice'") == SPANS


GPU_5STEPS = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "gpu_5steps_rank0.json.gz"


def wait_step_ranks_equal(ch, d, job_name, node, timeout=60, until=None):
    """Until ClickHouse's step_ranks FINAL rows of (job, rank 0, node) are the node's live /steps
    and /breakdown rows, ns for ns (and until(rows), when given, holds of the node's). Returns the
    rows."""
    from decimal import Decimal

    import tb_breakdown as tb

    def ns(v):
        return None if v is None else int(Decimal(str(v)) * 1000)

    job = "/api/v1/jobs/%d" % d.job(job_name)["id"]

    def expected():
        steps = d.get_json(job + "/steps?rank=0&limit=100000")["rows"]
        bd = {r["step"]: r for r in d.get_json(job + "/breakdown?rank=0&limit=100000")["rows"]}
        out = []
        for r in steps:
            b = bd.get(r["step"]) if r["from"] != "record" else None
            out.append([r["step"], ns(r["start_us"]), ns(r["end_us"]), r["spans"],
                        ns(r["interval_us"]) if r["source"] != "none" else -1,
                        ns(r["fp_bp_us"]) if r["source"] != "none" else -1,
                        ns(r["tail_us"]) if r["source"] != "none" else -1] +
                       [ns(b[c + "_us"]) if b else -1 for c in tb.CATS])
        return out

    cols = ", ".join(["step", "begin_ns", "end_ns", "spans", "interval_ns", "fp_bp_ns", "tail_ns"] +
                     [c + "_ns" for c in tb.CATS])

    def got():
        return [[int(v) for v in r] for r in ch.rows(
            f"SELECT {cols} FROM stepscope.step_ranks FINAL WHERE job = '{job_name}' AND rank = 0 "
            f"AND node = '{node}' ORDER BY step")]

    # Sent at most once a second, again while a breakdown was computed from fewer spans than
    # the snapshot's (one computation per 5 s while the job changes): well within 60 s.
    deadline = time.monotonic() + timeout
    while True:
        want, have = expected(), got()
        if want and want == have and (until is None or until(want)):
            return want
        assert time.monotonic() < deadline, (
            [w for w in want if w not in have], [h for h in have if h not in want])
        time.sleep(0.5)


def test_step_aggregates_equal_the_node_s_own_answers(ch, daemons, tmp):
    """The per-step, per-rank aggregates (step_ranks: stages and breakdown, not additive in
    SQL) are the node's live answers: a real Kineto trace of 5 ProfilerSteps, its /steps and
    /breakdown rows against ClickHouse's FINAL rows, ns for ns."""
    import tb_breakdown as tb

    creds = creds_file(tmp)
    d = daemons("agg", args=node_args(ch, "nodeG", creds))
    lines = tb.lines(GPU_5STEPS)
    with Client(d.socket) as c:
        c.hello("agg", rank=0)
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)
    want = wait_step_ranks_equal(ch, d, "agg", "nodeG")
    assert len(want) >= 4 and all(row[7] >= 0 for row in want), want  # breakdown filled
    s = cluster_stats(d)
    assert s["aggregate_rows"] >= len(want)


def test_an_early_step_that_grows_after_later_steps_is_shipped_again(ch, daemons, tmp):
    """A Kineto trace lists a step's kernels after every step's CPU operators, so the first
    step's row changes after the last step's appeared. Sent in that order, in two parts (the
    first step's late lines held back until ClickHouse has the first part's rows), ClickHouse
    must end with the grown row. Before the fix a rank's steps but its last 3 counted as
    settled: step 550 stayed at the first part's spans."""
    import json

    import tb_breakdown as tb

    creds = creds_file(tmp)
    d = daemons("grow", args=node_args(ch, "nodeE", creds))
    lines = tb.lines(GPU_5STEPS)
    events = [json.loads(line) for line in lines]
    steps = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(steps) == 5
    t0, t1 = steps[0]["ts"], steps[0]["ts"] + steps[0]["dur"]
    last_step_at = events.index(steps[-1])
    late = {i for i, e in enumerate(events)
            if i > last_step_at and e.get("ph") == "X" and t0 <= e["ts"] < t1}
    assert len(late) > 1000  # step 550's kernels, memcpys and runtime calls
    first = [line for i, line in enumerate(lines) if i not in late]
    with Client(d.socket) as c:
        c.hello("grow", rank=0)
        c.send_lines(first)
        c.wait_ack(len(first), timeout=60)
        before = wait_step_ranks_equal(ch, d, "grow", "nodeE")
        rest = [lines[i] for i in sorted(late)]
        c.send_lines(rest)
        c.wait_ack(len(first) + len(rest), timeout=60)
    # live republishes every 100 ms: until then the node and ClickHouse agree on the old row
    after = wait_step_ranks_equal(ch, d, "grow", "nodeE", until=lambda rows: rows[0][3] > before[0][3])
    assert [r[0] for r in after] == [550, 551, 552, 553, 554]
    assert after[0][3] > before[0][3]  # step 550 grew, and ClickHouse has it grown
    assert [r[3] for r in after[1:]] == [r[3] for r in before[1:]]  # the others' spans as they were
