# SPDX-License-Identifier: MIT
"""Deleting a job in the cluster view (issue 16; docs/API.md "Delete a job", docs/ARCHITECTURE.md
"The cluster view"): node daemons ship to Debian's clickhouse-server 18.16 (chserver.py) and
each pulls the others' ranks.

- A job deleted on its own node goes from every node that pulled it: the node ships a record of
  the delete (stepscope.deletes) once ClickHouse took its ALTER ... DELETEs, and each viewer
  deletes the ranks it pulled from that node; a job with ranks from other nodes keeps those.
- The deleting node's SQLite gives its next rows the rowids of the deleted ones; a viewer whose
  cursor was past them brings it down (the delete carries the node's cursor) and pulls the job
  started there afterwards.
- A DELETE on a viewer of a job whose pulled streams are still connected works (they are closed
  first; it answered 409 before): the rows it had pulled do not come back, the rows the origin
  ships later do."""
import http.client
import time

from test_cluster import creds_file, node_args, rank_lines, send

SPANS = 200


def delete(d, job):
    conn = http.client.HTTPConnection(d.host, d.port, timeout=60)
    try:
        conn.request("DELETE", "/api/v1/jobs/" + job, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def names(d):
    return sorted(j["name"] for j in d.jobs())


def ranks(d, job):
    """{rank: (node, events)} of the job on d; None when d has no such job."""
    st, _, body = d.request("/api/v1/jobs/" + job)
    if st == 404:
        return None
    import json
    return {r["rank"]: (r["node"], r["events"]) for r in json.loads(body)["ranks_detail"]}


def test_job_deleted_on_its_node_goes_from_every_viewer(ch, daemons, tmp):
    creds = creds_file(tmp)
    a, b, c = (daemons(n.lower(), args=node_args(ch, n, creds)) for n in ("nodeA", "nodeB", "nodeC"))
    for r in (0, 1):
        send(a, "solo", r, rank_lines(r, SPANS), world=2)
        send(a, "both", r, rank_lines(r, SPANS), world=4)
    for r in (2, 3):
        send(b, "both", r, rank_lines(r, SPANS), world=4)
    both = {0: ("nodeA", SPANS), 1: ("nodeA", SPANS), 2: ("nodeB", SPANS), 3: ("nodeB", SPANS)}
    for d in (a, b, c):
        d.wait_for(f"{d.name} holds both jobs whole", lambda d=d: ranks(d, "both") is not None and
                   {r: (n, e >= SPANS) for r, (n, e) in ranks(d, "both").items()} ==
                   {r: (n, True) for r, (n, _) in both.items()} and
                   d.job("solo")["spans"] == 2 * SPANS, timeout=90)
    want_both = ranks(c, "both")
    # "solo", all of its ranks nodeA's, deleted there: it goes from every viewer.
    assert delete(a, "solo")[0] == 204
    for d in (b, c):
        d.wait_for(f"{d.name}: solo gone", lambda d=d: "solo" not in names(d), timeout=90)
    # "both" deleted on nodeA (nodeA's pulled copies of nodeB's ranks with it: their streams may
    # still be connected, which answered 409 before): every viewer keeps nodeB's ranks, whole.
    assert delete(a, "both")[0] == 204
    assert "both" not in names(a) and "solo" not in names(a)
    for d in (b, c):
        d.wait_for(f"{d.name}: nodeA's ranks of both gone", lambda d=d: ranks(d, "both") ==
                   {r: want_both[r] for r in (2, 3)}, timeout=90)
        assert d.job("both")["spans"] == 2 * SPANS and d.job("both")["ranks"] == 2
    # One delete of nodeA's each; a viewer deleting a job it only pulled has none of its rows in
    # ClickHouse to delete, and ships no delete.
    assert ch.rows("SELECT node, job FROM stepscope.deletes ORDER BY id") == \
        [["nodeA", "solo"], ["nodeA", "both"]]
    # nodeA's store is empty again: its next rows take the rowids the deleted ones had, which
    # the viewers' cursors were past. A new "both" rank 0 there reaches them all the same.
    send(a, "both", 0, rank_lines(0, 50), world=4)
    for d in (b, c):
        d.wait_for(f"{d.name}: the new rank 0 of both", lambda d=d: ranks(d, "both") ==
                   {0: ("nodeA", 50), 2: want_both[2], 3: want_both[3]},
                   timeout=90)
    assert "solo" not in names(c)


def test_viewer_deletes_a_pulled_job_while_its_streams_are_connected(ch, daemons, tmp):
    creds = creds_file(tmp)
    a = daemons("da", args=node_args(ch, "nodeA", creds))
    for r in (0, 1):
        send(a, "vj", r, rank_lines(r, SPANS), world=2)
    v = daemons("dv", args=node_args(ch, "nodeV", creds))
    v.wait_for("the pulled job", lambda: "vj" in names(v) and v.job("vj")["spans"] == 2 * SPANS,
               timeout=90)
    # Its two pulled streams stay connected for 10 s after their last row: the DELETE closes
    # them first.
    st, body = delete(v, "vj")
    assert st == 204, body
    assert "vj" not in names(v)
    # The rows it had pulled stay in ClickHouse (they are nodeA's) and do not come back here.
    time.sleep(3)
    assert "vj" not in names(v)
    assert ch.scalar("SELECT count() FROM stepscope.spans WHERE job = 'vj'") == 2 * SPANS
    # Rows nodeA ships later do: the job again, with those alone.
    send(a, "vj", 1, rank_lines(1, 7, first=SPANS), world=2)
    v.wait_for("nodeA's later rows", lambda: ranks(v, "vj") == {1: ("nodeA", 7)}, timeout=90)
    assert "vj" in names(a) and a.job("vj")["spans"] == 2 * SPANS + 7
    # nodeA deletes it while the viewer is down, and nodeA then has no session left in
    # ClickHouse: the restarted viewer still learns of the delete (the nodes that shipped
    # deletes are read as origins too), and the job goes.
    v.stop()
    assert delete(a, "vj")[0] == 204
    a.wait_for("the delete in ClickHouse", lambda: ch.scalar(
        "SELECT count() FROM stepscope.deletes WHERE node = 'nodeA' AND job = 'vj'") == 1,
        timeout=60)
    v.start()
    v.wait_for("vj gone after the restart", lambda: "vj" not in names(v), timeout=90)
