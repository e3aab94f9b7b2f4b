# SPDX-License-Identifier: MIT
"""Clocks of different hosts in the cluster view (issue 16, item 2): three node daemons ship to
Debian's clickhouse-server 18.16 (chserver.py) and each pulls the others' ranks. Node B's trainers
stamp every record 37 ms late, node C's 20 ms early, and C's hellos name no host (its ranks' clock
is then its node's). Every view reports both offsets within their spread, the same from each
daemon (the reference is chosen from the job's data, not by the daemon asked), and the timeline
export of a step and /steps line all the ranks up on the reference's clock."""
import json
import random

from ssclient import Client
from test_cluster import creds_file, node_args, wait_shipped
from test_clocks import SHIFT_US, STEP_US, STEPS, T0, rank_records

PER_NODE = 4
C_SHIFT_US = -20000
# (node, host in the hellos, shift); node C's hellos have an empty host.
NODES = [("nodeA", "hostA", 0), ("nodeB", "hostB", SHIFT_US), ("nodeC", "", C_SHIFT_US)]
RANKS = PER_NODE * len(NODES)


def feed(d, job, ranks, host, shift, rng):
    n = 0
    for r in ranks:
        evs, recs = rank_records(r, shift, STEPS, rng)
        with Client(d.socket) as c:
            c.hello(job, rank=r, world_size=RANKS, host=host)
            c.send_lines(evs + recs)
            c.wait_ack(len(evs) + len(recs))
            assert c.errors == []
        n += len(evs)
    return n


def check_ends(ends, align):
    """Every rank's end of one step (rank -> µs): on the reference's clock within the collective's
    skew; as stamped, B's 37 ms after A's and C's 20 ms before."""
    assert sorted(ends) == list(range(RANKS))
    node_end = [[ends[r] for r in range(k * PER_NODE, (k + 1) * PER_NODE)]
                for k in range(len(NODES))]
    if align:
        every = sum(node_end, [])
        assert max(every) - min(every) <= 200, ends
    else:
        assert min(node_end[1]) - max(node_end[0]) > SHIFT_US - 200, ends
        assert min(node_end[0]) - max(node_end[2]) > -C_SHIFT_US - 200, ends


def test_shifted_nodes_aligned_in_every_view(ch, daemons, tmp):
    creds = creds_file(tmp)
    rng = random.Random(16)
    nodes, spans = [], 0
    for k, (name, host, shift) in enumerate(NODES):
        d = daemons(name, args=node_args(ch, name, creds))
        spans += feed(d, "clk", range(k * PER_NODE, (k + 1) * PER_NODE), host, shift, rng)
        nodes.append(d)
    for d in nodes:
        wait_shipped(d)
    # The clocks: hostA (the lowest name with enough steps) is the reference; C's ranks are on
    # nodeC's clock.
    want_offset = {"hostB": SHIFT_US, "nodeC": C_SHIFT_US}
    answers = []
    for d in nodes:
        def ready():
            j = d.get_json("/api/v1/jobs/clk")
            hosts = {h["host"]: h for h in (j["clocks"] or {"hosts": []})["hosts"]}
            return (j["ranks"] == RANKS and j["spans"] == spans and
                    all(hosts.get(h, {}).get("steps") == STEPS for h in want_offset) and j)
        j = d.wait_for(f"{d.name} views every rank of every node", ready, timeout=90)
        c = j["clocks"]
        hosts = {h["host"]: h for h in c["hosts"]}
        assert c["reference"] == "hostA" and sorted(hosts) == ["hostA", "hostB", "nodeC"]
        for name, shift in want_offset.items():
            h = hosts[name]
            assert h["aligned"] is True and h["ranks"] == PER_NODE, h
            assert 0 < h["spread_us"] <= 100, h
            assert abs(h["offset_us"] - shift) <= h["spread_us"], h
        by_rank = {r["rank"]: r for r in j["ranks_detail"]}
        assert [by_rank[r]["clock_offset_us"] for r in range(RANKS)] == \
            [0] * PER_NODE + [hosts["hostB"]["offset_us"]] * PER_NODE + \
            [hosts["nodeC"]["offset_us"]] * PER_NODE
        answers.append(c)
        # Step 20 of every rank: the all-reduces that end each rank's step end together on the
        # reference's clock; as stamped, B's end 37 ms after A's and C's 20 ms before.
        for align in (1, 0):
            st, _, body = d.request(f"/api/v1/jobs/{j['id']}/timeline?step=20&align_clocks={align}")
            assert st == 200
            ends = {}
            for e in json.loads(body)["traceEvents"]:
                if e.get("name") == "ncclAllReduce":
                    ends[e["pid"] - 100] = e["ts"] + e["dur"]
            check_ends(ends, align)
        # /steps gives the steps on the reference's clock too: every rank's step 20 ends within
        # the collective's skew, each row moved by its rank's clock_offset_us and no more (its
        # total unchanged); align_clocks=0 gives the times as each host stamped them.
        path = f"/api/v1/jobs/{j['id']}/steps?limit=100000"
        aligned, stamped = d.get_json(path), d.get_json(path + "&align_clocks=0")
        assert aligned["total"] == stamped["total"] == RANKS * STEPS
        for a, s in zip(aligned["rows"], stamped["rows"]):
            off = by_rank[s["rank"]]["clock_offset_us"]
            assert (a["step"], a["rank"], a["total_us"]) == (s["step"], s["rank"], s["total_us"])
            assert (a["start_us"], a["end_us"]) == (s["start_us"] - off, s["end_us"] - off), (a, s)
        for doc, align in ((aligned, 1), (stamped, 0)):
            ends = {r["rank"]: r["end_us"] for r in doc["rows"] if r["step"] == 20}
            check_ends(ends, align)
        csv = d.request(path + "&format=csv")[2].decode().splitlines()
        assert [float(x.split(",")[3]) for x in csv[1:]] == [r["end_us"] for r in aligned["rows"]]
        # The window of step 20 on the reference's clock, about its forward passes: every rank's.
        t0, t1 = T0 + 19 * STEP_US + 3000, T0 + 19 * STEP_US + 6000
        st, _, body = d.request(f"/api/v1/jobs/{j['id']}/timeline?start_us={t0}&end_us={t1}")
        fwd = sorted(e["pid"] - 100 for e in json.loads(body)["traceEvents"]
                     if e.get("name") == "forward")
        assert fwd == list(range(RANKS)), fwd
    # Every daemon gives the same clocks.
    assert answers[0] == answers[1] == answers[2]
