# SPDX-License-Identifier: MIT
"""`stepscope import` against the real daemon.

Every test starts its own stepscoped (conftest.py) and runs the built CLI
(<BUILD_DIR>/cli/stepscope). Expected event counts and event objects come from
Python's json module reading the same files, never from the importer itself.
"""
import decimal
import gzip
import json
import os
import pathlib
import subprocess
import sys
import urllib.parse

import pytest

import integ_conftest as integ

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integ"))
from ssclient import Client  # noqa: E402  (the integration suite's protocol client)
DATA = REPO / "tests" / "data"  # real traces, with their sources and licences (README.md there)
KINETO = sorted((DATA / "kineto").glob("*.json.gz"))
MS_TIMELINES = sorted((DATA / "mindspore" / "11_timeline").glob("*_timeline_display_*.json"))
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch (torch without Kineto)


def cli():
    exe = integ.build_dir() / "cli" / "stepscope"
    if not exe.exists():
        pytest.fail(f"{exe} is not built: ninja -C {integ.build_dir()}")
    return exe


def run(args, tmp, timeout=300, env=None):
    """The CLI with args; env: variables to add to the clean environment."""
    full = integ.clean_env(tmp)
    full.update(env or {})
    return subprocess.run([str(cli())] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=full, stdin=subprocess.DEVNULL)


def run_import(daemon, *args, timeout=300, env=None):
    return run(["import", "--socket", daemon.socket, *args], daemon.tmp, timeout=timeout, env=env)


SPLIT = {"STEPSCOPE_IMPORT_SPLIT_BYTES": "1"}  # pass 1 in two halves whatever the size
ONE_PIECE = {"STEPSCOPE_IMPORT_SPLIT_BYTES": "0"}


def read_bytes(path):
    raw = pathlib.Path(path).read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def trace_events(path):
    doc = json.loads(read_bytes(path))
    return doc if isinstance(doc, list) else doc["traceEvents"]


def torch_order(path):
    """The file's events in the order the importer sends them (cli/import/span_order.h): each thread's ("pid",
    "tid") X events sorted stably by (ts, -dur), into the places that thread's X events held;
    every other event where it was. Keys are read exactly (Decimal), as the importer reads ns."""
    exact = json.loads(read_bytes(path), parse_float=decimal.Decimal)
    exact = exact if isinstance(exact, list) else exact["traceEvents"]
    events = trace_events(path)
    places = {}
    for i, e in enumerate(exact):
        if e.get("ph") == "X":
            places.setdefault((json.dumps(e.get("pid")), json.dumps(e.get("tid"))), []).append(i)
    out = list(events)
    for idx in places.values():
        for at, i in zip(idx, sorted(idx, key=lambda i: (exact[i]["ts"],
                                                         -(exact[i]["ts"] + exact[i]["dur"])))):
            out[at] = events[i]
    return out


def q(name):
    return urllib.parse.quote(name, safe="")


def job_or_none(daemon, name):
    st, _, body = daemon.request(f"/api/v1/jobs/{q(name)}")
    if st == 404:
        return None
    assert st == 200, body
    return json.loads(body)


def timeline(daemon, name, rank=None):
    # max_bytes up to max_response_bytes (64 MiB): the default 20 MB cap would cut the largest trace.
    path = f"/api/v1/jobs/{q(name)}/timeline?limit=10000000&max_bytes=67108864"
    if rank is not None:
        path += f"&rank={rank}"
    doc = daemon.get_json(path)
    assert doc["otherData"]["truncated"] is False
    # The export names each rank's processes ("M" process_name "rank r" and process_sort_index r,
    # docs/API.md); drop exactly those and check their count, so what remains is what was sent.
    added = [e for e in doc["traceEvents"] if is_rank_metadata(e)]
    assert len(added) == doc["otherData"]["metadata_events"], added[:4]
    return metadata_last([e for e in doc["traceEvents"] if not is_rank_metadata(e)])


