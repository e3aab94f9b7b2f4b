# SPDX-License-Identifier: MIT
"""The tables of the API as a notebook reads them (issue 13 item 3, issue 18 item 8), against a
real daemon on a real socket with a real Kineto trace (gpu_5steps_rank0: 199 operators, 85
kernels, 5 steps).

- ?format=csv without limit gives every row (the JSON default pages at 100), streamed in chunks;
  X-Total-Count says how many there are, and X-Stepscope-Truncated says so when a limit cuts.
- ?format=records is a bare JSON array of the JSON form's row objects, so pandas.read_json(url)
  gives the table; every tabular route accepts it.
- CSV text cells that a spreadsheet would run as formulas get a leading quote; numbers (negative
  ones too) stay numbers for pandas.
"""
import csv
import io
import json
import pathlib
import shutil
import tempfile

import pandas as pd
import pytest

import tb_breakdown as tb
from conftest import DaemonFactory, daemon_binary
from ssclient import Client, x_event

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"


def url(d, path):
    return "http://%s:%d%s" % (d.host, d.port, path)


@pytest.fixture(scope="module")
def k5d():
    """One daemon holding gpu_5steps_rank0 as job k5, for the module's tests that only read it
    (GETs: their answers and their errors). Alive at the end, and exits 0 on SIGTERM."""
    if not daemon_binary().exists():
        pytest.fail(f"{daemon_binary()} is not built")
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ssi.", dir="/tmp"))
    f = DaemonFactory(tmp)
    try:
        d = f("k5")
        lines = tb.lines(DATA / "gpu_5steps_rank0.json.gz")
        with Client(d.socket) as c:
            c.hello("k5")
            c.send_lines(lines)
            c.wait_ack(len(lines), timeout=60)
        d.wait_for("k5 published", lambda: d.get_json(
            "/api/v1/jobs/k5/breakdown")["spans"] == 67216, timeout=30)
        yield d
    finally:
        problems = f.teardown()
        shutil.rmtree(tmp, ignore_errors=True)
    assert not problems, "\n".join(problems)


@pytest.fixture
def k5(k5d):
    """The job's path; the daemon must still be alive after each test, as with its own."""
    yield "/api/v1/jobs/k5"
    k5d.assert_alive()


def test_csv_gives_every_row_unless_limited(k5d, k5):
    for route, total in (("operators", 199), ("kernels", 85), ("steps", 5), ("breakdown", 5)):
        doc = k5d.get_json(f"{k5}/{route}")
        assert doc["total"] == total
        st, hdr, body = k5d.request(f"{k5}/{route}?format=csv")
        assert st == 200 and hdr["content-type"].startswith("text/csv")
        assert hdr["transfer-encoding"] == "chunked"  # streamed, not one buffer
        rows = list(csv.DictReader(io.StringIO(body.decode())))
        assert len(rows) == total, route
        assert hdr["x-total-count"] == str(total)
        assert "x-stepscope-truncated" not in hdr
        # pandas reads the same rows straight from the URL.
        assert len(pd.read_csv(url(k5d, f"{k5}/{route}?format=csv"))) == total
    # An explicit limit cuts, and the answer says so.
    st, hdr, body = k5d.request(f"{k5}/operators?format=csv&limit=10&offset=5")
    assert len(body.decode().strip().splitlines()) == 11
    assert hdr["x-total-count"] == "199"
    assert hdr["x-stepscope-truncated"] == "rows 5-14 of 199"
    # The rows are those of the JSON pages, in the same order.
    json_rows = k5d.get_json(f"{k5}/operators?limit=100000")["rows"]
    csv_rows = list(csv.DictReader(io.StringIO(k5d.request(
        f"{k5}/operators?format=csv")[2].decode())))
    assert [r["name"] for r in csv_rows] == [r["name"] for r in json_rows]


def test_records_read_straight_into_a_dataframe(k5d, k5):
    for route in ("operators", "kernels", "steps", "breakdown"):
        want = k5d.get_json(f"{k5}/{route}?limit=100000")["rows"]
        st, hdr, body = k5d.request(f"{k5}/{route}?format=records")
        assert st == 200 and hdr["content-type"] == "application/json"
        assert json.loads(body) == want, route
        df = pd.read_json(url(k5d, f"{k5}/{route}?format=records"))
        assert len(df) == len(want) and list(df.columns) == list(want[0]), route
    df = pd.read_json(url(k5d, f"{k5}/operators?format=records"))
    assert df["calls"].dtype.kind == "i" and df["total_us"].dtype.kind in "if"
    assert df["calls"].sum() == sum(r["calls"] for r in k5d.get_json(
        f"{k5}/operators?limit=100000")["rows"])
    # Paged records say what they left out, as CSV does.
    st, hdr, body = k5d.request(f"{k5}/operators?format=records&limit=3")
    assert len(json.loads(body)) == 3 and hdr["x-stepscope-truncated"] == "rows 0-2 of 199"


