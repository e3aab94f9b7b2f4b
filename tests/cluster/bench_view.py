# SPDX-License-Identifier: MIT
"""The cluster view's pull cost (issue 16, items 2 and 6), not part of the suite: 4 nodes x 8
ranks x SPANS spans on Debian's clickhouse-server, the time until every node holds all 32 ranks,
one pull query of the spans table with and without FINAL, the tables' signature query that an
idle round makes instead, and ClickHouse's CPU over 10 idle seconds with the 4 viewers.
Run: BUILD_DIR=build-test python3 -m pytest tests/cluster/bench_view.py -q -s"""
import time
from test_view import feed, wait_view, creds_file, node_args, NODES, PER_NODE, RANKS

def test_bench_view(ch, daemons, tmp):
    creds = creds_file(tmp)
    n = 20000
    nodes = [daemons(f"b{k}", args=node_args(ch, f"node{k}", creds)) for k in range(NODES)]
    for k, d in enumerate(nodes):
        feed(d, "bench", range(k * PER_NODE, (k + 1) * PER_NODE), n)
    t0 = time.monotonic()
    for d in nodes:
        wait_view(d, "bench", RANKS * n, timeout=300)
    took = time.monotonic() - t0
    print("\nVIEW all 4 nodes hold 32 ranks x", n, "spans after", round(took, 2), "s")
    # Each node pulls the other nodes' ranks: (NODES - 1) x PER_NODE ranks of n lines.
    pulled = NODES * (NODES - 1) * PER_NODE * n
    print("VIEW lines pulled (all 4 viewers):", pulled, "at", round(pulled / took), "lines/s")
    q = ("SELECT job, rank, ts_ns, dur_ns, ph, name, cat, pid, tid, block, idx FROM stepscope.spans "
         "WHERE node = 'node1' AND (block > 999999 OR (block = 999999 AND idx > 0)) "
         "ORDER BY block, idx LIMIT 65536 FORMAT RowBinary")
    for label, sql in (("spans FINAL past the end", q.replace("stepscope.spans ", "stepscope.spans FINAL ")),
                       ("spans past the end", q),
                       ("system.parts signature", "SELECT table, count(), sum(rows), max(modification_time) FROM system.parts WHERE database = 'stepscope' AND active GROUP BY table ORDER BY table FORMAT TabSeparated")):
        ts = []
        for _ in range(10):
            a = time.monotonic(); ch.query(sql); ts.append(time.monotonic() - a)
        ts.sort()
        print("VIEW", label, "median ms", round(ts[5] * 1000, 2))
    import os
    pid = ch.proc.pid
    def cpu():
        f = open(f"/proc/{pid}/stat").read().split(")")[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    c0 = cpu(); time.sleep(10); c1 = cpu()
    print("VIEW clickhouse CPU s over 10 idle s with 4 viewers:", round(c1 - c0, 2))
