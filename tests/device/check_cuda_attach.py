#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks what tests/device/cuda_attach.py recorded, against a real stepscoped (run here, where
the daemon is built; tests/device/README.md):

    BUILD_DIR=build check_cuda_attach.py OUTDIR

1. starts the built daemon (tests/integ/conftest.py's Daemon), replays OUTDIR/records.ndjson
   into it over its socket with the recorded hello (job "cuda-attach"), and imports
   OUTDIR/trace.json.gz, the same window, with `stepscope import` as job "cuda-attach-import";
2. compares each job's /operators with torch's own prof.key_averages() (host rows: calls, Self
   CPU total, CPU total) and, for a CUDA run, /kernels with key_averages' CUDA rows (calls, Self
   CUDA total);
3. checks the live job's steps: one step per iteration, the window's ProfilerStep ranges carry
   attach()'s numbers (torch's labels in args.profiler_step), every host span an active
   iteration ran after its next() lies inside /steps' step of that number, every kernel inside
   the step that launched it, the active steps take their points from the trace and the others
   from their phases, /breakdown numbers the same steps, and no stage is negative on any step
   of either job;
4. for a CUDA run, and where Holistic Trace Analysis is installed (tests/integ/requirements.txt),
   compares each job's /gpu/temporal (its defaults: the last step left out, times in ns) with
   HTA's own get_temporal_breakdown() of trace.json.gz (HTA_DISABLE_NS_ROUNDING=1);
5. for a --memory run (profile_memory=True), compares each job's /memory (the memory view, issue
   17 item 2) with the profile's own peak (the largest "Total Allocated" of the trace's [memory]
   events, per device) and with torch.cuda.max_memory_allocated() after the loop (meta.json):
   the window's peak is at most the loop's (equal when the window holds the loop's largest
   step); the live job's allocator series (attach()'s "[memory stats]" at each step's end,
   torch.cuda.memory_stats()) has one sample per step and its peak equals
   max_memory_allocated(); with TB_PYTHON naming a Python with torch-tb-profiler 0.4.3 (e.g.
   /work/tbvenv/bin/python), the imported job's whole view equals the plugin's own
   (tests/analyse/tb_profiler_memory.py).

Prints a table per comparison and one line per check; exits 1 on any mismatch.
"""
import gzip
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.parse

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "integ"))
_spec = importlib.util.spec_from_file_location("integ_conftest", REPO / "tests" / "integ" / "conftest.py")
integ = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(integ)
import ssclient  # noqa: E402

# Names torch's key_averages() leaves out on purpose (torch/autograd/profiler_util.py
# _filter_name) while Kineto's export keeps them.
TORCH_FILTERED = {"[memory]", "[OutOfMemory]", "profiler::_record_function_enter",
                  "profiler::_record_function_enter_new", "profiler::_record_function_exit",
                  "aten::is_leaf", "aten::output_nr", "aten::_version"}
KERNEL_CATS = {"kernel", "Kernel"}
DEVICE_CATS = KERNEL_CATS | {"gpu_memcpy", "gpu_memset", "gpu_user_annotation", "Memcpy", "Memset"}
STAGES = ("interval_us", "fp_bp_us", "tail_us")

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)
    return ok


def q(s):
    return urllib.parse.quote(str(s), safe="")


def close(a, b, count):
    """Equal to what the two sides can round: nothing for legacy whole µs, a ns per call for
    Kineto's 3-decimal µs."""
    return abs(a - b) <= 0.0015 * max(count, 1) + 1e-9 * max(abs(a), abs(b)) + 1e-6


def table(title, rows, header):
    print("\n" + title)
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    widths[0] = min(widths[0], 60)
    fmt = "  ".join("%%-%ds" % w if i == 0 else "%%%ds" % w for i, w in enumerate(widths))
    print(fmt % tuple(header))
    for r in rows:
        print(fmt % tuple((str(r[0])[:60],) + tuple(r[1:])))


def fnum(v):
    return "-" if v is None else ("%.3f" % v if isinstance(v, float) else str(v))


def get_all(d, job, route):
    doc = d.get_json(f"/api/v1/jobs/{q(job)}/{route}?limit=100000")
    return {r["name"]: r for r in doc["rows"]}


