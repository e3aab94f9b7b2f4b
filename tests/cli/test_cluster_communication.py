# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/cluster/communication and /cluster/links: MindInsight's cluster
communication, against the real daemon, after a real `stepscope import` of a MindSpore folder
holding hccl_raw_0.csv (tests/data/mindspore/09_cluster_modes/hccl_sample, MindSpore's own format
sample). Every figure is computed here from the CSV's text, independently of the importer:
ms -> ns and KB -> bytes exactly with Decimal (MindSpore's KB is 1000 bytes)."""
import csv
import decimal
import io
import json
import shutil

import pytest

from test_cluster_step_trace import wait_json
from test_import import DATA, Client, assert_nothing_sent, run_import

RUN = "hccl_sample"
FOLDER = DATA / "mindspore" / "09_cluster_modes" / RUN
HCCL = FOLDER / "hccl_raw_0.csv"


def exact(text, shift):
    """The decimal text times 10^shift, rounded half away from zero, as an int."""
    d = decimal.Decimal(text).scaleb(shift)
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP if d >= 0
                                   else decimal.ROUND_HALF_DOWN))


def us_to_ns(us):
    return exact(repr(us), 3)


def expected_rows():
    """{step or 0 (the "-" average): (cost_ns, wait_ns, [(src, dst, type, cost_ns, size_b, bw)])}"""
    out = {}
    with HCCL.open(newline="") as fh:
        for row in csv.DictReader(fh):
            step = 0 if row["step_num"] == "-" else int(row["step_num"])
            # the numbers as written: parse_float keeps their text
            info = json.loads(row["link_info"], parse_float=str, parse_int=str)
            links = [(int(sd.split("-")[0]), int(sd.split("-")[1]), ty, exact(v[0], 6),
                      exact(v[1], 3), exact(v[2], 3))
                     for sd, types in info.items() for ty, v in types.items()]
            out[step] = (exact(row["communication_cost"], 6), exact(row["wait_cost"], 6), links)
    return out


def ours_links(doc):
    return [(l["src_rank"], l["dst_rank"], l["link_type"], us_to_ns(l["communication_cost_us"]),
             l["communication_size_bytes"], l["band_width_bytes_per_s"]) for l in doc["links"]]


def test_every_figure_of_hccl_raw(daemon):
    p = run_import(daemon, FOLDER)
    assert p.returncode == 0, p.stderr
    exp = expected_rows()
    assert sorted(exp) == [0, 1, 2, 3, 4, 5, 6]
    for step, (cost, wait, links) in exp.items():
        arg = f"?step={step}" if step else ""
        doc = wait_json(daemon, f"/api/v1/jobs/{RUN}/cluster/communication{arg}")
        assert doc["step"] == (step or "average") and doc["last_step"] == 6
        assert doc["average_from"] == (None if step else "mindspore")
        assert [r["rank"] for r in doc["ranks"]] == [0]
        r = doc["ranks"][0]
        assert (us_to_ns(r["communication_cost_us"]), us_to_ns(r["wait_cost_us"])) == (cost, wait)
        sep = "&" if arg else "?"
        ld = wait_json(daemon, f"/api/v1/jobs/{RUN}/cluster/links{arg}{sep}limit=1000")
        assert ld["total"] == len(links) and ld["offset"] == 0
        assert all(l["rank"] == 0 and l["src_dst"] == f"{l['src_rank']}-{l['dst_rank']}"
                   for l in ld["links"])
        # the default order: src_dst
        assert ours_links(ld) == sorted(links, key=lambda t: (t[0], t[1], t[2])), step
    # CSV: the same figures
    st, _, body = daemon.request(f"/api/v1/jobs/{RUN}/cluster/communication?step=2&format=csv")
    assert st == 200
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(int(r["rank"]), exact(r["communication_cost_us"], 3), exact(r["wait_cost_us"], 3))
            for r in rows] == [(0, exp[2][0], exp[2][1])]
    st, _, body = daemon.request(f"/api/v1/jobs/{RUN}/cluster/links?step=2&format=csv")
    assert st == 200
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(int(r["src_rank"]), int(r["dst_rank"]), r["link_type"],
             exact(r["communication_cost_us"], 3), int(r["communication_size_bytes"]),
             int(r["band_width_bytes_per_s"])) for r in rows] == \
        sorted(exp[2][2], key=lambda t: (t[0], t[1], t[2]))


KEYS = {"src_dst": lambda t: (t[0], t[1]), "link_type": lambda t: t[2],
        "communication_cost": lambda t: t[3], "communication_size": lambda t: t[4],
        "band_width": lambda t: t[5]}


