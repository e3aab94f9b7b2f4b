# SPDX-License-Identifier: MIT
"""/steps?max_points=N folds consecutive rows into N even buckets (mean total and stages, first
step of each bucket), so a chart of a long job draws at most N points; without it, every row."""
from ssclient import Client

T0 = 5_000_000


def test_steps_max_points_buckets(daemon):
    # 1000 steps of rank 0: step i lasts 100 + i us with phases 10 / 40 + 20 (fp+bp 60).
    recs = []
    begin = T0
    for i in range(1000):
        total = 100 + i
        recs.append({"type": "step", "step": i, "begin_us": begin, "end_us": begin + total,
                     "samples": 8, "phases": {"dataloader": 10, "forward": 40, "backward": 20}})
        begin += total
    c = Client(daemon.socket)
    c.hello("down", rank=0)
    c.send_lines(recs)
    c.wait_ack(len(recs))
    base = f"/api/v1/jobs/{daemon.job('down')['id']}/steps?rank=0&limit=100000"
    daemon.wait_for("1000 steps", lambda: daemon.get_json(base)["total"] == 1000)
    full = daemon.get_json(base)["rows"]
    assert len(full) == 1000
    doc = daemon.get_json(base + "&max_points=200")
    assert doc["total"] == 1000
    rows = doc["rows"]
    assert len(rows) == 200
    for k, r in enumerate(rows):
        group = full[5 * k:5 * k + 5]
        assert r["step"] == group[0]["step"] == 5 * k
        assert r["start_us"] == group[0]["start_us"] and r["end_us"] == group[-1]["end_us"]
        assert r["total_us"] == sum(g["total_us"] for g in group) / 5  # 100 + 5k + 2
        assert (r["interval_us"], r["fp_bp_us"]) == (10, 60)
        assert r["tail_us"] == r["total_us"] - 70
        assert r["samples"] == 8
    # Fewer rows than max_points: unchanged. Bad values are 400 naming the parameter.
    assert daemon.get_json(base + "&max_points=5000")["rows"] == full
    err = daemon.get_json(base + "&max_points=-1", status=400)
    assert err["error"]["message"].startswith("max_points")
    c.close()
