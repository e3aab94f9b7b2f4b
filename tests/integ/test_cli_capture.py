# SPDX-License-Identifier: MIT
"""`stepscope capture` against a real daemon and fake capturing clients (the request line and the
{"type":"capture"} reports of docs/PROTOCOL.md section 6): the id it prints is the daemon's, the
flags become the request the ranks receive, --wait follows every rank to done or failed with the
exit code saying which, and failures have their exit codes."""
import socket
import subprocess
import time

from conftest import clean_env
from ssclient import Client
from test_capture import CAPS, capture, connect, next_request, report
from test_cli_jobs import TOKEN, addr, cli


def start(args, env):
    from conftest import build_dir
    return subprocess.Popen([str(build_dir() / "cli" / "stepscope")] + args,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_capture_prints_the_id_and_the_ranks_get_the_request(daemon, tmp):
    env = clean_env(tmp)
    c0 = connect(daemon, "cli-cap", rank=0, world_size=2)
    c1 = connect(daemon, "cli-cap", rank=1, world_size=2)
    r = cli(["capture", "cli-cap", "--steps", "3", "--what", "cpu,shapes", "--ranks", "1",
             "--http", addr(daemon)], env)
    assert r.returncode == 0, r.stderr
    cid = int(r.stdout.decode())
    doc = capture(daemon, "cli-cap", cid)
    assert doc["steps"] == 3 and doc["start"] == "next" and doc["what"] == ["cpu", "shapes"]
    assert doc["all_ranks"] is False and [p["rank"] for p in doc["ranks"]] == [1]
    assert next_request(c1) == {"id": cid, "start_step": None, "steps": 3,
                                "what": ["cpu", "shapes"]}
    # A start step, every rank, the default what; STEPSCOPE_HTTP as the daemon reads it.
    env["STEPSCOPE_HTTP"] = addr(daemon)
    r = cli(["capture", "cli-cap", "--steps", "2", "--start", "120"], env)
    assert r.returncode == 0, r.stderr
    cid2 = int(r.stdout.decode())
    assert cid2 > cid
    for c in (c0, c1):
        req = next_request(c)
        assert req == {"id": cid2, "start_step": 120, "steps": 2, "what": ["cpu"]}
    doc = capture(daemon, "cli-cap", cid2)
    assert doc["all_ranks"] is True and sorted(p["rank"] for p in doc["ranks"]) == [0, 1]
    c0.close()
    c1.close()


def test_capture_wait_follows_every_rank_to_done(daemon, tmp):
    env = clean_env(tmp)
    clients = [connect(daemon, "cli-wait", rank=r, world_size=2) for r in range(2)]
    p = start(["capture", "cli-wait", "--steps", "2", "--wait", "--http", addr(daemon)], env)
    cids = {next_request(c)["id"] for c in clients}
    assert len(cids) == 1
    cid = cids.pop()
    for state in ("armed", "recording"):
        for c in clients:
            report(c, cid, state)
    assert p.poll() is None  # still recording: still waiting
    report(clients[0], cid, "done")
    assert p.poll() is None
    report(clients[1], cid, "done")
    out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    lines = out.decode().splitlines()
    assert lines[0] == str(cid)
    assert lines[1].split() == ["RANK", "STATE", "REASON"]
    assert [ln.split() for ln in lines[2:]] == [["0", "done", "-"], ["1", "done", "-"]]
    # Progress on stderr: each rank reached done.
    assert "rank 0: done" in err.decode() and "rank 1: done" in err.decode()
    for c in clients:
        c.close()


def test_capture_wait_reports_a_failure(daemon, tmp):
    env = clean_env(tmp)
    c = connect(daemon, "cli-fail")
    p = start(["capture", "cli-fail", "--steps", "1", "--wait", "--http", addr(daemon)], env)
    cid = next_request(c)["id"]
    report(c, cid, "armed")
    reason = "step 120 has passed <\u00e9t\u00e9> & \"quoted\"\x1b[31m"
    report(c, cid, "failed", reason)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 3, err
    row = out.decode().splitlines()[2]
    # The reason unescaped (the daemon writes < > & as \u escapes), the escape byte as '?'.
    assert row.split(None, 2) == ["0", "failed", reason.replace("\x1b", "?")]
    c.close()


def test_capture_wait_timeout_and_a_client_that_cannot_capture(daemon, tmp):
    env = clean_env(tmp)
    c = connect(daemon, "cli-slow")
    p = start(["capture", "cli-slow", "--steps", "1", "--wait", "--timeout", "1",
               "--http", addr(daemon)], env)
    cid = next_request(c)["id"]
    report(c, cid, "armed")
    out, err = p.communicate(timeout=20)
    assert p.returncode == 4, err
    assert out.decode().splitlines()[2].split() == ["0", "armed", "-"]
    assert b"capture %d has not ended after 1 s" % cid in err
    c.close()
    # A job whose client did not announce the capability: refused at once, with the reason.
    c = connect(daemon, "cli-old", capable=False)
    r = cli(["capture", "cli-old", "--steps", "1", "--wait", "--http", addr(daemon)], env)
    assert r.returncode == 1
    assert "409" in r.stderr.decode() and "capability" in r.stderr.decode()
    c.close()


def test_capture_wait_without_timeout_ends_when_the_capture_expires(daemons, tmp):
    """--wait without --timeout: a client that never arms the request leaves it pending; the
    daemon expires it (capture_expire_s) and the command returns, saying so."""
    d = daemons("w", args=["--capture-expire-s", "1"])
    env = clean_env(tmp)
    c = connect(d, "cli-never")
    t0 = time.monotonic()
    p = start(["capture", "cli-never", "--steps", "1", "--wait", "--http", addr(d)], env)
    cid = next_request(c)["id"]
    out, err = p.communicate(timeout=20)
    assert time.monotonic() - t0 < 10
    assert p.returncode == 3, err
    row = out.decode().splitlines()[2].split(None, 2)
    assert row == ["0", "expired", "the client did not arm it within 1 s of the request"], row
    assert "rank 0: expired" in err.decode()
    c.close()
    # An ended job: refused at once (409), the message without JSON escapes.
    r = cli(["capture", "cli-never", "--steps", "1", "--wait", "--http", addr(d)], env)
    assert r.returncode == 1
    assert "409" in r.stderr.decode() and "no session of this job is connected" in r.stderr.decode()
    assert "\\" not in r.stderr.decode()
    # The default bound is in the help.
    r = cli(["help", "capture"], env)
    assert b"(default 300;" in r.stdout


def test_capture_with_token(daemons, tmp):
    env = clean_env(tmp)
    env["STEPSCOPE_AUTH_TOKEN"] = TOKEN
    d = daemons("tok", env=env)
    c = Client(d.socket)  # connect() would wait for the job without the token
    c.hello("cli-tok", capabilities=CAPS)
    plain = clean_env(tmp)
    r = cli(["capture", "cli-tok", "--steps", "1", "--http", addr(d)], plain)
    assert r.returncode == 1 and "401" in r.stderr.decode()
    f = tmp / "tok.txt"
    f.write_text(TOKEN + "\n")
    for _ in range(100):  # until the hello's job is committed (404 before)
        r = cli(["capture", "cli-tok", "--steps", "1", "--http", addr(d), "--auth-token-file",
                 str(f)], plain)
        if b"404" not in r.stderr:
            break
        time.sleep(0.05)
    assert r.returncode == 0, r.stderr
    assert next_request(c)["id"] == int(r.stdout.decode())
    c.close()


def test_capture_failures(daemon, tmp):
    env = clean_env(tmp)
    r = cli(["capture", "no-such-job", "--steps", "1", "--http", addr(daemon)], env)
    assert r.returncode == 1 and "404" in r.stderr.decode()
    # The daemon's message as a person reads it: quotes, not JSON escapes.
    assert 'no job "no-such-job"' in r.stderr.decode(), r.stderr
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = cli(["capture", "j", "--steps", "1", "--http", f"127.0.0.1:{port}"], env)
    assert r.returncode == 1 and "cannot connect" in r.stderr.decode()
    for bad in (["capture", "j"], ["capture", "--steps", "1"], ["capture", "j", "k", "--steps", "1"],
                ["capture", "j", "--steps", "0"], ["capture", "j", "--steps", "1001"],
                ["capture", "j", "--steps", "x"], ["capture", "j", "--steps", "1", "--start", "-3"],
                ["capture", "j", "--steps", "1", "--ranks", "0,,1"],
                ["capture", "j", "--steps", "1", "--ranks", "a"],
                ["capture", "j", "--steps", "1", "--what", "cpu,\"x"],
                ["capture", "j", "--steps", "1", "--timeout", "soon"], ["capture", "--nope"]):
        r = cli(bad + ["--http", addr(daemon)], env)
        assert r.returncode == 2, (bad, r.stderr)
    # A what the daemon does not know: its 400 names the field.
    connect(daemon, "cli-what").close()
    r = cli(["capture", "cli-what", "--steps", "1", "--what", "gpumagic", "--http", addr(daemon)],
            env)
    assert r.returncode == 1 and "400" in r.stderr.decode() and "what" in r.stderr.decode()
    r = cli(["help", "capture"], env)
    assert r.returncode == 0 and b"usage: stepscope capture" in r.stdout