def compare_operators(d, job, ka, trace):
    # device activity's rows; the GPU mirrors of host ranges (gpu_user_annotation) share their
    # names with host rows, which torch keeps apart by device type
    device = {e["name"] for e in trace if isinstance(e, dict)
              and e.get("cat") in DEVICE_CATS - {"gpu_user_annotation"}}
    host = [a for a in ka if a["device_type"] in ("CPU", None) and a["name"] not in device]
    ops = get_all(d, job, "operators")
    rows, bad = [], 0
    for a in sorted(host, key=lambda a: -a["cpu_total_us"]):
        r = ops.get(a["name"])
        if r is None:
            status = "filtered" if a["name"] in TORCH_FILTERED else "MISSING"
        else:
            good = (r["calls"] == a["count"] and close(r["self_us"], a["self_cpu_us"], a["count"])
                    and close(r["total_us"], a["cpu_total_us"], a["count"]))
            status = "ok" if good else "DIFF"
        bad += status in ("MISSING", "DIFF")
        rows.append((a["name"], a["count"], fnum(r and r["calls"]), fnum(a["self_cpu_us"]),
                     fnum(r and r["self_us"]), fnum(a["cpu_total_us"]), fnum(r and r["total_us"]),
                     status))
    names = {a["name"] for a in ka}
    extra = sorted(n for n in ops if n not in names)
    for n in extra:
        r = ops[n]
        status = "filtered" if n in TORCH_FILTERED else "EXTRA"
        bad += status == "EXTRA"
        rows.append((n, "-", r["calls"], "-", fnum(r["self_us"]), "-", fnum(r["total_us"]), status))
    table(f"/operators of {job} against key_averages() (µs)", rows,
          ("name", "calls", "stepscope", "self", "stepscope", "total", "stepscope", ""))
    check(bad == 0, f"{job}: /operators equals key_averages() on {len(host)} host rows "
                    f"({bad} differ, missing or extra)")


def compare_kernels(d, job, ka, trace):
    kernel_names = {e["name"] for e in trace if isinstance(e, dict) and e.get("cat") in KERNEL_CATS}
    cuda = [a for a in ka if a["device_type"] not in ("CPU", None) and a["name"] in kernel_names]
    kern = get_all(d, job, "kernels")
    rows, bad = [], 0
    for a in sorted(cuda, key=lambda a: -a["self_cuda_us"]):
        r = kern.get(a["name"])
        good = r is not None and r["calls"] == a["count"] and close(r["total_us"], a["self_cuda_us"], a["count"])
        bad += not good
        rows.append((a["name"], a["count"], fnum(r and r["calls"]), fnum(a["self_cuda_us"]),
                     fnum(r and r["total_us"]), "ok" if good else ("MISSING" if r is None else "DIFF")))
    if rows:
        table(f"/kernels of {job} against key_averages()' CUDA rows (µs)", rows,
              ("kernel", "calls", "stepscope", "self cuda", "stepscope", ""))
    check(bool(cuda) and bad == 0, f"{job}: /kernels equals key_averages() on {len(cuda)} kernels "
                                   f"({bad} differ or missing)")


def no_negative_stage(d, job):
    rows = d.get_json(f"/api/v1/jobs/{q(job)}/steps?limit=100000")["rows"]
    bad = []
    for r in rows:
        one = d.get_json(f"/api/v1/jobs/{q(job)}/step-trace?step={r['step']}")
        if any(r[k] < 0 for k in STAGES) or any(one[k] < 0 for k in STAGES) or \
                abs(sum(r[k] for k in STAGES) - r["total_us"]) > 0.01:
            bad.append({k: r[k] for k in ("step", "total_us") + STAGES})
    check(rows and not bad, f"{job}: no negative stage on any of {len(rows)} steps {bad[:3]}")
    return rows


def step_num(name):
    return int(name[len("ProfilerStep#"):])


