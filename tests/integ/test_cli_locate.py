# SPDX-License-Identifier: MIT
"""Which daemon the `stepscope` CLI talks to (cli/README.md, "Which daemon"), with
two real daemons running: one setting (the socket or the HTTP address) names the daemon for
every command, the other address is asked from that daemon (the socket's probe answer,
/api/v1/health), two settings that name different daemons are refused before anything is sent,
and `--http localhost:PORT` is taken. Before, `import` went by the socket and `jobs` by HTTP
whatever the other said, so setting one sent the other command to another daemon silently."""
import json
import pathlib

from conftest import clean_env
from ssclient import Client
from test_cli_jobs import addr, cli, feed

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACE = DATA / "cpu_only_rank34.json.gz"


def names(d):
    return sorted(j["name"] for j in d.jobs())


def listed(r):
    assert r.returncode == 0, r.stderr
    return sorted(line.split()[1] for line in r.stdout.decode().splitlines()[1:])


def two(daemons):
    a, b = daemons("a"), daemons("b")
    feed(a, "only-a", 1, 2)
    feed(b, "only-b", 1, 2)
    return a, b


def test_probe_and_health_name_the_same_daemon(daemons):
    a, b = two(daemons)
    with Client(a.socket) as c:
        c.sock.sendall(b'{"hello":"stepscope/1","probe":true}\n')
        probe = json.loads(c.sock.makefile("rb").readline())
    health = a.get_json("/api/v1/health")
    assert probe["probe"] == "stepscope/1" and probe["http"] == addr(a)
    assert len(probe["instance"]) == 32 and probe["instance"] == health["instance"]
    assert health["socket"] == a.socket
    assert b.get_json("/api/v1/health")["instance"] != probe["instance"]
    assert names(a) == ["only-a"]  # a probe opens no session and makes no job


def test_the_socket_alone_names_the_daemon_of_the_http_commands(daemons, tmp):
    a, b = two(daemons)
    env = clean_env(tmp)
    env["STEPSCOPE_SOCKET"] = b.socket
    assert listed(cli(["jobs"], env)) == ["only-b"]
    assert listed(cli(["jobs", "--socket", a.socket], clean_env(tmp))) == ["only-a"]


def test_the_http_address_alone_names_the_daemon_of_import(daemons, tmp):
    a, b = two(daemons)
    r = cli(["import", "--quiet", "--job", "via-http", "--http", addr(a), str(TRACE)],
            clean_env(tmp))
    assert r.returncode == 0, r.stderr
    env = clean_env(tmp)
    env["STEPSCOPE_HTTP"] = addr(b)
    r = cli(["import", "--quiet", "--job", "via-env", str(TRACE)], env)
    assert r.returncode == 0, r.stderr
    assert names(a) == ["only-a", "via-http"] and names(b) == ["only-b", "via-env"]


def test_neither_setting_is_the_daemon_on_the_default_socket(daemons, tmp):
    a = daemons("a")
    d = daemons("dflt", socket=tmp / "stepscope.sock")  # clean_env: XDG_RUNTIME_DIR=tmp
    feed(a, "only-a", 1, 2)
    feed(d, "default", 1, 2)
    assert listed(cli(["jobs"], clean_env(tmp))) == ["default"]


def test_two_settings_naming_two_daemons_are_refused(daemons, tmp):
    a, b = two(daemons)
    env = clean_env(tmp)
    env["STEPSCOPE_SOCKET"] = a.socket
    env["STEPSCOPE_HTTP"] = addr(b)
    for args in (["jobs"], ["summary", "only-a"], ["capture", "only-a", "--steps", "1"],
                 ["import", "--job", "nope", str(TRACE)]):
        r = cli(args, env)
        err = r.stderr.decode()
        assert r.returncode == 2, (args, err)
        assert f"STEPSCOPE_SOCKET {a.socket} and STEPSCOPE_HTTP {addr(b)} are two different " \
               f"daemons (the one at {addr(b)} has socket {b.socket})" in err, err
    r = cli(["jobs", "--socket", a.socket, "--http", addr(b)], clean_env(tmp))
    assert r.returncode == 2, r.stderr
    assert f"--socket {a.socket} and --http {addr(b)} are two different".encode() in r.stderr
    assert names(a) == ["only-a"] and names(b) == ["only-b"]
    # Both naming the same daemon: taken.
    env["STEPSCOPE_HTTP"] = addr(a)
    assert listed(cli(["jobs"], env)) == ["only-a"]
    r = cli(["import", "--quiet", "--job", "both", str(TRACE)], env)
    assert r.returncode == 0, r.stderr
    assert names(a) == ["both", "only-a"]


def test_a_socket_that_does_not_answer_is_no_daemon_to_ask(daemons, tmp):
    a = daemons("a")
    env = clean_env(tmp)
    env["STEPSCOPE_SOCKET"] = str(tmp / "gone.sock")
    r = cli(["jobs"], env)
    assert r.returncode == 1
    assert (f"cannot ask the daemon on socket {tmp / 'gone.sock'} (STEPSCOPE_SOCKET) for its "
            "HTTP address") in r.stderr.decode() and "--http" in r.stderr.decode()
    # Given with an HTTP address, a dead socket is not that daemon's.
    env["STEPSCOPE_HTTP"] = addr(a)
    r = cli(["jobs"], env)
    assert r.returncode == 2 and b"two different daemons" in r.stderr


def test_http_localhost_is_taken(daemons, tmp):
    a, _ = two(daemons)
    assert listed(cli(["jobs", "--http", f"localhost:{a.port}"], clean_env(tmp))) == ["only-a"]
    r = cli(["import", "--quiet", "--job", "lh", "--http", f"localhost:{a.port}", str(TRACE)],
            clean_env(tmp))
    assert r.returncode == 0, r.stderr
    assert "lh" in names(a)
