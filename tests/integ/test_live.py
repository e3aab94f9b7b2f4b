# SPDX-License-Identifier: MIT
"""Live analysis over the REST API (/steps, /step-trace, /operators): exact numbers while the
client is still connected, and the same numbers after SIGTERM + restart and after kill -9 +
restart (the daemon replays the store into daemon/live before serving)."""
import csv
import io
import signal

import pytest

from ssclient import Client

T0 = 1000000  # us


def span(name, ts, dur, cat="cpu_op", tid=1):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": T0 + ts, "dur": dur}


# Step 1 (rank 0): data fetch 0-20, conv2d 30-130 with children add 40-60 and mul 70-90 (self
# 60), sgd 150-180; FP = conv2d's start (first op after the data fetch), BP = sgd's end (the last
# op: no all-reduce). Sent in end order, as a tracer emits complete spans, and before the step
# record, so live files them under the step only once the record arrives.
DATA = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
RECORDS = [
    span(DATA, 0, 20),
    span("aten::add", 40, 20),
    span("aten::mul", 70, 20),
    span("aten::conv2d", 30, 100),
    span("aten::sgd", 150, 30),
    {"type": "step", "step": 1, "begin_us": T0, "end_us": T0 + 200, "samples": 32},
    # Step 2 has no spans: its points come from the phases (fp = begin + 10, bp = fp + 150).
    {"type": "step", "step": 2, "begin_us": T0 + 200, "end_us": T0 + 400, "samples": 32,
     "phases": {"dataloader": 10, "forward": 50, "backward": 100, "optimizer": 30}},
]

STEP_ROWS = [
    {"step": 1, "rank": 0, "start_us": T0, "end_us": T0 + 200, "total_us": 200,
     "interval_us": 30, "fp_bp_us": 150, "tail_us": 20, "samples": 32, "from": "record",
     "source": "trace", "fp_start": "aten::conv2d", "bp_end": "aten::sgd", "spans": 5},
    {"step": 2, "rank": 0, "start_us": T0 + 200, "end_us": T0 + 400, "total_us": 200,
     "interval_us": 10, "fp_bp_us": 150, "tail_us": 40, "samples": 32, "from": "record",
     "source": "phases", "fp_start": "", "bp_end": "", "spans": 0},
]

OPS = {
    DATA: (1, 20, 20),
    "aten::add": (1, 20, 20),
    "aten::mul": (1, 20, 20),
    "aten::conv2d": (1, 100, 60),
    "aten::sgd": (1, 30, 30),
}


def base(d, job):
    return f"/api/v1/jobs/{d.job(job)['id']}"


def snapshot(d, job):
    """Everything the three routes answer for the job."""
    b = base(d, job)
    return {
        "steps": d.get_json(b + "/steps"),
        "avg": d.get_json(b + "/step-trace"),
        "one": d.get_json(b + "/step-trace?step=1"),
        "ops": d.get_json(b + "/operators"),
        "ops_sorted": d.get_json(b + "/operators?sort=self&order=desc&limit=2"),
    }


def check(doc):
    assert doc["steps"] == {"total": 2, "rows": STEP_ROWS}
    avg = doc["avg"]
    assert (avg["step"], avg["first_step"], avg["last_step"], avg["n_steps"]) == ("average", 1, 2, 2)
    # Mean points relative to the start: fp (30 + 10) / 2, bp (180 + 160) / 2.
    assert (avg["total_us"], avg["interval_us"], avg["fp_bp_us"], avg["tail_us"]) == (200, 20, 150, 30)
    assert [s["name"] for s in avg["stages"]] == ["interval", "fp_bp", "tail"]
    assert sum(s["dur_us"] for s in avg["stages"]) == avg["total_us"]
    one = doc["one"]
    assert (one["step"], one["interval_us"], one["fp_bp_us"], one["tail_us"]) == (1, 30, 150, 20)
    assert one["points"] == {"step": 1, "source": "trace", "fp_start": "aten::conv2d",
                             "bp_end": "aten::sgd", "fp_origin": "after_data",
                             "bp_origin": "last_op"}
    ops = doc["ops"]
    assert ops["total"] == 5 and ops["group"] == "name"
    got = {r["name"]: (r["calls"], r["total_us"], r["self_us"]) for r in ops["rows"]}
    assert got == OPS
    conv = next(r for r in ops["rows"] if r["name"] == "aten::conv2d")
    assert conv["percent"] == 40.0  # 60 of 150 us self time
    assert (conv["min_us"], conv["max_us"], conv["avg_us"]) == (100, 100, 100)
    top = doc["ops_sorted"]
    assert top["total"] == 5
    assert [r["name"] for r in top["rows"]] == ["aten::conv2d", "aten::sgd"]


def feed(d, job="live"):
    c = Client(d.socket)
    c.hello(job, rank=0)
    c.send_lines(RECORDS)
    c.wait_ack(len(RECORDS))
    return c