def metadata_last(events):
    """Events as the store gives them back, for comparing with what was sent: metadata ("ph"
    "M": thread_name, process_name, ...) is stored apart from the timed events so that every
    time window carries it (docs/API.md), so its place among them is not kept; every other
    event keeps its order, and the metadata comes after them, in a canonical order."""
    meta = [e for e in events if e.get("ph") == "M"]
    return ([e for e in events if e.get("ph") != "M"] +
            sorted(meta, key=lambda e: json.dumps(e, sort_keys=True)))


def is_rank_metadata(e):
    """Exactly the shape the export writes (daemon/web/timeline.c tl_name_pid): no ts, tid 0, args naming
    the rank. Metadata events of the trace itself (Kineto's carry a ts) never match."""
    if e.get("ph") != "M" or set(e) != {"ph", "name", "pid", "tid", "args"} or e["tid"] != 0:
        return False
    args = e["args"]
    if e["name"] == "process_name":
        return set(args) == {"name"} and str(args["name"]).startswith("rank ")
    return e["name"] == "process_sort_index" and set(args) == {"sort_index"}


def assert_ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"


# -- formats ----------------------------------------------------------------------------------

@pytest.mark.parametrize("path", KINETO, ids=[p.name for p in KINETO])
def test_kineto_file_exact_count_and_events(daemon, path):
    events = trace_events(path)
    job = path.name[:-len(".json.gz")]
    p = run_import(daemon, path)
    assert_ok(p)
    # Exit 0 means acknowledged, i.e. durable: the count must be there at once, no waiting.
    j = job_or_none(daemon, job)
    assert j is not None, f"no job {job!r}"
    assert j["events"] == len(events)
    assert len(j["ranks_detail"]) == 1
    assert j["ranks_detail"][0]["framework"] == "torch"
    # The timeline gives back the same event objects, in the order they were sent: the file's,
    # but each thread's spans in torch's order.
    assert timeline(daemon, job) == metadata_last(torch_order(path))
    st = daemon.stats()
    assert st["malformed"] == st["invalid"] == st["unknown"] == st["oversized"] == 0
    assert st["records"]["trace"] == len(events)


def test_kineto_rank_and_world_size_from_distributed_info(daemon):
    path = DATA / "kineto" / "cpu_only_rank34.json.gz"
    assert_ok(run_import(daemon, path))
    j = job_or_none(daemon, "cpu_only_rank34")
    assert [r["rank"] for r in j["ranks_detail"]] == [34]
    assert j["world_size"] == 300


def test_rank_option_and_job_option(daemon):
    path = DATA / "kineto" / "rocm_minitoy_3steps.json.gz"
    p = run_import(daemon, "--job", "team/rocm", "--rank", "5", path)
    assert_ok(p)
    j = job_or_none(daemon, "team/rocm")
    assert [r["rank"] for r in j["ranks_detail"]] == [5]
    assert j["world_size"] == 6
    assert j["events"] == len(trace_events(path))


def make_legacy_torch_trace(out):
    """A trace from torch without Kineto (Debian's python3-torch): a bare JSON array of ph X."""
    script = (
        "import sys, torch\n"
        "from torch.profiler import profile, ProfilerActivity\n"
        "m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),\n"
        "                        torch.nn.Linear(4 * 6 * 6, 2))\n"
        "x = torch.randn(2, 3, 8, 8)\n"
        "with profile(activities=[ProfilerActivity.CPU]) as prof:\n"
        "    for _ in range(3):\n"
        "        m(x).sum().backward()\n"
        "prof.export_chrome_trace(sys.argv[1])\n")
    try:
        r = subprocess.run([SYSTEM_PYTHON, "-c", script, str(out)], capture_output=True, text=True,
                           timeout=300)
    except FileNotFoundError:
        pytest.skip(f"{SYSTEM_PYTHON} not found")
    if r.returncode != 0 and "No module named 'torch'" in r.stderr:
        pytest.skip("Debian's python3-torch is not installed (apt-get install python3-torch)")
    assert r.returncode == 0, r.stderr


