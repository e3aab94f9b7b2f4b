# SPDX-License-Identifier: MIT
"""Clocks of different hosts (issue 16, item 2; docs/ANALYSIS.md "Clocks of different hosts"):
one job whose ranks' hellos name three hosts, one of them stamping every record 37 ms late. The
job's ranks_detail and "clocks" report that host's offset within its spread, and the timeline
export moves its ranks' events onto the reference's clock so the ranks' steps line up; a host
with too few steps is reported as not aligned and left as stamped."""
import json
import random

from ssclient import Client

T0 = 1700000000000000  # µs
STEP_US = 10000
STEPS = 40
SHIFT_US = 37000
HOSTS = {0: ("hostA", 0), 1: ("hostA", 0), 2: ("hostB", SHIFT_US), 3: ("hostB", SHIFT_US)}


def rank_records(rank, shift, steps, rng):
    """Steps 1..steps of 10 ms; each ends in a 2 ms all-reduce that every rank leaves within
    +/- 50 µs (the collective's skew); begins differ by up to 1 ms (the data loader). All times
    are whole µs on the host's clock: the true time plus shift."""
    evs, recs = [], []
    for s in range(1, steps + 1):
        end = T0 + s * STEP_US + rng.randint(-50, 50) + shift
        begin = T0 + (s - 1) * STEP_US + rng.randint(0, 1000) + shift
        evs.append({"ph": "X", "name": "forward", "cat": "cpu_op", "ts": begin + 100,
                    "dur": 5000, "pid": 100 + rank, "tid": 1})
        evs.append({"ph": "X", "name": "ncclAllReduce", "cat": "kernel", "ts": end - 2000,
                    "dur": 2000, "pid": 100 + rank, "tid": 7})
        recs.append({"type": "step", "step": s, "begin_us": begin, "end_us": end, "samples": 8})
    return evs, recs


def send_rank(daemon, job, rank, host, evs, recs, world):
    with Client(daemon.socket) as c:
        c.hello(job, rank=rank, world_size=world, host=host)
        c.send_lines(evs + recs)
        c.wait_ack(len(evs) + len(recs))
        assert c.errors == []


def send_job(daemon, job):
    rng = random.Random(16)
    sent = {}
    for rank, (host, shift) in HOSTS.items():
        evs, recs = rank_records(rank, shift, STEPS, rng)
        send_rank(daemon, job, rank, host, evs, recs, 5)
        sent[rank] = evs
    # hostC: 3 steps only, 5 s late: too few to align.
    evs, recs = rank_records(4, 5000000, 3, rng)
    send_rank(daemon, job, 4, "hostC", evs, recs, 5)
    sent[4] = evs
    return sent


def clocks_of(daemon, job):
    j = daemon.get_json(f"/api/v1/jobs/{job}")
    return j, {h["host"]: h for h in (j["clocks"] or {"hosts": []})["hosts"]}


