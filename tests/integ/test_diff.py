# SPDX-License-Identifier: MIT
"""GET /api/v1/diff on two real H200 runs of one model that differ on purpose
(tests/data/kineto/cuda_views_h200: run b has batch 32 and one more Conv2d+ReLU layer than run a;
tests/device/cuda_views.py), both imported with `stepscope import` into the real daemon.

The diff must be made of each job's own answers: every operator's and kernel's calls, total and
self time equal that job's /operators and /kernels rows (absent: 0), the deltas are exp - base,
the names on one side only are listed as added or removed, and each side's step time and
breakdown is its /breakdown average.
"""
import csv
import io
import json
import pathlib
import subprocess

from conftest import build_dir, clean_env

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cuda_views_h200"


def us(v):
    return round(v * 1000)  # compare in ns: the API writes exact microseconds with 3 decimals


def imported(d, tmp, name, f):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", name, str(DATA / f)],
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    return d.job(name)["id"]


def table(d, job, what):
    doc = d.get_json(f"/api/v1/jobs/{job}/{what}?limit=100000")
    assert doc["total"] == len(doc["rows"])
    return {r["name"]: r for r in doc["rows"]}


def check_rows(rows, base, exp, self_too):
    assert len({r["name"] for r in rows}) == len(rows)
    assert {r["name"] for r in rows} == set(base) | set(exp)
    for r in rows:
        b, e = base.get(r["name"]), exp.get(r["name"])
        assert r["status"] == ("both" if b and e else "added" if e else "removed")
        for f in ("calls", "total_us") + (("self_us",) if self_too else ()):
            want_b = b[f] if b else 0
            want_e = e[f] if e else 0
            got_b, got_e, got_d = r["base_" + f], r["exp_" + f], r["delta_" + f]
            if f == "calls":
                assert (got_b, got_e, got_d) == (want_b, want_e, want_e - want_b), r
            else:
                assert (us(got_b), us(got_e)) == (us(want_b), us(want_e)), r
                assert us(got_d) == us(want_e) - us(want_b), r
        assert "base_self_us" in r if self_too else "base_self_us" not in r
    # by |delta total| descending
    d = [abs(us(r["delta_total_us"])) for r in rows]
    assert d == sorted(d, reverse=True)


