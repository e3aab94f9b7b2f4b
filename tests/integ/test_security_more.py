# SPDX-License-Identifier: MIT
"""Security against a real daemon, beyond test_security.py (tokens, loopback), test_install.py
(socket_mode values) and test_http.py (traversal strings): the socket's mode does not depend on
the umask and keeps other users out; static files never leave static_dir (symlinks, dot files,
encoded and double-encoded dots and NULs); SQL injection text in every path and query parameter
of every GET route of daemon/web/openapi.json, and in job names sent by clients, is answered 200, 400 or
404 and leaves the database intact (PRAGMA integrity_check, same jobs, same events)."""
import json
import os
import pathlib
import socket
import sqlite3
import stat
import urllib.parse

import pytest

from ssclient import Client, x_event

REPO = pathlib.Path(__file__).resolve().parents[2]

INJECTIONS = [
    "' OR 1=1 --",
    "1' OR '1'='1",
    "1; DROP TABLE jobs; --",
    "\"; DROP TABLE spans; --",
    "1 UNION SELECT name FROM sqlite_master --",
    "\\' OR 1=1 #",
    "0x27",
    "%27%20OR%201=1",
    "'||(SELECT sql FROM sqlite_master)||'",
    "1e3; ATTACH DATABASE '/tmp/x.db' AS x; --",
    "\\",
    "'",
    "\"",
]


def _can_connect_as(uid, gid, path):
    """Whether a child running as uid/gid can connect to the Unix socket at path."""
    pid = os.fork()
    if pid == 0:
        code = 3
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
                code = 0
            except PermissionError:
                code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    assert code in (0, 1), code
    return code == 0


def test_socket_mode_ignores_umask_and_keeps_others_out(daemons, tmp):
    old = os.umask(0)
    try:
        d = daemons("umask0")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o660
    if os.geteuid() != 0:
        pytest.skip("connecting as another user needs root")
    os.chmod(tmp, 0o755)  # let the other user reach the socket's folder
    nobody = 65534
    assert not _can_connect_as(nobody, nobody, d.socket)
    st = os.stat(d.socket)
    assert _can_connect_as(nobody, st.st_gid, d.socket)  # the group may
    o = daemons("open", config="socket_mode = 0666\n")
    assert _can_connect_as(nobody, nobody, o.socket)
    d.assert_alive()


@pytest.fixture
def static_daemon(daemons, tmp):
    root = tmp / "static"
    root.mkdir()
    (root / "index.html").write_text("<!doctype html><title>ok</title>")
    (root / ".secret").write_text("dotfile")
    sub = root / "sub"
    sub.mkdir()
    (sub / "a.js").write_text("ok()")
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET-OUTSIDE")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "out").symlink_to(outside)
    (sub / "up").symlink_to("..")
    return daemons("static", config=f"static_dir = {root}\n")


STATIC_REFUSED = [
    "/leak.txt",                      # a symlink to a file outside
    "/out/secret.txt",                # through a symlinked folder
    "/sub/up/sub/up/../outside/secret.txt",
    "/.secret",                       # dot files
    "/sub/%2e%2e/.secret",
    "/%2esecret",
    "/sub/%2e%2e/%2e%2e/outside/secret.txt",
    "/sub/%252e%252e/index.html",     # double encoding stays literal: no such file
    "/sub%2f..%2f..%2foutside%2fsecret.txt",
    "/index.html%00.js",              # NUL
    "/index.html%2500",
    "/%00",
    "/sub/",                          # folders are not listed
    "/sub",
    "/sub/a.js%5c..%5c..%5cindex.html",
    "/%2fetc%2fpasswd",
]


@pytest.mark.parametrize("path", STATIC_REFUSED)
def test_static_files_stay_inside_static_dir(static_daemon, path):
    d = static_daemon
    st, _, body = d.request(path)
    assert b"SECRET-OUTSIDE" not in body and b"dotfile" not in body and b"root:" not in body
    assert st in (400, 403, 404), (path, st, body[:200])
    st, _, body = d.request("/sub/a.js")
    assert (st, body) == (200, b"ok()")
    d.assert_alive()


