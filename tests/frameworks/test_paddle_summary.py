# SPDX-License-Identifier: MIT
"""/summary/{kind} and /benchmark against Paddle's own summary() for the same run.

paddle_summary_train.py trains a tiny MLP under a paddle.profiler window that
stepscope.paddle.trace_handler() streams to a real daemon, and writes what Paddle itself says
about that window: the text Profiler.summary() prints and the unrounded numbers behind it
(StatisticData). The daemon's tables must equal both: the printed rows character for character
where our text form renders the same table, and the nanoseconds exactly.
"""
import csv
import io
import json
import re
import subprocess
import sys
import time

import fwutil
from fwutil import import_cli
from hookrun import steps_of, train

JOB = "pd-summary"


def section(text, title):
    """The lines of one of Paddle's tables: from its title line to the next title line."""
    lines = text.split("\n")
    start = next(i for i, l in enumerate(lines) if re.fullmatch(rf"-+{re.escape(title)}-+", l))
    end = next((i for i in range(start + 1, len(lines))
                if re.fullmatch(r"-+[A-Za-z][A-Za-z ]+ Summary-+", lines[i])), len(lines))
    return lines[start:end]


def overview_rows(lines):
    """{type: (calls, "ms", "ratio")} of an Overview Summary's CPU part."""
    rows = {}
    for l in lines:
        m = re.fullmatch(r"\s*([A-Za-z]+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s*", l)
        if m:
            rows[m.group(1)] = (int(m.group(2)), m.group(3), m.group(4))
    return rows


def table_rows(lines, name_width):
    """[(name with its indent, calls, "total / avg / max / min / ratio")] of a five-figure
    table whose name column is name_width wide."""
    rows = []
    for l in lines:
        m = re.fullmatch(r"(\d+)\s+([\d.]+ / [\d.]+ / [\d.]+ / [\d.]+ / [\d.]+)\s+.*",
                         l[name_width + 2:])
        if m and not l.startswith("-"):
            rows.append((l[:name_width].rstrip(), int(m.group(1)), m.group(2)))
    return rows


def wait_window(daemon, info, job=JOB, n=None):
    n = info["window_events"] if n is None else n
    assert n > 300
    daemon.wait_for("the window's events", lambda: daemon.job(job)["events"] == n)


