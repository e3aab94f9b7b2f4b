# SPDX-License-Identifier: MIT
"""The live routes' answer cache (daemon/web/cache.c): a repeated request is served from it, byte for
byte the same; it never serves an answer older than the job's current snapshot; different query
arguments, jobs and formats get their own answers; error answers are not kept."""
import gzip
import http.client as http_client
import json
import pathlib
import subprocess

from conftest import build_dir, clean_env
from ssclient import Client

T0 = 2000000  # us


def step(n, samples=8):
    return {"type": "step", "step": n, "begin_us": T0 + 100 * n, "end_us": T0 + 100 * n + 90,
            "samples": samples,
            "phases": {"dataloader": 10, "forward": 30, "backward": 40, "optimizer": 10}}


def op(name, n):
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
            "ts": T0 + 100 * n + 20, "dur": 5}


def http(d):
    return d.stats()["http"]


def get(d, path):
    st, hdr, body = d.request(path)
    assert st == 200, (path, st, body[:300])
    return hdr, body


def test_repeat_is_a_hit_and_new_data_is_never_stale(daemon):
    c = Client(daemon.socket)
    c.hello("cache", rank=0)
    c.send_lines([step(1), op("aten::mm", 1)])
    c.wait_ack(2)
    daemon.wait_for("step 1", lambda: daemon.get_json("/api/v1/jobs/cache/steps")["total"] == 1)

    path = "/api/v1/jobs/cache/steps?limit=10"
    h0 = http(daemon)
    hdr1, first = get(daemon, path)
    h1 = http(daemon)
    hdr2, second = get(daemon, path)
    h2 = http(daemon)
    assert second == first
    assert hdr2["content-type"] == hdr1["content-type"] == "application/json"
    assert hdr2["x-content-type-options"] == "nosniff"
    # The first computed and kept its answer, the second was served from the cache.
    assert (h1["cache_misses"] - h0["cache_misses"], h1["cache_hits"] - h0["cache_hits"]) == (1, 0)
    assert (h2["cache_misses"] - h1["cache_misses"], h2["cache_hits"] - h1["cache_hits"]) == (0, 1)

    # New data: once the job's next snapshot is out, the same request shows it.
    c.send_lines([step(2), op("aten::mm", 2)])
    c.wait_ack(4)
    doc = daemon.wait_for("step 2", lambda: (lambda d: d if d["total"] == 2 else None)(
        daemon.get_json(path)))
    assert [r["step"] for r in doc["rows"]] == [1, 2]
    ops = daemon.get_json("/api/v1/jobs/cache/operators")
    assert {r["name"]: r["calls"] for r in ops["rows"]} == {"aten::mm": 2}
    c.close()


def test_arguments_jobs_and_formats_are_separate_answers(daemon):
    for job, n in (("ca", 3), ("cb", 5)):
        c = Client(daemon.socket)
        c.hello(job, rank=0)
        c.send_lines([step(i) for i in range(1, n + 1)])
        c.wait_ack(n)
        c.close()
    daemon.wait_for("both jobs", lambda: daemon.get_json("/api/v1/jobs/cb/steps")["total"] == 5
                    and daemon.get_json("/api/v1/jobs/ca/steps")["total"] == 3)
    for _ in range(2):  # the second round is served from the cache, and must still differ
        a = daemon.get_json("/api/v1/jobs/ca/steps")
        b = daemon.get_json("/api/v1/jobs/cb/steps")
        assert (a["total"], b["total"]) == (3, 5)
        lim = daemon.get_json("/api/v1/jobs/cb/steps?limit=2")
        off = daemon.get_json("/api/v1/jobs/cb/steps?limit=2&offset=2")
        assert [r["step"] for r in lim["rows"]] == [1, 2]
        assert [r["step"] for r in off["rows"]] == [3, 4]
        hdr, body = get(daemon, "/api/v1/jobs/cb/steps?format=csv")
        assert hdr["content-type"].startswith("text/csv")
        assert len(body.decode().strip().splitlines()) == 6  # header and 5 rows
        # The job by id and by name: the same numbers.
        jid = daemon.job("ca")["id"]
        assert daemon.get_json(f"/api/v1/jobs/{jid}/steps") == a


