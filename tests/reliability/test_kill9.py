# SPDX-License-Identifier: MIT
"""kill -9 of the daemon during 8-client ingest at a target of 1 M events/s, then restart: every
acknowledged record is stored exactly once (issue 7, item 1).

The clients are `loadgen --mode replay` (tests/bench/loadgen.c): 8 connections paced at RATE
events/s in all, each holding the lines it wrote and has not seen acknowledged; on a broken
connection it reconnects, says hello with its stream and seq = its oldest unacknowledged line, and
writes from there again. The daemon is killed once the acks pass KILL_AT of the lines, i.e. after
more than a second at the full rate. Checked afterwards, three ways:
- /api/v1/jobs `events` equals the lines sent;
- each rank's timeline export holds exactly the ts the rank sent (a loss or a duplicate changes
  the set), and its count, sum and sum of squares equal what loadgen reports for its acked lines;
- the daemon's `duplicates` equals the lines the welcomes said it already held (loadgen's
  held_dups), and no welcome said the daemon lacked an acknowledged line (lost_acked 0).

Environment: RELIABILITY_RUNS, RELIABILITY_SCALE (relutil), KILL9_RATE (events/s, default
1000000; 0 = as fast as the daemon takes them).
"""
import json
import os
import re
import subprocess
import threading
import time

import pytest

from relutil import RUNS, SCALE, integ

RANKS = 8
RATE = int(os.environ.get("KILL9_RATE", "1000000"))
KILL_AT = 0.55          # of all the lines, acknowledged before the kill
WINDOW_S = 1.0          # the rate before the kill is measured over this last stretch
TS0, TS_STEP = 1700000000000000, 10  # loadgen's replay records: ts = TS0 + 10 i (µs) per rank


