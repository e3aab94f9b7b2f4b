# SPDX-License-Identifier: MIT
"""Bad input: every rejected line is counted, answered with its line number, sequence number and
code, and skipped; the good lines around it are all stored; the connection and daemon carry on."""
import json

import pytest

from ssclient import Client, dumps, x_event

MAX_LINE = 4096


def small_limit_env(daemons):
    from conftest import clean_env
    env = clean_env(daemons.tmp)
    env["STEPSCOPE_MAX_LINE_BYTES"] = str(MAX_LINE)
    return env


def test_each_bad_kind_counted_and_answered(daemons):
    d = daemons("bad", env=small_limit_env(daemons))
    good = [x_event(i) for i in range(9)]
    big = x_event(100, args={"pad": "y" * (MAX_LINE * 3)})  # valid JSON, three times the limit
    # (item, expected code or None for a stored line)
    plan = [
        (good[0], None),
        (b'{"ph":"X","name":"a",', "malformed"),          # not JSON
        (good[1], None),
        (dumps(big).encode(), "oversized"),
        (good[2], None),
        (b'{"foo":1,"bar":[1,2]}', "unknown"),            # neither ph nor a known type
        (good[3], None),
        (b'{"ph":"X","name":"n","ts":1.5}', "invalid"),   # X without dur
        (good[4], None),
        (b'[1,2,3]', "malformed"),                        # JSON, but not an object
        (good[5], None),
        (b'{"type":"step","step":-1,"begin_us":1,"end_us":2}', "invalid"),  # negative step
        (good[6], None),
        (b'{"ph":"X","name":"bad\xff\xfeutf8","ts":1,"dur":1}', "malformed"),  # invalid UTF-8
        (good[7], None),
        (b'{"type":"unheard_of"}', "unknown"),
        (b'{"ph":"X","name":"neg","ts":1,"dur":-1}', "invalid"),  # dur < 0
        (b'{"type":"queue","name":"q"}', "invalid"),      # queue without size
        (good[8], None),
    ]
    with Client(d.socket) as c:
        c.hello("badlines")
        c.send_lines(item for item, _ in plan)
        assert c.wait_ack(len(plan)) == len(plan)
    expected = [{"line": i + 2, "seq": i, "code": code}
                for i, (_, code) in enumerate(plan) if code]
    got = [{"line": e.get("line"), "seq": e.get("seq"), "code": e.get("code")} for e in c.errors]
    assert got == expected
    for e in c.errors:
        assert isinstance(e.get("message"), str) and e["message"], e

    job = d.job("badlines")
    assert job["events"] == len(good)
    assert job["spans"] == len(good)
    st = d.stats()
    assert st["malformed"] == 3
    assert st["oversized"] == 1
    assert st["unknown"] == 2
    assert st["invalid"] == 4
    assert st["records"]["trace"] == len(good)
    assert st["acknowledged"] == len(plan)
    d.assert_alive()


def test_oversized_line_far_over_the_limit_in_pieces(daemons):
    """A 1 MiB line against a 4 KiB limit, written in 1 KiB pieces with no newline until the end,
    is answered once and skipped; the next line is stored."""
    d = daemons("big", env=small_limit_env(daemons))
    with Client(d.socket) as c:
        c.hello("oversized")
        c.send_lines([x_event(0)])
        body = b'{"ph":"X","name":"' + b"z" * (1 << 20) + b'","ts":1,"dur":1}'
        for off in range(0, len(body), 1024):
            c.send_raw(body[off:off + 1024])
        c.send_raw(b"\n")
        c.lines_sent += 1
        c.send_lines([x_event(1), x_event(2)])
        c.wait_ack(4)
    assert [(e["line"], e["seq"], e["code"]) for e in c.errors] == [(3, 1, "oversized")]
    assert d.job("oversized")["events"] == 3
    assert d.stats()["oversized"] == 1


def test_line_exactly_at_the_limit_is_accepted(daemons):
    d = daemons("edge", env=small_limit_env(daemons))
    ev = x_event(0, args={"pad": ""})
    base = len(dumps(ev).encode())
    # max_line_bytes bounds the line; try lengths with and without the '\n' counted, around it.
    ev["args"]["pad"] = "p" * (MAX_LINE - base)
    at = dumps(ev).encode()
    assert len(at) == MAX_LINE
    ev2 = dict(ev, args={"pad": "p" * (MAX_LINE - base + 1)})
    over = dumps(ev2).encode()
    assert len(over) == MAX_LINE + 1
    with Client(d.socket) as c:
        c.hello("edge")
        c.send_lines([at, over])
        c.wait_ack(2)
    assert [(e["line"], e["code"]) for e in c.errors] == [(3, "oversized")]
    assert d.job("edge")["events"] == 1