def test_errors_are_not_kept(daemon):
    c = Client(daemon.socket)
    c.hello("cerr", rank=0)
    c.send_lines([step(1)])
    c.wait_ack(1)
    c.close()
    daemon.wait_for("step", lambda: daemon.get_json("/api/v1/jobs/cerr/steps")["total"] == 1)
    before = http(daemon)
    for _ in range(3):
        daemon.get_json("/api/v1/jobs/cerr/steps?limit=0", status=400)
    after = http(daemon)
    assert after["cache_hits"] == before["cache_hits"]
    assert after["cache_misses"] == before["cache_misses"]
    assert after["errors"] - before["errors"] == 3


# ---- the store-read routes (issue 17): kept under the store's commit count and the snapshot ----

KINETO = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "gpu_2steps_sampled_rank0.json.gz"
STORE_ROUTES = ["tree?kind=operator", "operator-view", "memory", "summary/operator"]


def imported(d, tmp, job, path):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", job, str(path)],
                         capture_output=True, text=True, timeout=120, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr


def delete(d, job):
    conn = http_client.HTTPConnection(d.host, d.port, timeout=30)
    try:
        conn.request("DELETE", "/api/v1/jobs/" + job, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        return r.status
    finally:
        conn.close()


def counted(d, path):
    """GET path: (its body, the cache's hits and misses it added)."""
    h0 = http(d)
    _, body = get(d, path)
    h1 = http(d)
    return body, (h1["cache_hits"] - h0["cache_hits"], h1["cache_misses"] - h0["cache_misses"])


def test_store_read_routes_repeat_from_the_cache_never_stale_never_deleted(daemon, tmp):
    imported(daemon, tmp, "stc", KINETO)
    rank = daemon.get_json("/api/v1/jobs/stc")["ranks_detail"][0]["rank"]
    paths = ["/api/v1/jobs/stc/" + r for r in STORE_ROUTES]
    # (1) the first request computes and keeps its answer, the repeat is served from the cache,
    # byte for byte the same.
    first = {}
    for p in paths:
        first[p], n = counted(daemon, p)
        assert n == (0, 1), (p, n, len(first[p]))
        again, n = counted(daemon, p)
        assert n == (1, 0), (p, n)
        assert again == first[p], p
    # /summary/{kind}: each kind its own answer (the kind is in the path, not the query)
    kern, n = counted(daemon, "/api/v1/jobs/stc/summary/kernel")
    assert n == (0, 1) and kern != first[paths[-1]]
    assert "name" in json.loads(kern)["rows"][0]
    # another job's lines, committed meanwhile, leave this job's answers in the cache
    o = Client(daemon.socket)
    o.hello("stc-other", rank=0)
    o.send_lines([step(1), op("aten::mm", 1)])
    o.wait_ack(2)
    o.close()
    for p in paths:
        again, n = counted(daemon, p)
        assert n == (1, 0) and again == first[p], (p, n)

    # (2) more lines of the job, acked (so committed): the next answers are computed again and
    # show them, at once (no wait for a snapshot).
    trace = json.loads(gzip.decompress(KINETO.read_bytes()))["traceEvents"]
    cpu_op = next(e for e in trace if isinstance(e, dict) and e.get("cat") == "cpu_op"
              and e.get("ph") == "X")
    probe = dict(cpu_op, name="stepscope::cache_probe")
    c = Client(daemon.socket)
    c.hello("stc", rank=rank)
    c.send_lines([probe])
    c.wait_ack(1)
    for p in paths:
        body, n = counted(daemon, p)
        assert n == (0, 1), (p, n)
        if "operator-view" in p:  # its first page of 100 rows: the probe counts in calls
            assert json.loads(body)["calls"] == json.loads(first[p])["calls"] + 1
        elif "memory" not in p:  # a cpu_op without memory events: not in the memory view
            assert b"stepscope::cache_probe" in body and b"stepscope::cache_probe" not in first[p], p
    c.close()

    # (3) deleted: no answer from the cache, the routes say the job is gone.
    daemon.wait_for("the session's end", lambda: not daemon.job("stc")["live"])
    for p in paths:
        counted(daemon, p)  # kept again, after the session's end
    assert delete(daemon, "stc") == 204
    h0 = http(daemon)
    for p in paths:
        st, _, body = daemon.request(p)
        assert st == 404, (p, st, body[:200])
    h1 = http(daemon)
    assert h1["cache_hits"] == h0["cache_hits"]
    # the same name imported again is a new job: computed, not the deleted one's answers
    imported(daemon, tmp, "stc", KINETO)
    for p in paths:
        body, n = counted(daemon, p)
        assert n == (0, 1), (p, n)
        if "memory" not in p:
            assert b"stepscope::cache_probe" not in body, p


# ---- big answers: the cache is bounded by its total bytes (http_cache_max_bytes), not by a
# small body limit (issue 17: /gpu/launches' default page of long kernel names) ----

KINETO_5 = KINETO.parent / "gpu_5steps_rank0.json.gz"


def ended(d, tmp, job, path):
    """path imported as job, its session over (no snapshot published after it)."""
    imported(d, tmp, job, path)
    d.wait_for(job + "'s end", lambda: not d.job(job)["live"])


def test_a_big_launches_page_is_served_from_the_cache(daemon, tmp):
    ended(daemon, tmp, "big", KINETO_5)
    path = "/api/v1/jobs/big/gpu/launches"
    first, n = counted(daemon, path)
    assert len(first) > 512 * 1024 and n == (0, 1), (len(first), n)  # the old body limit
    assert len(json.loads(first)["rows"]) == 1000
    for _ in range(2):
        again, n = counted(daemon, path)
        assert n == (1, 0) and again == first, (n, len(again))
    assert len(first) < http(daemon)["cache_bytes"] < 64 << 20  # the default budget


def test_the_cache_stays_under_its_budget(daemons, tmp):
    budget = 1 << 20
    d = daemons("d", config=f"http_cache_max_bytes = {budget}\n")
    ended(d, tmp, "b5", KINETO_5)
    ended(d, tmp, "b2", KINETO)
    big = "/api/v1/jobs/b5/gpu/launches"  # ~570 KB
    small = "/api/v1/jobs/b2/gpu/launches"  # ~360 KB: both fit the budget together
    other = "/api/v1/jobs/b5/gpu/launches?limit=600"  # ~340 KB: with both, past it
    sizes = {}
    for p in (big, small):
        body, n = counted(d, p)
        sizes[p] = len(body)
        assert n == (0, 1), (p, n)
        assert counted(d, p)[1] == (1, 0), p
    h = http(d)
    assert h["cache_evictions"] == 0 and sum(sizes.values()) < h["cache_bytes"] <= budget, h
    # a third answer would pass the budget: the least recently used (big) is evicted for it
    body, n = counted(d, other)
    sizes[other] = len(body)
    assert n == (0, 1) and sum(sizes.values()) > budget, (n, sizes)
    h = http(d)
    assert h["cache_evictions"] == 1 and sizes[small] + sizes[other] < h["cache_bytes"] <= budget, h
    assert counted(d, small)[1] == (1, 0)
    assert counted(d, other)[1] == (1, 0)
    again, n = counted(d, big)  # evicted: computed again, the same bytes; it evicts small (LRU)
    assert n == (0, 1) and len(again) == sizes[big], n
    h = http(d)
    assert h["cache_evictions"] == 2 and sizes[big] + sizes[other] < h["cache_bytes"] <= budget, h
    assert counted(d, big)[1] == (1, 0)
    assert counted(d, other)[1] == (1, 0)
    # an answer larger than the whole budget is served, not kept, and evicts nothing
    body, n = counted(d, "/api/v1/jobs/b5/gpu/launches?limit=2000")
    assert len(body) > budget and n == (0, 0), (len(body), n)
    assert http(d)["cache_evictions"] == 2
    assert counted(d, big)[1] == (1, 0)
    assert http(d)["cache_bytes"] <= budget
