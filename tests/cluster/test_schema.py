# SPDX-License-Identifier: MIT
"""The ClickHouse schema and every ClickHouse statement of the daemon on a current ClickHouse
(chdb-core, 26.x, in-process): the migrations of daemon/cluster/schema/ as the shipper runs them
(statements split at ';' ending a line), the INSERTs of daemon/cluster/cluster.c fed RowBinary
rows (the spans: a Native block) encoded the way cluster.c and rowbin.c encode them, twice, and the reads the tests and docs use. Debian's
18.16 runs the same files and INSERTs in test_cluster.py; together they are the two ends the
schema must support."""
import pathlib
import re
import struct

import pytest

import chdb.session as chdb_session  # noqa: E402  (chdb-core: scripts/test installs it)

REPO = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = REPO / "daemon" / "cluster" / "schema"
CLUSTER_C = REPO / "daemon" / "cluster" / "cluster.c"


def statements(text):
    """The shipper's split (cluster.c run_file()): at ';' ending a line, "--" lines dropped."""
    out = []
    for chunk in re.split(r";[ \t]*(?:\n|$)", text):
        body = "\n".join(l for l in chunk.splitlines() if not l.strip().startswith("--")).strip()
        if body:
            out.append(body)
    return out


def inserts():
    """insert_sql[] of cluster.c: adjacent C string literals joined."""
    src = CLUSTER_C.read_text()
    block = src[src.index("insert_sql[PART_COUNT + 2] = {"):]
    block = block[:block.index("};")]
    parts = re.findall(r'((?:"[^"]*"\s*)+),', block)
    return ["".join(re.findall(r'"([^"]*)"', p)) for p in parts]


