#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Bytes per span stored in ClickHouse (issue 16, item 6), compressed and uncompressed, per
column, after OPTIMIZE ... FINAL (one merged part per partition, duplicates collapsed).

1. Starts Debian's clickhouse-server (tests/cluster/chserver.py) on loopback ports and a node
   (stepscoped --cluster-url, its own data dir).
2. Sends two inputs as two jobs and waits until the node shipped everything:
   - "synthetic": EVENTS spans of tests/bench/loadgen (8 connections, 240-byte X events with
     repeating names, as tests/bench/ship.py);
   - "kineto": a real PyTorch profiler trace (tests/data/kineto/gpu_5steps_rank0.json.gz: CPU
     ops, CUDA runtime calls and kernels of 5 ProfilerSteps), sent as rank 0.
3. OPTIMIZE TABLE stepscope.spans FINAL, then per job: the same rows copied into a table of its
   own (so each job's bytes are its own), optimized, and read from system.columns
   (data_compressed_bytes, data_uncompressed_bytes per column) and system.parts (bytes_on_disk:
   the columns plus primary index, marks and checksums) over count(); beside it the node's own
   compressed timeline bytes of the job (/api/v1/jobs stored_bytes: its zstd blocks, every event
   of the lines, not only spans) over the same count.

Environment: BUILD_DIR (build), EVENTS (2000000). Prints a per-column table per job on stderr
and one line per job: job=<J> spans=<N> compressed_per_span=<C> uncompressed_per_span=<U>
on_disk_per_span=<D> node_stored_per_span=<S>.
"""
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

from ship import BUILD, EVENTS, REPO, jobs_of, start_daemon, stats  # tests/bench/ship.py

sys.path.insert(0, str(REPO / "tests" / "integ"))
import tb_breakdown  # noqa: E402
from chserver import ClickHouse  # noqa: E402
from ssclient import Client  # noqa: E402

TRACE = REPO / "tests" / "data" / "kineto" / "gpu_5steps_rank0.json.gz"


def bytes_of(ch, job, spans, node_bytes):
    table = f"stepscope.b_{job}"
    ch.query(f"CREATE TABLE {table} AS stepscope.spans")
    ch.query(f"INSERT INTO {table} SELECT * FROM stepscope.spans FINAL WHERE job = '{job}'")
    ch.query(f"OPTIMIZE TABLE {table} FINAL")
    n = ch.scalar(f"SELECT count() FROM {table}")
    assert n == spans, (job, n, spans)
    cols = ch.rows("SELECT name, type, data_compressed_bytes, data_uncompressed_bytes "
                   "FROM system.columns WHERE database = 'stepscope' AND "
                   f"table = 'b_{job}' ORDER BY data_compressed_bytes DESC")
    disk = ch.scalar("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'stepscope' "
                     f"AND table = 'b_{job}' AND active")
    parts = ch.scalar("SELECT count() FROM system.parts WHERE database = 'stepscope' "
                      f"AND table = 'b_{job}' AND active")
    comp = sum(int(c[2]) for c in cols)
    unc = sum(int(c[3]) for c in cols)
    print(f"\n{job}: {n} spans, {parts} part(s) after OPTIMIZE FINAL", file=sys.stderr)
    print(f"{'column':10} {'type':8} {'compressed B/span':>18} {'uncompressed B/span':>20}",
          file=sys.stderr)
    for name, typ, c, u in cols:
        print(f"{name:10} {typ:8} {int(c) / n:18.2f} {int(u) / n:20.2f}", file=sys.stderr)
    print(f"{'total':10} {'':8} {comp / n:18.2f} {unc / n:20.2f}  (on disk with index and "
          f"marks: {disk / n:.2f}; the node's zstd blocks of the job: {node_bytes / n:.2f})",
          file=sys.stderr)
    ev = events_of(ch, job, n)
    return f"job={job} spans={n} compressed_per_span={comp / n:.2f} " \
           f"uncompressed_per_span={unc / n:.2f} on_disk_per_span={disk / n:.2f} " \
           f"node_stored_per_span={node_bytes / n:.2f} {ev}"


def events_of(ch, job, n):
    """The job's lines verbatim, per span of the job, the same way: one row per line
    (stepscope.events, 0004_events.sql: what builds before 0006 ship) and one row per stored
    block (stepscope.event_blocks, 0006_event_blocks.sql: the node's zstd frames), whichever
    hold the job's lines; zeros on a build that ships neither."""
    lines = comp = unc = disk = 0
    for src, prefix, count in (("events", "e", "count()"), ("event_blocks", "eb", "sum(lines)")):
        if not ch.scalar("SELECT count() FROM system.tables WHERE database = 'stepscope' AND "
                         f"name = '{src}'"):
            continue
        table = f"stepscope.{prefix}_{job}"
        ch.query(f"CREATE TABLE {table} AS stepscope.{src}")
        ch.query(f"INSERT INTO {table} SELECT * FROM stepscope.{src} FINAL WHERE job = '{job}'")
        ch.query(f"OPTIMIZE TABLE {table} FINAL")
        rows = ch.scalar(f"SELECT count() FROM {table}")
        if not rows:
            continue
        lines += ch.scalar(f"SELECT {count} FROM {table}")
        cols = ch.rows("SELECT name, data_compressed_bytes, data_uncompressed_bytes "
                       "FROM system.columns WHERE database = 'stepscope' AND "
                       f"table = '{table.split('.')[1]}' ORDER BY data_compressed_bytes DESC")
        d = ch.scalar("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = "
                      f"'stepscope' AND table = '{table.split('.')[1]}' AND active")
        c = sum(int(x[1]) for x in cols)
        u = sum(int(x[2]) for x in cols)
        comp, unc, disk = comp + c, unc + u, disk + d
        print(f"{job} {src}: {rows} rows; per span of the job: " +
              ", ".join(f"{x[0]} {int(x[1]) / n:.2f}" for x in cols) +
              f"; compressed {c / n:.2f}, uncompressed {u / n:.2f}, on disk {d / n:.2f}",
              file=sys.stderr)
    return f"events_lines={lines} events_compressed_per_span={comp / n:.2f} " \
           f"events_on_disk_per_span={disk / n:.2f}"


def main():
    subprocess.run(["ninja", "-C", str(BUILD), "daemon/stepscoped", "tests/bench/loadgen"],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="ssbytes.") as d:
        root = pathlib.Path(d)
        ch = ClickHouse(root / "clickhouse")
        ch.start()
        try:
            print(f"ch_bytes.py: ClickHouse {ch.query('SELECT version()').strip()}, "
                  f"{EVENTS} synthetic spans, {TRACE.name}", file=sys.stderr)
            tmp = root / "node"
            tmp.mkdir()
            p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "bytes"])
            subprocess.run([str(BUILD / "tests" / "bench" / "loadgen"), "--socket",
                            str(tmp / "d.sock"), "--events", str(EVENTS), "--connections", "8",
                            "--job", "synthetic"], check=True, stdout=subprocess.DEVNULL)
            lines = tb_breakdown.lines(TRACE)
            with Client(str(tmp / "d.sock")) as c:
                c.hello("kineto", rank=0)
                c.send_lines(lines)
                c.wait_ack(len(lines), timeout=120)
            jobs = {}
            deadline = time.monotonic() + 600
            while True:
                jobs = jobs_of(url)
                s = stats(url)["cluster"]
                if len(jobs) == 2 and s["pending_rows"] == 0 and not s["failing"] and \
                        s["rows"] >= sum(j["spans"] for j in jobs.values()):
                    break
                assert time.monotonic() < deadline, s
                time.sleep(0.5)
            p.send_signal(signal.SIGTERM)
            assert p.wait(60) == 0
            ch.query("OPTIMIZE TABLE stepscope.spans FINAL")
            lines = [bytes_of(ch, job, jobs[job]["spans"], jobs[job]["stored_bytes"])
                     for job in ("synthetic", "kineto")]
        finally:
            ch.stop()
    print("\n".join(lines))


if __name__ == "__main__":
    main()
