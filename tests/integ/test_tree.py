# SPDX-License-Identifier: MIT
"""/api/v1/jobs/{job}/tree?kind=operator: Paddle's operator tree (operator -> inner calls ->
the device events launched from each) on a real CUDA run, against torch's own key_averages() of
the same window.

tests/data/kineto/cuda_views_h200/trace_a.json.gz is torch 2.11's Kineto export of a window on an
NVIDIA H200 and tables.json.gz torch's prof.key_averages() of it (tests/data/README.md). Every
operator node's calls, CPU total and self time, device total and self device time must equal
torch's row of that name: torch hangs a kernel on the operator whose runtime call launched it
(correlation) and sums device time over an operator's children, as Paddle's operator summary
does. (Paddle's own summary is the oracle in tests/frameworks/test_paddle_summary.py.)
"""
import csv
import gzip
import io
import json
import pathlib
import subprocess
import sys

from conftest import build_dir, clean_env

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "device"))
import check_cuda_attach as cca  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cuda_views_h200"


def imported(d, tmp, job, path):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", d.socket, "--job", job, str(path)],
                         capture_output=True, text=True, timeout=120, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr


def walk(nodes, parent=None, depth=0):
    """The nested JSON as flat (node, parent id, depth) in pre-order."""
    for n in nodes:
        yield n, parent, depth
        yield from walk(n["children"], n["id"], depth + 1)


