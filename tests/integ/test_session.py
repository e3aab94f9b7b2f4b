# SPDX-License-Identifier: MIT
"""The dashboard with an auth token, against a real daemon (docs/API.md "Session"): the dashboard
files and /api/v1/health answer without the token; POST /api/v1/session trades the token for an
HttpOnly, SameSite=Strict cookie on /api that every API route (and the event stream) accepts in
place of the Authorization header; a wrong token or cookie is 401; POST needs JSON (CSRF)."""
import http.client
import json

from conftest import clean_env
from ssclient import Client

TOKEN = "s3ssion-0123456789abcdef-QRS"
COOKIE_VALUE = TOKEN.encode().hex()


def req(d, path, headers=None, method="GET", body=None):
    conn = http.client.HTTPConnection(d.host, d.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def session(d, token, ctype="application/json"):
    body = json.dumps({"token": token}).encode() if isinstance(token, str) else token
    h = {"Content-Type": ctype} if ctype else {}
    return req(d, "/api/v1/session", h, "POST", body)


def cookie(value=COOKIE_VALUE):
    return {"Cookie": "other=1; stepscope_token=" + value}


def start(daemons, tmp):
    env = clean_env(tmp)
    d = daemons("tok", args=["--auth-token", TOKEN], env=env)
    with Client(d.socket) as c:
        c.hello("secret-job")
        c.send_lines([{"type": "step", "step": s, "begin_us": 10 * s, "end_us": 10 * s + 9}
                      for s in range(3)])
        c.wait_ack(3)
    return d


def test_static_files_and_health_need_no_token(daemons, tmp):
    d = start(daemons, tmp)
    st, hdr, body = req(d, "/")
    assert st == 200 and hdr["content-type"].startswith("text/html"), (st, body[:200])
    assert b"secret-job" not in body
    st, hdr, _ = req(d, "/js/app.js")
    assert st == 200 and "javascript" in hdr["content-type"]
    assert req(d, "/nosuch.html")[0] == 404
    st, _, body = req(d, "/api/v1/health")
    assert st == 200 and b'"status":"ok"' in body
    # The data still needs it.
    for path in ("/api/v1/jobs", "/api/v1/jobs/secret-job/steps", "/metrics", "/api/v1/events"):
        assert req(d, path)[0] == 401, path


def test_session_cookie_opens_the_api(daemons, tmp):
    d = start(daemons, tmp)
    st, hdr, body = session(d, TOKEN)
    assert st == 204, body
    sc = hdr["set-cookie"]
    parts = [p.strip() for p in sc.split(";")]
    assert parts[0] == "stepscope_token=" + COOKIE_VALUE
    assert set(parts[1:]) == {"HttpOnly", "SameSite=Strict", "Path=/api"}
    assert TOKEN not in sc  # the token itself never appears in a header
    st, _, body = req(d, "/api/v1/jobs", cookie())
    assert st == 200 and b"secret-job" in body
    d.wait_for("3 live steps through the cookie", lambda: json.loads(
        req(d, "/api/v1/jobs/secret-job/steps", cookie())[2]).get("total") == 3)
    # The event stream takes the cookie too (what EventSource sends).
    conn = http.client.HTTPConnection(d.host, d.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/events", headers=cookie())
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
    finally:
        conn.close()
    # /metrics is outside the cookie's path, but a client sending it anyway is let in.
    assert req(d, "/metrics", cookie())[0] == 200


def test_wrong_token_or_cookie_is_refused(daemons, tmp):
    d = start(daemons, tmp)
    for bad in (TOKEN[:-1], TOKEN + "x", TOKEN.upper(), "", "x" * 300):
        st, hdr, body = session(d, bad)
        assert st == 401, (bad, st, body)
        assert "set-cookie" not in hdr
    for bad in (COOKIE_VALUE[:-2], COOKIE_VALUE + "00", COOKIE_VALUE.upper(), TOKEN, ""):
        st, _, body = req(d, "/api/v1/jobs", cookie(bad))
        assert st == 401 and b"secret-job" not in body, bad
    # A wrong Authorization header is not rescued by a right cookie.
    st, _, _ = req(d, "/api/v1/jobs", dict(cookie(), Authorization="Bearer wrong-0123456789"))
    assert st == 401
    # Bodies that are not {"token": "..."}; a form (CSRF) is refused before the body is read.
    for body in (b"", b"{}", b'{"token": 1}', b'{"token": "a", "x": 1}', b'["t"]',
                 b'{"token": "\\u00e9"}', b'{"token": "a"} x'):
        assert session(d, body)[0] == 400, body
    assert session(d, TOKEN, ctype="application/x-www-form-urlencoded")[0] == 415
    assert session(d, TOKEN, ctype="text/plain")[0] == 415
    assert req(d, "/api/v1/session")[0] == 405
    # An escaped token is the same token.
    esc = json.dumps({"token": TOKEN}).replace("Q", "\\u0051").encode()
    assert session(d, esc)[0] == 204


def test_session_without_a_token_configured(daemon):
    st, hdr, _ = session(daemon, "anything")
    assert st == 401 and "set-cookie" not in hdr
    st, hdr, _ = session(daemon, "")
    assert st == 204 and "set-cookie" not in hdr