class Loadgen:
    """loadgen --mode replay as a subprocess; its progress lines are read as they come."""

    def __init__(self, socket_path, job, per_rank, report, timeout_s=90):
        exe = integ.build_dir() / "tests" / "bench" / "loadgen"
        if not exe.exists():
            pytest.fail(f"{exe} is not built: ninja -C {integ.build_dir()} tests/bench/loadgen")
        self.report = report
        self.progress = []      # (seconds since loadgen's start, acked, connects, its CPU s)
        self.summary = None
        self.lock = threading.Lock()
        self.proc = subprocess.Popen(
            [str(exe), "--socket", socket_path, "--mode", "replay", "--job", job,
             "--connections", str(RANKS), "--events", str(per_rank * RANKS),
             "--rate", str(RATE), "--progress-ms", "20", "--report", str(report),
             "--timeout", str(timeout_s)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            with self.lock:
                if line.startswith("progress "):
                    self.progress.append((float(f["t"]), int(f["acked"]), int(f["connects"]),
                                          float(f["cpu"])))
                elif line.startswith("events="):
                    self.summary = f

    def acked(self):
        with self.lock:
            return self.progress[-1] if self.progress else (0.0, 0, 0, 0.0)

    def rate_before(self, t_kill):
        """Events acknowledged per second over the last WINDOW_S before t_kill, and since the
        start."""
        with self.lock:
            pts = [p for p in self.progress if p[0] <= t_kill]
        last = pts[-1]
        first = next(p for p in pts if p[0] >= last[0] - WINDOW_S)
        window = (last[1] - first[1]) / (last[0] - first[0]) if last[0] > first[0] else 0.0
        return window, last[1] / last[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:  # the test failed before loadgen was done
            self.proc.kill()
            self.proc.wait()

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout=timeout)  # TimeoutExpired fails the test
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        self.reader.join(timeout=10)
        err = self.proc.stderr.read()
        assert rc == 0, f"loadgen exited {rc}: {err[-2000:]}"
        with open(self.report) as f:
            return [json.loads(line) for line in f]


# A ts in the export; only X events carry one here (counted below).
X_TS = re.compile(rb'"ts":(\d+)')


def _timeline_ts(daemon, job_id, rank, parse):
    """The ts of rank's X events in the timeline export. json.loads of 250 000 events takes
    seconds here, so the ts are taken by X_TS, their count checked against every "ph":"X" and
    every "ts" in the export; parse=True also parses the document and requires the same list."""
    st, _, body = daemon.request(f"/api/v1/jobs/{job_id}/timeline?rank={rank}"
                                 f"&max_bytes=67108864")
    assert st == 200, body[:300]
    ts = [int(t) for t in X_TS.findall(body)]
    assert len(ts) == body.count(b'"ph":"X"') == body.count(b'"ts":'), \
        f"rank {rank}: an event not in the expected form"
    if parse:
        doc = json.loads(body)
        assert ts == [e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X"]
    return ts


@pytest.mark.parametrize("run", range(RUNS))
def test_kill9_during_8_client_ingest_loses_and_duplicates_nothing(daemon, tmp, figures, run):
    per_rank = int(250000 * SCALE)
    total = per_rank * RANKS
    job = f"kill9_{run}"
    with Loadgen(daemon.socket, job, per_rank, tmp / f"loadgen-{run}.jsonl") as lg:
        deadline = time.monotonic() + 60
        while lg.acked()[1] < KILL_AT * total:  # progress comes every 20 ms
            assert time.monotonic() < deadline, f"{lg.acked()[1]} acked after 60 s"
            assert lg.proc.poll() is None, f"loadgen exited early: {lg.proc.stderr.read()[-2000:]}"
            time.sleep(0.005)
        daemon_cpu = _cpu_s(daemon.proc.pid)
        daemon.kill9()
        t_kill, acked_at_kill, _, client_cpu = lg.acked()
        daemon.start()
        reports = lg.wait(timeout=120)
    rate_window, rate_mean = lg.rate_before(t_kill)

    assert acked_at_kill < total, "ingest finished before the kill; raise the scale"
    assert len(reports) == RANKS
    for r in reports:
        assert r["acked"] == r["lines"] == per_rank, r
        assert r["errors"] == 0 and r["lost_acked"] == 0 and r["ahead"] == 0, r
    cut = sum(1 for r in reports if r["connects"] >= 2)
    assert cut >= 1, "no rank reconnected: the kill came too late"
    resent = sum(r["resent"] for r in reports)
    assert resent > 0, "nothing was resent: nothing was in flight"

    j = daemon.job(job)
    assert j["events"] == total, f"stored {j['events']}, sent {total}"
    expected = [TS0 + i * TS_STEP for i in range(per_rank)]
    for r in reports:
        ts = _timeline_ts(daemon, j["id"], r["rank"], parse=r["rank"] == run % RANKS)
        assert len(ts) == per_rank, f"rank {r['rank']}: {len(ts)} in the export, {per_rank} sent"
        assert (len(ts), sum(ts) % 2**64, sum(t * t for t in ts) % 2**64) == \
            (r["ts_count"], r["ts_sum"], r["ts_sumsq"]), f"rank {r['rank']}: checksums differ"
        ts.sort()
        assert ts == expected, f"rank {r['rank']}: the exported set differs (loss + duplicate)"
    st = daemon.stats()
    held = sum(r["held_dups"] for r in reports)
    # Every replayed line the daemon already had was dropped, not stored again, and it had
    # exactly the ones its welcomes said.
    assert st["duplicates"] == held, (st["duplicates"], held)
    figures(run=run, events=total, target_rate=RATE, acked_at_kill=acked_at_kill,
            seconds_before_kill=round(t_kill, 3), ranks_cut=cut,
            rate_last_second_before_kill=round(rate_window),
            rate_mean_before_kill=round(rate_mean),
            client_cpu_s_before_kill=client_cpu, daemon_cpu_s_before_kill=daemon_cpu,
            resent_lines=resent, duplicates_dropped=st["duplicates"], stored=j["events"],
            lost=total - j["events"])


def _cpu_s(pid):
    """User + system CPU seconds of pid so far, from /proc (clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)
