#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cluster route latency (issue 16, item 6): one daemon holding a job of RANKS ranks x STEPS steps
(step records with phases, so every step has its step-trace stages), the ranks spread over HOSTS
hosts whose clocks differ (host k stamps k ms late, so the job's clocks are measured), then each
route of ROUTES asked REQUESTS times over one keep-alive connection, and the median and p99 of the
request's wall time printed. Each request carries a query argument of its own (nocache=i), so
the answer cache never answers it: these are the figures of computing the answer (a dashboard
polling an unchanged job gets the cache's, about 50 us: docs/PERFORMANCE.md). A second line per
route is the same with the cache answering (one key, asked again).

The client is Python (http.client); its own cost is in every figure.

Usage: tests/bench/cluster_routes.py DAEMON
Environment: RANKS (64), STEPS (10000), HOSTS (8), REQUESTS (30).
Prints: ranks=R steps=S route=<r> cache=<miss|hit> p50_ms=<x> p99_ms=<y> n=<n>
"""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import answers_ab  # noqa: E402  (the daemon start-up the benches share)

RANKS = int(os.environ.get('RANKS', '64'))
STEPS = int(os.environ.get('STEPS', '10000'))
HOSTS = int(os.environ.get('HOSTS', '8'))
REQUESTS = int(os.environ.get('REQUESTS', '30'))
T0 = 1700000000000000  # us
STEP_US = 100000
MID = STEPS // 2
ROUTES = ['/cluster/step-trace', '/cluster/step-trace?step=%d' % MID, '/ranks', '',
          '/timeline?step=%d&limit=1000' % MID]


def feed(sock_path, rank):
    """One rank's steps over the protocol, acknowledged."""
    host = rank * HOSTS // RANKS
    shift = host * 1000
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    lines = [json.dumps({'hello': 'stepscope/1', 'job': 'bench', 'rank': rank,
                         'world_size': RANKS, 'host': 'host%d' % host, 'pid': 1000 + rank})]
    for k in range(1, STEPS + 1):
        b = T0 + (k - 1) * STEP_US + shift + (rank * 7) % 300
        e = T0 + k * STEP_US + shift + (rank * 13) % 50
        lines.append('{"type":"step","step":%d,"begin_us":%d,"end_us":%d,"samples":32,'
                     '"phases":{"dataloader":%d,"forward":30000,"backward":55000}}'
                     % (k, b, e, 2000 + rank * 10))
    s.sendall(('\n'.join(lines) + '\n').encode())
    buf = b''
    while True:  # until the ack of the last line
        chunk = s.recv(65536)
        if not chunk:
            sys.exit('cluster_routes.py: the daemon hung up on rank %d' % rank)
        buf += chunk
        acks = [json.loads(x).get('ack') for x in buf.split(b'\n')[:-1] if b'"ack"' in x]
        if acks and max(acks) >= STEPS:
            break
    s.close()


def timed(conn, path):
    t0 = time.perf_counter_ns()
    conn.request('GET', path)
    r = conn.getresponse()
    body = r.read()
    dt = (time.perf_counter_ns() - t0) / 1e6
    if r.status != 200:
        sys.exit('cluster_routes.py: %s answered %d: %s' % (path, r.status, body[:200]))
    return dt, body


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = tempfile.mkdtemp(prefix='cluster_routes.')
    p, d, base = answers_ab.start(sys.argv[1], work)
    port = int(base.rsplit(':', 1)[1])
    try:
        t0 = time.monotonic()
        for r in range(RANKS):
            feed(d + '/s.sock', r)
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=300)
        while True:  # until live has published every rank's steps
            _, body = timed(conn, '/api/v1/jobs/bench')
            j = json.loads(body)
            if len(j['ranks_detail']) == RANKS and all(x['steps'] == STEPS
                                                       for x in j['ranks_detail']):
                break
            time.sleep(0.5)
        print('# fed %d ranks x %d steps in %.1f s; clocks: %s' % (
            RANKS, STEPS, time.monotonic() - t0,
            None if j['clocks'] is None else
            [(h['host'], h['offset_us'], h['aligned']) for h in j['clocks']['hosts']]))
        for route in ROUTES:
            sep = '&' if '?' in route else '?'
            path = '/api/v1/jobs/bench' + route
            miss = [timed(conn, '%s%snocache=%d' % (path, sep, i))[0] for i in range(REQUESTS)]
            timed(conn, path)
            hit = [timed(conn, path)[0] for _ in range(REQUESTS)]
            for name, v in (('miss', miss), ('hit', hit)):
                print('ranks=%d steps=%d route=%s cache=%s p50_ms=%.2f p99_ms=%.2f n=%d' % (
                    RANKS, STEPS, route or '(job)', name, statistics.median(v), pct(v, 0.99),
                    len(v)))
            sys.stdout.flush()
    finally:
        p.terminate()
        p.wait()
        subprocess.run(['rm', '-rf', work])


if __name__ == '__main__':
    main()
