# SPDX-License-Identifier: MIT
"""Data queues and kernels over the REST API (/queues, /kernels), ?format=csv with hostile
names, /api/v1/openapi.json against every route, and queue numbers after a restart (the daemon
replays the store's queue samples into daemon/live)."""
import csv
import io
import json
import signal
import urllib.parse

from ssclient import Client

T0 = 1000000  # us

# Rank 0: the host queue ("device_queue", MindInsight's name for it) is empty in 4 of 10 steps
# (40 % > 30 %: data processing is the bottleneck) and full (size 8 = capacity) in 2; the device
# queue ("get_next") is never empty. Rank 1: host queue never empty, device queue empty once:
# transmission. Samples are sent out of step order; the series is by step.
HOST0 = [0, 8, 0, 3, 0, 8, 5, 0, 2, 1]
DEV0 = [2, 1, 1, 3, 1, 2, 1, 1, 2, 1]
HOST1 = [4, 4, 4, 4]
DEV1 = [1, 0, 2, 2]
HOSTILE = 'q,"odd"\nname'


def queue(name, step, size, cap=8):
    return {"type": "queue", "name": name, "step": step, "size": size, "capacity": cap,
            "ts_us": T0 + step}


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": T0 + ts,
            "dur": dur}


RANK0 = ([queue("device_queue", s, v) for s, v in reversed(list(enumerate(HOST0)))]
         + [queue("get_next", s, v, cap=4) for s, v in enumerate(DEV0)]
         + [queue(HOSTILE, 0, 1)]
         + [kernel("gemm_kernel", 0, 30), kernel("gemm_kernel", 100, 50),
            kernel('relu,"fused"\nkernel', 200, 20),
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": T0,
             "dur": 500}])
# A pipeline whose BatchOp's output queue (0.2) is much emptier than its child MapOp's (0.9):
# MindInsight flags the BatchOp (child usage - own > 0.1). Usage three ways: queue_sizes and
# queue_capacity, queue_usage, queue_size and queue_capacity; the root has none.
PIPELINE = {"type": "pipeline", "extra": {"x": [1, {"y": None}], "s": "a\"b"}, "ops": [
    {"id": 0, "name": "DeviceQueueOp", "children": [1], "num_workers": 1},
    {"id": 1, "name": "BatchOp", "children": [2], "num_workers": 4, "queue_sizes": [1, 3],
     "queue_capacity": 10, "note": "skip me"},
    {"id": 2, "name": "MapOp", "children": [3], "num_workers": 8, "queue_usage": 0.9},
    {"id": 3, "name": "GeneratorOp", "children": [], "num_workers": 1, "queue_size": 9,
     "queue_capacity": 10},
]}
NO_CPU = {"sample_interval_ms": None, "cpu_user_avg": None, "cpu_sys_avg": None}
PIPE_OPS = [
    {"id": 0, "type": "DeviceQueueOp", "num_workers": 1, "parent": -1, "children": [1],
     "queue_usage": None, "queue_capacity": None, "queue_samples": 0, "queue_size_avg": None,
     **NO_CPU},
    {"id": 1, "type": "BatchOp", "num_workers": 4, "parent": 0, "children": [2],
     "queue_usage": 0.2, "queue_capacity": 10, "queue_samples": 2, "queue_size_avg": 2,
     **NO_CPU},
    {"id": 2, "type": "MapOp", "num_workers": 8, "parent": 1, "children": [3],
     "queue_usage": 0.9, "queue_capacity": None, "queue_samples": 0, "queue_size_avg": None,
     **NO_CPU},
    {"id": 3, "type": "GeneratorOp", "num_workers": 1, "parent": 2, "children": [],
     "queue_usage": 0.9, "queue_capacity": 10, "queue_samples": 0, "queue_size_avg": 9,
     **NO_CPU},
]

RANK1 = ([queue("device_queue", s, v) for s, v in enumerate(HOST1)]
         + [queue("get_next", s, v, cap=4) for s, v in enumerate(DEV1)]
         + [{"type": "pipeline", "ops": [{"id": 0, "name": "Old"}]}, PIPELINE])


def base(d, job):
    return "/api/v1/jobs/%d" % d.job(job)["id"]


def feed(d, job):
    cs = []
    for rank, recs in ((0, RANK0), (1, RANK1)):
        c = Client(d.socket)
        c.hello(job, rank=rank, world_size=2)
        c.send_lines(recs)
        c.wait_ack(len(recs))
        cs.append(c)
    return cs


def wait_live(d, job):
    d.wait_for("live queues", lambda: len(d.get_json(base(d, job) + "/queues")["queues"]) == 5
               and d.get_json(base(d, job) + "/kernels")["total"] == 2)