def test_stepscope_records_counted_by_kind(daemon):
    steps = [{"type": "step", "step": i, "begin_us": 1000.0 * i, "end_us": 1000.0 * i + 900.5,
              "samples": 32, "phases": {"dataloader": 100, "forward": 300, "backward": 400,
                                        "optimizer": 100}} for i in range(10)]
    queues = [{"type": "queue", "name": "device_queue", "size": i, "capacity": 8, "step": i,
               "ts_us": 1000.0 * i} for i in range(7)]
    hosts = [{"type": "host", "ts_us": 1000.0 * i, "cpu_percent": 150.5, "sys_cpu_percent": 40,
              "rss_bytes": 1 << 30} for i in range(5)]
    pipeline = {"type": "pipeline", "ops": [{"id": 0, "name": "Batch", "children": [1],
                                            "num_workers": 4},
                                           {"id": 1, "name": "Map", "children": [],
                                            "num_workers": 8}]}
    lines = steps + queues + hosts + [pipeline] + [x_event(i) for i in range(3)]
    with Client(daemon.socket) as c:
        c.hello("kinds")
        c.send_lines(lines)
        c.send_lines([{"type": "bye"}])
        # bye: the daemon commits, acks everything (bye included) and closes.
        c.read_until_eof()
    assert c.errors == []
    assert c.last_ack == len(lines) + 1
    job = daemon.job("kinds")
    assert job["steps"] == 10
    assert job["queue_samples"] == 7
    assert job["host_samples"] == 5
    assert job["pipelines"] == 1
    assert job["events"] == 3
    st = daemon.stats()
    assert st["records"] == {"trace": 3, "step": 10, "queue": 7, "pipeline": 1, "host": 5}


BAD_HELLOS = [
    pytest.param(b"this is not json", id="not_json"),
    pytest.param(b'{"hello":"stepscope/1"}', id="missing_job"),
    pytest.param(b'{"hello":"stepscope/1","job":""}', id="empty_job"),
    pytest.param(b'{"hello":"stepscope/1","job":"' + b"j" * 257 + b'"}', id="job_too_long"),
    pytest.param(b'{"hello":"stepscope/2","job":"x"}', id="wrong_protocol"),
    pytest.param(b'{"job":"x"}', id="no_hello_field"),
    pytest.param(b'{"hello":"stepscope/1","job":"x","rank":4,"world_size":4}', id="rank_ge_world"),
    pytest.param(b'{"hello":"stepscope/1","job":"x","rank":-1}', id="negative_rank"),
    pytest.param(b'{"hello":"stepscope/1","job":"a\\u0001b"}', id="control_char_in_job"),
    pytest.param(b'{"ph":"X","name":"n","ts":1,"dur":1}', id="record_first"),
]


@pytest.mark.parametrize("hello", BAD_HELLOS)
def test_bad_hello_answered_and_closed(daemon, hello):
    with Client(daemon.socket) as c:
        c.send_raw(hello + b"\n")
        c.read_until_eof()  # the daemon must close the connection
    assert len(c.errors) == 1, c.errors
    err = c.errors[0]
    assert err["code"] == "bad_hello"
    assert err["line"] == 1
    assert "seq" not in err
    assert c.welcome is None and c.acks == []
    daemon.assert_alive()
    st = daemon.stats()
    assert st["bad_hellos"] == 1
    assert st["hellos"] == 0
    assert daemon.jobs() == []
    # The daemon carries on: a good client right after is served.
    with Client(daemon.socket) as ok:
        ok.hello("after_bad_hello")
        ok.send_lines([x_event(0)])
        ok.wait_ack(1)
    assert daemon.job("after_bad_hello")["events"] == 1


def test_bad_hellos_counted(daemon):
    for raw in (b"nope", b"{}", b'{"hello":"stepscope/1"}'):
        with Client(daemon.socket) as c:
            c.send_raw(raw + b"\n")
            c.read_until_eof()
            assert [e["code"] for e in c.errors] == ["bad_hello"]
    assert daemon.stats()["bad_hellos"] == 3


def test_max_connections_rejects_the_next_one(daemons):
    d = daemons("maxc", config="max_connections = 2\n")
    a, b = Client(d.socket), Client(d.socket)
    try:
        a.hello("maxc", rank=0, world_size=2)
        b.hello("maxc", rank=1, world_size=2)
        with Client(d.socket) as third:
            third.read_until_eof()
            assert len(third.errors) == 1, third.errors
        assert d.stats()["connections"]["rejected"] == 1
        a.send_lines([x_event(0)])
        a.wait_ack(1)
    finally:
        a.close()
        b.close()
    st = d.wait_for("open connections back to 0", lambda: d.stats()["connections"]["open"] == 0)
    assert st


def test_error_reply_json_is_well_formed(daemon):
    """Error messages quote bad input; the reply must stay one valid JSON line whatever the input."""
    nasty = b'{"ph":"X","name":"\\"\n'  # becomes two lines: both must be answered as JSON
    with Client(daemon.socket) as c:
        c.hello("quoting")
        c.send_raw(nasty)
        c.send_raw(b'"}\x00\x01\\"\n')
        c.lines_sent += 2
        c.wait_ack(2)
    assert [e["code"] for e in c.errors] == ["malformed", "malformed"]
    assert json.loads(json.dumps(c.errors))