def test_operator_tree_equals_torch_key_averages(daemon, tmp):
    ka = json.loads(gzip.decompress((DATA / "tables.json.gz").read_bytes()))["a"]["key_averages"]
    trace = json.loads(gzip.decompress((DATA / "trace_a.json.gz").read_bytes()))["traceEvents"]
    imported(daemon, tmp, "tree-a", DATA / "trace_a.json.gz")
    doc = daemon.get_json("/api/v1/jobs/tree-a/tree?kind=operator")
    assert doc["kind"] == "operator" and doc["spans_cut"] == 0 and doc["lines_bad"] == 0
    # every kernel, memcpy and memset of the window was launched by a runtime call of it
    n_dev = sum(1 for e in trace if isinstance(e, dict) and e.get("ph") == "X" and
                e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    assert doc["device_events"] == doc["device_events_linked"] == n_dev > 100, doc
    flat = list(walk(doc["nodes"]))
    assert len(flat) == doc["n_nodes"]
    top = {n["name"]: n for n, p, dep in flat if dep == 0}
    assert all(n["kind"] == "operator" for n in top.values())
    cpu_ops = {e["name"] for e in trace if isinstance(e, dict) and e.get("cat") == "cpu_op"}
    # (autograd::engine::evaluate_function spans are cpu_ops that the roles call backward)
    assert set(top) <= cpu_ops and len(top) >= 40
    torch_rows = {a["name"]: a for a in ka if a["device_type"] in ("CPU", None)}
    checked = 0
    for name, n in top.items():
        if name in cca.TORCH_FILTERED:
            continue
        a = torch_rows[name]
        assert n["calls"] == a["count"], (name, n, a)
        for ours, theirs in ((n["total_us"], a["cpu_total_us"]), (n["self_us"], a["self_cpu_us"]),
                             (n["device_us"], a["cuda_total_us"]),
                             (n["self_device_us"], a["self_cuda_us"])):
            assert cca.close(ours, theirs, a["count"]), (name, ours, theirs, n, a)
        checked += 1
    assert checked >= 40 and sum(n["device_us"] > 0 for n in top.values()) >= 10
    # a node's device children are the events its own runtime calls launched: they sum to its
    # self device time; ids are unique and stable across answers
    for n, p, dep in flat:
        kids = [c for c in n["children"] if c["kind"] == "device"]
        if n["kind"] != "device":
            assert abs(sum(c["device_us"] for c in kids) - n["self_device_us"]) < 0.002 * (len(kids) + 1)
        else:
            assert n["total_us"] is None and n["children"] == [] and dep >= 1
    ids = [n["id"] for n, p, dep in flat]
    assert len(set(ids)) == len(ids)
    again = daemon.get_json("/api/v1/jobs/tree-a/tree?kind=operator&steps=3-5")
    again_ids = {n["id"]: n["name"] for n, p, dep in walk(again["nodes"])}
    assert again["n_steps"] == 3 and {i: x for i, x in again_ids.items() if i in ids} == again_ids
    # the flat forms: the same nodes in the same order with their parent id and depth
    recs = daemon.get_json("/api/v1/jobs/tree-a/tree?format=records")
    assert [(r["id"], r["parent"], r["depth"], r["name"], r["calls"]) for r in recs] == \
        [(n["id"], p, dep, n["name"], n["calls"]) for n, p, dep in flat]
    st, hdr, body = daemon.request("/api/v1/jobs/tree-a/tree?format=csv")
    assert st == 200 and hdr["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["id"], r["parent"] or None, int(r["depth"]), r["kind"]) for r in rows] == \
        [(r["id"], r["parent"], r["depth"], r["kind"]) for r in recs]


def test_tree_errors(daemon, tmp):
    imported(daemon, tmp, "tree-e", DATA / "trace_a.json.gz")
    for q, st in (("kind=nope", 400), ("format=text", 400), ("steps=900-901", 404),
                  ("rank=3", 404)):
        got = daemon.request(f"/api/v1/jobs/tree-e/tree?{q}")[0]
        assert got == st, (q, got)
    assert daemon.request("/api/v1/jobs/no-such-job/tree")[0] == 404


def tb_modules(name):
    return json.loads((DATA.parent / name).read_text())["modules"]


def test_module_view_equals_tb_profiler(daemon, tmp):
    """/tree?kind=module against torch-tb-profiler 0.4.3's own module view of the same trace
    (tests/analyse/tb_profiler_modules.py, its answers committed beside the trace): the same
    modules, nested the same way, with tb-profiler's occurrences, operators, host and self host
    time; device and self device time against the plugin run with torch 2.x's cuda_runtime
    category read as its "Runtime" (0.4.3 does not know cuda_runtime and links no kernel)."""
    plain = tb_modules("cuda_views_h200/trace_a.tb_modules.json")
    linked = tb_modules("cuda_views_h200/trace_a.tb_modules_runtime.json")
    imported(daemon, tmp, "mod-a", DATA / "trace_a.json.gz")
    doc = daemon.get_json("/api/v1/jobs/mod-a/tree?kind=module")
    assert doc["kind"] == "module" and doc["module_spans"] == 50 and doc["n_steps"] == 5

    def near(ours, theirs, terms):
        return abs(ours - theirs) <= 0.003 * terms + 1e-6

    def check(ours, host, dev, path):
        assert [n["name"] for n in ours] == [m["name"] for m in host] == [m["name"] for m in dev], path
        for n, h, d in zip(ours, host, dev):
            where = path + [n["name"]]
            occ = h["occurences"]
            terms = occ * (2 + len(h["children"]) + h["operators"])
            assert (n["kind"], n["calls"], n["operators"]) == ("module", occ, h["operators"]), where
            assert near(n["total_us"], h["host_duration"], occ), (where, n, h)
            assert near(n["self_us"], h["self_host_duration"], terms), (where, n, h)
            assert (h["device_duration"], h["self_device_duration"]) == (0, 0)
            assert near(n["device_us"], d["device_duration"], terms), (where, n, d)
            assert near(n["self_device_us"], d["self_device_duration"], terms), (where, n, d)
            check(n["children"], h["children"], d["children"], where)

    check(doc["nodes"], plain, linked, [])
    assert sum(n["device_us"] > 0 for n in doc["nodes"][1]["children"]) == 7
    # the flat form: a module's operators after its name
    st, hdr, body = daemon.request("/api/v1/jobs/mod-a/tree?kind=module&format=csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["name"], r["depth"], r["operators"]) for r in rows][:3] == \
        [("CrossEntropyLoss_0", "0", "5"), ("Sequential_0", "0", "0"), ("Conv2d_0", "1", "5")]


def test_module_view_without_module_events(daemon, tmp):
    """No module spans, no module tree, as tb-profiler (its view is None): a Kineto trace whose
    "Module Hierarchy" args are empty, and a CPU trace of Debian's torch 1.13 (no Kineto: its
    legacy export has no python_function events, so with_modules=True adds nothing)."""
    assert tb_modules("cpu_ops_rank_non_gpu.tb_modules.json") is None
    imported(daemon, tmp, "mod-none", DATA.parent / "cpu_ops_rank_non_gpu.json.gz")
    doc = daemon.get_json("/api/v1/jobs/mod-none/tree?kind=module")
    assert (doc["module_spans"], doc["n_nodes"], doc["nodes"]) == (0, 0, [])
    assert daemon.get_json("/api/v1/jobs/mod-none/tree?kind=operator")["n_nodes"] > 10
    out = tmp / "t113.json"
    script = (
        "import sys, torch\n"
        "net = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())\n"
        "with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],\n"
        "                            with_modules=True, with_stack=True) as p:\n"
        "    for _ in range(2):\n"
        "        net(torch.randn(2, 8)).sum().backward()\n"
        "p.export_chrome_trace(sys.argv[1])\n")
    r = subprocess.run(["/usr/bin/python3", "-c", script, str(out)], capture_output=True,
                       text=True, timeout=300, env=clean_env(tmp))
    assert r.returncode == 0, r.stderr
    events = json.loads(out.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert len(events) > 20 and not [e for e in events if e.get("cat") == "python_function"]
    imported(daemon, tmp, "mod-113", out)
    doc = daemon.get_json("/api/v1/jobs/mod-113/tree?kind=module")
    assert (doc["module_spans"], doc["n_nodes"]) == (0, 0)


def test_tree_fits_a_budget_the_operator_table_fits(daemons, tmp):
    """The tree reserves no more than it can hold: the rendered part at most max_response_bytes
    (no answer is larger), a span counted as host or device, not both. On a 1 M-span rank the
    first version asked 1.24 GiB and answered 413 under the default 1 GiB budget while
    /summary/operator ran; here the same proportions on the H200 trace (8.6 k events): a 10 MiB
    budget holds the operator table and both trees, 4 MiB none of them."""
    d = daemons("d", config="http_analysis_max_bytes = 10485760\nmax_response_bytes = 1048576\n")
    imported(d, tmp, "fit", DATA / "trace_a.json.gz")
    for route in ("summary/operator", "tree?kind=operator", "tree?kind=module"):
        st, _, body = d.request(f"/api/v1/jobs/fit/{route}")
        assert st == 200, (route, st, body[:300])
    small = daemons("s", config="http_analysis_max_bytes = 4194304\n")
    imported(small, tmp, "fit", DATA / "trace_a.json.gz")
    for route in ("summary/operator", "tree?kind=operator", "tree?kind=module"):
        st, _, body = small.request(f"/api/v1/jobs/fit/{route}")
        assert st == 413 and b"analysis_too_large" in body, (route, st, body[:300])