def test_diff_equals_each_sides_own_answers(daemon, tmp):
    a = imported(daemon, tmp, "h200_a", "trace_a.json.gz")
    b = imported(daemon, tmp, "h200_b", "trace_b.json.gz")
    doc = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b")
    ops_a, ops_b = table(daemon, a, "operators"), table(daemon, b, "operators")
    k_a, k_b = table(daemon, a, "kernels"), table(daemon, b, "kernels")
    check_rows(doc["operators"], ops_a, ops_b, True)
    check_rows(doc["kernels"], k_a, k_b, False)

    assert doc["added"]["operators"] and doc["added"]["kernels"]
    assert set(doc["added"]["operators"]) == set(ops_b) - set(ops_a)
    assert set(doc["removed"]["operators"]) == set(ops_a) - set(ops_b)
    assert set(doc["added"]["kernels"]) == set(k_b) - set(k_a)
    assert set(doc["removed"]["kernels"]) == set(k_a) - set(k_b)
    # b's extra layer is one more Conv2d and ReLU per step: 3 convolutions a step against 2
    # over the same number of profiled steps; its convolution picks kernels a never ran.
    conv = next(r for r in doc["operators"] if r["name"] == "aten::conv2d")
    relu = next(r for r in doc["operators"] if r["name"] == "aten::relu")
    assert doc["base"]["steps"] == doc["exp"]["steps"] > 0
    assert conv["base_calls"] * 3 == conv["exp_calls"] * 2 > 0, conv
    assert relu["base_calls"] * 3 == relu["exp_calls"] * 2 > 0, relu
    assert any("winograd" in n or "wgrad" in n for n in doc["added"]["kernels"])
    # torch's own key_averages of each run name the same kernels added
    import gzip
    tables = json.load(gzip.open(DATA / "tables.json.gz"))
    torch_names = {s: {r["name"] for r in tables[s]["key_averages"]} for s in "ab"}
    assert set(doc["added"]["kernels"]) <= torch_names["b"] - torch_names["a"]

    for side, job in (("base", a), ("exp", b)):
        s = doc[side]
        bd = daemon.get_json(f"/api/v1/jobs/{job}/breakdown")
        assert s["job"] == ("h200_a" if side == "base" else "h200_b") and s["job_id"] == job
        assert s["rank"] is None and s["breakdown_rank"] == bd["rank"]
        assert s["steps_range"] is None  # whole runs (test_diff_steps.py: ranges)
        assert s["steps"] == bd["total"]
        assert s["step_time_us"] == bd["average"]["total_us"]
        assert s["breakdown"] == {k: v for k, v in bd["average"].items() if k != "total_us"}
    assert doc["exp"]["step_time_us"] > doc["base"]["step_time_us"]  # twice the batch

    # the same by numeric ids, and for one rank
    assert daemon.get_json(f"/api/v1/diff?base={a}&exp={b}") == doc  # ids name the same jobs
    one = daemon.get_json("/api/v1/diff?base=h200_a&exp=h200_b&rank=0")
    assert one["operators"] == doc["operators"] and one["base"]["rank"] == 0

    # CSV: the same rows, operators then kernels
    st, hdr, body = daemon.request("/api/v1/diff?base=h200_a&exp=h200_b&format=csv")
    assert st == 200 and hdr["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [r["name"] for r in rows] == ([r["name"] for r in doc["operators"]] +
                                         [r["name"] for r in doc["kernels"]])
    for r, j in zip(rows, doc["operators"] + doc["kernels"]):
        assert r["table"] == ("operator" if "base_self_us" in j else "kernel")
        assert r["status"] == j["status"] and int(r["delta_calls"]) == j["delta_calls"]
        assert float(r["delta_total_us"]) == j["delta_total_us"]
        assert (r["delta_self_us"] == "") == ("delta_self_us" not in j)

    # records (pandas.read_json): the CSV's rows, each an object with the CSV's columns, numbers
    # as numbers and a kernel's self columns null
    st, hdr, body = daemon.request("/api/v1/diff?base=h200_a&exp=h200_b&format=records")
    assert st == 200 and hdr["content-type"].startswith("application/json")
    recs = json.loads(body)
    header = list(rows[0])
    assert len(recs) == len(rows) and all(list(r) == header for r in recs)
    for r, j in zip(recs, doc["operators"] + doc["kernels"]):
        assert r["table"] == ("operator" if "base_self_us" in j else "kernel")
        assert {k: v for k, v in r.items() if k != "table" and v is not None} == j
        assert (r["delta_self_us"] is None) == ("delta_self_us" not in j)

    # a job against itself: no change at all
    same = daemon.get_json("/api/v1/diff?base=h200_b&exp=h200_b")
    assert not same["added"]["operators"] and not same["removed"]["kernels"]
    assert all(r["delta_calls"] == 0 and r["delta_total_us"] == 0 and r["status"] == "both"
               for r in same["operators"] + same["kernels"])


def test_diff_bad_parameters(daemon, tmp):
    imported(daemon, tmp, "h200_a", "trace_a.json.gz")
    for path, status, words in [
        ("/api/v1/diff?base=h200_a", 400, "exp"),
        ("/api/v1/diff?exp=h200_a", 400, "base"),
        ("/api/v1/diff?base=h200_a&exp=nosuch", 404, 'no job "nosuch"'),
        ("/api/v1/diff?base=nosuch&exp=h200_a", 404, 'no job "nosuch"'),
        ("/api/v1/diff?base=h200_a&exp=h200_a&rank=7", 404, "rank"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&rank=x", 400, "rank"),
        ("/api/v1/diff?base=h200_a&exp=h200_a&format=xml", 400, "format"),
    ]:
        doc = daemon.get_json(path, status=status)
        assert words in doc["error"]["message"], (path, doc)
    daemon.assert_alive()