@pytest.mark.parametrize("key", sorted(KEYS))
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_links_sort_filter_and_page(daemon, key, order):
    assert run_import(daemon, FOLDER).returncode == 0
    links = expected_rows()[0][2]
    base = f"/api/v1/jobs/{RUN}/cluster/links"
    doc = wait_json(daemon, f"{base}?sort={key}&order={order}")
    got = ours_links(doc)
    # the key's order (ties: src, dst, type, ascending)
    assert [KEYS[key](t) for t in got] == [KEYS[key](t) for t in
                                           sorted(links, key=KEYS[key], reverse=order == "desc")]
    assert sorted(got) == sorted(links)
    # filters
    for q, pred in (("src_rank=1", lambda t: t[0] == 1), ("dst_rank=0", lambda t: t[1] == 0),
                    ("src_rank=0&dst_rank=0", lambda t: t[:2] == (0, 0)),
                    ("link_type=SDMA", lambda t: t[2] == "SDMA"),
                    ("link_type=RDMA", lambda t: t[2] == "RDMA")):
        d = wait_json(daemon, f"{base}?{q}&sort={key}&order={order}")
        assert sorted(ours_links(d)) == sorted(t for t in links if pred(t)), q
        assert d["total"] == len(d["links"])
    # pages
    one = wait_json(daemon, f"{base}?sort={key}&order={order}&offset=1&limit=1")
    assert one["total"] == len(links) and one["offset"] == 1
    assert ours_links(one) == got[1:2]


def test_bad_parameters_and_jobs_without_hccl(daemon):
    assert run_import(daemon, FOLDER).returncode == 0
    wait_json(daemon, f"/api/v1/jobs/{RUN}/cluster/communication")
    for route, bad in (("links", "sort=cost"), ("links", "order=up"), ("links", "src_rank=x"),
                       ("links", "limit=0"), ("communication", "step=-1"),
                       ("communication", "format=xml")):
        st, _, body = daemon.request(f"/api/v1/jobs/{RUN}/cluster/{route}?{bad}")
        assert st == 400 and bad.split("=")[0].encode() in body, (route, bad, st, body)
    for route in ("communication", "links"):
        st, _, body = daemon.request(f"/api/v1/jobs/{RUN}/cluster/{route}?step=7")
        assert st == 404 and b"no rank has this step" in body, body
    # a job with steps but no hccl_raw: an empty answer (the Cluster page asks any job) whose
    # reason says where the figures come from; an unknown job is still a 404
    with Client(daemon.socket) as c:
        c.hello("nohccl", rank=0, world_size=1)
        c.send_lines([{"type": "step", "step": 1, "begin_us": 1_700_000_000_000_000,
                       "end_us": 1_700_000_000_001_000}, {"type": "bye"}])
    wait_json(daemon, "/api/v1/jobs/nohccl/steps")
    for route, rows in (("communication", "ranks"), ("links", "links")):
        for arg in ("", "?step=1"):
            doc = wait_json(daemon, f"/api/v1/jobs/nohccl/cluster/{route}{arg}")
            assert doc[rows] == [] and "hccl_raw" in doc["reason"], doc
            assert doc["average_from"] is None
        st, _, body = daemon.request(f"/api/v1/jobs/nohccl/cluster/{route}?format=csv")
        assert st == 200 and body.count(b"\n") == 1, body  # the header alone
        st, _, body = daemon.request(f"/api/v1/jobs/nosuchjob/cluster/{route}")
        assert st == 404, body
    assert wait_json(daemon, f"/api/v1/jobs/{RUN}/cluster/communication")["reason"] is None


def cell_of(text, line_no):
    return text.split("\n")[line_no - 1]


@pytest.mark.parametrize("mutate,where,reason", [
    # cut inside step 3's (line 4's) quoted link_info cell
    (lambda t: t[:t.index("\n3,") + 60], "line 4, column ", "quoted field never closed"),
    (lambda t: t.replace('[2.5209099999999998, 52706.81599999999, 217031150.47579023]',
                         '[2.5209099999999998, 52706.81599999999]', 1),
     "line 2, column ", "link_info: character "),
    (lambda t: t.replace('""1-0"": {""SDMA""', '""1_0"": {""SDMA""', 1), "line 2, column ",
     "link_info: character "),
    (lambda t: t.replace("\n2,2.5965000000000003,", "\n2,-2.5965000000000003,", 1),
     "line 3, column ", "communication_cost: negative"),
    (lambda t: t.replace("\n4,", "\n3,", 1), "line 5, column 1", "step_num"),
    (lambda t: t.replace("wait_cost,", "wait,", 1), "line 1", "wait_cost"),
    (lambda t: t[:t.index("\n") + 1], "line ", "no step rows"),
], ids=["truncated", "link-arity", "link-name", "negative", "step-order", "header", "no-rows"])
def test_bad_hccl_raw_is_reported_and_nothing_sent(daemon, tmp, mutate, where, reason):
    d = tmp / RUN
    shutil.copytree(FOLDER, d)
    f = d / "hccl_raw_0.csv"
    f.write_text(mutate(f.read_text()))
    p = run_import(daemon, d)
    assert p.returncode == 3, p.stderr
    assert f"{f}: {where}" in p.stderr and reason in p.stderr, p.stderr
    assert_nothing_sent(daemon)
