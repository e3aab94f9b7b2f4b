#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Route latency of two daemon builds side by side. Imports TRACE into a fresh daemon of build A
and of build B, then asks each route of ROUTES over one keep-alive connection per daemon, in
alternating rounds (A, B, A, B, ...) so that both see the same machine, and prints per route and
build the median and p99 of the request's wall time as the client sees it (send to last byte).

The client is Python (http.client): its own cost, the same for A and B, is in every figure, so
read the difference between the two builds, not the absolute numbers.

Usage: tests/bench/routes_ab.py DAEMON_A DAEMON_B TRACE
Environment: IMPORTER (build-rel/cli/stepscope), IMPORTER_B (IMPORTER), ROUNDS (10),
REQUESTS (500 per route per round).
Prints: route=<r> build=<A|B> p50_us=<x> p99_us=<y> n=<n>
"""
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import answers_ab  # noqa: E402  (the daemon start-up both benches share)

# /steps is a live route answered from the answer cache after its first request; the job document
# and the CSV table are computed on every request (the CSV one streamed).
ROUTES = ['/steps?limit=100', '/step-trace', '', '/operators?format=csv']


def start(binary, work):
    """answers_ab.py's start(), with the port instead of the base URL."""
    p, d, base = answers_ab.start(binary, work)
    return p, d, int(base.rsplit(':', 1)[1])


def run(conn, path, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        conn.request('GET', path)
        r = conn.getresponse()
        r.read()
        out.append((time.perf_counter_ns() - t0) / 1000)
        if r.status != 200:
            sys.exit('routes_ab.py: %s answered %d' % (path, r.status))
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    importer = os.environ.get('IMPORTER', 'build-rel/cli/stepscope')
    importers = [importer, os.environ.get('IMPORTER_B', importer)]
    rounds = int(os.environ.get('ROUNDS', '10'))
    n = int(os.environ.get('REQUESTS', '500'))
    work = tempfile.mkdtemp(prefix='routes_ab.')
    daemons = []
    try:
        for binary, imp in zip(sys.argv[1:3], importers):
            p, d, port = start(binary, work)
            daemons.append(p)
            subprocess.run([imp, 'import', '--quiet', '--socket', d + '/s.sock', '--job', 'j',
                            sys.argv[3]], check=True)
            daemons[-1].port = port
        time.sleep(0.6)  # past the live snapshot's publish interval
        conns = [http.client.HTTPConnection('127.0.0.1', p.port) for p in daemons]
        lat = {(r, b): [] for r in ROUTES for b in 'AB'}
        for _ in range(rounds):
            for route in ROUTES:
                for b, c in zip('AB', conns):
                    lat[(route, b)] += run(c, '/api/v1/jobs/j' + route, n)
        for route in ROUTES:
            for b in 'AB':
                v = sorted(lat[(route, b)])
                print('route=%s build=%s p50_us=%.1f p99_us=%.1f n=%d' %
                      (route or '(job)', b, statistics.median(v), v[int(len(v) * 0.99)], len(v)))
    finally:
        for p in daemons:
            p.terminate()
            p.wait()


if __name__ == '__main__':
    main()
