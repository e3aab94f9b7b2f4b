# SPDX-License-Identifier: MIT
"""Timeline export: /api/v1/jobs/{job}/timeline gives back the trace events sent, verbatim."""
import json
from collections import Counter

from ssclient import Client, dumps


def _key(e):
    return json.dumps(e, sort_keys=True)


def _events_of_rank(rank):
    tid = 100 + rank
    evs = [
        {"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": f"rank {rank}"}},
        {"ph": "X", "name": "aten::conv2d", "cat": "cpu_op", "ts": 1700000000123.5, "dur": 85.25,
         "pid": rank, "tid": tid, "args": {"Input Dims": [[8, 3, 224, 224]], "External id": 7}},
        {"ph": "B", "name": "forward", "ts": 1700000000200.125, "pid": rank, "tid": tid},
        {"ph": "E", "name": "forward", "ts": 1700000000900.875, "pid": rank, "tid": tid},
        {"ph": "i", "name": "marker", "s": "t", "ts": 1700000000300, "pid": rank, "tid": tid},
        {"ph": "C", "name": "memory", "ts": 1700000000400, "pid": rank,
         "args": {"allocated": 123456789, "reserved": 2.5e9}},
        {"ph": "X", "name": "ncclAllReduce", "cat": "kernel", "ts": 1700000000500.001,
         "dur": 0.001, "pid": "GPU 0", "tid": "stream 7",
         "args": {"nested": {"list": [1, 2.5, "three", None, True, False], "empty": {}}},
         "custom_top_level": "kept as sent"},
        {"ph": "s", "id": 42, "name": "flow", "cat": "ac2g", "ts": 1700000000600, "pid": rank,
         "tid": tid},
        {"ph": "f", "id": 42, "name": "flow", "cat": "ac2g", "bp": "e", "ts": 1700000000700,
         "pid": rank, "tid": tid},
    ]
    evs += [{"ph": "X", "name": f"k{i}", "cat": "kernel", "ts": 1700000001000.0 + i * 3.5,
             "dur": 1.5, "pid": rank, "tid": tid, "args": {"i": i}} for i in range(200)]
    return evs


def test_timeline_returns_sent_events_verbatim(daemon):
    sent = []
    for rank in range(2):
        evs = _events_of_rank(rank)
        with Client(daemon.socket) as c:
            c.hello("timeline", rank=rank, world_size=2)
            c.send_lines(evs)
            c.wait_ack(len(evs))
            assert c.errors == []
        sent += evs
    job = daemon.job("timeline")
    assert job["events"] == len(sent)
    assert job["spans"] == sum(1 for e in sent if e["ph"] in ("X", "B"))

    for ref in (str(job["id"]), "timeline"):
        st, hdr, body = daemon.request(f"/api/v1/jobs/{ref}/timeline")
        assert st == 200, body[:300]
        doc = json.loads(body)
        got = doc["traceEvents"]
        # The export may add its own metadata (process and thread names); every event sent must be
        # there exactly as sent, and nothing else but metadata.
        missing = Counter(map(_key, sent)) - Counter(map(_key, got))
        assert not missing, f"events sent but not exported: {list(missing)[:3]}"
        extra = Counter(map(_key, got)) - Counter(map(_key, sent))
        assert all(json.loads(k)["ph"] == "M" for k in extra), list(extra)[:3]


def test_timeline_numbers_exact(daemon):
    """Numbers the client chose (many fraction digits, exponents) come back with the same value,
    compared as decimals, not as doubles."""
    from decimal import Decimal
    lines = [
        b'{"ph":"X","name":"precise","ts":1700000000123456.789,"dur":0.125,"pid":0,"tid":0}',
        b'{"ph":"X","name":"exp","ts":1.7e12,"dur":1E1,"pid":0,"tid":0}',
        b'{"ph":"C","name":"big","ts":5,"pid":0,"args":{"v":123456789012345678901234567890}}',
    ]
    with Client(daemon.socket) as c:
        c.hello("numbers")
        c.send_lines(lines)
        c.wait_ack(len(lines))
        assert c.errors == []
    job = daemon.job("numbers")
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job['id']}/timeline")
    assert st == 200
    got = [e for e in json.loads(body, parse_float=Decimal)["traceEvents"] if e.get("ph") != "M"]
    want = [json.loads(x, parse_float=Decimal) for x in lines]
    # Decimal == compares values: 1.7e12 equals 1700000000000.0 and 1700000000000.
    assert sorted(got, key=lambda e: e["name"]) == sorted(want, key=lambda e: e["name"])
    assert daemon.stats()["records"]["trace"] == len(lines)
