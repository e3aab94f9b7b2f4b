#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Do two daemon builds answer the same? For a change that must not change any answer (a faster
path): imports each trace (one job per trace; a comma joins several files into one job) into a
fresh daemon of build A and of build B with the same importer, fetches every job route from both
and compares the bytes, apart from wall-clock fields and stored_bytes (zstd blocks are cut at
flush times, so that one differs between two runs of the same build too).

Usage: tests/bench/answers_ab.py DAEMON_A DAEMON_B TRACE[,TRACE...]...
Environment: IMPORTER (build-rel/cli/stepscope); IMPORTER_B, the importer used
with DAEMON_B (default IMPORTER): with the same daemon twice, this compares two importers.
ANSWERS_AB_HTTP=1 (for a change to the HTTP layer, daemon/web/): also the status and every
header but Date, of more routes (the CSV, records and text forms, streamed or not, refusals, the
daemon-wide routes) and each live route twice (the second answer comes from the answer cache).
Prints each differing route and, last, "routes=<n> differing=<n> bytes=<n>"; exit status 1 if
any differs.
"""
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROUTES = ['', '/steps', '/steps?limit=1000', '/step-trace', '/operators', '/operators?role=all',
          '/kernels', '/queues', '/pipeline', '/ranks', '/helper', '/breakdown',
          '/summary/overview', '/summary/model', '/summary/distributed', '/summary/operator',
          '/summary/kernel', '/summary/memory', '/summary/memory-manipulation', '/summary/user-defined',
          '/summary/device',
          '/benchmark', '/timeline?limit=50', '/timeline?start_ns=0&limit=5',
          '/cluster/step-trace', '/cluster/step-trace?step=1', '/cluster/step-trace?stage=1',
          '/cluster/communication', '/cluster/communication?step=2', '/cluster/links',
          '/cluster/links?step=2&sort=band_width&order=desc', '/cluster/flops', '/cluster/memory',
          '/summary/aicpu', '/operator-view', '/operator-view?group_by=input_shape',
          '/kernels/details', '/kernels/details?group=operator', '/comm-ops']
# ANSWERS_AB_HTTP=1: the other forms of the tables, bad parameters, and the daemon-wide routes.
HTTP_ROUTES = ['?format=csv', '?format=records', '/steps?format=csv', '/steps?format=records&limit=3',
               '/operators?format=csv', '/operators?format=records&offset=1&limit=2',
               '/kernels?format=csv', '/queues?format=csv', '/breakdown?format=csv',
               '/ranks?format=csv', '/pipeline?format=csv', '/summary/operator?format=text',
               '/summary/kernel?format=csv', '/benchmark?format=records',
               '/timeline?limit=50&remap_pids=1', '/steps?limit=x', '/steps?format=xml',
               '/cluster/step-trace?format=csv', '/cluster/links?format=csv',
               '/cluster/flops?format=csv', '/cluster/memory?format=csv',
               '/summary/nope', '/operators?rank=999', '/captures', '/nope',
               '/kernels/details?format=csv', '/kernels/details?group=operator&format=csv',
               '/kernels/details?group=operator&format=records', '/comm-ops?format=csv']
DAEMON_ROUTES = ['/api/v1/jobs', '/api/v1/nope', '/api/v1/jobs/nojob/steps', '/index.html',
                 '/nope.js']  # a dashboard file: its headers only (the dashboard changes)
HTTP = os.environ.get('ANSWERS_AB_HTTP') == '1'
VOLATILE = re.compile(rb'"(stored_bytes|first_seen_us|last_seen_us|created_at|updated_at|'
                      rb'computed_at|generated_at|age_ms|uptime_s)":\s*("[^"]*"|[0-9.eE+-]+)')


def start(binary, work):
    d = tempfile.mkdtemp(dir=work)
    p = subprocess.Popen([binary, '--socket', d + '/s.sock', '--data-dir', d + '/data',
                          '--http', '127.0.0.1:0', '--log-level', 'warn'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit('answers_ab.py: %s did not start' % binary)
        m = re.search(r'dashboard http://(127\.0\.0\.1:\d+)', line)
        if m:
            return p, d, 'http://' + m.group(1)


def head(r):
    """The status and every header in the order sent but Date and Content-Length (the body is
    compared, with its volatile fields masked)."""
    hs = ''.join('%s: %s\n' % (k, v) for k, v in r.headers.items()
                 if k.lower() not in ('date', 'content-length'))
    return ('HTTP %d\n' % r.status + hs + '\n').encode()


def get(base, path):
    try:
        with urllib.request.urlopen(base + path, timeout=120) as r:
            return (head(r) if HTTP else b'') + r.read()
    except urllib.error.HTTPError as e:
        return (head(e) if HTTP else b'HTTP %d ' % e.code) + e.read()


def answers(binary, traces, importer, work):
    p, d, base = start(binary, work)
    out = {}
    try:
        for i, trace in enumerate(traces):
            job = 'job%d' % i
            subprocess.run([importer, 'import', '--quiet', '--socket', d + '/s.sock', '--job', job]
                           + trace.split(','), check=True)
            time.sleep(0.6)  # past the live snapshot's publish interval
            for route in ROUTES + (HTTP_ROUTES if HTTP else []):
                out[(job, route)] = VOLATILE.sub(rb'"\1":X', get(base, '/api/v1/jobs/' + job + route))
            if HTTP:  # the live routes again: from the answer cache this time
                for route in ROUTES[1:12]:
                    key = (job, route + ' (again)')
                    out[key] = VOLATILE.sub(rb'"\1":X', get(base, '/api/v1/jobs/' + job + route))
        for route in DAEMON_ROUTES if HTTP else []:
            body = VOLATILE.sub(rb'"\1":X', get(base, route))
            out[('', route)] = body if route.startswith('/api/') else body.split(b'\n\n')[0]
    finally:
        p.terminate()
        p.wait()
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    importer = os.environ.get('IMPORTER', 'build-rel/cli/stepscope')
    work = tempfile.mkdtemp(prefix='answers_ab.')
    a = answers(sys.argv[1], sys.argv[3:], importer, work)
    b = answers(sys.argv[2], sys.argv[3:], os.environ.get('IMPORTER_B', importer), work)
    bad = 0
    for key, body in a.items():
        if body != b[key]:
            bad += 1
            print('DIFF', key, body[:300], '\n    ', b[key][:300])
    print('routes=%d differing=%d bytes=%d' % (len(a), bad, sum(len(v) for v in a.values())))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
