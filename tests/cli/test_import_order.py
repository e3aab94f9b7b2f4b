# SPDX-License-Identifier: MIT
"""Each thread's spans in torch's order (cli/import/span_order.h): Kineto writes a thread's host spans out of
start order, and the daemon's operator table is torch's exact walk only for spans that arrive in
(ts, -dur) order. The importer sends them so; the self times then equal an independent
computation of torch's _populate_cpu_children walk, and a restart of the daemon (which replays
the store, cut elsewhere than the live stream was) answers byte for byte the same."""
import collections
import decimal
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from test_import import (DATA, ONE_PIECE, REPO, SPLIT, Client, assert_ok, cli, import_stream_key,
                         integ, metadata_last, read_bytes, run_import, timeline, torch_order)

GPU5 = DATA / "kineto" / "gpu_5steps_rank0.json.gz"


def ns(v):
    """A JSON number of microseconds (read as Decimal) in int ns, rounded half away from zero."""
    d = decimal.Decimal(v) * 1000
    return int(d.to_integral_value(rounding=decimal.ROUND_HALF_UP))


def torch_self_times(path, names):
    """Per name, (calls, total_ns, self_ns) of the X events with a name in names (the daemon's
    host spans: the rows of its table), each thread walked as torch's _populate_cpu_children:
    sorted by (start, -end); a span's parent is the innermost open span that contains it."""
    doc = json.loads(read_bytes(path), parse_float=decimal.Decimal)
    events = doc if isinstance(doc, list) else doc["traceEvents"]
    threads = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and group(e["name"]) in names:
            t, d = ns(e["ts"]), ns(e["dur"])
            threads[(json.dumps(e.get("pid")), json.dumps(e.get("tid")))].append(
                (t, t + d, group(e["name"])))
    agg = collections.defaultdict(lambda: [0, 0, 0])
    for spans in threads.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, name in spans:
            while stack and (start >= stack[-1][1] or end > stack[-1][1]):
                stack.pop()
            a = agg[name]
            a[0] += 1
            a[1] += end - start
            a[2] += end - start
            if stack:
                agg[stack[-1][2]][2] -= end - start
            stack.append((start, end, name))
    return {k: tuple(v) for k, v in agg.items()}


def group(name):
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


def operators(daemon, job):
    st, _, body = daemon.request(f"/api/v1/jobs/{job}/operators?limit=100000&sort=name&order=asc")
    assert st == 200, body
    return body


def check_against_torch(path, body):
    rows = json.loads(body)["rows"]
    assert rows and "[other]" not in {r["name"] for r in rows}
    want = torch_self_times(path, {r["name"] for r in rows})
    got = {r["name"]: (r["calls"], r["total_us"], r["self_us"]) for r in rows}
    # The route gives microseconds; the walk is exact in ns: compare to the route's rounding.
    differ = {}
    for name, (calls, total_ns, self_ns) in want.items():
        g = got[name]
        if g[0] != calls or abs(g[1] * 1000 - total_ns) >= 1000 or abs(g[2] * 1000 - self_ns) >= 1000:
            differ[name] = (g, (calls, total_ns / 1000, self_ns / 1000))
    assert not differ, f"{len(differ)} of {len(want)} operators differ: {list(differ.items())[:5]}"
    assert set(got) == set(want)


def settled_operators(daemon, job, path):
    """/operators once the live tables hold every span (the ack makes them durable, the live
    flush follows)."""
    last = {}

    def ready():
        last["body"] = operators(daemon, job)
        try:
            check_against_torch(path, last["body"])
            return True
        except AssertionError as e:
            last["err"] = e
            return False
    try:
        daemon.wait_for("operators equal torch's walk", ready, timeout=30)
    except AssertionError:
        raise last.get("err") or AssertionError("no operators")
    return last["body"]


