# SPDX-License-Identifier: MIT
"""Hostile records against a real daemon (issue 7 item 3): numbers JSON does not have (NaN,
Infinity), numbers too big for int64 nanoseconds, negative durations, timestamps at the int64
limits, JSON nested 100 000 deep, and a job with 10^6 distinct operator names. Each bad line gets
the documented error code (docs/PROTOCOL.md section 4) and a counter, every good line around it
is kept, the daemon keeps answering, and the 10^6 names stay within LIVE_OPS_MAX rows plus one
"[other]" row while the daemon's memory stays bounded. Hostile names come back as data: CSV rows
parse back to the exact names."""
import csv
import io
import json
import os
import time

from ssclient import Client, dumps, x_event

LIVE_OPS_MAX = 8192  # daemon/live/live.h


def _rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _sanitized(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def _send_checked(daemon, job, lines):
    """Sends lines after a hello; returns {line number: error code} (the hello is line 1)."""
    with Client(daemon.socket) as c:
        c.hello(job)
        c.send_lines(lines)
        c.wait_ack(len(lines))
    return {e["line"]: e["code"] for e in c.errors}


def _x_count(daemon, job):
    doc = daemon.get_json(f"/api/v1/jobs/{daemon.job(job)['id']}/timeline")
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _rows_if(daemon, path, want, calls=False):
    """The operators answer once it holds want rows (or want calls), else None."""
    st, _, body = daemon.request(path)
    if st != 200:
        return None
    doc = json.loads(body)
    got = sum(r["calls"] for r in doc["rows"]) if calls else len(doc["rows"])
    return doc if got == want else None


def test_non_numbers_and_out_of_range_times(daemon):
    good = [dumps(x_event(i)) for i in range(3)]
    bad = [
        # Not JSON at all (RFC 8259 has no NaN or Infinity): malformed.
        (b'{"ph":"X","name":"nan","ts":NaN,"dur":1}', "malformed"),
        (b'{"ph":"X","name":"inf","ts":Infinity,"dur":1}', "malformed"),
        (b'{"ph":"X","name":"ninf","ts":1,"dur":-Infinity}', "malformed"),
        (b'{"ph":"X","name":"nan2","ts":1,"dur":nan}', "malformed"),
        # JSON, but no int64 nanosecond time: invalid (the message names the field).
        (b'{"ph":"X","name":"big","ts":1e999,"dur":1}', "invalid"),
        (b'{"ph":"X","name":"bigdur","ts":1,"dur":1e999}', "invalid"),
        (b'{"ph":"X","name":"neg","ts":1,"dur":-1}', "invalid"),
        (b'{"ph":"X","name":"negsmall","ts":1,"dur":-0.001}', "invalid"),
        (b'{"ph":"X","name":"over","ts":9223372036854775.808,"dur":0}', "invalid"),
        (b'{"ph":"X","name":"under","ts":-9223372036854775.809,"dur":0}', "invalid"),
        (b'{"ph":"X","name":"over2","ts":92233720368547758070,"dur":0}', "invalid"),
    ]
    lines = [good[0]] + [b for b, _ in bad] + [good[1]]
    before = daemon.stats()
    errors = _send_checked(daemon, "numbers", lines)
    assert errors == {i + 3: code for i, (_, code) in enumerate(bad)}, errors
    after = daemon.stats()
    n_mal = sum(1 for _, c in bad if c == "malformed")
    assert after["malformed"] - before["malformed"] == n_mal
    assert after["invalid"] - before["invalid"] == len(bad) - n_mal
    # The good lines around them are kept, and more can follow on a new connection.
    assert _send_checked(daemon, "numbers", [good[2]]) == {}
    assert sorted(e["args"]["correlation"] for e in _x_count(daemon, "numbers")) == [0, 1, 2]


def test_times_past_the_range_are_invalid_and_the_largest_kept_exactly(daemon):
    # Times must lie in (-2^60, 2^62) ns and durations below 3 * 2^60 ns (docs/PROTOCOL.md): then no
    # analysis can overflow adding or subtracting them (UBSan in CI). The int64 limits are
    # refused as invalid, each line alone; the extreme allowed values are kept exactly.
    top_ts = "4611686018427387.903"      # 2^62 - 1 ns, in microseconds
    low_ts = "-1152921504606846.975"     # -(2^60 - 1) ns
    long_dur = "1152921504606846.975"    # 2^60 - 1 ns
    bad = [
        '{"ph":"X","name":"hi","ts":9223372036854775.807,"dur":0,"pid":0,"tid":1}',
        '{"ph":"X","name":"lo","ts":-9223372036854775.807,"dur":0,"pid":0,"tid":1}',
        '{"ph":"X","name":"zero","ts":0,"dur":9223372036854775.807,"pid":0,"tid":1}',
        '{"ph":"X","name":"at2_62","ts":4611686018427387.904,"dur":0,"pid":0,"tid":1}',
        '{"ph":"X","name":"dur3x2_60","ts":0,"dur":3458764513820540.928,"pid":0,"tid":1}',
        '{"type":"step","step":1,"begin_us":9223372036854775.000,"end_us":9223372036854775.807}',
    ]
    good = [
        '{"ph":"X","name":"top","ts":%s,"dur":%s,"pid":0,"tid":1}' % (top_ts, long_dur),
        '{"ph":"X","name":"bottom","ts":%s,"dur":%s,"pid":0,"tid":1}' % (low_ts, long_dur),
        '{"type":"step","step":2,"begin_us":%s,"end_us":%s,"phases":{"forward":%s}}'
        % (low_ts, top_ts, long_dur),
    ]
    errs = _send_checked(daemon, "limits", bad + good)
    # Line 1 is the hello: the bad lines are 2..7, each invalid; nothing else.
    assert errs == {n: "invalid" for n in range(2, 2 + len(bad))}, errs
    got = {e["name"]: e for e in _x_count(daemon, "limits")}
    assert set(got) == {"top", "bottom"}
    jid = daemon.job("limits")["id"]
    for path in ("operators", "kernels", "steps", "step-trace", "breakdown", "summary/overview",
                 "summary/operator", "summary/model", "benchmark", "helper", "ranks",
                 "timeline?start_us=0"):
        st, _, body = daemon.request(f"/api/v1/jobs/{jid}/{path}")
        assert st in (200, 404), (path, st, body[:300])
        json.loads(body)
    # The export keeps the exact text of each time (float() would lose the last digits).
    st, hdr, body = daemon.request(f"/api/v1/jobs/{jid}/timeline")
    assert st == 200
    assert top_ts.encode() in body and low_ts.encode() in body
    st, _, body = daemon.request(f"/api/v1/jobs/{jid}")
    assert st == 200
    json.loads(body)
    daemon.assert_alive()


def test_deeply_nested_json_is_refused_and_harmless(daemon):
    depth = 100_000
    lines = [
        dumps(x_event(0)),
        b'{"ph":"X","name":"deep","ts":1,"dur":1,"args":' + b"[" * depth + b"]" * depth + b"}",
        b'{"ph":"X","name":"deepobj","ts":1,"dur":1,"args":' + b'{"a":' * depth + b"1"
        + b"}" * depth + b"}",
        b"[" * depth,                       # unclosed
        b"{" * depth,
        dumps(x_event(1)),
    ]
    assert all(len(b) < (1 << 20) for b in lines if isinstance(b, bytes))
    errors = _send_checked(daemon, "deep", lines)
    assert set(errors) == {3, 4, 5, 6}, errors
    assert set(errors.values()) <= {"malformed", "invalid"}, errors
    assert sorted(e["args"]["correlation"] for e in _x_count(daemon, "deep")) == [0, 1]
    assert daemon.get_json("/api/v1/health")
    daemon.assert_alive()


def test_a_million_operator_names_fold_into_other(daemon):
    """10^6 distinct names in one job: the live operator table keeps LIVE_OPS_MAX of them and
    one "[other]" row holding the calls of the rest (nothing lost, counted), and the daemon's
    resident memory grows by far less than the names would take if each had a row."""
    n = 1_000_000
    rss0 = _rss_kb(daemon.proc.pid)
    t0 = time.monotonic()
    with Client(daemon.socket, timeout=600) as c:
        c.hello("million")
        batch = []
        for i in range(n):
            batch.append(b'{"ph":"X","cat":"cpu_op","name":"op_%07d","ts":%d,"dur":1,"pid":0,'
                         b'"tid":1}' % (i, 1000 + i * 2))
            if len(batch) == 20000:
                c.send_lines(batch)
                batch = []
        c.send_lines(batch)
        c.wait_ack(n, timeout=600)
    assert c.errors == []
    secs = time.monotonic() - t0
    job = daemon.wait_for("a million events stored",
                          lambda: next((j for j in daemon.jobs() if j["name"] == "million"
                                        and j["events"] == n), None), timeout=300)
    ops = daemon.wait_for("the live operator table", lambda: _rows_if(
        daemon, f"/api/v1/jobs/{job['id']}/operators?limit=100000", n, calls=True), timeout=300)
    rows = ops["rows"]
    named = [r for r in rows if r["name"].startswith("op_")]
    other = [r for r in rows if not r["name"].startswith("op_")]
    assert len(named) == LIVE_OPS_MAX, (len(named), ops["total"])
    assert len(other) == 1, other
    assert other[0]["calls"] == n - LIVE_OPS_MAX
    assert sum(r["calls"] for r in rows) == n
    rss1 = _rss_kb(daemon.proc.pid)
    # 10^6 names with their own rows would hold > 100 MB; the cap keeps the growth well under.
    print(f"10^6 names: {secs:.1f} s to ack, RSS {rss0} kB -> {rss1} kB")
    if not _sanitized(daemon.proc.pid):  # ASan's quarantine and shadow hold far more
        assert rss1 - rss0 < 96 * 1024, (rss0, rss1)
    assert daemon.get_json("/api/v1/health")


HOSTILE_NAMES = [
    'comma, "quote" and \\ backslash',
    "new\nline\r\nand\ttab",
    "=cmd|' /C calc'!A0",
    "<img src=x onerror=alert(1)>",
    "trailing space ",
    "é 中文 😀",
]


def _sheet(n):
    """A name as CSV gives it: a spreadsheet formula gets a leading quote (docs/API.md)."""
    return "'" + n if n[:1] in ("=", "+", "-", "@", "\t", "\r") else n


def test_hostile_names_are_data_in_csv_and_json(daemon):
    events = [x_event(i, name=n, cat="cpu_op") for i, n in enumerate(HOSTILE_NAMES)]
    assert _send_checked(daemon, "csvnames", [dumps(e) for e in events]) == {}
    jid = daemon.job("csvnames")["id"]
    doc = daemon.wait_for("the live operator table", lambda: _rows_if(
        daemon, f"/api/v1/jobs/{jid}/operators", len(HOSTILE_NAMES)))
    assert sorted(r["name"] for r in doc["rows"]) == sorted(HOSTILE_NAMES)
    st, hdr, body = daemon.request(f"/api/v1/jobs/{jid}/operators?format=csv")
    assert st == 200, body[:300]
    assert hdr.get("content-type", "").startswith("text/csv"), hdr
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    col = rows[0].index("name")
    assert sorted(r[col] for r in rows[1:]) == sorted(_sheet(n) for n in HOSTILE_NAMES)
    st, hdr, body = daemon.request(f"/api/v1/jobs/{jid}/summary/operator?format=csv")
    assert st == 200, body[:300]
    rows = list(csv.reader(io.StringIO(body.decode("utf-8"), newline="")))
    names = {c for r in rows for c in r}
    assert {_sheet(n) for n in HOSTILE_NAMES} <= names, names
    assert os.path.exists(daemon.socket)