def check_queues(doc):
    by = {(q["rank"], q["name"]): q for q in doc["queues"]}
    h0 = by[(0, "device_queue")]
    assert h0["role"] == "host" and h0["samples"] == 10
    assert (h0["empty"], h0["full"]) == (4, 2)
    assert abs(h0["empty_ratio"] - 0.4) < 1e-9 and abs(h0["full_ratio"] - 0.2) < 1e-9
    assert abs(h0["avg_size"] - sum(HOST0) / 10) < 1e-9
    assert h0["capacity"] == 8 and h0["points"] == 10
    assert [p["step"] for p in h0["series"]] == list(range(10))
    assert [p["size"] for p in h0["series"]] == HOST0
    d0 = by[(0, "get_next")]
    assert d0["role"] == "device" and d0["empty"] == 0 and d0["capacity"] == 4
    assert by[(0, HOSTILE)]["role"] == "other"
    v = {x["rank"]: x for x in doc["verdicts"]}
    assert v[0]["status"] == "data_process"
    assert (v[0]["host_empty"], v[0]["host_total"], v[0]["host_full"]) == (4, 10, 2)
    assert v[0]["host_queue"] == "device_queue" and v[0]["device_queue"] == "get_next"
    assert v[1]["status"] == "data_transmission"
    assert (v[1]["device_empty"], v[1]["device_total"]) == (1, 4)


def check_pipeline(doc):
    assert doc["rank"] == 1 and doc["ops"] == PIPE_OPS
    f = doc["bottlenecks"]
    assert len(f) == 1
    assert (f[0]["op_id"], f[0]["type"], f[0]["reason"], f[0]["code"]) == (
        1, "BatchOp", "child_fuller", "minddata_pipeline-batch_op")
    assert (f[0]["usage"], f[0]["child_usage"], f[0]["threshold"]) == (0.2, 0.9, 0.1)