def wait_live(d, job="live"):
    d.wait_for("live steps", lambda: d.get_json(base(d, job) + "/steps")["total"] == 2
               and d.get_json(base(d, job) + "/operators")["total"] == 5)


def test_live_numbers_while_connected_and_after_restarts(daemon):
    c = feed(daemon)
    try:
        wait_live(daemon)
        live = snapshot(daemon, "live")
        check(live)
    finally:
        c.close()
    daemon.stop(signal.SIGTERM)
    daemon.start()
    assert snapshot(daemon, "live") == live
    daemon.kill9()
    daemon.start()
    assert snapshot(daemon, "live") == live


def test_live_after_kill9_with_client_connected(daemon):
    c = feed(daemon, "k9")
    wait_live(daemon, "k9")
    live = snapshot(daemon, "k9")
    check(live)
    daemon.kill9()
    c.close()
    daemon.start()
    assert snapshot(daemon, "k9") == live


def test_live_csv_and_paging(daemon):
    c = feed(daemon, "csv")
    try:
        wait_live(daemon, "csv")
        b = base(daemon, "csv")
        st, hdr, body = daemon.request(b + "/steps?format=csv")
        assert st == 200 and hdr["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert [(r["step"], r["interval_us"], r["fp_bp_us"], r["tail_us"]) for r in rows] == [
            ("1", "30", "150", "20"), ("2", "10", "150", "40")]
        page = daemon.get_json(b + "/steps?offset=1&limit=1")
        assert page["total"] == 2 and [r["step"] for r in page["rows"]] == [2]
        st, hdr, body = daemon.request(b + "/operators?format=csv&search=ATEN::C")
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert [(r["name"], r["self_us"]) for r in rows] == [("aten::conv2d", "60")]
        assert daemon.get_json(b + "/step-trace?from=2&to=2")["interval_us"] == 10
        assert daemon.get_json(b + "/operators?rank=0")["total"] == 5
    finally:
        c.close()


def test_live_bad_parameters(daemon):
    c = feed(daemon, "bad")
    try:
        wait_live(daemon, "bad")
        b = base(daemon, "bad")
        for q, name in [("/steps?limit=0", "limit"), ("/steps?rank=x", "rank"),
                        ("/steps?format=xml", "format"), ("/operators?sort=bogus", "sort"),
                        ("/operators?order=up", "order"), ("/operators?group=kind", "group"),
                        ("/step-trace?step=1&from=1", "step"), ("/step-trace?from=3&to=1", "to")]:
            doc = daemon.get_json(b + q, status=400)
            assert doc["error"]["code"] == "bad_request"
            assert doc["error"]["message"].startswith(name), (q, doc)
        assert daemon.get_json(b + "/step-trace?step=99", status=404)["error"]["code"] == "not_found"
        assert daemon.get_json(b + "/operators?rank=7", status=404)["error"]["code"] == "not_found"
        daemon.get_json("/api/v1/jobs/nosuch/steps", status=404)
    finally:
        c.close()


# Phases whose names are escaped (a JSON string may spell "forward" as "forw\u0061rd"), with
# blanks around the values: the same phases to every reader. Sent raw, as a client's encoder may.
ESCAPED = [
    '{"type":"step","step":1,"begin_us":%d,"end_us":%d,"samples":8,'
    '"phases":{"d\\u0061taloader":10,"forw\\u0061rd":50,"b\\u0061ckward":100}}' % (T0, T0 + 200),
    '{"type":"step","step":2,"begin_us":%d,"end_us":%d,"samples":8,'
    '"phases":{ "dataloader" : 20 , "forward" : 60 , "backward" : 90 }}' % (T0 + 200, T0 + 400),
]


def test_live_phases_with_escaped_names_and_blanks(daemon):
    """Before the record decoder read the phases, live scanned their text for quotes and /benchmark
    searched it for '"dataloader"': both missed the escaped names, so step 1 had no points
    ("source": "none"). Step 2 (blanks around the values) read right before and must still."""
    with Client(daemon.socket) as c:
        c.hello("esc", rank=0)
        c.send_lines(ESCAPED)
        c.wait_ack(len(ESCAPED))
        b = base(daemon, "esc")
        daemon.wait_for("esc steps", lambda: daemon.get_json(b + "/steps")["total"] == 2)

        def answers():
            rows = daemon.get_json(b + "/steps")["rows"]
            bench = daemon.get_json(b + "/benchmark?skip=0")
            return ([(r["step"], r["source"], r["interval_us"], r["fp_bp_us"], r["tail_us"])
                     for r in rows],
                    {r["name"]: r["avg"] for r in bench["rows"]})

        live = answers()
        assert live[0] == [(1, "phases", 10, 150, 40), (2, "phases", 20, 150, 30)]
        assert live[1]["reader_cost"] == pytest.approx(15e-6)
    # After a restart live is the store's replay, which decodes the stored phases.
    daemon.stop(signal.SIGTERM)
    daemon.start()
    assert answers() == live