def test_every_table_route_has_records(k5d, k5):
    jid = k5d.job("k5")["id"]
    routes = {
        "/api/v1/jobs": lambda d: d["jobs"],
        f"{k5}": lambda d: d["ranks_detail"],
        f"{k5}/ranks": lambda d: d["ranks"],
        f"{k5}/queues": None,
        f"/api/v1/jobs/{jid}/summary/operator": lambda d: d["rows"],
        f"/api/v1/jobs/{jid}/benchmark": lambda d: d["rows"],
    }
    for path, rows_of in routes.items():
        sep = "&" if "?" in path else "?"
        st, hdr, body = k5d.request(path + sep + "format=records")
        assert st == 200, (path, body[:200])
        got = json.loads(body)
        assert isinstance(got, list), path
        if rows_of:
            assert got == rows_of(k5d.get_json(path)), path
    # A format no route knows is a 400 naming it.
    doc = k5d.get_json(f"{k5}/steps?format=xml", status=400)
    assert doc["error"]["message"].startswith("format")


def test_json_only_routes_refuse_other_formats(k5d, k5):
    """A route with no table (issue 17 review) answers ?format=json as without it, and refuses
    any other format with a 400 naming format, as a table route refuses an unknown one: a client
    asking for CSV never gets JSON it would take for CSV."""
    routes = ["/api/v1/health", "/api/v1/stats", "/api/v1/openapi.json", f"{k5}/timeline",
              f"{k5}/step-trace", f"{k5}/helper", f"{k5}/captures", f"{k5}/captures/1"]
    for path in routes:
        for fmt in ("csv", "records", "xml", "text"):
            st, hdr, body = k5d.request(f"{path}?format={fmt}")
            assert st == 400, (path, fmt, body[:200])
            err = json.loads(body)["error"]
            assert err["code"] == "bad_request", (path, err)
            assert err["message"].startswith("format:"), (path, err)
        if not path.endswith("/1"):
            assert k5d.request(f"{path}?format=json")[0] == 200, path
    # Every route of the OpenAPI document refuses a format it has not, tables or not; only
    # /metrics (Prometheus text) and the event stream have their own fixed formats.
    doc = k5d.get_json("/api/v1/openapi.json")
    for p, ops in doc["paths"].items():
        if "get" not in ops or p in ("/metrics", "/api/v1/events"):
            continue
        path = p.replace("{job}", "k5").replace("{kind}", "overview").replace("{id}", "1")
        sep = "?base=k5&exp=k5&" if p == "/api/v1/diff" else "?"
        st, _, body = k5d.request(f"{path}{sep}format=xml")
        assert st == 400 and json.loads(body)["error"]["message"].startswith("format:"), (p, st)


def test_out_of_range_names_the_range(k5d, k5):
    """A number out of range says the range allowed (issue 17 review), in the parameter's unit."""
    msg = k5d.get_json(f"{k5}/operators?limit=0", status=400)["error"]["message"]
    assert msg == "limit: out of range (1..100000)"
    doc = k5d.get_json(f"{k5}/gpu/launches?runtime_cutoff_us=-0.5", status=400)
    msg = doc["error"]["message"]
    assert msg == "runtime_cutoff_us: out of range (0..4611686018427387.903)"