def leb(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def encode(value, typ):
    if typ == "String":
        b = str(value).encode()  # pid: a String in spans, an Int64 in sessions
        return leb(len(b)) + b
    return struct.pack({"Int64": "<q", "UInt64": "<Q", "UInt32": "<I", "UInt8": "<B",
                        "Float64": "<d"}[typ], value)


SAMPLE = {"node": "n1", "job": "j", "rank": 3, "ts_ns": 1700000000000000000, "dur_ns": 2250,
          "ph": "X", "name": "op \u00e9", "cat": "kernel", "pid": "3", "tid": "7", "block": 9,
          "idx": 0, "step": 4, "begin_ns": 1700000000000000000, "end_ns": 1700000000000900500,
          "samples": 32, "phases": "{}", "row": 0, "size": 2, "capacity": 8, "spans": 40,
          "from_record": 0, "source": "trace", "interval_ns": 10, "fp_bp_ns": 800, "tail_ns": 90,
          "kernel_ns": 500, "memcpy_ns": 10, "memset_ns": 0, "communication_ns": 100,
          "runtime_ns": 50, "dataloader_ns": 40, "cpu_exec_ns": 200, "other_ns": 0, "version": 1, "world_size": 8,
          "host": "h1", "pid": 3, "framework": "torch", "framework_version": "2.4",
          "run": "r", "clock": "realtime", "started_ns": 1700000000000000000,
          "hello": '{"hello":"stepscope/1","job":"j","rank":3}',
          "cpu_percent": 12.5, "sys_cpu_percent": 40.25, "rss_bytes": 1 << 30,
          "json": '{"type":"pipeline","ops":[]}',
          "id": 1, "deleted_ns": 1700000000000000000, "last_block": 9, "last_step": 4,
          "last_queue": 2, "last_host": 0, "last_pipe": 0,
          "month": 202311, "line": '{"ph":"X","name":"op \\u00e9","ts":1700000000000000,"dur":2.25,"args":{"correlation":7}}'}
# An event_blocks row (0006): a stored block of one line, kept as it is (codec 0).
SAMPLE.update(lines=1, codec=0, data=SAMPLE["line"] + "\n",
              raw_bytes=len((SAMPLE["line"] + "\n").encode()))


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    s = chdb_session.Session(str(tmp_path_factory.mktemp("chdb")))
    files = sorted(SCHEMA.glob("[0-9][0-9][0-9][0-9]_*.sql"))
    assert [f.name[:4] for f in files] == [f"{i:04d}" for i in range(len(files))]
    for f in files:
        for st in statements(f.read_text()):
            s.query(st)
    # The bootstrap again (every node runs it at every start): idempotent.
    for st in statements(files[0].read_text()):
        s.query(st)
    yield s
    s.close()


def q(db, sql):
    return str(db.query(sql, "TabSeparated")).strip()


def test_migrations_table_and_sorting_keys(db):
    assert q(db, "SELECT max(version) FROM stepscope.schema_migrations") == "0"
    keys = dict(tuple(r.split("\t")) for r in q(db, "SELECT name, sorting_key FROM system.tables "
                                                    "WHERE database = 'stepscope' ORDER BY name").splitlines())
    assert keys["spans"] == "job, rank, ts_ns, node, block, idx"
    assert keys["steps"] == "job, rank, step, node, row"
    assert keys["queue_samples"] == "job, rank, ts_ns, node, row"
    assert keys["step_ranks"] == "job, rank, step, node"
    assert keys["sessions"] == "job, rank, node, row"
    assert keys["events"] == "job, rank, node, block, idx"
    assert keys["event_blocks"] == "job, rank, node, block"
    assert keys["host_samples"] == "job, rank, ts_ns, node, row"
    assert keys["pipelines"] == "job, rank, ts_ns, node, row"
    assert keys["deletes"] == "node, id"
    engines = q(db, "SELECT DISTINCT engine FROM system.tables WHERE database = 'stepscope' "
                    "AND name != 'schema_migrations'")
    assert engines == "ReplacingMergeTree"


@pytest.mark.parametrize("i", range(9))
def test_insert_twice_counts_once(db, tmp_path, i):
    sql = inserts()[i]
    m = re.match(r"INSERT INTO (stepscope\.\w+) \(([^)]*)\) FORMAT (RowBinary|Native)$", sql)
    assert m, sql
    table, cols, fmt = m.group(1), [c.strip() for c in m.group(2).split(",")], m.group(3)
    types = dict(tuple(r.split("\t")[:2]) for r in q(db, f"DESCRIBE TABLE {table}").splitlines())
    assert sorted(cols) == sorted(types), "the INSERT must name every column"
    n = 50
    rows = [dict(SAMPLE, idx=k, row=k, block=k, id=k, ts_ns=SAMPLE["ts_ns"] + k, step=k)
            for k in range(n)]
    if fmt == "RowBinary":  # rowbin.c's rows
        data = b"".join(encode(row[c], types[c]) for row in rows for c in cols)
    else:  # cluster.c read_batch(): one block, each column's name, type and values
        data = leb(len(cols)) + leb(n) + b"".join(
            encode(c, "String") + encode(types[c], "String") +
            b"".join(encode(row[c], types[c]) for row in rows) for c in cols)
    f = tmp_path / "batch.bin"
    f.write_bytes(data)
    structure = ", ".join(f"{c} {types[c]}" for c in cols)
    # The shipper's statement, with its body read from the file (chdb takes no request body).
    stmt = sql.replace(f" FORMAT {fmt}", f" SELECT * FROM file('{f}', '{fmt}', '{structure}')")
    db.query(stmt)
    db.query(stmt)  # a retried batch
    assert q(db, f"SELECT count() FROM {table}") == str(2 * n)
    assert q(db, f"SELECT count() FROM {table} FINAL") == str(n)
    # The tests' per-(node, rank) count, as test_cluster.py asks 18.16 (deletes: per node).
    if "rank" not in cols:
        assert q(db, f"SELECT node, count() FROM {table} FINAL GROUP BY node") == f"n1\t{n}"
    else:
        assert q(db, f"SELECT node, rank, count() FROM {table} FINAL WHERE job = 'j' "
                     "GROUP BY node, rank ORDER BY node, rank") == f"n1\t3\t{n}"
    db.query(f"OPTIMIZE TABLE {table} FINAL")
    assert q(db, f"SELECT count() FROM {table}") == str(n)
    if table.endswith("spans"):
        assert q(db, f"SELECT name FROM {table} LIMIT 1") == "op \u00e9"
    if table.endswith("events"):  # the line verbatim, escapes and all
        assert q(db, f"SELECT hex(line) FROM {table} LIMIT 1") == SAMPLE["line"].encode().hex().upper()
    if table.endswith("event_blocks"):  # the block's bytes as the node sent them
        assert q(db, f"SELECT hex(data) FROM {table} LIMIT 1") == SAMPLE["data"].encode().hex().upper()


def test_schema_version_query_and_record(db):
    # migrate() in cluster.c: the max, then one row per applied version.
    db.query("INSERT INTO stepscope.schema_migrations (version, name, node) "
             "VALUES (1, '0001_tables', 'n1')")
    assert q(db, "SELECT max(version) FROM stepscope.schema_migrations FORMAT TabSeparated") == "1"


def test_step_ranks_keep_the_latest_version(db):
    # A step sent again while it fills in: FINAL keeps the row of the highest version.
    for version, total in ((1, 100), (3, 300), (2, 200)):
        db.query("INSERT INTO stepscope.step_ranks (node, job, rank, step, begin_ns, end_ns, "
                 "samples, spans, from_record, source, interval_ns, fp_bp_ns, tail_ns, kernel_ns, "
                 "memcpy_ns, memset_ns, communication_ns, runtime_ns, dataloader_ns, cpu_exec_ns, "
                 f"other_ns, version) VALUES ('n9', 'v', 0, 7, 0, {total}, -1, 1, 0, 'none', -1, "
                 f"-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, {version})")
    assert q(db, "SELECT end_ns FROM stepscope.step_ranks FINAL WHERE job = 'v'") == "300"
    assert q(db, "SELECT argMax(end_ns, version) FROM stepscope.step_ranks WHERE job = 'v'") == "300"


def delete_tables():
    """delete_tables[] of cluster.c."""
    src = CLUSTER_C.read_text()
    block = src[src.index("delete_tables[] = {"):]
    return re.findall(r'"(\w+)"', block[:block.index("};")])


def literal(s):
    """cluster.c put_literal(): quotes, a backslash before ' and \\."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def test_job_delete_is_a_mutation_of_every_table(db):
    # carry_out_deletes() in cluster.c: every table with a node's rows of a job, one ALTER
    # TABLE ... DELETE each, the node and job as put_literal() quotes them; not deletes (the
    # record of the delete that the viewers read).
    with_job = q(db, "SELECT table FROM system.columns WHERE database = 'stepscope' AND "
                     "name IN ('node', 'job') AND table != 'deletes' GROUP BY table "
                     "HAVING count() = 2 ORDER BY table")
    assert sorted(delete_tables()) == with_job.splitlines()
    job = "it's a \\ job"
    for node in ("n1", "n2"):
        db.query("INSERT INTO stepscope.steps (node, job, rank, step, begin_ns, end_ns, samples, "
                 f"phases, row) VALUES ({literal(node)}, {literal(job)}, 0, 1, 0, 9, -1, '', 1)")
    db.query("INSERT INTO stepscope.steps (node, job, rank, step, begin_ns, end_ns, samples, "
             "phases, row) VALUES ('n1', 'other', 0, 1, 0, 9, -1, '', 2)")
    db.query("SET mutations_sync = 1")  # the daemon does not wait: ClickHouse runs it later
    for t in delete_tables():
        db.query(f"ALTER TABLE stepscope.{t} DELETE WHERE node = {literal('n1')} AND "
                 f"job = {literal(job)}")
    assert q(db, f"SELECT node, job = {literal(job)} FROM stepscope.steps WHERE job IN "
                 f"('other', {literal(job)}) ORDER BY node, job") == "n1\t0\nn2\t1"


PULL_C = REPO / "daemon" / "cluster" / "pull.c"


def pull_formats():
    """pull.c pull_batch()'s snprintf formats into its buffers (q: the last, the spans' read),
    adjacent literals joined, PRId64 as "d", for Python's %."""
    src = PULL_C.read_text()
    src = src[src.index("static int64_t pull_batch("):]
    src = src[:src.index("case T_STEPS") if "case T_STEPS" in src else src.index("default:")]
    out = {}
    for var, lits in re.findall(r'snprintf\((\w+), sizeof \w+,\s*((?:"(?:[^"\\]|\\.)*"\s*|PRId64\s*)+),', src):
        fmt = "".join("d" if t == "PRId64" else t[1:-1].replace('\\"', '"')
                      for t in re.findall(r'"(?:[^"\\]|\\.)*"|PRId64', lits))
        out[var] = fmt
    return out