def import_file(daemon, path, job):
    r = subprocess.run([str(import_cli()), "import", "--socket", daemon.socket, "--job", job,
                        str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    return r.stdout


def operators_when_equal(daemon, job, other, timeout=10.0, slack_ns=None):
    """job's /operators rows once other's equal them (the live view republishes within ~0.1 s
    of the records arriving); fails with the difference after timeout seconds. Self time is
    compared too: the live nesting does not depend on how the records were cut into batches
    (test_live_self_times_do_not_depend_on_the_reads). With slack_ns (one side from Paddle's
    float-rounded JSON, check_tables()), the times need only be within float_slack(), and self
    time is left out (a difference of such totals)."""
    def same(a, b):
        if slack_ns is None or len(a) != len(b):
            return a == b
        return all(x[:2] == y[:2] and
                   all(abs(u - v) * 1000 < float_slack(v * 1000, n, slack_ns) for u, v, n in
                       ((x[2], y[2], x[1]), (x[3], y[3], 1), (x[4], y[4], 1)))
                   for x, y in zip(a, b))

    def rows(j):
        return sorted((r["name"], r["calls"], r["total_us"], r["min_us"], r["max_us"]) +
                      ((r["self_us"],) if slack_ns is None else ())
                      for r in daemon.get_json(f"/api/v1/jobs/{j}/operators?limit=100000")["rows"])
    deadline = time.monotonic() + timeout
    while True:
        a, b = rows(job), rows(other)
        if same(a, b) and a:
            return a
        if time.monotonic() > deadline:
            assert b == a
        time.sleep(0.1)


def test_summaries_equal_paddle_summary(daemon, tmp):
    info = train(daemon, tmp, "paddle_summary_train.py", "window", JOB)
    wait_window(daemon, info)
    check_tables(daemon, JOB, info,
                 slack_ns=window_slack_ns(json.loads((tmp / f"{JOB}.json.window.json").read_text())))
    # `stepscope summary` prints the tables Paddle's summary() prints, in its order: a CPU run
    # has no Distribution, Kernel or Memory Manipulation Summary (Paddle leaves out an empty
    # table; the daemon's text of one is empty)
    r = subprocess.run([str(import_cli()), "summary", JOB, "--socket", daemon.socket],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    titles = re.compile(r"^-+([A-Za-z ]+ Summary)-+$", re.M)
    assert titles.findall(r.stdout) == titles.findall(info["summary_text"]) == [
        "Device Summary", "Overview Summary", "Model Summary", "Operator Summary",
        "UserDefined Summary"], (titles.findall(r.stdout), titles.findall(info["summary_text"]))
    st, hdr, body = daemon.request(f"/api/v1/jobs/{JOB}/summary/kernel?format=text")
    assert (st, body) == (200, b"") and hdr["content-type"].startswith("text/plain")
    for kind in ("memory", "memory-manipulation"):
        r = subprocess.run([str(import_cli()), "summary", JOB, "--kind", kind, "--socket",
                            daemon.socket], capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stdout) == (0, "") and f"no {kind} table" in r.stderr, r
    # The same window exported by Paddle's export_chrome_tracing and imported: Paddle writes
    # ts truncated to the µs, the importer rebuilds them to the ns from args.start_time as the
    # live collector does, so every table is exact to the ns as well.
    out = import_file(daemon, tmp / f"{JOB}.json.window.json", JOB + "-json")
    assert "paddle (paddle)" in out and "ts kept" not in out, out
    wait_window(daemon, info, JOB + "-json")
    # (exact while the window lasts under 8.4 ms: Paddle's floats are rounded past it, as on a
    # loaded machine)
    slack = window_slack_ns(json.loads((tmp / f"{JOB}.json.window.json").read_text()))
    check_tables(daemon, JOB + "-json", info, slack_ns=slack)
    # /operators (a live view, republished after the records arrive) equals the live
    # collector's for the same window: the same names (no "[1.5 us]" suffix) and times
    live = operators_when_equal(daemon, JOB, JOB + "-json")
    assert len(live) > 20 and not [r for r in live if r[0].endswith("s]")]
    # ... and by export_protobuf: the .pb holds start_ns/end_ns, and its events are the JSON's
    # X events (Paddle's metadata events are not in it) and the window's ExtraInfo record, so
    # the same tables come out.
    doc = json.loads((tmp / f"{JOB}.json.window.json").read_text())
    n_x = sum(e.get("ph") == "X" for e in doc["traceEvents"]) + 1
    out = import_file(daemon, tmp / f"{JOB}.json.window.pb", JOB + "-pb")
    assert f"{n_x} events" in out and "paddle (paddle-protobuf)" in out, out
    wait_window(daemon, info, JOB + "-pb", n_x)
    check_tables(daemon, JOB + "-pb", info)
    operators_when_equal(daemon, JOB, JOB + "-pb", slack_ns=slack)
    # the same events as the JSON twin, ts exact where the JSON has them truncated (and dur
    # where the JSON's are float-rounded)
    got = daemon.get_json(f"/api/v1/jobs/{JOB}-pb/timeline?limit=100000")["traceEvents"]
    key = lambda e: (e["name"], e["cat"], e["tid"], e["dur"] if slack is None else 0)  # noqa: E731
    json_x = sorted(key(dict(e, name=re.sub(r"\[-?[0-9.]+ ?(?:ns|us|ms|s)\]$", "", e["name"])))
                    for e in doc["traceEvents"] if e.get("ph") == "X")
    assert sorted(key(e) for e in got if e["ph"] == "X") == json_x


def float_slack(ns, calls, slack_ns):
    """How far a sum of calls figures of Paddle's JSON, ns in all, may be from Paddle's own:
    Paddle 3.x writes "dur" as a float (two roundings of at most dur / 2^24 each, then %.3f's
    half ns) and each start within slack_ns (the file's largest pdtrace_slack_ns())."""
    return 0.5 + ns / 2 ** 22 + calls * (1 + 2 * slack_ns)


def check_tables(daemon, job, info, steps=(2, 8), slack_ns=None):
    """The job's summary tables equal Paddle's printed summary and its StatisticData (with
    slack_ns, for a window whose JSON export carries float-rounded times: the same rows and
    calls, every time within float_slack() of Paddle's ns)."""
    paddle_text, exact = info["summary_text"], info["exact"]
    exact_ns = slack_ns is None

    def near(ours_us, ns, calls):
        return abs(ours_us * 1000 - ns) < (0.5 if exact_ns else float_slack(ns, calls, slack_ns))

    # Overview: every CPU row Paddle prints, with its calls, time and ratio as printed, and the
    # merged time equal to Paddle's in ns; our text form prints the same rows.
    ov = daemon.get_json(f"/api/v1/jobs/{job}/summary/overview")
    assert ov["n_steps"] == steps[1] - steps[0] + 1 and (ov["first_step"], ov["last_step"]) == steps
    assert ov["spans_cut"] == 0 and ov["lines_bad"] == 0
    ours = {r["type"]: r for r in ov["rows"] if r["side"] == "cpu"}
    printed = overview_rows(section(paddle_text, "Overview Summary"))
    assert len(printed) >= 8 and "Operator" in printed and "ProfileStep" in printed, printed
    assert set(ours) == set(printed), (sorted(ours), sorted(printed))
    for t, (calls, ms, ratio) in printed.items():
        r = ours[t]
        assert r["calls"] == calls == exact["overview"][t]["calls"], (t, r, printed[t])
        assert near(r["time_us"], exact["overview"][t]["ns"], calls), (t, r, exact["overview"][t])
        t_ns, total_ns = round(r["time_us"] * 1000), round(ov["total_us"] * 1000)
        assert abs(r["percent"] - 100 * t_ns / total_ns) < 0.00005001, (t, r)
        if not exact_ns:
            continue
        # the printed ratio from the ns, as Paddle computes it (rounding the JSON's 4-decimal
        # percent again could flip a last digit)
        assert f"{t_ns / 1e6:.2f}" == ms and f"{t_ns / total_ns * 100:.2f}" == ratio, (t, r, printed[t])
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/summary/overview?format=text")
    assert st == 200 and hdr["content-type"].startswith("text/plain")
    our_lines = section(body.decode(), "Overview Summary")
    paddle_lines = section(paddle_text, "Overview Summary")
    # the table itself, title to the last separator before the note, line for line
    n = paddle_lines.index("Note:")
    assert our_lines[:n] == paddle_lines[:n] or not exact_ns

    # Operator table: every row Paddle prints (operators by CPU total, each followed by its
    # inner rows), the same calls and figures; calls, total, min and max exact in ns.
    op_text = daemon.request(f"/api/v1/jobs/{job}/summary/operator?format=text")[2].decode()
    theirs = table_rows(section(paddle_text, "Operator Summary"), 52)
    mine = table_rows(section(op_text, "Operator Summary"), 52)
    assert len(theirs) >= 20, theirs
    if exact_ns:
        assert sorted(mine) == sorted(theirs)
        assert [r for r in mine if not r[0].startswith(" ")] == [r for r in theirs if not r[0].startswith(" ")]
    else:  # the same rows and calls (figures may differ in a last printed digit)
        assert sorted(r[:2] for r in mine) == sorted(r[:2] for r in theirs)
    ops = daemon.get_json(f"/api/v1/jobs/{job}/summary/operator")["rows"]
    top = {r["name"]: r for r in ops if r["parent"] is None}
    assert set(top) == set(exact["operators"])
    for name, p in exact["operators"].items():
        r = top[name]
        assert r["calls"] == p["calls"], (name, r, p)
        for ours_us, ns, k in ((r["total_us"], p["ns"], p["calls"]), (r["min_us"], p["min_ns"], 1),
                               (r["max_us"], p["max_ns"], 1)):
            assert near(ours_us, ns, k), (name, r, p)
        inner = {x["name"]: x for x in ops if x["parent"] == name}
        assert set(inner) == set(p["inner"]), (name, sorted(inner), sorted(p["inner"]))
        for iname, ip in p["inner"].items():
            assert inner[iname]["calls"] == ip["calls"], (name, iname, inner[iname], ip)
            assert near(inner[iname]["total_us"], ip["ns"], ip["calls"]), (name, iname, inner[iname], ip)

    # The operator tree (/tree?kind=operator): its two levels are Paddle's operator summary with
    # its inner rows, in the same order, with Paddle's calls, total, min, max, self time (its
    # per-node self_cpu_time summed) and device time (none in a CPU run: no device level).
    tree = daemon.get_json(f"/api/v1/jobs/{job}/tree?kind=operator")
    assert tree["spans_cut"] == 0 and tree["device_events"] == 0
    flat = [(n, None) for n in tree["nodes"]]
    flat = [x for n, _ in flat for x in [(n, None)] + [(c, n["name"]) for c in n["children"]]]
    assert [(n["name"], p, n["calls"], n["total_us"]) for n, p in flat] == \
        [(r["name"], r["parent"], r["calls"], r["total_us"]) for r in ops]
    for n in tree["nodes"]:
        p = exact["operators"][n["name"]]
        assert (n["kind"], n["device_us"], p["gpu_ns"]) == ("operator", 0, 0), (n, p)
        for ours_us, ns, k in ((n["total_us"], p["ns"], p["calls"]), (n["self_us"], p["self_ns"], p["calls"]),
                               (n["min_us"], p["min_ns"], 1), (n["max_us"], p["max_ns"], 1)):
            assert near(ours_us, ns, k), (n["name"], ours_us, ns, p)
        assert {c["name"] for c in n["children"]} == set(p["inner"])
        for c in n["children"]:
            ip = p["inner"][c["name"]]
            assert (c["kind"], c["calls"], c["children"]) == ("inner", ip["calls"], []), (c, ip)
            for ours_us, ns, k in ((c["total_us"], ip["ns"], ip["calls"]),
                                   (c["self_us"], ip["self_ns"], ip["calls"]),
                                   (c["min_us"], ip["min_ns"], 1), (c["max_us"], ip["max_ns"], 1)):
                assert near(ours_us, ns, k), (n["name"], c["name"], ours_us, ns, ip)
    assert sum(n["self_us"] < n["total_us"] for n in tree["nodes"]) >= 5

    # Model and user-defined tables, exact.
    model = {r["name"]: r for r in daemon.get_json(f"/api/v1/jobs/{job}/summary/model")["rows"]}
    for name, p in exact["model"].items():
        assert model[name]["calls"] == p["calls"], (name, model[name], p)
        assert near(model[name]["total_us"], p["ns"], p["calls"]), (name, model[name], p)
        assert near(model[name]["max_us"], p["max_ns"], 1), (name, model[name], p)
    staged = sum(model[n]["total_us"] for n in ("Dataloader", "Forward", "Backward", "Optimization")
                 if n in model)
    assert abs(model["Others"]["total_us"] - (model["ProfileStep"]["total_us"] - staged)) < 0.01
    model_text = daemon.request(f"/api/v1/jobs/{job}/summary/model?format=text")[2].decode()
    if exact_ns:
        assert table_rows(section(model_text, "Model Summary"), 15) == \
            table_rows(section(paddle_text, "Model Summary"), 15)
    user = daemon.get_json(f"/api/v1/jobs/{job}/summary/user-defined")["rows"]
    assert {r["name"]: r["calls"] for r in user} == {n: p["calls"] for n, p in exact["user"].items()} != {}
    for r in user:
        p = exact["user"][r["name"]]
        assert near(r["total_us"], p["ns"], p["calls"]), (r, p)

    # No device in a CPU run: no GPU rows, distributed all zero; CSV is the JSON rows.
    dist = daemon.get_json(f"/api/v1/jobs/{job}/summary/distributed")["rows"]
    assert [r["total_us"] for r in dist[1:]] == [0, 0, 0]
    dev = daemon.get_json(f"/api/v1/jobs/{job}/summary/device")["rows"]
    assert [r["device"] for r in dev] == ["CPU(Process)", "CPU(System)"]
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/summary/operator?format=csv")
    assert st == 200 and hdr["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert [(r["name"], int(r["calls"])) for r in rows] == [(r["name"], r["calls"]) for r in ops]


def test_summary_ranges_caps_errors_and_benchmark(daemon, tmp):
    info = train(daemon, tmp, "paddle_summary_train.py", "window", JOB)
    wait_window(daemon, info)

    # A step range: the ProfileStep spans numbered 3..4 and what starts inside them.
    steps = {r["step"]: r for r in daemon.get_json(f"/api/v1/jobs/{JOB}/steps")["rows"]}
    ov = daemon.get_json(f"/api/v1/jobs/{JOB}/summary/overview?steps=3-4")
    assert ov["n_steps"] == 2 and (ov["first_step"], ov["last_step"]) == (3, 4)
    assert abs(ov["total_us"] - steps[3]["total_us"] - steps[4]["total_us"]) < 0.002
    one = daemon.get_json(f"/api/v1/jobs/{JOB}/summary/model?steps=5")
    assert abs(one["total_us"] - steps[5]["total_us"]) < 0.002
    assert one["spans"] < ov["spans"] < daemon.get_json(f"/api/v1/jobs/{JOB}/summary/overview")["spans"]

    # The cap: what was not read is counted.
    full = daemon.get_json(f"/api/v1/jobs/{JOB}/summary/operator")
    capped = daemon.get_json(f"/api/v1/jobs/{JOB}/summary/operator?max_spans=50")
    assert capped["spans_read"] == 50 and capped["spans_cut"] == full["spans_read"] - 50

    # Bad requests name their parameter; unknown kinds and step ranges are 404.
    for q, name in (("steps=4-3", "steps"), ("steps=x", "steps"), ("format=xml", "format"),
                    ("rank=-1", "rank"), ("max_spans=0", "max_spans"), ("time_unit=h", "time_unit")):
        st, _, body = daemon.request(f"/api/v1/jobs/{JOB}/summary/overview?{q}")
        assert st == 400 and name.encode() in body, (q, st, body)
    assert daemon.request(f"/api/v1/jobs/{JOB}/summary/flops")[0] == 404
    assert daemon.request(f"/api/v1/jobs/{JOB}/summary/overview?steps=90-99")[0] == 404
    assert daemon.request("/api/v1/jobs/nosuchjob/summary/overview")[0] == 404

    # Benchmark from step records: 16 steps, 10 warm-up; the figures follow from /steps.
    bjob = JOB + "-bench"
    rows = daemon.get_json(f"/api/v1/jobs/{bjob}/steps")["rows"]
    assert len(rows) == info["bench_steps"] == 16
    b = daemon.get_json(f"/api/v1/jobs/{bjob}/benchmark")
    assert (b["source"], b["n_steps"], b["skipped"], b["counted"]) == ("records", 16, 10, 6)
    assert b["ips_unit"] == "samples/s"
    stats = {r["name"]: r for r in b["rows"]}
    counted = rows[10:]
    batch = [r["total_us"] / 1e6 for r in counted]
    assert abs(stats["batch_cost"]["avg"] - sum(batch) / 6) < 1e-8
    assert abs(stats["batch_cost"]["max"] - max(batch)) < 1e-8
    assert abs(stats["batch_cost"]["min"] - min(batch)) < 1e-8
    ips = sum(r["samples"] for r in counted) / sum(batch)
    assert abs(stats["ips"]["avg"] - ips) < 1e-9 * ips
    assert stats["reader_cost"]["min"] >= info["reader_s"]
    assert abs(b["reader_ratio_pct"] - 100 * stats["reader_cost"]["avg"] / stats["batch_cost"]["avg"]) < 1e-6
    text = daemon.request(f"/api/v1/jobs/{bjob}/benchmark?format=text")[2].decode()
    assert text.startswith("=" * 44 + "Perf Summary" + "=" * 44 + "\n")
    assert f"{stats['batch_cost']['avg']:.5f}" in text and "IPS Unit: samples/s" in text
    # ... which `stepscope summary --kind perf` prints (--skip passed on)
    def cli(*args):
        return subprocess.run([str(import_cli()), "summary", *args, "--socket", daemon.socket],
                              capture_output=True, text=True, timeout=60)
    r = cli(bjob, "--kind", "perf")
    assert r.returncode == 0 and r.stdout.rstrip("\n") == text.rstrip("\n"), r
    r = cli(JOB, "--kind", "perf", "--skip", "0", "--steps", "3-6")
    want = daemon.request(f"/api/v1/jobs/{JOB}/benchmark?format=text&skip=0&steps=3-6")[2].decode()
    assert r.returncode == 0 and r.stdout.rstrip("\n") == want.rstrip("\n") and "Perf Summary" in want, r
    assert cli(JOB, "--skip", "0").returncode == 2
    # ... and from the window's ProfileStep spans when a job has no step records.
    sb = daemon.get_json(f"/api/v1/jobs/{JOB}/benchmark")  # a window: no warm-up by default
    assert (sb["source"], sb["n_steps"], sb["counted"], sb["ips_unit"]) == ("spans", 7, 7, "steps/s")
    sbatch = [steps[s]["total_us"] / 1e6 for s in range(2, 9)]
    assert abs({r["name"]: r for r in sb["rows"]}["batch_cost"]["avg"] - sum(sbatch) / 7) < 1e-8


def window_slack_ns(doc):
    """None where every time of Paddle's JSON export is exact (the window's last end within
    2^23 ns of its start), else pdtrace_slack_ns() of that end."""
    last = 0
    for e in doc["traceEvents"]:
        args = e.get("args")
        if isinstance(args, dict) and "end_time" in args:
            num, unit = args["end_time"].split()
            assert unit == "us", args
            last = max(last, round(float(num) * 1000))
    return None if last < 1 << 23 else (last + (1 << 22)) >> 23


def offsets_ns(doc):
    """[(ts - args.start_time, start_time)] over the events of Paddle's JSON export, in ns."""
    d = []
    for e in doc["traceEvents"]:
        st = e.get("args", {}).get("start_time") if isinstance(e.get("args"), dict) else None
        if st is not None and "ts" in e:
            num, unit = st.split()
            assert unit == "us", st
            whole, _, frac = num.partition(".")
            off = int(whole) * 1000 + int((frac + "000")[:3])
            d.append((e["ts"] * 1000 - off, off))
    return d


def test_long_window_json_import_equals_live_and_pb(daemon, tmp):
    """A window longer than 8.4 ms (a CNN, the issue's make_scheduler): Paddle 3.x's float
    start_time offsets spread ts - start_time over more than 1 µs (1.000-1.1 µs), where the import
    kept the whole-µs ts (wrong kernel launch and infer_meta inner rows) and the live handler
    rebuilt them. Both now rebuild them alike: the same tables, Paddle's rows and calls."""
    job = JOB + "-cnn"
    info = train(daemon, tmp, "paddle_summary_train.py", "cnn", job)
    assert info["kept_us"] is False
    path = tmp / f"{job}.json.window.json"
    doc = json.loads(path.read_text())
    # Past 8.4 ms the offsets are float-rounded; the spread passes 1 µs in most such runs (the
    # case the importer refused; test_pdtrace_float_offsets has one for certain), not all.
    d = offsets_ns(doc)
    spread = max(x for x, _ in d) - min(x for x, _ in d)
    assert spread < 1200, spread
    slack = window_slack_ns(doc)
    assert slack
    wait_window(daemon, info, job)
    out = import_file(daemon, path, job + "-json")
    assert "paddle (paddle)" in out and "ts kept" not in out, out
    wait_window(daemon, info, job + "-json")
    # the .pb's lines: its X events, its memory events and the window's ExtraInfo record
    n_x = sum(e.get("ph") == "X" or e.get("name") == "[memory]" for e in doc["traceEvents"]) + 1
    import_file(daemon, tmp / f"{job}.json.window.pb", job + "-pb")
    wait_window(daemon, info, job + "-pb", n_x)
    for j in (job, job + "-json", job + "-pb"):
        check_device_memory(daemon, j, info)
        check_memory_view(daemon, j, info, doc)
    # the .pb holds Paddle's ns: every table exact; the JSON twins within their floats
    check_tables(daemon, job + "-pb", info, steps=(3, 6))
    check_tables(daemon, job, info, steps=(3, 6), slack_ns=slack)
    check_tables(daemon, job + "-json", info, steps=(3, 6), slack_ns=slack)
    # live and imported: the very same tables, figure for figure
    for kind in ("overview", "operator", "model", "user-defined"):
        a = daemon.get_json(f"/api/v1/jobs/{job}/summary/{kind}")
        b = daemon.get_json(f"/api/v1/jobs/{job}-json/summary/{kind}")
        assert a["rows"] == b["rows"], kind
    live = operators_when_equal(daemon, job, job + "-json")
    assert len(live) > 20
    # /benchmark of the imported window: its 4 ProfileSteps, none taken for warm-up by default
    # (make_scheduler's closed and ready steps were), the same as live
    for j in (job, job + "-json"):
        b = daemon.get_json(f"/api/v1/jobs/{j}/benchmark")
        assert (b["source"], b["n_steps"], b["skipped"], b["counted"]) == ("spans", 4, 0, 4), b


def check_memory_view(daemon, job, info, doc):
    """/memory of a real Paddle CPU window (profile_memory=True): the curve is every memory
    event's current_allocated / current_reserved in time order (Paddle's own export, here the
    window's JSON), the allocated peak its largest (at most Paddle's own peak, which counts from
    the process's start), the reserved peak Paddle's own; every Allocate and Free event is counted once, in an operator or not."""
    events = sorted((e for e in doc["traceEvents"] if e.get("name") == "[memory]"),
                    key=lambda e: e["ts"])
    assert len(events) > 100
    mv = daemon.get_json(f"/api/v1/jobs/{job}/memory?points=100000")
    (s,) = mv["devices"]
    assert (s["device"], s["source"]) == ("CPU", "trace"), mv["devices"]
    assert s["points"] == s["kept"] == len(events)
    assert sorted([p[1], p[2]] for p in s["curve"]) == \
        sorted([e["args"]["current_allocated"], e["args"]["current_reserved"]] for e in events)
    assert s["peak_allocated"] == max(e["args"]["current_allocated"] for e in events)
    assert s["peak_allocated"] <= info["exact"]["memory"]["Place(cpu)"]["peak_allocated"]
    # the reserved peak is Paddle's own Peak Reserved Memory (the events' peak_reserved, from the
    # process's start): the window's current_reserved can stay far below it (6,353,880 B against
    # 20,509,784 B in the run, below the allocated peak)
    assert s["peak_reserved"] == info["exact"]["memory"]["Place(cpu)"]["peak_reserved"] == \
        max(e["args"]["peak_reserved"] for e in events), (s, info["exact"]["memory"]["Place(cpu)"])
    if all(e["args"]["current_reserved"] >= e["args"]["current_allocated"] for e in events):
        assert all(p[2] >= p[1] for p in s["curve"]), s["curve"]
    # per operator (tb-profiler's table, docs/ANALYSIS.md "Memory view"): an event belongs to the
    # innermost Operator around it (its OperatorInner and DygraphKernelLaunch events are not
    # operators); Paddle's own per-event-owner table is /summary/memory, checked above
    allocs = [e for e in events if e.get("cat") in ("Allocate", "Free")]
    assert mv["attributed"] + mv["unattributed"] == len(allocs)
    assert mv["attributed"] > len(allocs) // 2, mv
    ops = {r["name"]: r for r in mv["operators"]}
    assert "conv2d dygraph" in ops and "Global_Conv2dGradNodeFinal" in ops, sorted(ops)
    assert sum(r["self_allocation_count"] for r in ops.values()) <= \
        sum(e["cat"] == "Allocate" for e in events)
    for r in ops.values():
        assert r["allocation_count"] >= r["self_allocation_count"] and r["calls"] > 0, r


def check_device_memory(daemon, job, info):
    """The Device Summary and the Memory Summary of a window run with profile_memory=True equal
    Paddle's: its CPU figures are the window's ExtraInfo (not the host samples of the run), its
    memory rows (each memory event on the host event Paddle hung it on) and peaks, line for line
    as summary() prints them."""
    text, exact = info["summary_text"], info["exact"]
    dev = daemon.get_json(f"/api/v1/jobs/{job}/summary/device")
    assert (dev["cpu_source"], dev["windows"]) == ("paddle", 1), dev
    rows = {r["device"]: r["utilization_pct"] for r in dev["rows"]}
    for name, key in (("CPU(Process)", "Process Cpu Utilization"),
                      ("CPU(System)", "System Cpu Utilization")):
        assert abs(rows[name] - float(exact["extra"][key]) * 100) < 0.00005001, (name, rows, exact["extra"])
    body = daemon.request(f"/api/v1/jobs/{job}/summary/device?format=text")[2].decode()
    assert section(body, "Device Summary")[:10] == section(text, "Device Summary")[:10], body

    (place, want), = exact["memory"].items()
    assert place == "Place(cpu)" and len(want["rows"]) > 20, exact["memory"]
    mem = daemon.get_json(f"/api/v1/jobs/{job}/summary/memory")
    assert mem["places"] == [{"place": place, "peak_allocated": want["peak_allocated"],
                              "peak_reserved": want["peak_reserved"]}], \
        {k: v for k, v in mem.items() if k != "rows"}
    assert mem["memory_events_counted"] > 0, mem
    got = sorted([r["name"], r["type"], r["allocation_count"], r["free_count"], r["allocation_size"],
                  r["free_size"], r["increased_size"]] for r in mem["rows"])
    assert got == sorted(want["rows"]), (job, [r for r in got if r not in want["rows"]],
                                         [r for r in want["rows"] if r not in got])
    title = f"Memory Summary - {place}"
    theirs = [l for l in section(text, title) if l]
    body = daemon.request(f"/api/v1/jobs/{job}/summary/memory?format=text")[2].decode()
    assert [l for l in section(body, title) if l] == theirs, body
    # `stepscope summary` prints it after the other tables, as summary() does
    r = subprocess.run([str(import_cli()), "summary", job, "--socket", daemon.socket],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and [l for l in section(r.stdout, title) if l] == theirs, r
    assert r.stdout.index("UserDefined Summary") < r.stdout.index(title)
    r = subprocess.run([str(import_cli()), "summary", job, "--kind", "memory", "--socket",
                        daemon.socket], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.rstrip("\n") == body.rstrip("\n"), r


def test_timer_steps_equal_paddles_timer(daemon, tmp):
    """attach() beside a Profiler stepped with prof.step(num_samples): each step record runs from
    one prof.step() to the next, as Paddle's timer's batch_cost (clear_grad() and step() itself
    inside; it ended at optimizer.step() before, 108-393 µs short), its dataloader phase is the
    timer's reader cost (measured inside DataLoader.__next__, not around our wrapper) and its
    samples step()'s num_samples: /benchmark equals the timer's figures over the same steps."""
    job = JOB + "-timer"
    info = train(daemon, tmp, "paddle_summary_train.py", "timer", job)
    n = len(info["batch"])
    assert n == 16 and info["samples"] == [16] * 15 + [8]
    # Paddle's first batch runs from Profiler.start(); ours are its batches 2..16
    rows = steps_of(daemon, job, n)
    timer = rows[1:]
    assert [r["samples"] for r in timer] == info["samples"][1:]
    # The timer's clock and ours are read a few µs apart at each boundary; a preemption between
    # the two reads (a loaded 2-core CI machine) can make one step's gap larger: the median gap
    # must be under 50 µs (the bug this guards made every step 108-393 µs short) and none 2 ms.
    def close(gaps):
        gaps = sorted(abs(g) for g in gaps)
        return gaps[len(gaps) // 2] < 50e-6 and gaps[-1] < 2e-3
    assert close([r["total_us"] / 1e6 - b for r, b in zip(timer, info["batch"][1:])]), \
        [(r["total_us"], b) for r, b in zip(timer, info["batch"][1:])]
    assert len(info["reader"]) == n
    # a step's interval is its dataloader phase (source "phases")
    assert all(r["source"] == "phases" for r in timer), timer
    assert close([r["interval_us"] / 1e6 - c for r, c in zip(timer, info["reader"][1:])]), \
        [(r["interval_us"], c) for r, c in zip(timer, info["reader"][1:])]
    # /benchmark skips the first 10 steps and averages the other 6, as Paddle's timer means to
    # (docs/ANALYSIS.md: its own sums take batch 10 in as well but divide by 6)
    b = daemon.get_json(f"/api/v1/jobs/{job}/benchmark")
    st = {r["name"]: r for r in b["rows"]}
    counted_b, counted_r = info["batch"][10:], info["reader"][10:]
    assert b["counted"] == len(counted_b) == 6 and b["ips_unit"] == "samples/s"
    # (the timer's clock is read a few µs before ours at each boundary)
    assert abs(st["batch_cost"]["avg"] - sum(counted_b) / 6) < 20e-6
    assert abs(st["reader_cost"]["avg"] - sum(counted_r) / 6) < 20e-6
    ips = sum(info["samples"][10:]) / sum(counted_b)
    assert abs(st["ips"]["avg"] - ips) < ips * 6 * 20e-6 / sum(counted_b)


class _Lines:
    """What stream_chrome_trace() hands a client, kept as the lines it would send."""
    def __init__(self):
        self.lines = []

    def _put(self, b):
        self.lines.append(b)

    def event(self, ev):
        from stepscope._encode import encode_line
        self.lines.append(encode_line(ev))


def test_live_self_times_do_not_depend_on_the_reads(daemon, tmp):
    """A Paddle 3.3.1 window streamed live reaches the daemon cut wherever its reads fall, and
    Paddle writes the window level by level (a thread's top spans, then their children, ...), so
    a batch brings children whose parent came in an earlier one. Live /operators self times must
    not depend on where the cuts fell: the same window's lines, sent in several cut patterns
    (each part read and folded before the next is sent), give every operator the self time the
    store read in one piece gives (the ranged /api/v1/diff over the window's steps: torch's rule
    over the stored spans). Before the fix, a span whose parent came in an earlier batch got no
    parent, and the parent kept the time as its own (docs/ANALYSIS.md, "Self time")."""
    sys.path.insert(0, str(fwutil.REPO / "tests" / "integ"))
    sys.path.insert(0, str(fwutil.COLLECTOR))
    from ssclient import Client
    from stepscope.paddle import stream_chrome_trace

    job = "pd-reads"
    info = train(daemon, tmp, "paddle_summary_train.py", "window", job)
    wait_window(daemon, info, job)
    doc = json.loads((tmp / f"{job}.json.window.json").read_text())
    rec = _Lines()
    n = stream_chrome_trace(doc, rec)
    lines = rec.lines
    assert n == len(lines) == info["window_events"] and None not in lines
    version = daemon.get_json(f"/api/v1/jobs/{job}")["ranks_detail"][0]["framework_version"]

    def store_self(j):
        d = daemon.get_json(f"/api/v1/diff?base={j}&exp={j}&base_steps=2-8&exp_steps=2-8")
        assert d["base"]["steps_range"]["step_spans"] == 7, d["base"]
        return {r["name"]: r["base_self_us"] for r in d["operators"]}

    def live_self(j):
        return {r["name"]: r["self_us"]
                for r in daemon.get_json(f"/api/v1/jobs/{j}/operators?limit=100000")["rows"]}

    def operators_settled(j, want):
        """j's /operators once republished with want calls in all (~0.1 s after the flush)."""
        daemon.wait_for(f"{want} calls on {j}'s /operators", lambda: sum(
            r["calls"] for r in daemon.get_json(f"/api/v1/jobs/{j}/operators?limit=100000")["rows"])
            == want)

    whole = store_self(job)
    assert len(whole) > 20
    calls = sum(r["calls"] for r in daemon.get_json(f"/api/v1/jobs/{job}/operators?limit=100000")["rows"])
    # the collector's own stream, cut where its reads fell
    operators_settled(job, calls)
    assert live_self(job) == whole
    patterns = {"halves": [n // 2], "thirds": [n // 3, 2 * n // 3], "early": [7, 60],
                "every-97": list(range(97, n, 97)), "one-write": []}
    for name, cuts in patterns.items():
        j = f"pd-reads-{name}"
        c = Client(daemon.socket)
        c.hello(j, framework="paddle", framework_version=version)
        sent = 0
        for end in cuts + [n]:
            c.send_raw(b"".join(l + b"\n" for l in lines[sent:end]))
            sent = end
            daemon.wait_for(f"{sent} events of {j}", lambda: daemon.job(j)["events"] == sent)
            time.sleep(0.3)  # the flush timer folds what was read before the next part comes
        c.sock.close()
        operators_settled(j, calls)
        assert store_self(j) == whole, name
        live = live_self(j)
        assert set(live) == set(whole), name
        wrong = {k: (live[k], whole[k]) for k in whole if live[k] != whole[k]}
        assert not wrong, (name, wrong)
