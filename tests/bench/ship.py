#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Shipping benchmark (issue 16, item 6): how many spans per second one node ships into
ClickHouse, next to clickhouse-client inserting the same rows, in the same run.

1. Starts Debian's clickhouse-server (tests/cluster/chserver.py) on loopback ports.
2. Starts stepscoped without cluster_url, sends EVENTS spans with tests/bench/loadgen (8
   connections, 240-byte Chrome-trace X events), stops it: the node's store now holds a backlog.
3. Starts it again with --cluster-url (no rate bound) and times, from its start line, until
   /api/v1/stats says nothing is pending and every span was taken; checks ClickHouse's count.
4. Baseline: the same rows read back from ClickHouse as RowBinary into a file, then
   `clickhouse-client --query "INSERT INTO <copy> FORMAT RowBinary" < file` timed (the native
   protocol, LZ4-compressed blocks): the engine's own client inserting what the node shipped.

Environment: BUILD_DIR (build), EVENTS (2000000), REPEAT (3: the median of each side is
reported). Each round also reports CPU seconds: the node's while it shipped (its start, which
replays the store into live analysis, left out) and ClickHouse's; clickhouse-client's and
ClickHouse's while it inserted. Last line: ship_rows_per_s=<N> client_rows_per_s=<M>
ratio=<N/M> bytes_per_span=<B> node_rows_per_cpu_s=<C> client_rows_per_cpu_s=<D>
"""
import json
import os
import pathlib
import resource
import signal
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


def start_daemon(tmp, args):
    p = subprocess.Popen([str(BUILD / "daemon" / "stepscoped"), "--socket", str(tmp / "d.sock"),
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


def spans_of(url):
    with urllib.request.urlopen(url + "api/v1/jobs", timeout=30) as r:
        doc = json.load(r)
    return sum(j["spans"] for j in (doc["jobs"] if isinstance(doc, dict) else doc))


def one_round(ch, root, k):
    tmp = root / f"round{k}"
    tmp.mkdir()
    ch.reset()
    p, url = start_daemon(tmp, [])
    subprocess.run([str(BUILD / "tests" / "bench" / "loadgen"), "--socket", str(tmp / "d.sock"),
                    "--events", str(EVENTS), "--connections", "8", "--job", "ship"],
                   check=True, stdout=subprocess.DEVNULL)
    spans = spans_of(url)
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0
    t0 = time.monotonic()
    p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "bench",
                                "--cluster-max-rows-per-s", "0"])
    t_up = time.monotonic()
    ch_cpu0, node_cpu0 = cpu_s(ch.proc.pid), cpu_s(p.pid)  # the node's start (replay) left out
    while True:
        s = stats(url)["cluster"]
        if s["rows"] >= spans and s["pending_rows"] == 0:
            break
        assert time.monotonic() - t0 < 600, s
        time.sleep(0.02)
    t1 = time.monotonic()
    node_cpu, ch_cpu = cpu_s(p.pid) - node_cpu0, cpu_s(ch.proc.pid) - ch_cpu0
    p.send_signal(signal.SIGTERM)
    assert p.wait(60) == 0
    assert ch.scalar("SELECT count() FROM stepscope.spans FINAL") == spans
    ship_s = t1 - t_up
    # Baseline: the same rows, inserted by ClickHouse's own client.
    rb = tmp / "spans.rowbinary"
    with urllib.request.urlopen(urllib.request.Request(
            ch.url, data=b"SELECT * FROM stepscope.spans FORMAT RowBinary"), timeout=600) as r, \
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
    shipped = s["bytes"]
    print(f"round {k}: {spans} spans shipped in {ship_s:.2f} s ({spans / ship_s:,.0f}/s, "
          f"{shipped / spans:.1f} request bytes per span, gzip); clickhouse-client inserted them "
          f"in {client_s:.2f} s ({spans / client_s:,.0f}/s); {stored / spans:.1f} bytes per "
          f"span stored; CPU: node {node_cpu:.2f} s + ClickHouse {ch_cpu:.2f} s while shipping, "
          f"clickhouse-client {client_cpu:.2f} s + ClickHouse {ch_cpu_client:.2f} s while it "
          f"inserted", file=sys.stderr)
    rb.unlink()
    return (spans / ship_s, spans / client_s, stored / spans, spans / max(node_cpu, 1e-9),
            spans / max(client_cpu, 1e-9))


def main():
    subprocess.run(["ninja", "-C", str(BUILD), "daemon/stepscoped", "tests/bench/loadgen"],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="ssship.") as d:
        root = pathlib.Path(d)
        ch = ClickHouse(root / "clickhouse")
        ch.start()
        try:
            print(f"ship.py: {EVENTS} events over 8 connections, {REPEAT} rounds, "
                  f"{os.cpu_count()} CPUs, ClickHouse {ch.query('SELECT version()').strip()}",
                  file=sys.stderr)
            rounds = [one_round(ch, root, k) for k in range(REPEAT)]
        finally:
            ch.stop()
    ship = statistics.median(r[0] for r in rounds)
    client = statistics.median(r[1] for r in rounds)
    per_span = statistics.median(r[2] for r in rounds)
    node_cpu = statistics.median(r[3] for r in rounds)
    client_cpu = statistics.median(r[4] for r in rounds)
    print(f"ship_rows_per_s={ship:.0f} client_rows_per_s={client:.0f} ratio={ship / client:.2f} "
          f"bytes_per_span={per_span:.1f} node_rows_per_cpu_s={node_cpu:.0f} "
          f"client_rows_per_cpu_s={client_cpu:.0f}")


if __name__ == "__main__":
    main()