def test_pull_query_of_lines_over_blocks_events_and_spans(db):
    """The puller's read of an origin's lines (pull.c pull_batch(), T_SPANS) on a current
    ClickHouse: each block from event_blocks, else from events, else its spans, in (block, idx)
    order, past the cursor and below the kblocks-th stored block."""
    f = pull_formats()
    assert set(f) == {"node", "after", "after_blk", "lim", "q"}, sorted(f)
    for t in ("spans", "events", "event_blocks"):
        db.query(f"TRUNCATE TABLE stepscope.{t}")
    # Block 1: spans only (a node older than 0004); 2: events rows; 3 and 4: event_blocks rows.
    db.query("INSERT INTO stepscope.spans (node, job, rank, ts_ns, dur_ns, ph, name, cat, pid, "
             "tid, block, idx) VALUES ('o', 'j', 0, 5, 1, 'X', 'a', '', '1', '1', 1, 0), "
             "('o', 'j', 0, 6, 1, 'X', 'b', '', '1', '1', 2, 1), "
             "('o', 'j', 0, 7, 1, 'X', 'c', '', '1', '1', 3, 0)")
    db.query("INSERT INTO stepscope.events (node, job, rank, block, idx, month, line) VALUES "
             "('o', 'j', 0, 2, 0, 197001, 'l0'), ('o', 'j', 0, 2, 1, 197001, 'l1')")
    for block in (3, 4, 4):  # block 4 inserted twice (a retry): both rows come, side by side
        db.query("INSERT INTO stepscope.event_blocks (node, job, rank, block, month, lines, "
                 f"raw_bytes, codec, data) VALUES ('o', 'j', 0, {block}, 197001, 2, 6, 0, "
                 "'x\\ny\\n')")

    def read(block, idx, kblocks, limit=100):
        parts = {"node": f["node"] % "o", "after": f["after"] % (block, block, idx),
                 "after_blk": f["after_blk"] % (block, block, idx)}
        parts["lim"] = f["lim"] % (kblocks, parts["node"], block, kblocks)
        sql = f["q"] % (parts["node"], parts["after_blk"], parts["lim"], parts["node"],
                        parts["after"], parts["lim"], parts["node"], block, parts["node"],
                        parts["after"], parts["lim"], parts["node"], block, parts["node"],
                        block, limit)
        sql = sql.replace(" FORMAT RowBinary", "")
        return [tuple(r.split("\t")) for r in q(db, sql + " FORMAT TabSeparated").splitlines()]

    # job, rank, kind, line, codec, raw_bytes, ts_ns, dur_ns, ph, name, cat, pid, tid, block, idx
    rows = read(0, 0, 16)
    assert [(r[2], r[13], r[14]) for r in rows] == [
        ("0", "1", "0"), ("1", "2", "0"), ("1", "2", "1"), ("2", "3", "1"), ("2", "4", "1"),
        ("2", "4", "1")]
    assert rows[0][9] == "a" and rows[1][3] == "l0" and rows[3][3] == "x\\ny\\n"
    # Past block 2's first line; one stored block at a time: up to block 3.
    assert [(r[2], r[13], r[14]) for r in read(2, 0, 1)] == [("1", "2", "1"), ("2", "3", "1")]
    # Past everything: nothing.
    assert read(4, 1, 16) == []