def _db_state(data_dir):
    """integrity_check of every SQLite file of the data dir, and its job names and span count."""
    out = {}
    for p in sorted(pathlib.Path(data_dir).iterdir()):
        if p.suffix in (".db", ".sqlite", ".sqlite3") or p.name.endswith(".db"):
            con = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
            try:
                assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
                tables = sorted(r[0] for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"))
                counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]
                          for t in tables if not t.startswith("sqlite_")}
            finally:
                con.close()
            out[p.name] = counts
    assert out, f"no database in {data_dir}: {os.listdir(data_dir)}"
    return out


def _routes():
    doc = json.loads((REPO / "daemon" / "web" / "openapi.json").read_text())
    for path, item in doc["paths"].items():
        op = item.get("get")
        if not op or path in ("/api/v1/events",):
            continue  # the event stream never ends; its parameters are none
        params = [p["name"] for p in op.get("parameters", []) + item.get("parameters", [])
                  if isinstance(p, dict) and p.get("in", "query") == "query"]
        yield path, params


def test_sql_injection_on_every_parameter_leaves_the_store_intact(daemon):
    with Client(daemon.socket) as c:
        c.hello("victim", rank=0, world_size=1)
        c.send_lines(x_event(i, name=f"op{i % 3}") for i in range(30))
        c.send_lines([{"type": "step", "step": s, "begin_us": 1700000000000000 + s * 100,
                       "end_us": 1700000000000090 + s * 100} for s in range(3)])
        c.wait_ack(33)
    job = daemon.job("victim")
    before = _db_state(daemon.data_dir)
    keys = ("id", "name", "ranks", "steps", "spans", "events", "stored_bytes")
    jobs_before = [{k: j[k] for k in keys} for j in daemon.jobs()]
    asked = 0
    for path, params in _routes():
        fill = {"{job}": str(job["id"]), "{kind}": "overview", "{id}": "1"}
        concrete = path
        for k, v in fill.items():
            concrete = concrete.replace(k, v)
        targets = []
        for inj in INJECTIONS:
            q = urllib.parse.quote(inj, safe="")
            for k in fill:
                if k in path:
                    other = path
                    for k2, v2 in fill.items():
                        other = other.replace(k2, q if k2 == k else v2)
                    targets.append(other)
            for name in params:
                targets.append(f"{concrete}?{name}={q}")
        for t in targets:
            st, hdr, body = daemon.request(t)
            asked += 1
            assert st in (200, 400, 404), (t, st, body[:300])
            if hdr.get("content-type", "").startswith("application/json"):
                json.loads(body)
    assert asked > 300
    assert _db_state(daemon.data_dir) == before
    assert [{k: j[k] for k in keys} for j in daemon.jobs()] == jobs_before
    daemon.assert_alive()


def test_sql_injection_in_job_and_event_names_is_stored_as_text(daemon):
    names = [inj for inj in INJECTIONS if inj]
    for i, name in enumerate(names):
        with Client(daemon.socket) as c:
            c.hello(name)
            c.send_lines([x_event(0, name=name, cat=name, tid=name)])
            c.wait_ack(1)
        assert c.errors == []
    state = _db_state(daemon.data_dir)
    got = {j["name"]: j for j in daemon.jobs()}
    assert sorted(got) == sorted(set(names))
    for name in names:
        j = got[name]
        assert j["events"] >= 1
        by_name = daemon.get_json("/api/v1/jobs/" + urllib.parse.quote(name, safe=""))
        assert by_name["id"] == j["id"]
        doc = daemon.get_json(f"/api/v1/jobs/{j['id']}/timeline")
        assert [e["name"] for e in doc["traceEvents"] if e.get("ph") == "X"] == [name]
    assert _db_state(daemon.data_dir) == state