def test_legacy_torch_array(daemon, tmp):
    path = tmp / "legacy.json"
    make_legacy_torch_trace(path)
    events = trace_events(path)
    assert isinstance(json.loads(path.read_text()), list), "expected the legacy bare-array layout"
    assert events and all(e["ph"] == "X" for e in events)
    p = run_import(daemon, path)
    assert_ok(p)
    assert "torch-legacy" in p.stdout
    j = job_or_none(daemon, "legacy")
    assert j["events"] == len(events)
    assert j["ranks_detail"][0]["framework"] == "torch"
    assert timeline(daemon, "legacy") == metadata_last(events)


@pytest.mark.parametrize("path", MS_TIMELINES, ids=[p.name for p in MS_TIMELINES])
def test_mindspore_timeline(daemon, path):
    events = trace_events(path)
    job = path.stem
    p = run_import(daemon, path)
    assert_ok(p)
    assert "mindspore-timeline" in p.stdout
    j = job_or_none(daemon, job)
    assert j["events"] == len(events)
    assert j["ranks_detail"][0]["framework"] == "mindspore"
    assert timeline(daemon, job) == metadata_last(events)


def test_chrome_trace_of_unknown_origin(daemon, tmp):
    """A generic Chrome trace (pretty-printed, newlines inside events) goes in as it is."""
    events = [{"ph": "B", "name": "a", "ts": 1, "pid": 1, "tid": 1},
              {"ph": "E", "ts": 2.5, "pid": 1, "tid": 1},
              {"ph": "C", "name": "mem", "ts": 3, "pid": 1, "args": {"v": [1, {"x": "é\n"}]}},
              {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "p"}}]
    path = tmp / "generic.json"
    path.write_text(json.dumps({"traceEvents": events, "otherData": {"x": 1}}, indent=2,
                               ensure_ascii=False))
    p = run_import(daemon, path)
    assert_ok(p)
    j = job_or_none(daemon, "generic")
    assert j["events"] == 4
    assert j["ranks_detail"][0]["framework"] == "unknown"
    assert timeline(daemon, "generic") == metadata_last(events)


# -- idempotence and several files ------------------------------------------------------------

def test_reimport_adds_nothing(daemon):
    path = DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz"
    n = len(trace_events(path))
    assert_ok(run_import(daemon, path))
    before = daemon.stats()
    p = run_import(daemon, path)
    assert_ok(p)
    assert f"0 sent, {n} already held" in p.stdout
    j = job_or_none(daemon, "cpu_ops_rank_non_gpu")
    assert j["events"] == n
    after = daemon.stats()
    assert after["records"]["trace"] == before["records"]["trace"]
    assert after["duplicates"] == 0  # skipped by the importer, not even resent


def spooled_trace(tmp, n):
    """A Kineto-layout file of n X events, pretty-printed so that events span several lines."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 13}", "pid": 1, "tid": 1,
               "ts": 1700000000000000.0 + i * 3.5, "dur": 1.25 + i % 7, "args": {"i": i}}
              for i in range(n)]
    path = tmp / "resume.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    return path, events


def import_stream_key(path):
    """The stream key the importer names a file by (cli/import/import.c build_hello)."""
    st = os.stat(path)
    return (f"import:{os.path.realpath(path)}:{st.st_size}:"
            f"{st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d}")


def test_resume_sends_only_what_the_daemon_lacks(daemon, tmp):
    """A first session that broke after k events (here: sent by hand under the importer's stream
    key) leaves next_seq = k; the import then streams its spooled lines from line k on, which
    lies between two of the spool's indexed offsets (SPOOL_INDEX_EVERY is 4096)."""
    n, k = 9000, 5000
    path, events = spooled_trace(tmp, n)
    with Client(daemon.socket) as c:
        c.hello("resume", rank=0, stream=import_stream_key(path))
        assert c.welcome["next_seq"] == 0
        c.send_lines(events[:k])
        c.wait_ack(k)
    p = run_import(daemon, "--job", "resume", path)
    assert_ok(p)
    assert f"{n - k} sent, {k} already held, 0 rejected" in p.stdout
    st = daemon.stats()
    assert st["records"]["trace"] == n and st["duplicates"] == 0
    assert job_or_none(daemon, "resume")["events"] == n
    assert timeline(daemon, "resume") == metadata_last(events)


