# SPDX-License-Identifier: MIT
"""HTTP security against a real daemon: loopback by default; a non-loopback address without a
token refuses to start (exit 2, before the socket or the data dir is touched) whichever source
names it; the token from each source (flag, file, environment, config file) protects every
API route but /api/v1/health and /api/v1/session with "Authorization: Bearer"; no CORS headers."""
import http.client
import os

import pytest

from conftest import run_cli, clean_env
from ssclient import Client

TOKEN = "t0k3n-0123456789abcdef-XYZ"
EXIT_USAGE = 2


def req(d, path, headers=None, method="GET", host=None):
    conn = http.client.HTTPConnection(host or d.host, d.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def bearer(token=TOKEN):
    return {"Authorization": "Bearer " + token}


def test_default_http_is_loopback(tmp):
    out = run_cli(["--help"], env=clean_env(tmp)).stdout.decode()
    assert "default 127.0.0.1:8080" in out
    assert "--auth-token " in out and "--auth-token-file" in out


@pytest.mark.parametrize("addr", ["0.0.0.0:0", "[::]:0"])
@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_non_loopback_without_token_refuses_to_start(daemons, tmp, addr, how):
    env = clean_env(tmp)
    args, config = [], None
    if how == "flag":
        args = ["--http", addr]
    elif how == "env":
        env["STEPSCOPE_HTTP"] = addr
    else:
        config = f"http = {addr}\n"
    d = daemons("open", start=False, args=args, env=env, config=config)
    if how != "flag":
        # The fixture passes --http 127.0.0.1:0, which outranks env and file; drop it here.
        argv = d.argv()
        i = argv.index("--http")
        d.argv = lambda: argv[:i] + argv[i + 2:]
    p = d.run_to_exit()
    err = p.stderr.decode()
    assert p.returncode == EXIT_USAGE, err
    assert "not a loopback address" in err and "auth token" in err
    assert p.stdout == b""
    assert not os.path.exists(d.socket) and not os.path.exists(d.data_dir)


@pytest.mark.parametrize("bad, why", [
    (["--auth-token", "short"], "at least 16"),
    (["--auth-token", "has a blank 0123456789"], "visible ASCII"),
    (["--auth-token-file", "/nonexistent/token"], "No such file"),
    (["--auth-token", TOKEN, "--auth-token-file", "FILE"], "not both"),
])
def test_bad_token_refuses_to_start(daemons, tmp, bad, why):
    f = tmp / "tok"
    f.write_text(TOKEN + "\n")
    args = [a.replace("FILE", str(f)) for a in bad] + ["--http", "0.0.0.0:0"]
    d = daemons("bad", start=False, args=args)
    p = d.run_to_exit()
    assert p.returncode == EXIT_USAGE, p.stderr
    assert why in p.stderr.decode()


def start_with_token(daemons, tmp, how, addr="0.0.0.0:0"):
    env = clean_env(tmp)
    args, config = ["--http", addr], None
    f = tmp / "token.txt"
    f.write_text(f"  {TOKEN}\r\n")
    f.chmod(0o600)
    if how == "flag":
        args += ["--auth-token", TOKEN]
    elif how == "file":
        args += ["--auth-token-file", str(f)]
    elif how == "env":
        env["STEPSCOPE_AUTH_TOKEN"] = TOKEN
    elif how == "env_file":
        env["STEPSCOPE_AUTH_TOKEN_FILE"] = str(f)
    else:
        config = f"auth_token_file = {f}\n"
    return daemons("tok", args=args, env=env, config=config)


@pytest.mark.parametrize("how", ["flag", "file", "env", "env_file", "config"])
def test_token_required_on_every_route_but_health(daemons, tmp, how):
    d = start_with_token(daemons, tmp, how)
    assert d.host == "0.0.0.0"
    with Client(d.socket) as c:
        c.hello("secret-job")
        c.send_lines([{"type": "step", "step": 1, "begin_us": 1, "end_us": 9}])
        c.wait_ack(1)
    # Served on a non-loopback bind; connect through loopback.
    host = "127.0.0.1"
    # The dashboard files ("/", "/nosuch.html") hold no data and are served without a token
    # (test_session.py); everything under /api but health and session, and /metrics, needs it.
    paths = ["/api/v1/jobs", "/api/v1/stats", "/metrics", "/api/v1/jobs/secret-job",
             "/api/v1/jobs/secret-job/steps", "/api/v1/openapi.json", "/api/v1/nosuch",
             "/api", "/api/v1/events"]
    refused = [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
        bearer(TOKEN[:-1]),
        bearer(TOKEN + "x"),
        bearer(TOKEN[:-1] + "Q"),
        bearer(TOKEN.upper()),
        bearer(""),
        {"Authorization": "Basic " + TOKEN},
        {"Authorization": TOKEN},
        {"X-Auth-Token": TOKEN},
    ]
    for path in paths:
        for h in refused:
            st, hdr, body = req(d, path, h, host=host)
            assert st == 401, (path, h, st, body[:200])
            assert hdr["www-authenticate"] == 'Bearer realm="stepscope"'
            assert b'"code":"unauthorized"' in body
            assert b"secret-job" not in body
    # Other methods are refused for the missing token first: nothing is revealed.
    st, _, _ = req(d, "/api/v1/jobs", method="POST", host=host)
    assert st == 401
    st, _, _ = req(d, "/api/v1/jobs", bearer(), method="POST", host=host)
    assert st == 405
    # The right token opens everything (scheme case-insensitive, blanks after it skipped).
    for h in (bearer(), {"Authorization": "bearer " + TOKEN},
              {"Authorization": "BEARER   " + TOKEN}):
        st, _, body = req(d, "/api/v1/jobs", h, host=host)
        assert st == 200 and b"secret-job" in body
    st, _, body = req(d, "/metrics", bearer(), host=host)
    assert st == 200 and b'job="secret-job"' in body
    st, _, _ = req(d, "/api/v1/jobs/secret-job/steps", bearer(), host=host)
    assert st == 200
    # Health answers without a token (for probes), and with one.
    for h in ({}, bearer("wrong-token-0123456789")):
        st, _, body = req(d, "/api/v1/health", h, host=host)
        assert st == 200 and b'"status":"ok"' in body
    # Every 401 counted as an HTTP error.
    st, _, body = req(d, "/api/v1/stats", bearer(), host=host)
    import json
    stats = json.loads(body)
    assert stats["http"]["errors"] >= len(paths) * len(refused) + 2


def test_token_on_loopback_is_enforced_too(daemons, tmp):
    d = start_with_token(daemons, tmp, "env", addr="127.0.0.1:0")
    assert req(d, "/api/v1/jobs")[0] == 401
    assert req(d, "/api/v1/jobs", bearer())[0] == 200


def test_no_cors_headers(daemon):
    origin = {"Origin": "http://evil.example"}
    for method, path in (("GET", "/api/v1/jobs"), ("GET", "/metrics"), ("GET", "/"),
                         ("GET", "/api/v1/nosuch"), ("OPTIONS", "/api/v1/jobs")):
        h = dict(origin)
        if method == "OPTIONS":
            h["Access-Control-Request-Method"] = "GET"
        st, hdr, _ = req(daemon, path, h, method=method)
        assert not [k for k in hdr if k.startswith("access-control-")], (method, path, hdr)
        if method == "OPTIONS":
            assert st == 405
