# SPDX-License-Identifier: MIT
"""The HTTP API's edges: routes, errors, path traversal, lookups by name and id, health."""
import json

import pytest

from conftest import project_version
from ssclient import Client, x_event

TRAVERSALS = [
    "/../../etc/passwd",
    "/../../../../../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/..%2f..%2f..%2f..%2fetc%2fpasswd",
    "/static/../../../../etc/passwd",
    "/%252e%252e/%252e%252e/etc/passwd",
    "/....//....//etc/passwd",
    "/./../.././etc/passwd",
    "/api/v1/../../../../etc/passwd",
    "/..\\..\\..\\etc\\passwd",
    "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
    "//etc/passwd",
    "/etc/passwd%00.html",
]


def _assert_error_doc(body):
    doc = json.loads(body)
    assert set(doc) == {"error"}, doc
    assert isinstance(doc["error"]["code"], str) and doc["error"]["code"]
    assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]
    return doc


def test_unknown_route_404_json(daemon):
    for path in ("/api/v1/nope", "/api/v2/jobs", "/api/v1/jobs/1/nope", "/api/v1/stats/x"):
        st, hdr, body = daemon.request(path)
        assert st == 404, (path, st, body[:200])
        assert hdr.get("content-type", "").startswith("application/json"), (path, hdr)
        _assert_error_doc(body)
    st = daemon.stats()
    assert st["http"]["errors"] >= 4


def test_unknown_job_404(daemon):
    for path in ("/api/v1/jobs/999999", "/api/v1/jobs/no_such_job",
                 "/api/v1/jobs/999999/timeline"):
        st, hdr, body = daemon.request(path)
        assert st == 404, (path, st, body[:200])
        _assert_error_doc(body)


@pytest.mark.parametrize("path", TRAVERSALS)
def test_path_traversal_never_serves_files(daemon, path):
    st, hdr, body = daemon.request(path)
    assert b"root:" not in body, f"{path} served /etc/passwd content"
    assert st == 404, (path, st, body[:200])
    daemon.assert_alive()


def test_job_by_name_and_by_id(daemon):
    with Client(daemon.socket) as c:
        c.hello("lookup", rank=0, world_size=2)
        c.send_lines(x_event(i) for i in range(7))
        c.wait_ack(7)
    with Client(daemon.socket) as c:
        c.hello("other")
        c.send_lines(x_event(i) for i in range(3))
        c.wait_ack(3)
    job = daemon.job("lookup")
    assert job["events"] == 7
    assert job["world_size"] == 2
    assert isinstance(job["live"], bool)
    fields = {"id", "name", "ranks", "world_size", "sessions", "steps", "spans", "events",
              "queue_samples", "host_samples", "pipelines", "stored_bytes", "evicted_events",
              "first_seen_us", "last_seen_us", "live"}
    assert fields <= set(job), fields - set(job)
    assert job["first_seen_us"] <= job["last_seen_us"]

    by_name = daemon.get_json("/api/v1/jobs/lookup")
    by_id = daemon.get_json(f"/api/v1/jobs/{job['id']}")
    assert by_name == by_id
    flat = by_name.get("job", by_name)
    assert flat["id"] == job["id"] and flat["name"] == "lookup"
    assert flat["events"] == 7
    other = daemon.job("other")
    assert other["id"] != job["id"]
    doc = daemon.get_json(f"/api/v1/jobs/{other['id']}")
    assert doc.get("job", doc)["name"] == "other"
    assert doc.get("job", doc)["events"] == 3


def test_all_digit_job_name_loses_to_id(daemon):
    with Client(daemon.socket) as c:
        c.hello("first")
        c.send_lines([x_event(0)])
        c.wait_ack(1)
    first = daemon.job("first")
    with Client(daemon.socket) as c:
        c.hello(str(first["id"]))  # a job literally named like the first job's id
        c.send_lines(x_event(i) for i in range(2))
        c.wait_ack(2)
    doc = daemon.get_json(f"/api/v1/jobs/{first['id']}")
    assert doc.get("job", doc)["name"] == "first"


