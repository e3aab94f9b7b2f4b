# SPDX-License-Identifier: MIT
"""`stepscope jobs` against a real daemon: the table lists every job of /api/v1/jobs (most
recently seen first, hostile names printed safely), --csv is the daemon's CSV byte for byte, the
token forms work against a daemon that has one, and failures have their exit codes."""
import subprocess

from conftest import build_dir, clean_env
from ssclient import Client

TOKEN = "cli-t0ken-0123456789abcdef"
HOSTILE = 'q"u,o\\te \u00e9t\u00e9'


def cli(args, env, timeout=30):
    return subprocess.run([str(build_dir() / "cli" / "stepscope")] + args,
                          env=env, capture_output=True, timeout=timeout)


def feed(d, job, ranks, n_steps):
    for rank in range(ranks):
        recs = [{"type": "step", "step": s, "begin_us": 10 * s, "end_us": 10 * s + 5}
                for s in range(n_steps)]
        with Client(d.socket) as c:
            c.hello(job, rank=rank, world_size=ranks)
            c.send_lines(recs)
            c.wait_ack(len(recs))


def addr(d):
    return f"127.0.0.1:{d.port}"


def test_jobs_table_matches_api(daemon, tmp):
    env = clean_env(tmp)
    r = cli(["jobs", "--http", addr(daemon)], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().split() == ["ID", "NAME", "RANKS", "STEPS", "EVENTS", "LIVE", "LAST",
                                         "SEEN", "(UTC)"]
    feed(daemon, "first", 2, 3)
    feed(daemon, HOSTILE, 1, 7)
    with Client(daemon.socket) as c:  # a job with a session still open
        c.hello("open-job")
        c.send_lines([{"type": "step", "step": 0, "begin_us": 1, "end_us": 2}])
        c.wait_ack(1)
        jobs = daemon.wait_for("three jobs", lambda: len(daemon.jobs()) == 3 and daemon.jobs())
        env["STEPSCOPE_HTTP"] = addr(daemon)  # the daemon's own variable
        r = cli(["jobs"], env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 1 + len(jobs)
    for line, j in zip(lines[1:], jobs):  # same order as the API: most recently seen first
        assert j["name"] in line
        head = line.split(j["name"])
        assert head[0].split() == [str(j["id"])]
        fields = head[1].split()
        assert fields[:4] == [str(j["ranks"]), str(j["steps"]), str(j["events"]),
                              "true" if j["live"] else "false"]
        assert len(fields) == 6 and fields[4].startswith("20")  # a UTC date and time
    # Columns line up: every row is as wide as the header up to LIVE.
    at = lines[0].index("LIVE")
    assert all(line[at - 2:at] == "  " for line in lines[1:])
    assert [j["name"] for j in jobs][0] == "open-job"
    # --csv is the API's CSV unchanged: compared once the list held still around the call
    # (the last session's close may still move last_seen_us).
    for _ in range(100):
        before = daemon.request("/api/v1/jobs?format=csv")[2]
        r = cli(["jobs", "--csv"], env)
        if before == daemon.request("/api/v1/jobs?format=csv")[2]:
            break
    assert r.returncode == 0 and r.stdout == before


def test_jobs_with_token(daemons, tmp):
    env = clean_env(tmp)
    env["STEPSCOPE_AUTH_TOKEN"] = TOKEN
    d = daemons("tok", env=env)
    feed(d, "secret", 1, 2)
    plain = clean_env(tmp)
    r = cli(["jobs", "--http", addr(d)], plain)
    assert r.returncode == 1
    assert "401" in r.stderr.decode() and "--auth-token-file" in r.stderr.decode()
    assert b"secret" not in r.stdout
    f = tmp / "tok.txt"
    f.write_text(TOKEN + "\n")
    r = cli(["jobs", "--http", addr(d), "--auth-token-file", str(f)], plain)
    assert r.returncode == 0, r.stderr
    assert "secret" in r.stdout.decode()
    r = cli(["jobs", "--http", addr(d)], env)  # STEPSCOPE_AUTH_TOKEN, as the daemon reads it
    assert r.returncode == 0 and "secret" in r.stdout.decode()
    f.write_text("wrong-token-0123456789\n")
    env2 = dict(plain, STEPSCOPE_AUTH_TOKEN_FILE=str(f))
    r = cli(["jobs", "--http", addr(d)], env2)
    assert r.returncode == 1 and "401" in r.stderr.decode()


def test_jobs_failures(tmp):
    env = clean_env(tmp)
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = cli(["jobs", "--http", f"127.0.0.1:{port}"], env)
    assert r.returncode == 1 and "cannot connect" in r.stderr.decode()
    for bad in (["jobs", "--nope"], ["jobs", "extra"], ["jobs", "--http", "nonsense"],
                ["jobs", "--auth-token-file", str(tmp / "missing")]):
        r = cli(bad, env)
        assert r.returncode == 2, (bad, r.stderr)
    r = cli(["jobs", "--help"], env)
    assert r.returncode == 0 and b"usage: stepscope jobs" in r.stdout
    r = cli(["help", "jobs"], env)
    assert r.returncode == 0 and b"usage: stepscope jobs" in r.stdout
    r = cli(["--help"], env)
    assert b"jobs" in r.stdout
