#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Shipping benchmark (issue 16, item 6): how many spans per second one node ships into
ClickHouse, next to clickhouse-client inserting the same rows, in the same run.

1. Starts Debian's clickhouse-server (tests/cluster/chserver.py) on loopback ports.
2. Starts stepscoped without cluster_url, sends EVENTS spans with tests/bench/loadgen (8
   connections, 240-byte Chrome-trace X events), stops it: the node's store now holds a backlog.
3. For each cluster_compression in COMPRESSION (gzip and none; the order alternates by round):
   empties ClickHouse's stepscope database and the node's cursor, starts the node with
   --cluster-url (no rate bound) and times, from its start line, until /api/v1/stats says
   nothing is pending and every span was taken; checks ClickHouse's count.
4. Baseline: the same rows read back from ClickHouse as RowBinary into a file, in the node's
   order (ORDER BY block, idx), then
   `clickhouse-client --query "INSERT INTO <copy> FORMAT RowBinary" < file` timed (the native
   protocol, LZ4-compressed blocks): the engine's own client inserting what the node shipped.

Environment: BUILD_DIR (build), EVENTS (2000000), REPEAT (3: medians are reported), COMPRESSION
(gzip,none), BEFORE_BUILD_DIR (unset: other builds, comma-separated, e.g. of the commits before,
that ship the same store too, with their defaults, as the sides "before" (one) or "before1",
"before2", ... in that order). Each round also reports CPU seconds: the node's while it shipped
(its start, which replays the store into live analysis, left out) and ClickHouse's; clickhouse-client's and
ClickHouse's while it inserted; and the load average before and after. Last line, per
compression C: ship_C_rows_per_s ratio_C (to clickhouse-client) node_C_rows_per_cpu_s
ch_C_rows_per_cpu_s request_bytes_per_span_C; then client_rows_per_s client_rows_per_cpu_s
ch_client_rows_per_cpu_s bytes_per_span_stored.
"""
import json
import os
import pathlib
import resource
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cluster"))
from chserver import CLIENT, ClickHouse  # noqa: E402

BUILD = pathlib.Path(os.environ.get("BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
EVENTS = int(os.environ.get("EVENTS", "2000000"))
REPEAT = int(os.environ.get("REPEAT", "3"))
COMPRESSION = os.environ.get("COMPRESSION", "gzip,none").split(",")
# Other builds to ship the same store with (their defaults: gzip), e.g. the commits before.
BEFORE = [b for b in os.environ.get("BEFORE_BUILD_DIR", "").split(",") if b]
BEFORE_SIDE = {"before": BEFORE[0]} if len(BEFORE) == 1 else \
    {f"before{i + 1}": b for i, b in enumerate(BEFORE)}
SIDES = COMPRESSION + list(BEFORE_SIDE)


def start_daemon(tmp, args, build=None):
    p = subprocess.Popen([str((build or BUILD) / "daemon" / "stepscoped"), "--socket", str(tmp / "d.sock"),
                          "--data-dir", str(tmp / "data"), "--http", "127.0.0.1:0", *args],
                         stdout=subprocess.PIPE, stderr=open(tmp / "d.err", "a"), text=True)
    line = p.stdout.readline()
    assert line.startswith("stepscoped: listening"), line + (tmp / "d.err").read_text()
    return p, "http://" + line.strip().rsplit("http://", 1)[1]


def cpu_s(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def stats(url):
    with urllib.request.urlopen(url + "api/v1/stats", timeout=30) as r:
        return json.load(r)


def jobs_of(url):
    """{job name: its /api/v1/jobs item} of the node."""
    with urllib.request.urlopen(url + "api/v1/jobs", timeout=30) as r:
        doc = json.load(r)
    return {j["name"]: j for j in (doc["jobs"] if isinstance(doc, dict) else doc)}


def spans_of(url):
    return sum(j["spans"] for j in jobs_of(url).values())


def fill(tmp):
    """A node's store holding EVENTS spans of job "ship" (loadgen, 8 connections); the daemon
    stopped. Returns the span count."""
    p, url = start_daemon(tmp, [])
    subprocess.run([str(BUILD / "tests" / "bench" / "loadgen"), "--socket", str(tmp / "d.sock"),
                    "--events", str(EVENTS), "--connections", "8", "--job", "ship"],
                   check=True, stdout=subprocess.DEVNULL)
    spans = spans_of(url)
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0
    return spans


def ship_once(ch, tmp, spans, compression):
    """Ships the whole store into an empty stepscope database (the cursor dropped first) with
    cluster_compression; returns (spans/s wall, node CPU s, ClickHouse CPU s, request bytes)."""
    ch.reset()
    db = sqlite3.connect(tmp / "data" / "stepscope.db")
    db.execute("DELETE FROM ship_cursors")
    db.commit()
    db.close()
    if compression in BEFORE_SIDE:
        p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "bench",
                                    "--cluster-max-rows-per-s", "0"],
                              pathlib.Path(BEFORE_SIDE[compression]))
    else:
        p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "bench",
                                    "--cluster-max-rows-per-s", "0",
                                    "--cluster-compression", compression])
    t_up = time.monotonic()
    ch_cpu0, node_cpu0 = cpu_s(ch.proc.pid), cpu_s(p.pid)  # the node's start (replay) left out
    while True:
        s = stats(url)["cluster"]
        if s["rows"] >= spans and s["pending_rows"] == 0:
            break
        assert time.monotonic() - t_up < 600, s
        time.sleep(0.02)
    t1 = time.monotonic()
    node_cpu, ch_cpu = cpu_s(p.pid) - node_cpu0, cpu_s(ch.proc.pid) - ch_cpu0
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0
    assert ch.scalar("SELECT count() FROM stepscope.spans FINAL") == spans
    return spans / (t1 - t_up), node_cpu, ch_cpu, s["bytes"]


def client_once(ch, tmp, spans):
    """Baseline: the rows ClickHouse holds, read back as RowBinary into a file in the order the
    node sent them (block, idx: not pre-sorted by the table's key, which would spare ClickHouse
    its sort), inserted into a copy of the table by clickhouse-client. Returns (rows/s wall, client CPU s, ClickHouse CPU s,
    bytes per span stored after OPTIMIZE FINAL)."""
    rb = tmp / "spans.rowbinary"
    with urllib.request.urlopen(urllib.request.Request(
            ch.url, data=b"SELECT * FROM stepscope.spans ORDER BY block, idx FORMAT RowBinary"),
            timeout=600) as r, \
            open(rb, "wb") as f:
        while chunk := r.read(1 << 20):
            f.write(chunk)
    ch.query("CREATE TABLE stepscope.spans_copy AS stepscope.spans")
    c0, ch_cpu1 = time.monotonic(), cpu_s(ch.proc.pid)
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(rb, "rb") as f:
        subprocess.run([CLIENT, "--port", str(ch.tcp_port), "--query",
                        "INSERT INTO stepscope.spans_copy FORMAT RowBinary"], stdin=f, check=True)
    client_s = time.monotonic() - c0
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    ch_cpu_client = cpu_s(ch.proc.pid) - ch_cpu1
    assert ch.scalar("SELECT count() FROM stepscope.spans_copy") == spans
    ch.query("OPTIMIZE TABLE stepscope.spans FINAL")
    stored = ch.scalar("SELECT sum(data_compressed_bytes) FROM system.parts "
                       "WHERE database = 'stepscope' AND table = 'spans' AND active")
    rb.unlink()
    return spans / client_s, client_cpu, ch_cpu_client, stored / spans


def one_round(ch, root, k):
    tmp = root / f"round{k}"
    tmp.mkdir()
    spans = fill(tmp)
    # Alternate which compression goes first, so neither always meets the same moment of load.
    order = SIDES if k % 2 == 0 else SIDES[::-1]
    load0 = os.getloadavg()[0]
    got = {c: ship_once(ch, tmp, spans, c) for c in order}
    client = client_once(ch, tmp, spans)
    load1 = os.getloadavg()[0]
    for c in SIDES:
        rate, node_cpu, ch_cpu, sent = got[c]
        print(f"round {k}: {spans} spans shipped, {c}: {rate:,.0f}/s, {sent / spans:.1f} request "
              f"bytes per span; CPU node {node_cpu:.2f} s + ClickHouse {ch_cpu:.2f} s",
              file=sys.stderr)
    print(f"round {k}: clickhouse-client inserted them at {client[0]:,.0f}/s; CPU client "
          f"{client[1]:.2f} s + ClickHouse {client[2]:.2f} s; {client[3]:.1f} bytes per span "
          f"stored; load average {load0:.1f} before, {load1:.1f} after", file=sys.stderr)
    return got, client, spans


def main():
    subprocess.run(["ninja", "-C", str(BUILD), "daemon/stepscoped", "tests/bench/loadgen"],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="ssship.") as d:
        root = pathlib.Path(d)
        ch = ClickHouse(root / "clickhouse")
        ch.start()
        try:
            print(f"ship.py: {EVENTS} events over 8 connections, {REPEAT} rounds, "
                  f"{os.cpu_count()} CPUs, ClickHouse {ch.query('SELECT version()').strip()}, "
                  f"compression {','.join(COMPRESSION)}, before {BEFORE_SIDE or None}",
                  file=sys.stderr)
            rounds = [one_round(ch, root, k) for k in range(REPEAT)]
        finally:
            ch.stop()
    med = statistics.median
    client = med(r[1][0] for r in rounds)
    out = []
    for c in SIDES:
        rate = med(r[0][c][0] for r in rounds)
        per_cpu = med(r[2] / r[0][c][1] for r in rounds)
        ch_per_cpu = med(r[2] / r[0][c][2] for r in rounds)
        sent = med(r[0][c][3] / r[2] for r in rounds)
        out.append(f"ship_{c}_rows_per_s={rate:.0f} ratio_{c}={rate / client:.2f} "
                   f"node_{c}_rows_per_cpu_s={per_cpu:.0f} ch_{c}_rows_per_cpu_s={ch_per_cpu:.0f} "
                   f"request_bytes_per_span_{c}={sent:.1f}")
    out.append(f"client_rows_per_s={client:.0f} "
               f"client_rows_per_cpu_s={med(r[2] / r[1][1] for r in rounds):.0f} "
               f"ch_client_rows_per_cpu_s={med(r[2] / r[1][2] for r in rounds):.0f} "
               f"bytes_per_span_stored={med(r[1][3] for r in rounds):.1f}")
    print(" ".join(out))


if __name__ == "__main__":
    main()