def test_health(daemon):
    doc = daemon.get_json("/api/v1/health")
    assert isinstance(doc, dict)
    assert doc.get("version") == project_version(), doc
    st, hdr, body = daemon.request("/api/v1/health")
    assert hdr.get("content-type", "").startswith("application/json")


def test_stats_shape(daemon):
    st = daemon.stats()
    for k in ("bytes", "lines", "hellos", "bad_hellos", "malformed", "oversized", "unknown",
              "invalid", "duplicates", "partial_lines", "acknowledged", "commits", "commit_errors",
              "buffered_bytes", "pauses"):
        assert isinstance(st[k], int), k
    assert set(st["connections"]) >= {"accepted", "open", "rejected"}
    assert set(st["records"]) == {"trace", "step", "queue", "pipeline", "host"}
    assert set(st["evicted"]) >= {"blocks", "events", "bytes"}
    assert set(st["http"]) >= {"requests", "errors"}
    assert isinstance(st["store"], dict)


def test_only_get(daemon):
    st, hdr, body = daemon.request("/api/v1/jobs", method="DELETE")
    assert st in (404, 405), st
    assert daemon.jobs() == []


def test_many_http_requests_do_not_leak_or_stall(daemon):
    for _ in range(200):
        assert daemon.request("/api/v1/stats")[0] == 200
    st = daemon.stats()
    assert st["http"]["requests"] >= 201


def _raw(daemon, request, timeout=10):
    import socket
    s = socket.create_connection((daemon.host, daemon.port), timeout=timeout)
    try:
        s.sendall(request)
        data = b""
        while True:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                break
            if not d:
                break
            data += d
        return data
    finally:
        s.close()


@pytest.mark.parametrize("n", [65, 500, 1000, 3000])
def test_many_query_parameters_answer_414(daemon, n):
    """Issue 18, item 8: ~500 query parameters exhausted libmicrohttpd's per-connection pool and
    the connection was closed with no answer at all. Past 64 parameters the answer is a 414 with
    the JSON error; the daemon serves the next request."""
    q = "&".join(f"a{i}={i}" for i in range(n))
    for method in ("GET", "POST", "DELETE"):
        data = _raw(daemon, f"{method} /api/v1/jobs?{q} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            "Content-Type: application/json\r\nContent-Length: 0\r\n"
                            "Connection: close\r\n\r\n".encode())
        assert data.startswith(b"HTTP/1.1 414 "), (method, data[:200])
        assert b'"code":"uri_too_long"' in data
    q = "&".join(f"a{i}={i}" for i in range(64))
    st, _, body = daemon.request(f"/api/v1/jobs?{q}")
    assert st == 200, body
    assert daemon.stats()["http"]["errors"] >= 3


@pytest.mark.parametrize("n", [5000, 10000])
def test_query_past_the_pool_answers_414(daemon, n):
    """A request line longer than libmicrohttpd's 32 KiB per-connection pool (5 000 parameters
    are 53 KB) never reaches the daemon's callbacks: libmicrohttpd answers its own 414 (HTML) and
    closes; the daemon serves the next request."""
    q = "&".join(f"a{i}={i}" for i in range(n))
    data = _raw(daemon, f"GET /api/v1/jobs?{q} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Connection: close\r\n\r\n".encode())
    assert data.startswith(b"HTTP/1.1 414 "), data[:200]
    assert daemon.get_json("/api/v1/health")["status"] == "ok"


def test_many_headers_answer_431(daemon):
    """The same pool holds the headers: 1000 of them are answered by libmicrohttpd with 431."""
    hdrs = "".join(f"X-H{i}: {i}\r\n" for i in range(1000))
    data = _raw(daemon, f"GET /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n{hdrs}"
                        "Connection: close\r\n\r\n".encode())
    assert data.startswith(b"HTTP/1.1 431 "), data[:200]
    assert daemon.get_json("/api/v1/health")["status"] == "ok"
