# SPDX-License-Identifier: MIT
"""The data dir's file system: full while ingesting, read-only at start (issue 7, item 1).

Locked by another daemon (exit 3) and a corrupt database (exit 4) are in tests/integ/test_cli.py;
a read-only data dir is here because it needs a mount (root)."""
import errno
import select
import subprocess
import time

from mounts import free_bytes, remount, tmpfs
from ssclient import Client, x_event


def _integrity(db):
    r = subprocess.run(["sqlite3", str(db), "PRAGMA integrity_check;"], capture_output=True,
                       text=True, timeout=60)
    return r.stdout.strip() + r.stderr.strip()


def _readable(c):
    r, _, _ = select.select([c.sock], [], [], 0)
    return bool(r)


def _fill(path):
    """Fills path's file system until a write fails with ENOSPC (the daemon may be writing at
    the same time); returns the filler file."""
    filler = path / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 20, 4096, 512):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    return filler


def _daemon_holding_100(daemons, mnt, name):
    """A daemon whose data dir is on mnt (min_free_bytes 1 MiB: a 16 MiB file system is not low
    until it is filled), holding 100 acknowledged events of job name, stream "s"."""
    d = daemons(name, data_dir=mnt / "data", args=["--min-free-bytes", str(1 << 20)])
    with Client(d.socket) as c:
        c.hello(name, stream="s", seq=0)
        c.send_lines(x_event(i) for i in range(100))
        assert c.wait_ack(100) == 100
    return d


def test_disk_full_errors_then_resumes(tmp, daemons, figures):
    mnt = tmp / "small"
    with tmpfs(mnt, "16m"):
        d = _daemon_holding_100(daemons, mnt, "diskfull")
        filler = _fill(mnt)
        assert free_bytes(mnt) < 4096

        # Full: commits fail and are retried; nothing more is acknowledged, the daemon keeps
        # what it accepted in memory (up to max_buffered_bytes, then backpressure), counts
        # commit_errors, and the API and the dashboard still answer.
        c = Client(d.socket, timeout=30)
        c.hello("diskfull", stream="s", seq=100)
        events = [x_event(i, name=f"big_{i}", args={"pad": "x" * 400}) for i in range(100, 20100)]
        c.send_lines(events)
        d.wait_for("commit errors", lambda: d.stats()["commit_errors"] >= 3, timeout=30)
        time.sleep(1.0)
        while c.rbuf or _readable(c):
            if c.read_message(timeout=1) is None:
                break
        assert (c.last_ack or 100) < 20100, "acknowledged on a full disk"
        d.assert_alive()
        # /api/v1/health says the store is failing (issue 18, item 8: it said "ok"), still 200.
        health = d.get_json("/api/v1/health")
        assert health["status"] == "degraded", health
        assert "No space left on device" in health["problems"][0], health
        assert "under min_free_bytes (1048576)" in health["problems"][1], health
        assert d.job("diskfull")["events"] >= 100
        st, _, body = d.request("/")
        assert st == 200 and b"<html" in body.lower()
        # A second client during the outage: what it gets is published, not assumed.
        with Client(d.socket, timeout=10) as c2:
            c2.hello("diskfull2", stream="t", seq=0, read_welcome=False)
            try:
                second = c2.read_message(timeout=10)
            except TimeoutError:
                second = "no answer in 10 s"
        stats = d.stats()
        figures(acked_while_full=c.last_ack, commit_errors=stats["commit_errors"],
                buffered_bytes=stats["buffered_bytes"], errors=c.errors[:2],
                second_client_hello=second)
        assert c.errors == [] or {e["code"] for e in c.errors} == {"unavailable"}, c.errors[:3]

        # Space returns: the retried commits go through and the same connection is acknowledged
        # up to its last line, without a replay.
        t0 = time.monotonic()
        filler.unlink()
        assert c.wait_ack(20100, timeout=60) == 20100
        figures(resume_s=round(time.monotonic() - t0, 3), health_while_full=health)
        health = d.get_json("/api/v1/health")
        assert health["status"] == "ok" and "problems" not in health, health
        c.close()
        d.wait_for("every event stored", lambda: d.job("diskfull")["events"] == 20100)
        d.assert_alive()
        d.stop()
        assert _integrity(mnt / "data" / "stepscope.db") == "ok"


def test_health_says_degraded_on_a_full_disk_while_idle(tmp, daemons, figures):
    """Issue 18, item 8: /health said "ok" while the disk was full. Degraded from failing commits
    (above) needs a client writing; a daemon nobody writes to now also says so, from the data
    dir's free space against min_free_bytes, before the next trainer's records fail."""
    mnt = tmp / "idle"
    with tmpfs(mnt, "16m"):
        d = _daemon_holding_100(daemons, mnt, "idle")
        health = d.get_json("/api/v1/health")
        assert health["status"] == "ok" and "problems" not in health, health
        assert d.stats()["store"]["fs_free_bytes"] > 1 << 20
        filler = _fill(mnt)
        health = d.get_json("/api/v1/health")  # nothing is written: no commit has failed
        assert d.stats()["commit_errors"] == 0
        assert health["status"] == "degraded", health
        problem, = health["problems"]
        assert "under min_free_bytes (1048576)" in problem, health
        free = d.stats()["store"]["fs_free_bytes"]
        assert 0 <= free < 4096 and f"has {free} bytes free" in problem, (free, problem)
        figures(health_idle_full=health, fs_free_bytes=free)
        filler.unlink()
        health = d.get_json("/api/v1/health")
        assert health["status"] == "ok" and "problems" not in health, health
        d.assert_alive()


def test_read_only_data_dir_exits_4(tmp, daemons):
    mnt = tmp / "ro"
    with tmpfs(mnt, "16m"):
        # An existing store on a file system that became read-only.
        d = daemons("ro", data_dir=mnt / "data")
        with Client(d.socket) as c:
            c.hello("ro", stream="s", seq=0)
            c.send_lines(x_event(i) for i in range(10))
            c.wait_ack(10)
        d.stop()
        remount(mnt, "ro")
        r = d.run_to_exit()
        err = r.stderr.decode(errors="replace")
        assert r.returncode == 4, (r.returncode, err)
        assert "read-only" in err.lower() or "data dir" in err.lower(), err
        assert str(mnt / "data") in err, err
        # A data dir that does not exist yet and cannot be created.
        d2 = daemons("ro2", data_dir=mnt / "new", start=False)
        r = d2.run_to_exit()
        err2 = r.stderr.decode(errors="replace")
        assert r.returncode == 4, (r.returncode, err2)
        assert str(mnt / "new") in err2, err2
        remount(mnt, "rw")