def test_without_a_temporary_file_the_file_is_read_twice(daemon, tmp):
    """TMPDIR unusable: pass 2 reads and scans the trace again, with the same result."""
    path, events = spooled_trace(tmp, 5000)
    env = integ.clean_env(tmp)
    env["TMPDIR"] = str(tmp / "no-such-dir")
    p = subprocess.run([str(cli()), "import", "--socket", daemon.socket, "--job", "twice",
                        str(path)], capture_output=True, text=True, timeout=300, env=env,
                       stdin=subprocess.DEVNULL)
    assert_ok(p)
    assert "will be read a second time" in p.stderr
    assert "5000 sent, 0 already held" in p.stdout
    assert timeline(daemon, "twice") == metadata_last(events)


def split_trace(tmp, n, name="split.json"):
    """Kineto layout with top-level facts after the events (as Kineto writes traceName and
    baseTimeNanoseconds), which only the second half's scanner sees."""
    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 13}", "pid": 1, "tid": 1,
               "ts": 1700000000000000.0 + i * 3.5, "dur": 1.25 + i % 7, "args": {"i": i}}
              for i in range(n)]
    body = ",\n".join(json.dumps(e, indent=2) for e in events)
    path = tmp / name
    path.write_text('{"schemaVersion": 1, "traceEvents": [\n' + body + '\n],\n'
                    '"distributedInfo": {"backend": "nccl", "rank": 5, "world_size": 8},\n'
                    '"traceName": "t", "baseTimeNanoseconds": 1700000000000000000}\n')
    return path, events


