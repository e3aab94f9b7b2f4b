#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Catch-up after a ClickHouse outage (issue 16, item 6): a node keeps taking a steady stream
of spans while ClickHouse is stopped for OUTAGE_S seconds; once it is back, how fast the node
ships the backlog and how long until its lag is zero, against its cluster_max_rows_per_s.

1. Starts Debian's clickhouse-server (tests/cluster/chserver.py) on loopback ports and a node
   with --cluster-url and --cluster-max-rows-per-s MAX_ROWS_PER_S.
2. Trainers: tests/bench/loadgen in chunks of CHUNK_S seconds at RATE spans/s (8 connections,
   240-byte X events, job "train"), one chunk after another for the whole run.
3. WARM_S seconds with the engine up (the node keeps up), then ClickHouse stopped (SIGTERM) for
   OUTAGE_S seconds, then started again on its data.
4. From the moment ClickHouse answers again: /api/v1/stats every 0.2 s until pending_rows is 0
   (lag zero). Reported: the backlog at the restart (spans stored less cluster.rows), when the
   first batch was taken (the node's backoff, up to cluster_retry_max_ms, may run past the
   restart), the seconds to lag zero, the rows the node
   shipped per second over that time (cluster.rows), the ingest rate meanwhile, and the bound.
   Then the trainers stop and ClickHouse must hold every span the node stored (count() FINAL).

Environment: BUILD_DIR (build), RATE (10000), OUTAGE_S (300), WARM_S (20), CHUNK_S (10),
MAX_ROWS_PER_S (4000000, the daemon's default). Last line: backlog_rows=<B> first_batch_s=<F>
catchup_s=<S> catchup_rows_per_s=<R: over S> shipping_rows_per_s=<over S - F>
ingest_rows_per_s=<I> max_rows_per_s=<M>.
"""
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ship import BUILD, start_daemon, spans_of, stats  # tests/bench/ship.py
from chserver import ClickHouse  # noqa: E402  (ship put tests/cluster on the path)

RATE = int(os.environ.get("RATE", "10000"))
OUTAGE_S = float(os.environ.get("OUTAGE_S", "300"))
WARM_S = float(os.environ.get("WARM_S", "20"))
CHUNK_S = float(os.environ.get("CHUNK_S", "10"))
MAX_ROWS_PER_S = int(os.environ.get("MAX_ROWS_PER_S", "4000000"))


class Trainers(threading.Thread):
    """loadgen chunks one after another until stopped; counts the spans acked."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock, self.stop, self.sent, self.errors = sock, threading.Event(), 0, []

    def run(self):
        n = int(RATE * CHUNK_S)
        while not self.stop.is_set():
            r = subprocess.run([str(BUILD / "tests" / "bench" / "loadgen"), "--socket",
                                str(self.sock), "--events", str(n), "--connections", "8",
                                "--rate", str(RATE), "--job", "train", "--timeout", "120"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                self.errors.append(r.stdout + r.stderr)
                return
            self.sent += n


def main():
    subprocess.run(["ninja", "-C", str(BUILD), "daemon/stepscoped", "tests/bench/loadgen"],
                   check=True, stdout=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory(prefix="sscatchup.") as d:
        root = pathlib.Path(d)
        ch = ClickHouse(root / "clickhouse")
        ch.start()
        tmp = root / "node"
        tmp.mkdir()
        p, url = start_daemon(tmp, ["--cluster-url", ch.url, "--node", "catchup",
                                    "--cluster-max-rows-per-s", str(MAX_ROWS_PER_S)])
        trainers = Trainers(tmp / "d.sock")
        try:
            print(f"catchup.py: {RATE} spans/s of trainers, outage {OUTAGE_S:.0f} s, "
                  f"cluster_max_rows_per_s {MAX_ROWS_PER_S}, {os.cpu_count()} CPUs, ClickHouse "
                  f"{ch.query('SELECT version()').strip()}, load average "
                  f"{os.getloadavg()[0]:.1f}", file=sys.stderr)
            trainers.start()
            time.sleep(WARM_S)
            s = stats(url)["cluster"]
            print(f"warm: shipped {s['rows']} rows, pending {s['pending_rows']}", file=sys.stderr)
            ch.stop()
            t_down = time.monotonic()
            while time.monotonic() - t_down < OUTAGE_S:
                time.sleep(min(30.0, OUTAGE_S - (time.monotonic() - t_down)))
                s = stats(url)["cluster"]
                print(f"down {time.monotonic() - t_down:5.0f} s: pending {s['pending_rows']}, "
                      f"retries {s['retries']}, lag {s['lag_ms'] / 1000:.0f} s", file=sys.stderr)
                assert not trainers.errors, trainers.errors
            ch.start()
            t_up = time.monotonic()
            s0 = stats(url)["cluster"]
            sent0 = spans_of(url)
            # The trainers send spans only: the backlog is what the node stored less what
            # ClickHouse took (pending_rows is as of the last attempt, up to a backoff ago).
            backlog = sent0 - s0["rows"]
            t_first = None  # the node's first batch taken: its backoff may run past the restart
            while True:
                s = stats(url)["cluster"]
                if t_first is None and s["rows"] > s0["rows"]:
                    t_first = time.monotonic()
                if s["pending_rows"] == 0 and not s["failing"]:
                    break
                assert time.monotonic() - t_up < 1800, s
                time.sleep(0.2)
            t_zero = time.monotonic()
            catchup_s = t_zero - t_up
            wait_s = (t_first or t_zero) - t_up
            shipped = s["rows"] - s0["rows"]
            ingest = (spans_of(url) - sent0) / catchup_s
            print(f"back: backlog {backlog} rows at the restart, first batch taken after "
                  f"{wait_s:.1f} s (the rest of the backoff), lag zero after {catchup_s:.1f} s, "
                  f"{shipped} rows shipped ({shipped / catchup_s:,.0f}/s over it all, "
                  f"{shipped / max(catchup_s - wait_s, 1e-9):,.0f}/s once shipping) while the trainers "
                  f"sent {ingest:,.0f}/s; load average {os.getloadavg()[0]:.1f}", file=sys.stderr)
            trainers.stop.set()
            trainers.join()
            assert not trainers.errors, trainers.errors
            # Everything the node stored reaches ClickHouse once: the gauge is as of the
            # shipper's last look, so wait for the rows themselves.
            stored = spans_of(url)
            deadline = time.monotonic() + 300
            while True:
                s = stats(url)["cluster"]
                if s["rows"] >= stored and s["pending_rows"] == 0:
                    break
                assert time.monotonic() < deadline, (s, stored)
                time.sleep(0.2)
            got = ch.scalar("SELECT count() FROM stepscope.spans FINAL")
            assert got == stored, (got, stored)
            print(f"ClickHouse holds all {stored} spans the node stored, each once", file=sys.stderr)
            print(f"backlog_rows={backlog} first_batch_s={wait_s:.1f} catchup_s={catchup_s:.1f} "
                  f"catchup_rows_per_s={shipped / catchup_s:.0f} "
                  f"shipping_rows_per_s={shipped / max(catchup_s - wait_s, 1e-9):.0f} "
                  f"ingest_rows_per_s={ingest:.0f} "
                  f"max_rows_per_s={MAX_ROWS_PER_S}")
        finally:
            trainers.stop.set()
            p.send_signal(signal.SIGTERM)
            p.wait(60)
            ch.stop()


if __name__ == "__main__":
    main()
