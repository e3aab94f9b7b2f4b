# SPDX-License-Identifier: MIT
"""Replay (PROTOCOL.md section 3): a reconnecting client resends what it holds and every line is
stored exactly once."""
from ssclient import Client, x_event


def _wait_closed(daemon):
    daemon.wait_for("open connections back to 0", lambda: daemon.stats()["connections"]["open"] == 0)


def test_replay_stores_each_line_once(daemon):
    events = [x_event(i, name=f"replay_{i}") for i in range(600)]
    with Client(daemon.socket) as c:
        w = c.hello("replay", stream="s1", seq=0)
        assert w["next_seq"] == 0
        c.send_lines(events[:500])
        assert c.wait_ack(500) == 500
    _wait_closed(daemon)

    with Client(daemon.socket) as c:
        w = c.hello("replay", stream="s1", seq=0)
        assert w["next_seq"] == 500
        assert w["job_id"] == daemon.job("replay")["id"]
        c.send_lines(events)
        assert c.wait_ack(600) == 600
        assert c.errors == []
    job = daemon.job("replay")
    assert job["events"] == 600
    assert job["sessions"] == 2
    st = daemon.stats()
    assert st["duplicates"] == 500
    assert st["records"]["trace"] == 600

    doc = daemon.get_json(f"/api/v1/jobs/{job['id']}/timeline")
    names = sorted(e["name"] for e in doc["traceEvents"] if e.get("ph") == "X")
    assert names == sorted(e["name"] for e in events)


def test_replay_after_daemon_kill9(daemon):
    """The real use: the daemon dies, the client replays from its oldest unacked line."""
    events = [x_event(i, name=f"k_{i}") for i in range(300)]
    with Client(daemon.socket) as c:
        c.hello("replay_kill", stream="node1:42:1", seq=0)
        c.send_lines(events[:200])
        acked = c.wait_ack(200)
    daemon.restart()
    with Client(daemon.socket) as c:
        w = c.hello("replay_kill", stream="node1:42:1", seq=0)
        assert w["next_seq"] == acked == 200
        c.send_lines(events)
        c.wait_ack(300)
    assert daemon.job("replay_kill")["events"] == 300
    assert daemon.stats()["duplicates"] == 200


def test_seq_from_next_seq_when_hello_has_none(daemon):
    with Client(daemon.socket) as c:
        c.hello("replay_noseq", stream="s2")
        c.send_lines(x_event(i) for i in range(50))
        c.wait_ack(50)
    _wait_closed(daemon)
    with Client(daemon.socket) as c:
        w = c.hello("replay_noseq", stream="s2")
        assert w["next_seq"] == 50
        c.send_lines(x_event(i) for i in range(50, 80))
        assert c.wait_ack(80) == 80
    assert daemon.job("replay_noseq")["events"] == 80
    assert daemon.stats()["duplicates"] == 0


def test_seq_gap_is_the_clients_loss(daemon):
    with Client(daemon.socket) as c:
        c.hello("replay_gap", stream="g", seq=0)
        c.send_lines(x_event(i) for i in range(10))
        c.wait_ack(10)
    _wait_closed(daemon)
    with Client(daemon.socket) as c:
        w = c.hello("replay_gap", stream="g", seq=25)
        assert w["next_seq"] == 10
        c.send_lines(x_event(i) for i in range(25, 30))
        assert c.wait_ack(30) == 30
    assert daemon.job("replay_gap")["events"] == 15


def test_same_stream_twice_is_busy(daemon):
    with Client(daemon.socket) as a:
        a.hello("replay_busy", stream="b1")
        with Client(daemon.socket) as b:
            b.hello("replay_busy", stream="b1", read_welcome=False)
            b.read_until_eof()
            assert [e["code"] for e in b.errors] == ["stream_busy"]
            assert b.errors[0]["line"] == 1
            assert b.welcome is None
        # The first connection is untouched.
        a.send_lines([x_event(0)])
        assert a.wait_ack(1) == 1
    # Another rank may use the same stream name: streams are per (job, rank, stream).
    with Client(daemon.socket) as c:
        w = c.hello("replay_busy", rank=1, world_size=2, stream="b1")
        assert w["next_seq"] == 0
    assert daemon.job("replay_busy")["events"] == 1


def test_last_seq_is_refused_and_every_ack_resumes(daemon):
    """Issue 18, item 7: a stream resumed at 2^63 - 2 was acknowledged past 2^63 (stored
    negative), and the next hello with that ack as its seq got bad_hello. Now the line that would
    take 2^63 - 1 is refused (seq_exhausted), the lines before it are acknowledged, and every
    ack the daemon sent can be resumed from."""
    top = 2**63 - 1
    with Client(daemon.socket) as c:
        c.hello("seqtop", stream="s", seq=top - 1)
        c.send_lines([x_event(0), x_event(1), x_event(2)])
        c.read_until_eof()
        assert c.acks and max(c.acks) == top, (c.acks, c.errors)
        assert [e["code"] for e in c.errors] == ["seq_exhausted"], c.errors
        assert "seq" not in c.errors[0] and c.errors[0]["line"] == 3
    assert daemon.job("seqtop")["events"] == 1
    # Resuming where it was acknowledged: welcomed, next_seq = 2^63 - 1, and the next line is
    # refused again, never stored nor acknowledged past the top.
    with Client(daemon.socket) as c:
        w = c.hello("seqtop", stream="s", seq=top)
        assert w["next_seq"] == top
        c.send_lines([x_event(3)])
        c.read_until_eof()
        assert [e["code"] for e in c.errors] == ["seq_exhausted"]
        assert all(a <= top for a in c.acks)
    # Resuming without a seq: the same next_seq, from the store.
    with Client(daemon.socket) as c:
        assert c.hello("seqtop", stream="s")["next_seq"] == top
    assert daemon.stats()["invalid"] == 2  # each refused line counted
    daemon.restart()
    with Client(daemon.socket) as c:
        assert c.hello("seqtop", stream="s")["next_seq"] == top
    assert daemon.job("seqtop")["events"] == 1
