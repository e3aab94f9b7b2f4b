# SPDX-License-Identifier: MIT
"""Hostile names: whatever a client calls its job or events, the API answers valid JSON, the text
round-trips, and nothing reaches a browser as live markup."""
import json
import urllib.parse

from ssclient import Client, dumps, x_event

SCRIPT_JOB = "<script>alert(1)</script>\"'"


def test_script_job_name_round_trips_escaped(daemon):
    with Client(daemon.socket) as c:
        c.hello(SCRIPT_JOB)
        c.send_lines([x_event(0, name="</script><img src=x onerror=alert(2)>")])
        c.wait_ack(1)
    assert c.errors == []

    st, hdr, body = daemon.request("/api/v1/jobs")
    assert st == 200
    assert hdr.get("content-type", "").startswith("application/json"), hdr
    assert b"<script>" not in body.lower(), body[:300]
    assert b"</script>" not in body.lower(), body[:300]
    doc = json.loads(body)
    jobs = doc["jobs"] if isinstance(doc, dict) else doc
    assert [j["name"] for j in jobs] == [SCRIPT_JOB]
    job = jobs[0]
    assert job["events"] == 1

    quoted = urllib.parse.quote(SCRIPT_JOB, safe="")
    st, hdr, body = daemon.request(f"/api/v1/jobs/{quoted}")
    assert st == 200, body[:300]
    assert b"<script>" not in body.lower()
    detail = json.loads(body)
    assert _find(detail, "name", SCRIPT_JOB), f"name not in {detail!r}"[:500]
    assert _find(detail, "id", job["id"])

    # The export is verbatim by design (test_timeline.py): only its JSON validity is checked here.
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job['id']}/timeline")
    assert st == 200
    names = [e["name"] for e in json.loads(body)["traceEvents"] if e.get("ph") == "X"]
    assert names == ["</script><img src=x onerror=alert(2)>"]


def _find(v, key, want):
    if isinstance(v, dict):
        if v.get(key) == want:
            return True
        return any(_find(x, key, want) for x in v.values())
    if isinstance(v, list):
        return any(_find(x, key, want) for x in v)
    return False


def test_awkward_but_valid_names_round_trip(daemon):
    names = [
        'quote " backslash \\ slash /',
        "control \u0001\u001f tab\t newline\n",
        "nul \u0000 inside",
        "unicode é 中文 😀",
        "line sep \u2028 para sep \u2029",
        "percent %2e%2e/ and ../../",
    ]
    events = [x_event(i, name=n) for i, n in enumerate(names)]
    job_name = "names é 😀 \"q\" \\ </x>"
    with Client(daemon.socket) as c:
        c.hello(job_name)
        # Sent both ASCII-escaped and raw UTF-8: both are the same JSON text.
        c.send_lines(events[:3])
        c.send_lines(json.dumps(e, ensure_ascii=True) for e in events[3:])
        c.wait_ack(len(events))
    assert c.errors == []
    job = daemon.job(job_name)
    assert job["events"] == len(events)
    doc = daemon.get_json(f"/api/v1/jobs/{job['id']}/timeline")
    got = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X"), key=lambda e: e["args"]["correlation"])
    assert got == events
    by_name = daemon.get_json("/api/v1/jobs/" + urllib.parse.quote(job_name, safe=""))
    assert _find(by_name, "id", job["id"])


def test_invalid_utf8_is_malformed_and_harmless(daemon):
    """PROTOCOL.md section 4: a line that is not valid UTF-8 is malformed, so an event name with
    invalid bytes is answered and skipped; the job and its good events stay readable as JSON."""
    bad_names = [b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\xf8\x88\x80\x80\x80",
                 b"\xc0\xaf"]
    with Client(daemon.socket) as c:
        c.hello("utf8")
        lines = [dumps(x_event(0))]
        for i, b in enumerate(bad_names):
            lines.append(b'{"ph":"X","name":"bad' + b + b'","ts":1,"dur":1}')
        lines.append(dumps(x_event(1)))
        c.send_lines(lines)
        c.wait_ack(len(lines))
    assert [(e["line"], e["code"]) for e in c.errors] == [(i + 3, "malformed")
                                                         for i in range(len(bad_names))]
    # The error messages must themselves be valid UTF-8 JSON (the client parsed them).
    assert daemon.stats()["malformed"] == len(bad_names)
    job = daemon.job("utf8")
    assert job["events"] == 2
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job['id']}/timeline")
    assert st == 200
    body.decode("utf-8")  # strict: the export is valid UTF-8
    assert len([e for e in json.loads(body)["traceEvents"] if e.get("ph") == "X"]) == 2


def test_invalid_utf8_job_name_is_a_bad_hello(daemon):
    with Client(daemon.socket) as c:
        c.send_raw(b'{"hello":"stepscope/1","job":"j\xff\xfe"}\n')
        c.read_until_eof()
    assert [e["code"] for e in c.errors] == ["bad_hello"]
    assert daemon.jobs() == []
    body = daemon.request("/api/v1/jobs")[2]
    body.decode("utf-8")
