# SPDX-License-Identifier: MIT
"""DNS rebinding (issue 18, item 1) against a real daemon: a page at
http://rebind.attacker.test:PORT whose name resolves to 127.0.0.1 sends its requests with that
Host header. Before the guard, a loopback daemon without a token answered them: it listed every
job (200), created a capture (201) and deleted a job (204). Now any Host that is not one of the
daemon's names gets 421 before anything else, on every route and method; its own names
(127.0.0.1, localhost, [::1], the bound address, http_allowed_hosts) are answered on any port."""
import http.client
import json

import pytest

from conftest import clean_env
from ssclient import Client

EVIL = "rebind.attacker.test"
TOKEN = "t0k3n-0123456789abcdef-XYZ"


def req(d, path, host_header, method="GET", body=None, headers=None):
    """Sends one request to the daemon's socket with Host: host_header exactly (None: no Host
    header, over HTTP/1.0)."""
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    try:
        if host_header is None:
            conn._http_vsn, conn._http_vsn_str = 10, "HTTP/1.0"
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if host_header is not None:
            conn.putheader("Host", host_header)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def feed(d, job):
    with Client(d.socket) as c:
        c.hello(job, capabilities=["capture"])
        c.send_lines([{"type": "step", "step": 1, "begin_us": 1, "end_us": 9}])
        c.wait_ack(1)


JSON = {"Content-Type": "application/json"}
CAPTURE = json.dumps({"steps": 1}).encode()


def attack(d, host):
    """What the probe's page did: read the jobs, start a capture, delete a job."""
    return [
        req(d, "/api/v1/jobs", host),
        req(d, "/api/v1/jobs/victim/captures", host, "POST", CAPTURE, JSON),
        req(d, "/api/v1/jobs/victim", host, "DELETE", None, JSON),
    ]


def test_rebinding_host_is_refused_without_token(daemon):
    feed(daemon, "victim")
    p = daemon.port
    for host in (f"{EVIL}:{p}", EVIL, f"{EVIL.upper()}:{p}", f"127.0.0.1.{EVIL}:{p}",
                 f"localhost.{EVIL}:{p}", f"{EVIL}:{p}:{p}", f"127.0.0.1:{p}x", "",
                 f"[::1]x:{p}", f"localhost:{p}@{EVIL}"):
        for st, body in attack(daemon, host):
            assert st == 421, (host, st, body[:200])
            assert b'"code":"misdirected_request"' in body
            assert b"victim" not in body
    # Nothing was done: the job is there, with no capture.
    assert daemon.job("victim")
    assert daemon.get_json("/api/v1/jobs/victim/captures")["captures"] == []
    # Every route, the dashboard files and /metrics included.
    for path in ("/", "/index.html", "/metrics", "/api/v1/health", "/api/v1/stats",
                 "/api/v1/openapi.json", "/api/v1/jobs/victim/steps"):
        st, _ = req(daemon, path, f"{EVIL}:{p}")
        assert st == 421, (path, st)


def test_own_names_are_answered(daemon):
    feed(daemon, "victim")
    p = daemon.port
    # The names of a loopback daemon, with its port, another port (an SSH tunnel's local one),
    # or none; names without case. A request without Host (HTTP/1.0) is no browser's.
    for host in (f"127.0.0.1:{p}", f"localhost:{p}", f"LocalHost:{p}", f"[::1]:{p}", "localhost",
                 "127.0.0.1", "[::1]", "localhost:9000", None):
        st, body = req(daemon, "/api/v1/jobs", host)
        assert st == 200 and b"victim" in body, (host, st, body[:200])
    # A capture needs a connected session (an ended job's is refused, 409); a deletion needs
    # none: the session ends in between.
    with Client(daemon.socket) as c:
        c.hello("victim", capabilities=["capture"])
        daemon.wait_for("victim live", lambda: daemon.job("victim")["live"] is True)
        st, body = req(daemon, "/api/v1/jobs/victim/captures", f"localhost:{p}", "POST", CAPTURE,
                       JSON)
        assert st == 201, body
    daemon.wait_for("victim ended", lambda: daemon.job("victim")["live"] is False)
    st, body = req(daemon, "/api/v1/jobs/victim", f"127.0.0.1:{p}", "DELETE", None, JSON)
    assert st == 204, body


def test_bound_address_and_allowed_hosts(daemons, tmp):
    d = daemons("bound", args=["--http", "127.0.0.2:0",
                               "--http-allowed-hosts", "stepscope.lan, Box.Example"])
    feed(d, "victim")
    p = d.port
    for host in (f"127.0.0.2:{p}", f"stepscope.lan:{p}", f"box.example:{p}", "BOX.EXAMPLE",
                 f"localhost:{p}"):
        st, _ = req(d, "/api/v1/jobs", host)
        assert st == 200, host
    for host in (f"127.0.0.3:{p}", f"{EVIL}:{p}", f"lan:{p}", f"stepscope.lan.evil:{p}"):
        st, _ = req(d, "/api/v1/jobs", host)
        assert st == 421, host


def test_any_host_needs_a_token(daemons, tmp):
    d = daemons("star", start=False, args=["--http-allowed-hosts", "*"])
    r = d.run_to_exit()
    err = r.stderr.decode()
    assert r.returncode == 5, (r.returncode, err)  # EXIT_HTTP
    assert "http_allowed_hosts" in err and "token" in err, err


@pytest.mark.parametrize("addr,allowed,evil_status", [
    ("127.0.0.1:0", None, 421),      # a token on loopback: its names only
    ("0.0.0.0:0", None, 401),        # a token on a wildcard address: any name, the token guards
    ("0.0.0.0:0", "box.example", 421),  # unless a list narrows it
    ("127.0.0.1:0", "*", 401),
])
def test_with_token(daemons, tmp, addr, allowed, evil_status):
    env = clean_env(tmp)
    env["STEPSCOPE_AUTH_TOKEN"] = TOKEN
    args = ["--http", addr] + (["--http-allowed-hosts", allowed] if allowed else [])
    d = daemons("tok", args=args, env=env)
    feed(d, "victim")
    p = d.port
    auth = {"Authorization": "Bearer " + TOKEN}
    st, _ = req(d, "/api/v1/jobs", f"{EVIL}:{p}", headers=auth)
    assert st == (200 if evil_status == 401 else 421)
    st, _ = req(d, "/api/v1/jobs", f"{EVIL}:{p}")
    assert st == evil_status
    st, _ = req(d, "/api/v1/jobs", f"127.0.0.1:{p}", headers=auth)
    assert st == 200
    if allowed == "box.example":
        st, _ = req(d, "/api/v1/jobs", f"box.example:{p}", headers=auth)
        assert st == 200