def check_steps(d, job, meta, trace):
    loop = meta["loop"]
    active = [i for i, it in enumerate(loop) if it["action"].startswith("RECORD")]
    rows = d.get_json(f"/api/v1/jobs/{q(job)}/steps?limit=100000")["rows"]
    check([r["step"] for r in rows] == list(range(len(loop))) and meta["recorded"] == len(loop),
          f"{job}: one step per iteration, 0..{len(loop) - 1} ({len(rows)} in /steps)")
    by = {r["step"]: r for r in rows}
    srcs = {r["step"]: r["source"] for r in rows}
    check(all(srcs.get(i) == ("trace" if i in active else "phases") for i in range(len(loop))),
          f"{job}: active steps {active} take points from the trace, the others from phases: {srcs}")
    labels = sorted(step_num(e["name"]) for e in trace if isinstance(e, dict) and e.get("ph") == "X"
                    and str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("cat") != "gpu_user_annotation")
    tl = d.get_json(f"/api/v1/jobs/{q(job)}/timeline")["traceEvents"]
    spans = [e for e in tl if e.get("ph") == "X"]
    ranges = {step_num(e["name"]): e for e in spans if e["name"].startswith("ProfilerStep#")
              and e.get("cat") != "gpu_user_annotation"}
    check(sorted(ranges) == active, f"{job}: ProfilerStep ranges numbered {sorted(ranges)} = attach()'s {active}")
    check(sorted(e.get("args", {}).get("profiler_step", -1) for e in ranges.values()) == labels,
          f"{job}: torch's labels {labels} kept in args.profiler_step")
    report = []
    for s in active:
        ps, r, it = ranges.get(s), by.get(s), loop[s]
        if ps is None or r is None:
            continue
        prev_end = loop[s - 1]["end"] / 1e3 if s > 0 else r["start_us"]
        inside = [e for e in spans if e is not ps and e.get("cat") not in DEVICE_CATS
                  and ps["ts"] <= e["ts"] < ps["ts"] + ps["dur"]]
        late = [e for e in inside if e["ts"] >= it["begin"] / 1e3
                and not (r["start_us"] <= e["ts"] and e["ts"] + e["dur"] <= r["end_us"])]
        early = [e for e in inside if e["ts"] < it["begin"] / 1e3 and e["ts"] < prev_end]
        report.append((s, fnum(ps["ts"]), fnum(r["start_us"]), fnum(ps["ts"] + ps["dur"]),
                       fnum(r["end_us"]), len(inside), len(late) + len(early)))
        check(inside and not late and not early,
              f"{job}: step {s}: {len(inside)} host spans of ProfilerStep#{s} inside /steps' step {s} "
              f"(outside: {[(e['name'], e['ts']) for e in (late + early)[:3]]})")
    table(f"{job}: ProfilerStep ranges against /steps (µs)", report,
          ("step", "range start", "step start", "range end", "step end", "spans", "outside"))
    # device work: inside the step whose runtime call launched it (the loop waits on loss.item())
    runtime = {}
    for e in spans:
        c = (e.get("args") or {}).get("correlation")
        if c is not None and e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime"):
            runtime[c] = e
    kernels = [e for e in spans if e.get("cat") in DEVICE_CATS - {"gpu_user_annotation"}]
    if kernels:
        bad = []
        for k in kernels:
            rt = runtime.get((k.get("args") or {}).get("correlation"))
            st = next((r for r in rows if rt and r["start_us"] <= rt["ts"] < r["end_us"]), None)
            if rt is None or st is None or not (st["start_us"] <= k["ts"] and k["ts"] + k["dur"] <= st["end_us"]):
                bad.append((k["name"][:40], k["ts"], rt and rt["ts"], st and st["step"]))
        check(not bad, f"{job}: {len(kernels)} kernels/memcpys/memsets inside the step that launched them "
                       f"({len(bad)} not: {bad[:3]})")
    bd = d.get_json(f"/api/v1/jobs/{q(job)}/breakdown")
    check([b["step"] for b in bd["rows"]] == active, f"{job}: /breakdown steps {[b['step'] for b in bd['rows']]} = {active}")
    return labels