def test_offset_reported_within_spread_and_timeline_aligned(daemon):
    sent = send_job(daemon, "clk")
    daemon.wait_for("every step analysed",
                    lambda: clocks_of(daemon, "clk")[1].get("hostB", {}).get("steps") == STEPS)
    j, hosts = clocks_of(daemon, "clk")
    c = j["clocks"]
    assert c["reference"] == "hostA" and c["min_steps"] == 8
    assert hosts["hostA"]["reason"] == "reference" and hosts["hostA"]["offset_us"] == 0
    b = hosts["hostB"]
    assert b["aligned"] is True and b["reason"] == "aligned" and b["ranks"] == 2
    assert 0 < b["spread_us"] <= 100, b
    assert abs(b["offset_us"] - SHIFT_US) <= b["spread_us"], b
    assert b["offset_us"] == b["estimate_us"]
    cc = hosts["hostC"]
    assert cc["aligned"] is False and cc["steps"] == 3 and cc["offset_us"] == 0
    assert cc["reason"] == "too few steps in common with the reference"
    assert abs(cc["estimate_us"] - 5000000) <= 100
    by_rank = {r["rank"]: r for r in j["ranks_detail"]}
    assert [by_rank[r]["clock_offset_us"] for r in range(5)] == [0, 0, b["offset_us"],
                                                                b["offset_us"], 0]
    assert [by_rank[r]["clock_aligned"] for r in range(5)] == [True] * 4 + [False]
    assert by_rank[0]["clock_reason"] == "reference" and by_rank[2]["clock_reason"] == "aligned"
    # The CSV form carries the same columns.
    st, _, body = daemon.request("/api/v1/jobs/clk?format=csv")
    lines = body.decode().splitlines()
    assert st == 200 and lines[0].endswith(",clock_offset_us,clock_aligned,clock_reason")
    assert lines[3].endswith(f",{b['offset_us']:g},true,aligned".replace(".0,", ","))

    off = b["offset_us"]
    jid = j["id"]
    # Step 20 of every rank: hostB's events come out offset earlier, so the ranks' all-reduces
    # end together (within the skew) instead of 37 ms apart (hostC's rank 4 has no step 20).
    st, _, body = daemon.request(f"/api/v1/jobs/{jid}/timeline?step=20&ranks=0,1,2,3,4")
    assert st == 200
    doc = json.loads(body)
    od = doc["otherData"]
    assert od["clocks_aligned"] is True
    assert od["clock_offsets"] == [{"rank": 2, "offset_us": off}, {"rank": 3, "offset_us": off}]
    ends = {}
    for e in doc["traceEvents"]:
        if e.get("name") == "ncclAllReduce":
            ends.setdefault(e["pid"] - 100, []).append(e["ts"] + e["dur"])
    assert sorted(ends) == [0, 1, 2, 3]
    step_end = [max(ends[r]) for r in range(4)]
    assert max(step_end) - min(step_end) <= 200, step_end
    # Each moved event is the stored one less the offset, exactly; the others are verbatim.
    want = {r: [dict(e, ts=e["ts"] - (off if r in (2, 3) else 0)) for e in sent[r]]
            for r in range(5)}
    got = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    allwant = [json.dumps(e, sort_keys=True) for r in range(5) for e in want[r]]
    assert all(json.dumps(e, sort_keys=True) in allwant for e in got)
    # hostC, not aligned, is exported as stamped.
    st, _, body = daemon.request(f"/api/v1/jobs/{jid}/timeline?ranks=4")
    doc4 = json.loads(body)
    assert doc4["otherData"]["clock_offsets"] == []
    assert sorted(json.dumps(e, sort_keys=True) for e in doc4["traceEvents"] if e.get("ph") == "X") \
        == sorted(json.dumps(e, sort_keys=True) for e in sent[4])
    # The windows are said on the reference's clock.
    win = {w["rank"]: w for w in od["windows"]}
    assert abs(win[2]["end_us"] - win[0]["end_us"]) <= 200
    # A time window on the reference's clock selects the same step on every aligned rank.
    t0, t1 = T0 + 19 * STEP_US + 3000, T0 + 19 * STEP_US + 6000  # inside step 20's forward
    st, _, body = daemon.request(f"/api/v1/jobs/{jid}/timeline?start_us={t0}&end_us={t1}"
                                 "&ranks=0,2")
    fwd = sorted((e["pid"] - 100, e["ts"]) for e in json.loads(body)["traceEvents"]
                 if e.get("name") == "forward")
    assert [r for r, _ in fwd] == [0, 2], fwd
    # align_clocks=0: every event as stored.
    st, _, body = daemon.request(f"/api/v1/jobs/{jid}/timeline?step=20&ranks=2&align_clocks=0")
    doc = json.loads(body)
    assert doc["otherData"]["clocks_aligned"] is False and doc["otherData"]["clock_offsets"] == []
    got = [json.dumps(e, sort_keys=True) for e in doc["traceEvents"] if e.get("ph") == "X"]
    stored = [json.dumps(e, sort_keys=True) for e in sent[2]]
    assert got and all(g in stored for g in got)


def test_one_host_has_one_clock(daemon):
    rng = random.Random(1)
    for rank in (0, 1):
        evs, recs = rank_records(rank, 0, 10, rng)
        send_rank(daemon, "one", rank, "hostA", evs, recs, 2)
    j = daemon.get_json("/api/v1/jobs/one")
    assert j["clocks"] is None
    assert [(r["clock_offset_us"], r["clock_aligned"], r["clock_reason"])
            for r in j["ranks_detail"]] == [(0, True, "one host")] * 2
    st, _, body = daemon.request(f"/api/v1/jobs/{j['id']}/timeline?step=3")
    assert json.loads(body)["otherData"]["clock_offsets"] == []
