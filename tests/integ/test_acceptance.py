# SPDX-License-Identifier: MIT
"""The acceptance scenario: events in, counted exactly, one bad line answered, and what was acked
survives kill -9 of the daemon."""
from ssclient import Client, x_event


def test_acceptance_1000_events_one_malformed_survives_kill9(daemon):
    with Client(daemon.socket) as c:
        welcome = c.hello("acceptance")
        assert welcome["welcome"] == "stepscope/1"
        assert welcome["next_seq"] == 0
        events = [x_event(i) for i in range(1000)]
        # The malformed line sits after event 499: it is line 1 (hello) + 500 + 1 = 502, seq 500.
        c.send_lines(events[:500] + [b'{"ph":"X","name":"broken",'] + events[500:])
        assert c.wait_ack(1001) == 1001
    assert len(c.errors) == 1, c.errors
    err = c.errors[0]
    assert err["code"] == "malformed"
    assert err["line"] == 502
    assert err["seq"] == 500
    assert isinstance(err["message"], str) and err["message"]

    job = daemon.job("acceptance")
    assert job["spans"] == 1000
    assert job["events"] == 1000
    assert job["ranks"] == 1
    assert job["sessions"] == 1
    st = daemon.stats()
    assert st["malformed"] == 1
    assert st["records"]["trace"] == 1000
    assert st["lines"] == 1001
    assert st["acknowledged"] == 1001
    assert st["hellos"] == 1

    daemon.restart()  # kill -9, then the same socket and data dir
    job = daemon.job("acceptance")
    assert job["spans"] == 1000
    assert job["events"] == 1000
    assert job["live"] is False


def test_kill9_right_after_ack_loses_nothing(daemon):
    n = 20000
    with Client(daemon.socket) as c:
        c.hello("durable", rank=1, world_size=2)
        c.send_lines(x_event(i, tid=1) for i in range(n))
        c.wait_ack(n)
        # No HTTP round trip, no sleep: the ack alone must mean durable.
        daemon.kill9()
    daemon.start()
    job = daemon.job("durable")
    assert job["events"] == n
    assert job["spans"] == n
    assert job["world_size"] == 2
    assert job["ranks"] == 1