def compare_gpu_temporal(d, job, out):
    """/gpu/temporal of job against HTA's temporal breakdown of the same window's trace file."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print(f"skip  {job}: /gpu/temporal against HTA (hta not installed here)")
        return
    import logging
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ss-hta-"))
    (folder / "trace.json.gz").write_bytes((out / "trace.json.gz").read_bytes())
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    logging.disable(logging.WARNING)
    try:
        ta = TraceAnalysis(trace_dir=str(folder), include_last_profiler_step=False)
        want = ta.get_temporal_breakdown(visualize=False)
    finally:
        logging.disable(logging.NOTSET)
    doc = d.get_json(f"/api/v1/jobs/{q(job)}/gpu/temporal")
    rows = doc["rows"]
    check(len(rows) == 1 and len(want) == 1, f"{job}: one rank in /gpu/temporal ({len(rows)}) and in HTA ({len(want)})")
    if len(rows) != 1 or len(want) != 1:
        return
    row, ref = rows[0], want.iloc[0]
    kept = sum(len(df[df["stream"].ne(-1)]) for df in ta.t.traces.values())
    tol = kept * 0.001 + 1e-6  # HTA sums float µs: 1 ns per device event
    pairs = (("idle_us", "idle_time(us)"), ("compute_us", "compute_time(us)"),
             ("non_compute_us", "non_compute_time(us)"), ("kernel_us", "kernel_time(us)"))
    table(f"/gpu/temporal of {job} against HTA 0.5.0 (µs)",
          [(ours, f"{row[ours]:.3f}", f"{ref[theirs]:.3f}") for ours, theirs in pairs],
          ("figure", "stepscope", "HTA"))
    check(row["device_events_kept"] == kept,
          f"{job}: device events kept {row['device_events_kept']} = HTA's {kept}")
    for ours, theirs in pairs:
        check(abs(row[ours] - float(ref[theirs])) <= tol,
              f"{job}: {ours} {row[ours]:.3f} = HTA {float(ref[theirs]):.3f} (within {tol:.3f})")


def trace_peaks(trace):
    """The profile's own peak per device: the largest "Total Allocated" of its [memory] events
    (devices named as /memory and torch-tb-profiler name them)."""
    peaks = {}
    for e in trace:
        if not isinstance(e, dict) or e.get("name") != "[memory]":
            continue
        a = e.get("args") or {}
        t, i, ta = a.get("Device Type"), a.get("Device Id"), a.get("Total Allocated")
        if ta is None or t not in (0, 1):
            continue
        dev = "CPU" if t == 0 else "GPU%d" % i
        peaks[dev] = max(peaks.get(dev, 0), ta)
    return peaks


def tb_profiler_memory(out):
    """torch-tb-profiler's own memory view of trace.json.gz, where TB_PYTHON names a Python
    that has it; else None."""
    py = os.environ.get("TB_PYTHON")
    if not py:
        return None
    r = subprocess.run([py, str(REPO / "tests" / "analyse" / "tb_profiler_memory.py"),
                        str(out / "trace.json.gz")], capture_output=True, text=True, timeout=600)
    if not check(r.returncode == 0, f"tb_profiler_memory.py under {py}: exit {r.returncode} "
                                    f"{r.stderr[-300:]}"):
        return None
    return json.loads(r.stdout)


def compare_memory(d, job, meta, trace, live, tb):
    """/memory of job against the profile's own peaks, torch.cuda.max_memory_allocated() and,
    for the live job, attach()'s allocator samples; tb: the plugin's own view (or None)."""
    doc = d.get_json(f"/api/v1/jobs/{q(job)}/memory?points=100000")
    want = trace_peaks(trace)
    series = {(s["device"], s["source"]): s for s in doc["devices"]}
    loop_peak = meta["max_memory_allocated"]
    rows = []
    for dev, peak in sorted(want.items()):
        s = series.get((dev, "trace"))
        got = s and s["peak_allocated"]
        rows.append((dev, "trace", peak, fnum(got), fnum(s and s["peak_step"]),
                     loop_peak if dev == "GPU0" else "-"))
        check(got == peak, f"{job}: /memory {dev} peak {got} B = the profile's own {peak} B")
        if dev == "GPU0":
            check(got is not None and got <= loop_peak,
                  f"{job}: /memory GPU0 window peak {got} B <= torch.cuda.max_memory_allocated() "
                  f"{loop_peak} B (the window's steps against the whole loop; "
                  f"{'equal' if got == loop_peak else 'differ by %s B' % (loop_peak - (got or 0))})")
    if live:
        a = series.get(("GPU0", "allocator"))
        rows.append(("GPU0", "allocator", "-", fnum(a and a["peak_allocated"]),
                     fnum(a and a["peak_step"]), loop_peak))
        check(a is not None and a["points"] == meta["recorded"],
              f"{job}: /memory GPU0 allocator series: {a and a['points']} samples, one per step "
              f"({meta['recorded']})")
        check(a is not None and a["peak_allocated"] == loop_peak,
              f"{job}: /memory GPU0 allocator peak {a and a['peak_allocated']} B = "
              f"torch.cuda.max_memory_allocated() {loop_peak} B")
        check(a is not None and a["peak_reserved"] == meta["max_memory_reserved"],
              f"{job}: /memory GPU0 allocator reserved peak {a and a['peak_reserved']} B = "
              f"torch.cuda.max_memory_reserved() {meta['max_memory_reserved']} B")
    table(f"/memory of {job}: peaks (B)", rows,
          ("device", "source", "profile's own", "stepscope", "peak step", "max_memory_allocated"))
    if tb is None or live:
        return
    ours = {}
    for r in doc["operators"]:
        ours.setdefault(r["device"], []).append(
            [r["name"], r["calls"], r["size_increase"], r["self_size_increase"],
             r["allocation_count"], r["self_allocation_count"], r["allocation_size"],
             r["self_allocation_size"]])
    for dev, ref in tb["devices"].items():
        s = series.get((dev, "trace"))
        same_rows = [[x[0]] + [float(v) for v in x[1:]] for x in ours.get(dev, [])] == \
            [[x[0]] + [float(v) for v in x[1:]] for x in ref["stats"]]
        check(same_rows, f"{job}: /memory {dev} operator table = torch-tb-profiler's "
                         f"({len(ref['stats'])} rows)")
        check(s is not None and s["peak_allocated"] == ref["peak"] and
              [p[1:] for p in s["curve"]] == [p[1:] for p in ref["curve"]],
              f"{job}: /memory {dev} curve ({len(ref['curve'])} points) and peak {ref['peak']} B "
              "= torch-tb-profiler's")


def load(out):
    """meta.json, key_averages.json, the trace's events and the recorded lines (records.ndjson,
    or records.ndjson.gz as tests/data keeps it) of a cuda_attach.py output folder."""
    meta = json.loads((out / "meta.json").read_text())
    ka = json.loads((out / "key_averages.json").read_text())
    doc = json.loads(gzip.decompress((out / "trace.json.gz").read_bytes()))
    trace = doc if isinstance(doc, list) else doc["traceEvents"]
    rec = out / "records.ndjson"
    raw = rec.read_bytes() if rec.exists() else gzip.decompress((out / "records.ndjson.gz").read_bytes())
    lines = [ln for ln in raw.split(b"\n") if ln.strip()]
    return meta, ka, trace, lines


def replay(d, lines):
    """Sends the recorded lines to daemon d over its socket as the collector did: the recorded
    hello (its job), then every other line; waits for every acknowledgement. Returns (number of
    lines after the hello, the client's errors)."""
    body = [ln for ln in lines[1:] if not ln.startswith(b'{"hello"')]
    c = ssclient.Client(d.socket, timeout=60)
    c.send_raw(lines[0] + b"\n")
    c.read_welcome()
    c.send_lines([ln.decode() for ln in body])
    c.wait_ack(len(body), timeout=120)
    c.close()
    return len(body), c.errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1]).resolve()
    meta, ka, trace, lines = load(out)
    hellos = [i for i, ln in enumerate(lines) if ln.startswith(b'{"hello"')]
    print(f"torch {meta['torch']} cuda {meta['cuda']} on {meta['device']} (kineto {meta['kineto']}); "
          f"{len(lines) - len(hellos)} lines recorded, {meta['recorder']['connections']} connection(s)")
    check(hellos == [0], f"one connection, hello first (hellos at lines {hellos[:5]})")
    job = json.loads(lines[0])["job"]

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ss-chk-"))
    d = integ.Daemon(tmp, "d")
    d.start()
    try:
        n_body, errors = replay(d, lines)
        check(not errors, f"replay: {n_body} lines acknowledged, errors {errors[:3]}")
        imp = subprocess.run([str(integ.build_dir() / "cli" / "stepscope"), "import",
                              "--quiet", "--socket", d.socket, "--job", job + "-import",
                              str(out / "trace.json.gz")], capture_output=True, text=True, timeout=300,
                             env=integ.clean_env(tmp))
        check(imp.returncode == 0, f"stepscope import: exit {imp.returncode} {imp.stderr[-300:]}")
        n_trace = sum(1 for e in trace if isinstance(e, dict) and "ph" in e)
        # The live job also holds attach()'s allocator samples (--memory on CUDA): one
        # "[memory stats]" counter event per step and device, outside the window.
        n_alloc = sum(1 for ln in lines if b'"[memory stats]"' in ln)
        want = {job: meta["window_events"] + n_alloc, job + "-import": n_trace}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = {j: (d.job(j) or {}).get("events") for j in want}
            if got == want:
                break
            time.sleep(0.5)
        check(got == want, f"events held {got}, sent {want}")
        time.sleep(1.5)  # one publish after the last event
        for j in want:
            compare_operators(d, j, ka, trace)
            if not meta["cpu_only"]:
                compare_kernels(d, j, ka, trace)
            no_negative_stage(d, j)
            if not meta["cpu_only"]:
                compare_gpu_temporal(d, j, out)
        if meta.get("profile_memory") and not meta["cpu_only"]:
            print(f"torch.cuda.max_memory_allocated() {meta['max_memory_allocated']} B, "
                  f"max_memory_reserved() {meta['max_memory_reserved']} B")
            tb = tb_profiler_memory(out)
            for j in want:
                compare_memory(d, j, meta, trace, j == job, tb)
        labels = check_steps(d, job, meta, trace)
        bd = d.get_json(f"/api/v1/jobs/{q(job + '-import')}/breakdown")
        check([b["step"] for b in bd["rows"]] == labels,
              f"{job}-import: /breakdown steps {[b['step'] for b in bd['rows']]} = torch's labels {labels}")
    finally:
        d.stop()
    print(f"\n{len(failures)} check(s) failed" if failures else "\nall checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
