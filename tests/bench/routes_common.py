# SPDX-License-Identifier: MIT
"""What the route benchmarks share (memory_route.py, tree_route.py,
operator_view_route.py, tb_tables_route.py): a big Kineto job made from a
real trace and imported into a fresh daemon of BUILD_DIR, and one route timed per request
(wall time, and the daemon's CPU from /proc/PID/stat)."""
import http.client
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
import conftest  # noqa: E402
from diff_route import make_trace  # noqa: E402

# The trace the operator, tree and kernel-table benchmarks repeat: torch 2 on an H200, with
# record_shapes, with_stack and with_modules.
VIEWS_TRACE = HERE.parent / "data" / "kineto" / "cuda_views_h200" / "trace_a.json.gz"


class BigJob:
    """src's events of phases repeated copies times (diff_route.make_trace()), imported as job
    "big" into a fresh daemon: n events, n_mem [memory] events, import_s seconds to import."""

    def __init__(self, copies, src, phases=("X",)):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssb.", dir="/tmp"))
        self.trace = self.tmp / "big.json.gz"
        self.n, self.n_mem = make_trace(self.trace, copies, src, phases)
        self.d = conftest.Daemon(self.tmp, "d")
        self.d.start()
        s = time.perf_counter()
        try:
            subprocess.run([str(conftest.build_dir() / "cli" / "stepscope"), "import", "--quiet",
                            "--socket", self.d.socket, "--job", "big", str(self.trace)],
                           check=True, env=conftest.clean_env(self.tmp), timeout=1800)
        except BaseException:
            self.d.stop()
            raise
        self.import_s = time.perf_counter() - s
        self.c = http.client.HTTPConnection(self.d.host, self.d.port, timeout=600)

    def cpu(self):
        f = open(f"/proc/{self.d.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def measure(self, route, rounds):
        """Asks /api/v1/jobs/big/ROUTE rounds times, each with a max_spans not asked before (no
        cached answer); returns (p50 wall s, mean daemon CPU s, the last body)."""
        walls, cpus = [], []
        for i in range(rounds):
            sep = "&" if "?" in route else "?"
            c0, w0 = self.cpu(), time.perf_counter()
            self.c.request("GET", f"/api/v1/jobs/big/{route}{sep}max_spans={4000000 - i}")
            r = self.c.getresponse()
            body = r.read()
            walls.append(time.perf_counter() - w0)
            cpus.append(self.cpu() - c0)
            assert r.status == 200, (route, r.status, body[:300])
        print(f"/{route}: p50 {statistics.median(walls):.3f} s wall, "
              f"{statistics.mean(cpus):.3f} s daemon CPU per request ({len(body)} bytes)")
        return statistics.median(walls), statistics.mean(cpus), body

    def measure_all(self, routes, rounds):
        """measure() of each route; returns the JSON documents of those not asked as CSV, by
        route."""
        docs = {}
        for route in routes:
            body = self.measure(route, rounds)[2]
            if "format=csv" not in route:
                docs[route] = json.loads(body)
        return docs

    def stop(self):
        self.d.stop()