def test_queues_kernels_csv_and_restart(daemon):
    cs = feed(daemon, "dq")
    try:
        wait_live(daemon, "dq")
        b = base(daemon, "dq")
        doc = daemon.get_json(b + "/queues")
        check_queues(doc)
        assert [q["rank"] for q in daemon.get_json(b + "/queues?rank=1")["queues"]] == [1, 1]
        kern = daemon.get_json(b + "/kernels?sort=total&order=desc")
        assert kern == {"total": 2, "rows": [
            {"name": "gemm_kernel", "calls": 2, "total_us": 80, "avg_us": 40, "min_us": 30,
             "max_us": 50, "percent": 80.0},
            {"name": 'relu,"fused"\nkernel', "calls": 1, "total_us": 20, "avg_us": 20,
             "min_us": 20, "max_us": 20, "percent": 20.0}]}
        assert daemon.get_json(b + "/kernels?search=RELU&rank=0")["total"] == 1
        page = daemon.get_json(b + "/kernels?sort=name&order=asc&offset=1&limit=1")
        assert page["total"] == 2 and [r["name"] for r in page["rows"]] == ['relu,"fused"\nkernel']
        # CSV: the csv module reads the hostile names back exactly.
        st, hdr, body = daemon.request(b + "/kernels?format=csv&sort=total")
        assert st == 200 and hdr["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
        assert [(r["name"], r["calls"], r["total_us"]) for r in rows] == [
            ("gemm_kernel", "2", "80"), ('relu,"fused"\nkernel', "1", "20")]
        st, hdr, body = daemon.request(b + "/queues?format=csv")
        rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
        assert list(rows[0]) == ["rank", "queue", "role", "step", "size", "capacity"]
        assert len(rows) == 10 + 10 + 1 + 4 + 4
        assert [r for r in rows if r["queue"] == HOSTILE] == [
            {"rank": "0", "queue": HOSTILE, "role": "other", "step": "0", "size": "1",
             "capacity": "8"}]
        for path in ("/api/v1/jobs?format=csv", b + "?format=csv", b + "/steps?format=csv",
                     b + "/operators?format=csv"):
            st, hdr, body = daemon.request(path)
            assert st == 200 and hdr["content-type"].startswith("text/csv"), path
            assert len(list(csv.reader(io.StringIO(body.decode(), newline="")))) >= 1
        jobs = list(csv.DictReader(io.StringIO(daemon.request("/api/v1/jobs?format=csv")[2].decode(),
                                               newline="")))
        assert "dq" in [j["name"] for j in jobs]
        ranks = list(csv.DictReader(io.StringIO(daemon.request(b + "?format=csv")[2].decode(),
                                                newline="")))
        assert [r["rank"] for r in ranks] == ["0", "1"]
        for q, name in [("/queues?rank=x", "rank"), ("/queues?format=xml", "format"),
                        ("/kernels?sort=self", "sort"), ("/kernels?limit=0", "limit"),
                        ("/kernels?order=up", "order")]:
            err = daemon.get_json(b + q, status=400)["error"]
            assert err["code"] == "bad_request" and err["message"].startswith(name), (q, err)
        assert daemon.get_json(b + "/queues?rank=9", status=404)["error"]["code"] == "not_found"
        pipe = daemon.get_json(b + "/pipeline")
        check_pipeline(pipe)
        assert daemon.get_json(b + "/pipeline?rank=1") == pipe
        assert daemon.get_json(b + "/pipeline?rank=0", status=404)["error"]["code"] == "not_found"
        st, hdr, body = daemon.request(b + "/pipeline?format=csv")
        rows = list(csv.DictReader(io.StringIO(body.decode(), newline="")))
        assert [(r["id"], r["type"], r["parent"], r["children"], r["queue_usage"]) for r in rows] == [
            ("0", "DeviceQueueOp", "-1", "1", ""), ("1", "BatchOp", "0", "2", "0.2"),
            ("2", "MapOp", "1", "3", "0.9"), ("3", "GeneratorOp", "2", "", "0.9")]
        live_q, live_k = doc, kern
    finally:
        for c in cs:
            c.close()
    daemon.stop(signal.SIGTERM)
    daemon.start()
    assert daemon.get_json(b + "/queues") == live_q
    assert daemon.get_json(b + "/kernels?sort=total&order=desc") == live_k
    daemon.kill9()
    daemon.start()
    assert daemon.get_json(b + "/queues") == live_q


def test_pipeline_without_queue_figures_and_bad_records(daemon):
    c = Client(daemon.socket)
    c.hello("pl", rank=0)
    recs = [{"type": "pipeline", "ops": [{"id": 0, "name": "Batch", "children": [1]},
                                         {"id": 1, "name": "Map,\"x\"", "children": []}]},
            {"type": "pipeline", "ops": [{"id": 0, "children": "nope"}]}]
    c.send_lines(recs)
    c.wait_ack(len(recs))
    c.close()
    b = base(daemon, "pl")
    daemon.wait_for("pipeline", lambda: daemon.request(b + "/pipeline")[0] == 200)
    doc = daemon.get_json(b + "/pipeline")
    assert doc["bottlenecks"] is None and [o["type"] for o in doc["ops"]] == ["Batch", 'Map,"x"']
    rows = list(csv.DictReader(io.StringIO(daemon.request(b + "/pipeline?format=csv")[2].decode(),
                                           newline="")))
    assert [r["type"] for r in rows] == ["Batch", 'Map,"x"']
    assert daemon.get_json(b + "/pipeline?rank=x", status=400)["error"]["message"].startswith("rank")


def test_queue_series_downsampled(daemon):
    c = Client(daemon.socket)
    c.hello("big", rank=0)
    recs = [queue("host_queue", s, 0 if s % 1000 == 999 else 5) for s in range(5000)]
    c.send_lines(recs)
    c.wait_ack(len(recs))
    c.close()
    b = base(daemon, "big")
    daemon.wait_for("queue", lambda: [q["samples"] for q in daemon.get_json(b + "/queues")["queues"]]
                    == [5000])
    q = daemon.get_json(b + "/queues")["queues"][0]
    assert q["samples"] == 5000 and q["points"] == 2000 and len(q["series"]) == 2000
    assert q["empty"] == 5
    # Every empty sample survives the downsampling.
    assert sum(1 for p in q["series"] if p["size"] == 0) == 5


def test_openapi_lists_every_route(daemon):
    c = Client(daemon.socket)
    c.hello("api", rank=0)
    recs = RANK0 + [{"type": "step", "step": 0, "begin_us": T0, "end_us": T0 + 600}, PIPELINE]
    c.send_lines(recs)
    c.wait_ack(len(recs))
    c.close()
    daemon.wait_for("steps", lambda: daemon.get_json(base(daemon, "api") + "/steps")["total"] == 1)
    st, hdr, body = daemon.request("/api/v1/openapi.json")
    assert st == 200 and hdr["content-type"].startswith("application/json")
    doc = json.loads(body)
    assert doc["openapi"].startswith("3.0")
    paths = set(doc["paths"])
    # At least these (tests/unit/test_web.c checks the document against the route table exactly;
    # every path listed must answer 200 here).
    assert paths >= {
        "/api/v1/health", "/api/v1/stats", "/api/v1/openapi.json", "/api/v1/jobs",
        "/api/v1/jobs/{job}", "/api/v1/jobs/{job}/timeline", "/api/v1/jobs/{job}/steps",
        "/api/v1/jobs/{job}/step-trace", "/api/v1/jobs/{job}/operators",
        "/api/v1/jobs/{job}/kernels", "/api/v1/jobs/{job}/queues", "/api/v1/jobs/{job}/pipeline",
        "/api/v1/jobs/{job}/ranks", "/api/v1/jobs/{job}/helper", "/api/v1/jobs/{job}/breakdown",
        "/metrics"}
    for p in paths:
        if p == "/api/v1/events":
            continue  # a Server-Sent Events stream never ends; its own tests cover it
        if "{id}" in p:
            continue  # one capture: tests/integ/test_capture.py creates one first
        if "get" not in doc["paths"][p]:
            continue  # POST /api/v1/session only: tests/integ/test_session.py
        url = p.replace("{job}", urllib.parse.quote("api", safe="")).replace("{kind}", "overview")
        required = [prm["name"] for prm in doc["paths"][p]["get"]["parameters"]
                    if prm["in"] == "query" and prm.get("required")]
        if required:  # /api/v1/diff's base and exp: a job's name each
            url += "?" + "&".join(f"{n}=api" for n in required)
        st, _, _ = daemon.request(url)
        assert st == 200, (p, st)
        for prm in doc["paths"][p]["get"]["parameters"]:
            if prm["in"] == "path":
                assert "{%s}" % prm["name"] in p
