# SPDX-License-Identifier: MIT
"""DELETE /api/v1/jobs/{job} against a real daemon (docs/API.md "Delete a job"): the job's rows,
trace blocks and live aggregates go, other jobs stay, a restart does not bring it back, the
database stays consistent; a job with a connected client is refused with 409; the method is
refused elsewhere with 405 and an Allow header; a request without JSON or X-Requested-With is
refused (CSRF)."""
import http.client
import os
import sqlite3
import urllib.parse

from ssclient import Client, x_event

JSON = {"Content-Type": "application/json"}


def delete(daemon, job, headers=None, path=None):
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
    try:
        url = path or "/api/v1/jobs/" + urllib.parse.quote(job, safe="")
        conn.request("DELETE", url, headers=JSON if headers is None else headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def feed(daemon, job, rank=0, steps=5, events=200, noise=False):
    """Sends steps and trace events for job and closes the connection once they are acked;
    noise gives the events random names, so their blocks do not compress away."""
    with Client(daemon.socket) as c:
        c.hello(job, rank=rank, world_size=2)
        items = []
        for s in range(steps):
            items.append({"type": "step", "step": s, "begin_us": 1000 * s, "end_us": 1000 * s + 900})
        items += [x_event(i, name="op%d%s" % (i % 7, os.urandom(24).hex() if noise else ""), ts0=0.0)
                  for i in range(events)]
        items.append({"type": "queue", "name": "q", "step": 1, "size": 3, "capacity": 8})
        c.send_lines(items)
        c.wait_ack(len(items))
    daemon.wait_for("no open session of " + job, lambda: daemon.job(job)["live"] is False)


def post_capture(daemon, job):
    conn = http.client.HTTPConnection(daemon.host, daemon.port, timeout=30)
    try:
        conn.request("POST", "/api/v1/jobs/%s/captures" % job, body=b'{"steps": 2}', headers=JSON)
        r = conn.getresponse()
        return r.status, None, r.read()
    finally:
        conn.close()


def counts(db, job_id):
    """Rows that reference job_id, per table."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        out = {}
        for t in ("blocks", "steps", "queue_samples", "host_samples", "pipelines", "sessions",
                  "streams", "ranks", "captures"):
            out[t] = con.execute("SELECT count(*) FROM %s WHERE job_id = ?" % t, (job_id,)).fetchone()[0]
        out["jobs"] = con.execute("SELECT count(*) FROM jobs WHERE id = ?", (job_id,)).fetchone()[0]
        out["capture_ranks"] = con.execute(
            "SELECT count(*) FROM capture_ranks WHERE capture_id IN "
            "(SELECT id FROM captures WHERE job_id = ?)", (job_id,)).fetchone()[0]
        return out
    finally:
        con.close()


def db_path(daemon):
    return os.path.join(daemon.data_dir, "stepscope.db")


def test_delete_removes_the_job_and_keeps_the_others(daemon):
    feed(daemon, "doomed", rank=0, events=5000, noise=True)
    feed(daemon, "doomed", rank=1, events=5000, noise=True)
    feed(daemon, "kept", rank=0, steps=7)
    doomed = daemon.job("doomed")
    kept = daemon.job("kept")
    daemon.wait_for("live steps", lambda: daemon.get_json("/api/v1/jobs/doomed/steps")["total"] == 10)
    daemon.wait_for("live steps", lambda: daemon.get_json("/api/v1/jobs/kept/steps")["total"] == 7)
    # A capture of the job is stored with it. A capture needs a connected session that can
    # serve it (an ended job's is refused, 409): both ranks connect, the capture is taken, and
    # the sessions end before the deletion (a job with an open session cannot be deleted).
    holders = []
    for rank in (0, 1):
        c = Client(daemon.socket)
        c.hello("doomed", rank=rank, world_size=2, capabilities=["capture"])
        holders.append(c)
    daemon.wait_for("sessions of doomed", lambda: daemon.job("doomed")["live"] is True)
    st, _, body = post_capture(daemon, "doomed")
    assert st == 201, body
    daemon.wait_for("capture stored", lambda: counts(db_path(daemon), doomed["id"])["capture_ranks"] == 2)
    for c in holders:
        c.close()
    daemon.wait_for("sessions of doomed ended", lambda: daemon.job("doomed")["live"] is False)
    before = counts(db_path(daemon), doomed["id"])
    assert before["blocks"] > 0 and before["steps"] == 10 and before["queue_samples"] == 2
    kept_before = counts(db_path(daemon), kept["id"])

    st, hdr, body = delete(daemon, "doomed")
    assert st == 204, body
    # Gone at once: from the list, the job route, the live routes, the store.
    assert [j["name"] for j in daemon.jobs()] == ["kept"]
    assert daemon.request("/api/v1/jobs/doomed")[0] == 404
    assert daemon.request("/api/v1/jobs/doomed/steps")[0] == 404
    assert daemon.request("/api/v1/jobs/%d" % doomed["id"])[0] == 404
    assert daemon.request("/api/v1/jobs/doomed/captures")[0] == 404
    after = counts(db_path(daemon), doomed["id"])
    assert all(v == 0 for v in after.values()), after
    # The other job is untouched, in the store and in live.
    assert counts(db_path(daemon), kept["id"]) == kept_before
    assert daemon.get_json("/api/v1/jobs/kept/steps")["total"] == 7
    assert daemon.job("kept")["steps"] == kept["steps"]
    # A second delete: 404.
    assert delete(daemon, "doomed")[0] == 404

    # A restart (kill -9, replay of the store into live) does not bring it back.
    daemon.restart()
    assert [j["name"] for j in daemon.jobs()] == ["kept"]
    assert daemon.request("/api/v1/jobs/doomed/steps")[0] == 404
    daemon.wait_for("kept replayed", lambda: daemon.get_json("/api/v1/jobs/kept/steps")["total"] == 7)
    daemon.stop()
    con = sqlite3.connect(db_path(daemon))
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA foreign_key_check").fetchall() == []
        assert con.execute("SELECT count(*) FROM capture_ranks WHERE capture_id NOT IN "
                           "(SELECT id FROM captures)").fetchone()[0] == 0
        size = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute("VACUUM")
        assert con.execute("PRAGMA page_count").fetchone()[0] < size
    finally:
        con.close()


def test_a_new_job_of_the_same_name_starts_afresh(daemon):
    feed(daemon, "again", steps=5)
    old = daemon.job("again")
    assert delete(daemon, "again")[0] == 204
    feed(daemon, "again", steps=2)
    new = daemon.job("again")
    assert new["id"] != old["id"]
    assert daemon.wait_for("2 live steps",
                           lambda: daemon.get_json("/api/v1/jobs/again/steps")["total"] == 2)
    assert new["steps"] == 2


def test_delete_refused_while_a_client_is_connected(daemon):
    with Client(daemon.socket) as c:
        c.hello("busy-job")
        c.send_lines([{"type": "step", "step": 1, "begin_us": 1, "end_us": 9}])
        c.wait_ack(1)
        st, _, body = delete(daemon, "busy-job")
        assert st == 409, body
        assert b'"code":"conflict"' in body and b"busy-job" in body
        assert daemon.job("busy-job")["steps"] == 1
    daemon.wait_for("closed", lambda: daemon.job("busy-job")["live"] is False)
    assert delete(daemon, "busy-job")[0] == 204
    assert daemon.jobs() == []


def test_delete_method_guards(daemon):
    feed(daemon, "guarded", steps=1, events=1)
    # CSRF: neither JSON nor X-Requested-With.
    st, _, body = delete(daemon, "guarded", headers={})
    assert st == 403, body
    st, _, _ = delete(daemon, "guarded", headers={"Content-Type": "text/plain"})
    assert st == 403
    assert daemon.job("guarded")
    # DELETE elsewhere: 405 with the route's Allow.
    for path, allow in (("/api/v1/jobs", "GET, HEAD"),
                        ("/api/v1/jobs/guarded/steps", "GET, HEAD"),
                        ("/api/v1/jobs/guarded/captures", "GET, HEAD, POST"),
                        ("/api/v1/session", "POST")):
        st, hdr, _ = delete(daemon, "", path=path)
        assert st == 405 and hdr["allow"] == allow, (path, st, hdr)
    st, hdr, _ = daemon.request("/api/v1/jobs/guarded", method="PUT")
    assert st == 405 and hdr["allow"] == "GET, HEAD, DELETE"
    # X-Requested-With alone is enough; percent-encoded names work.
    st, _, _ = delete(daemon, "guarded", headers={"X-Requested-With": "stepscope"})
    assert st == 204
    feed(daemon, "a/b c", steps=1, events=1)
    assert delete(daemon, "a/b c")[0] == 204
    assert daemon.jobs() == []


def test_delete_by_id(daemon):
    feed(daemon, "byid", steps=3)
    feed(daemon, "keepme", steps=2)
    jid = daemon.job("byid")["id"]
    assert delete(daemon, str(jid))[0] == 204
    assert [j["name"] for j in daemon.jobs()] == ["keepme"]
    daemon.get_json(f"/api/v1/jobs/{jid}", status=404)
    # An id that names no job is 404, like GET.
    assert delete(daemon, str(jid + 1000))[0] == 404