def test_formula_cells_are_neutralised_numbers_kept(daemon):
    names = ["=HYPERLINK(\"http://x\",\"y\")", "+1+2", "-cmd", "@SUM(A1)", "plain"]
    lines = [{"type": "step", "step": 1, "begin_us": 1700000000000000,
              "end_us": 1700000000001000}]
    for i, n in enumerate(names):
        lines.append(x_event(i, name=n, cat="cpu_op"))
    with Client(daemon.socket) as c:
        c.hello("=evil", host="-host")
        c.send_lines(lines)
        c.wait_ack(len(lines))
    daemon.wait_for("ops", lambda: daemon.get_json(
        "/api/v1/jobs/%3Devil/operators")["total"] == len(names))
    body = daemon.request("/api/v1/jobs/%3Devil/operators?format=csv")[2].decode()
    got = [r["name"] for r in csv.DictReader(io.StringIO(body))]
    assert sorted(got) == sorted("'" + n if n[0] in "=+-@" else n for n in names)
    # The JSON forms keep the names exactly.
    assert sorted(r["name"] for r in daemon.get_json(
        "/api/v1/jobs/%3Devil/operators")["rows"]) == sorted(names)
    # Numbers are never prefixed: the operator table's numeric columns stay numeric.
    df = pd.read_csv(url(daemon, "/api/v1/jobs/%3Devil/operators?format=csv"))
    assert df["calls"].dtype.kind == "i" and df["total_us"].dtype.kind in "if"
    # Text cells of the job tables too; the job's name and host.
    jobs = list(csv.DictReader(io.StringIO(daemon.request(
        "/api/v1/jobs?format=csv")[2].decode())))
    assert [j["name"] for j in jobs] == ["'=evil"]
    ranks = pd.read_csv(url(daemon, "/api/v1/jobs/%3Devil?format=csv"))
    assert list(ranks["host"]) == ["'-host"]
    assert ranks["pid"].dtype.kind == "i"


def test_negative_numbers_stay_numbers(daemon):
    """A pipeline's root op has parent -1 and an op without workers num_workers -1: those CSV
    cells are the number -1, not a neutralised text, and pandas reads them as integers; an op
    type beginning with '-' is text and is neutralised."""
    pipeline = {"type": "pipeline", "ops": [
        {"id": 0, "name": "-Batch", "children": [1], "num_workers": 2},
        {"id": 1, "name": "Map", "children": []}]}
    with Client(daemon.socket) as c:
        c.hello("neg")
        c.send_lines([pipeline])
        c.wait_ack(1)
    daemon.wait_for("pipeline", lambda: daemon.request("/api/v1/jobs/neg/pipeline")[0] == 200)
    body = daemon.request("/api/v1/jobs/neg/pipeline?format=csv")[2].decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["type"], r["parent"], r["num_workers"]) for r in rows] == [
        ("'-Batch", "-1", "2"), ("Map", "0", "-1")]
    df = pd.read_csv(url(daemon, "/api/v1/jobs/neg/pipeline?format=csv"))
    assert df["parent"].tolist() == [-1, 0] and df["parent"].dtype.kind == "i"
    assert df["num_workers"].tolist() == [2, -1]
    assert daemon.get_json("/api/v1/jobs/neg/pipeline?format=records")[0]["type"] == "-Batch"


def test_link_types_are_text_cells(daemon):
    """A hello's communication links carry a free link type (MindSpore writes HCCS, PCIE, SDMA,
    but any client may send any string of 16 bytes): /cluster/links wrote it raw, so a type
    "=1+2" reached a spreadsheet as a formula and a type with a quote injected a member into the
    JSON. It is a text cell like a name now: neutralised in CSV, escaped in JSON."""
    types = ["=1+2", "@SUM(1)", 'a","x":"y', "-2", "HCCS"]
    links = [[f"0-{i + 1}", t, 3, 100, 10] for i, t in enumerate(types)]
    comm = {"steps": [{"step": 1, "communication_cost": 5, "wait_cost": 1, "links": links}],
            "average": None}
    with Client(daemon.socket) as c:
        c.hello("links", communication=comm)
        c.send_lines([{"type": "step", "step": 1, "begin_us": 1700000000000000,
                       "end_us": 1700000000001000}, {"type": "bye"}])
    path = "/api/v1/jobs/links/cluster/links?step=1"
    daemon.wait_for("links", lambda: daemon.request(path)[0] == 200)
    doc = daemon.get_json(path)
    assert [l["link_type"] for l in doc["links"]] == types
    assert all(set(l) == set(doc["links"][0]) for l in doc["links"]), doc["links"]
    body = daemon.request(path + "&format=csv")[2].decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["link_type"] for r in rows] == ["'=1+2", "'@SUM(1)", 'a","x":"y', "'-2", "HCCS"]
    df = pd.read_csv(url(daemon, path + "&format=csv"))
    assert df["communication_size_bytes"].dtype.kind == "i" and len(df) == len(types)
    assert [r["link_type"] for r in daemon.get_json(path + "&format=records")] == types