def test_split_pass1_equals_one_piece(daemon, tmp):
    """A file validated in two halves at once imports exactly as in one piece: every event in
    order, and the facts after traceEvents (rank and world size from distributedInfo)."""
    path, events = split_trace(tmp, 6000)
    p = run_import(daemon, "--job", "halves", path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" in p.stderr
    assert "6000 sent, 0 already held" in p.stdout and "rank 5 of 8" in p.stdout
    j = job_or_none(daemon, "halves")
    assert j["events"] == 6000 and [r["rank"] for r in j["ranks_detail"]] == [5]
    assert timeline(daemon, "halves") == metadata_last(events)


def test_split_bare_array_as_one_piece(daemon, tmp):
    """Legacy torch's layout (a top-level array of events) is cut and joined the same way."""
    events = [{"name": f"aten::op{i % 5}", "ph": "X", "ts": 1000 + i * 3, "dur": 2, "tid": 1,
               "pid": "CPU functions", "args": {"i": i}} for i in range(3000)]
    path = tmp / "legacy.json"
    path.write_text(json.dumps(events))
    p = run_import(daemon, "--job", "legacy", path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" in p.stderr and "torch (torch-legacy)" in p.stdout, p.stdout
    assert timeline(daemon, "legacy") == metadata_last(events)


def test_split_resume_in_the_second_half(daemon, tmp):
    n, k = 9000, 7000
    path, events = split_trace(tmp, n)
    with Client(daemon.socket) as c:
        c.hello("resume2", rank=5, world_size=8, stream=import_stream_key(path))
        c.send_lines(events[:k])
        c.wait_ack(k)
    p = run_import(daemon, "--job", "resume2", path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" in p.stderr
    assert f"{n - k} sent, {k} already held, 0 rejected" in p.stdout
    assert daemon.stats()["duplicates"] == 0
    assert timeline(daemon, "resume2") == metadata_last(events)


@pytest.mark.parametrize("where", [1 / 4, 3 / 4])
def test_split_error_in_either_half_as_in_one_piece(daemon, tmp, where):
    """A bad event in the first or the second half: the error names the byte, line and column
    exactly as a scan in one piece does (a second half's failure makes the first half's scan go
    on to the end and meet it there), and nothing is sent."""
    path, _ = split_trace(tmp, 6000)
    text = path.read_bytes()
    at = text.index(b'"dur": 2.25', int(len(text) * where))
    path.write_bytes(text[:at] + b'"dur": -2.25' + text[at + len(b'"dur": 2.25'):])
    p1 = run_import(daemon, "--job", "bad", path, env=SPLIT)
    p2 = run_import(daemon, "--job", "bad", path, env=ONE_PIECE)
    assert p1.returncode == p2.returncode == 3
    assert p1.stderr == p2.stderr and '"dur" must be >= 0' in p1.stderr and "line " in p1.stderr
    start = text.rindex(b"{", 0, at)  # an event's error is told at its '{'
    line = text[:start].count(b"\n") + 1
    assert f"byte {start} (line {line}, column" in p1.stderr, p1.stderr
    assert_nothing_sent(daemon)


def test_split_without_a_temporary_file_reads_twice(daemon, tmp):
    """Neither half can keep its lines: pass 2 reads the file again, and every event arrives."""
    path, events = split_trace(tmp, 5000)
    p = run_import(daemon, "--job", "twice2", path, env=dict(SPLIT, TMPDIR=str(tmp / "none")))
    assert_ok(p)
    assert "validated in two parts" in p.stderr and "will be read a second time" in p.stderr
    assert timeline(daemon, "twice2") == metadata_last(events)


def test_split_at_a_wrong_guess_falls_back_to_one_piece(daemon, tmp):
    """Every event holds a list of objects ("}, {" between them): the cut after the middle lands
    inside an event, the halves do not fit together, and the first half's scan goes on alone."""
    events = [{"ph": "X", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 10.0 * i, "dur": 1.0,
               "args": {"blocks": [{"x": j} for j in range(40)]}}
              for i in range(800)]
    path = tmp / "nested.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = run_import(daemon, "--job", "nested", path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" not in p.stderr
    assert timeline(daemon, "nested") == metadata_last(events)


def test_two_files_one_job_ranks_in_file_order(daemon):
    a = DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz"     # distributedInfo rank 0
    b = DATA / "kineto" / "gpu_2steps_sampled_rank0.json.gz"  # distributedInfo rank 0 too
    p = run_import(daemon, "--job", "two", a, b)
    assert_ok(p)
    j = job_or_none(daemon, "two")
    assert [(r["rank"], r["events"]) for r in j["ranks_detail"]] == \
        [(0, len(trace_events(a))), (1, len(trace_events(b)))]
    assert j["ranks"] == 2
    assert j["events"] == len(trace_events(a)) + len(trace_events(b))
    assert timeline(daemon, "two", rank=1) == metadata_last(torch_order(b))


def test_two_files_one_job_ranks_from_distributed_info(daemon):
    a = DATA / "kineto" / "cpu_only_rank34.json.gz"           # rank 34 of 300
    b = DATA / "kineto" / "gpu_2steps_sampled_rank0.json.gz"  # rank 0 of 128
    assert_ok(run_import(daemon, "--job", "dist", a, b))
    j = job_or_none(daemon, "dist")
    assert [r["rank"] for r in j["ranks_detail"]] == [0, 34]
    assert j["world_size"] == 300


# -- invalid input: exit 3, a precise message, and nothing sent -------------------------------

def assert_nothing_sent(daemon):
    st = daemon.stats()
    assert st["connections"]["accepted"] == 0, st
    assert daemon.jobs() == []


def test_truncated_gzip(daemon, tmp):
    raw = (DATA / "kineto" / "gpu_2steps_sampled_rank0.json.gz").read_bytes()
    path = tmp / "cut.json.gz"
    path.write_bytes(raw[:len(raw) // 2])
    p = run_import(daemon, path)
    assert p.returncode == 3, p.stderr
    assert str(path) in p.stderr and "truncated gzip" in p.stderr and "compressed byte" in p.stderr
    assert job_or_none(daemon, "cut") is None
    assert_nothing_sent(daemon)


def test_truncated_json(daemon, tmp):
    text = read_bytes(DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz")
    cut = text[:len(text) * 3 // 5]
    path = tmp / "cut.json"
    path.write_bytes(cut)
    p = run_import(daemon, path)
    assert p.returncode == 3, p.stderr
    assert f"{path}: byte {len(cut)} (line" in p.stderr and "truncated" in p.stderr
    assert_nothing_sent(daemon)


@pytest.mark.parametrize("compress", [False, True], ids=["json", "gz"])
def test_bad_byte_in_the_middle(daemon, tmp, compress):
    text = bytearray(read_bytes(DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz"))
    pos = text.index(b'"aten::', len(text) // 2) + 3
    text[pos] = 0xff  # invalid UTF-8 inside a name, in the middle of the file
    line = text.count(b"\n", 0, pos) + 1
    col = pos - (text.rfind(b"\n", 0, pos) + 1) + 1
    path = tmp / ("bad.json.gz" if compress else "bad.json")
    path.write_bytes(gzip.compress(bytes(text)) if compress else bytes(text))
    p = run_import(daemon, path)
    assert p.returncode == 3, p.stderr
    assert f"{path}: byte {pos} (line {line}, column {col}): invalid UTF-8" in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_corrupt_gzip_stream(daemon, tmp):
    raw = bytearray((DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz").read_bytes())
    for i in range(len(raw) // 2, len(raw) // 2 + 64):
        raw[i] ^= 0x5a
    path = tmp / "damaged.json.gz"
    path.write_bytes(bytes(raw))
    p = run_import(daemon, path)
    assert p.returncode == 3, p.stderr
    assert str(path) in p.stderr
    assert_nothing_sent(daemon)


@pytest.mark.parametrize("doc,reason", [
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1}]}', 'missing "dur"'),
    (b'{"traceEvents": [{"name": "a", "ts": 1}]}', 'has no "ph"'),
    (b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1},]}', "expected a value"),
    (b'{"schemaVersion": 1}', 'no "traceEvents"'),
    (b'', "empty file"),
    (b'garbage', "not a Chrome trace"),
])
def test_invalid_documents(daemon, tmp, doc, reason):
    path = tmp / "x.json"
    path.write_bytes(doc)
    p = run_import(daemon, path)
    assert p.returncode == 3 and reason in p.stderr and str(path) in p.stderr, p.stderr
    assert_nothing_sent(daemon)


def test_one_bad_file_imports_none(daemon, tmp):
    good = DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz"
    bad = tmp / "bad.json"
    bad.write_bytes(read_bytes(good)[:-10])
    p = run_import(daemon, "--job", "pair", good, bad)
    assert p.returncode == 3, p.stderr
    assert str(bad) in p.stderr and str(good) not in p.stderr
    assert_nothing_sent(daemon)


def test_missing_file(daemon, tmp):
    p = run_import(daemon, tmp / "nope.json")
    assert p.returncode == 3 and "No such file" in p.stderr
    assert_nothing_sent(daemon)


# -- exit codes -------------------------------------------------------------------------------

def test_daemon_unreachable_exits_1(tmp):
    path = DATA / "kineto" / "cpu_only_rank34.json.gz"
    p = run(["import", "--socket", tmp / "none.sock", path], tmp)
    assert p.returncode == 1 and "cannot connect" in p.stderr, p.stderr


@pytest.mark.parametrize("args", [
    [],
    ["--rank", "1", "a.json", "b.json"],
    ["a.json", "b.json"],
    ["--bogus", "a.json"],
    ["--rank", "-1", "a.json"],
    ["--rank"],
    ["--job", "", "a.json"],
])
def test_usage_errors_exit_2(tmp, args):
    p = run(["import", *args], tmp)
    assert p.returncode == 2, (args, p.stderr)
    assert "stepscope import:" in p.stderr


def test_help_and_version(tmp):
    p = run(["import", "--help"], tmp)
    assert p.returncode == 0 and "usage: stepscope import" in p.stdout
    p = run(["--version"], tmp)
    assert p.returncode == 0 and p.stdout.startswith("stepscope ")
    p = run(["frobnicate"], tmp)
    assert p.returncode == 2


def test_daemon_rejections_exit_4(daemons):
    """Lines the daemon refuses (here: longer than its --max-line-bytes) are reported, exit 4."""
    d = daemons("small", args=["--max-line-bytes", "400"])
    path = DATA / "kineto" / "cpu_ops_rank_non_gpu.json.gz"
    events = trace_events(path)
    p = run_import(d, path)
    assert p.returncode == 4, p.stderr
    assert "oversized" in p.stderr and "rejected event #" in p.stderr
    st = d.stats()
    assert st["oversized"] > 0
    assert st["records"]["trace"] + st["oversized"] == len(events)