def test_kineto_file_order_self_times_exact_and_same_after_restart(daemon):
    p = run_import(daemon, GPU5)
    assert_ok(p)
    before = settled_operators(daemon, "gpu_5steps_rank0", GPU5)
    daemon.stop()
    daemon.start()
    assert operators(daemon, "gpu_5steps_rank0") == before


def test_reordered_real_trace_reads_its_spool_about_once(daemon, tmp):
    """gpu_5steps_rank0's 13 threads and streams interleave in time, so the sending order jumps
    between as many regions of the spool: each jump re-read a whole 1 MiB window (77,404 preads,
    79 GB, to send 22 MB; issue 14.5). Read back, the spool now costs about its size (a window
    per region, 64 KiB each), and the events arrive in torch's order all the same."""
    if not shutil.which("strace"):
        pytest.fail("strace is missing (scripts/deps test installs it)")
    trace = tmp / "st"
    env = integ.clean_env(tmp)
    # LeakSanitizer cannot run under ptrace: an ASan build is checked for leaks by the other tests.
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    p = subprocess.run(["strace", "-f", "-e", "trace=pread64", "-o", str(trace), str(cli()),
                        "import", "--socket", daemon.socket, str(GPU5)], capture_output=True,
                       text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert_ok(p)
    reads = [int(m.group(1)) for m in re.finditer(r"pread64\(.*= (\d+)$", trace.read_text(), re.M)]
    size = len(read_bytes(GPU5))
    assert reads and sum(reads) < 4 * size, (len(reads), sum(reads), size)
    assert timeline(daemon, "gpu_5steps_rank0") == metadata_last(torch_order(GPU5))


def unordered_trace(tmp, n):
    """n X events on two threads, each thread's written by end (children before their parent,
    as a tracer that emits spans when they close), pretty-printed; and a counter event every 50."""
    events = []
    t0 = 1700000000000000
    for i in range(n // 3):
        tid = 1 + i % 2
        base = t0 + i * 100
        parent = {"ph": "X", "cat": "cpu_op", "name": f"aten::outer{i % 5}", "pid": 7,
                  "tid": tid, "ts": base, "dur": 60, "args": {"i": i}}
        kids = [{"ph": "X", "cat": "cpu_op", "name": f"aten::inner{k}", "pid": 7, "tid": tid,
                 "ts": base + 10 + 20 * k, "dur": 15.5, "args": {"i": i, "k": k}} for k in range(2)]
        events += kids + [parent]
        if i % 50 == 0:
            events.append({"ph": "C", "name": "mem", "pid": 7, "ts": base, "args": {"v": i}})
    path = tmp / "unordered.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    return path, events


def test_resume_of_a_reordered_file_sends_the_rest_of_the_same_order(daemon, tmp):
    """A session that broke after k lines of the sending order: the import resumes at line k of
    that same order (it depends on the file alone), and the daemon ends up with every event once
    and torch's self times."""
    path, events = unordered_trace(tmp, 9000)
    sent = torch_order(path)
    assert sent != events, "the fixture must be out of start order"
    k = 5000
    with Client(daemon.socket) as c:
        c.hello("reorder", rank=0, stream=import_stream_key(path))
        c.send_lines(sent[:k])
        c.wait_ack(k)
    p = run_import(daemon, "--job", "reorder", path)
    assert_ok(p)
    assert (f"{len(events) - k} sent, {k} already held, 0 rejected; "
            "2 threads' spans sent in start order") in p.stdout
    st = daemon.stats()
    assert st["records"]["trace"] == len(events) and st["duplicates"] == 0
    assert timeline(daemon, "reorder") == metadata_last(sent)
    settled_operators(daemon, "reorder", path)


@pytest.mark.parametrize("k", [0, 2000, 7000])
def test_split_pass1_sends_the_same_order(daemon, tmp, k):
    """Pass 1 in two halves (each thread's spans in both): the lines go in the order one piece
    gives, from the start or resumed in either half, and the self times are torch's."""
    path, events = unordered_trace(tmp, 9000)
    sent = torch_order(path)
    job = f"split{k}"
    if k:
        with Client(daemon.socket) as c:
            c.hello(job, rank=0, stream=import_stream_key(path))
            c.send_lines(sent[:k])
            c.wait_ack(k)
    p = run_import(daemon, "--job", job, path, env=SPLIT)
    assert_ok(p)
    assert "validated in two parts" in p.stderr
    assert (f"{len(events) - k} sent, {k} already held, 0 rejected; "
            "2 threads' spans sent in start order") in p.stdout
    assert daemon.stats()["duplicates"] == 0
    assert timeline(daemon, job) == metadata_last(sent)
    settled_operators(daemon, job, path)


# cpu_only_rank34's first half is its distributedInfo (a 300-rank process group list): no event
# starts after its middle, so it cannot be cut.
SPLITTABLE = sorted(p.name for p in (DATA / "kineto").glob("*.json.gz")
                    if p.name != "cpu_only_rank34.json.gz")


@pytest.mark.parametrize("name", SPLITTABLE)
def test_split_real_traces_as_one_piece(daemon, tmp, name):
    """Every real Kineto trace, uncompressed (gzip cannot be cut), imported in two halves and in
    one piece: the same events in the same order, and the same operator table."""
    path = tmp / name.replace(".gz", "")
    path.write_bytes(read_bytes(DATA / "kineto" / name))
    a = run_import(daemon, "--job", "halves", path, env=SPLIT)
    b = run_import(daemon, "--job", "whole", path, env=ONE_PIECE)
    assert_ok(a)
    assert_ok(b)
    assert "validated in two parts" in a.stderr and "validated in two parts" not in b.stderr
    assert a.stdout.split(": ", 1)[1].replace("halves", "whole") == b.stdout.split(": ", 1)[1]
    assert timeline(daemon, "halves") == timeline(daemon, "whole") == \
        metadata_last(torch_order(path))
    n = sum(1 for e in torch_order(path) if e.get("ph") == "X")

    def same():
        whole = json.loads(operators(daemon, "whole"))
        return (sum(r["calls"] for r in whole["rows"]) >= n // 2 and
                whole == json.loads(operators(daemon, "halves")))
    daemon.wait_for("the same operator table", same, timeout=30)

def test_in_order_file_is_sent_as_written(daemon, tmp):
    """Every thread already in (ts, -dur) order: the lines go as the file has them."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
              {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 2, "ts": 1, "dur": 5},
              {"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 10, "dur": 3},
              {"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 11, "dur": 1}]
    path = tmp / "inorder.json"
    path.write_text(json.dumps({"traceEvents": events}))
    p = run_import(daemon, path)
    assert_ok(p)
    assert p.stdout.endswith("0 rejected\n"), p.stdout
    assert timeline(daemon, "inorder") == metadata_last(events)


def test_torch_trace_handler_streams_in_the_same_order(daemon, tmp):
    """stepscope.torch.trace_handler() sends a Kineto window as the importer sends its file:
    each thread's spans in torch's order; the same events in the same order, and the same
    operator table, byte for byte."""
    sys.path.insert(0, str(REPO / "collectors" / "python"))
    import stepscope
    import stepscope.torch as sst

    class Prof:
        def export_chrome_trace(self, path):
            pathlib.Path(path).write_bytes(read_bytes(GPU5))

    c = stepscope.Client(socket=daemon.socket, job="gpu5-stream", rank=0)
    try:
        n = sst.trace_handler(client=c)(Prof())
        c.flush(timeout=60)
    finally:
        c.close()
    sent = torch_order(GPU5)
    assert n == len(sent)
    assert_ok(run_import(daemon, "--job", "gpu5-import", GPU5))
    imported = settled_operators(daemon, "gpu5-import", GPU5)
    assert settled_operators(daemon, "gpu5-stream", GPU5) == imported
    assert timeline(daemon, "gpu5-stream") == metadata_last(sent)
