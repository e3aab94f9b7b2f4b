# SPDX-License-Identifier: MIT
"""Real PyTorch through stepscope.torch, against the real daemon.

Debian's python3-torch 1.13 (torch without Kineto) under /usr/bin/python3 runs torch_train.py; the
test itself runs under the PATH python3 and reads the HTTP API. Expected numbers come from what
the training script measured or what torch itself computed (prof.key_averages()), never from the
collector's own records.
"""
import json
import subprocess
import urllib.parse

import pytest

from fwutil import HERE, SYSTEM_PYTHON, import_cli, integ, run_script, script_env

SCRIPT = HERE / "torch_train.py"


@pytest.fixture(scope="module", autouse=True)
def torch_available():
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("Debian's python3-torch is needed for /usr/bin/python3 (scripts/deps test "
                    "installs it): " + r.stderr[-500:])


def q(name):
    return urllib.parse.quote(name, safe="")


def steps_of(daemon, job):
    return daemon.get_json(f"/api/v1/jobs/{q(job)}/steps?limit=100000")["rows"]


def operators_of(daemon, job):
    doc = daemon.get_json(f"/api/v1/jobs/{q(job)}/operators?limit=100000")
    assert doc["total"] == len(doc["rows"])
    return {r["name"]: r for r in doc["rows"]}


def train(daemon, job, out, steps, workers):
    run_script(SYSTEM_PYTHON, SCRIPT, ["attach", out, steps, workers], script_env(daemon, job))
    res = json.loads(out.read_text())
    assert res["flushed"], "the client's flush was not acknowledged in time"
    assert res["internal_errors"] == 0 and res["dropped"] == 0, res
    return res


def check_steps(daemon, job, res, floors):
    """Every step the loop ran is in /steps, in order, with its samples and its phases: each
    phase is at least the sleep the script put in it and at most what the loop measured around
    it. /steps shows the phases as interval = dataloader, fp_bp = forward + backward, and tail =
    the rest of the step (optimizer included)."""
    outer = res["steps"]
    assert res["recorded"] == len(outer)
    rows = daemon.wait_for("every step in /steps",
                           lambda: (lambda r: r if len(r) == len(outer) else None)(steps_of(daemon, job)))
    load_floor, fwd_floor, bwd_floor, opt_floor = floors
    for i, (o, r) in enumerate(zip(outer, rows)):
        assert r["step"] == i and r["rank"] == 0
        assert r["from"] == "record" and r["source"] == "phases", r
        assert r["samples"] == o["samples"], (i, r, o)
        us = lambda ns: ns / 1000.0  # noqa: E731
        # dataloader: the wait inside next(), which the loop's own timing brackets
        assert load_floor(o["samples"]) <= r["interval_us"] <= us(o["dataloader"]) + 1, (i, r, o)
        assert fwd_floor + bwd_floor <= r["fp_bp_us"] <= us(o["forward"] + o["backward"]) + 1, (i, r, o)
        assert r["tail_us"] >= opt_floor, (i, r, o)
        # the step starts inside the loop's next() call and runs to the next one
        assert us(o["begin"]) <= r["start_us"] <= us(o["begin"] + o["dataloader"]), (i, r, o)
        if i + 1 < len(outer):
            assert r["end_us"] == rows[i + 1]["start_us"]
            assert r["end_us"] <= us(outer[i + 1]["begin"] + outer[i + 1]["dataloader"])
        total_outer = us(o["dataloader"] + o["forward"] + o["backward"] + o["optimizer"])
        assert r["total_us"] >= total_outer - us(o["dataloader"]) * 0.05 - 1000, (i, r, o)
    return rows


SLEEP = {"load": 0.004, "forward": 0.006, "backward": 0.008, "opt": 0.003}  # torch_train.py's


def test_attach_records_every_step_with_phases_and_samples(daemon, tmp):
    """30 steps of a 65-batch epoch, leaving the loop early (break): 30 steps, no more."""
    res = train(daemon, "cnn", tmp / "attach.json", 30, 0)
    assert len(res["steps"]) == 30
    assert res["torch"].startswith("1.13"), "expected Debian's torch 1.13 under /usr/bin/python3"
    rows = check_steps(daemon, "cnn", res, (lambda n: n * SLEEP["load"] * 1e6,
                                            SLEEP["forward"] * 1e6, SLEEP["backward"] * 1e6,
                                            SLEEP["opt"] * 1e6))
    job = daemon.job("cnn")
    assert job["steps"] == 30
    assert job["host_samples"] >= 1, "attach() takes host CPU samples"
    # samples/s: the daemon has samples and durations for every step
    assert all(r["samples"] == 8 for r in rows)
    assert daemon.get_json(f"/api/v1/jobs/cnn/queues")["queues"] == [], \
        "no prefetch queue without workers"
    check_framework_is_torch(daemon, "cnn", res)
    # no CUDA here: no allocator samples (and nothing else in /memory)
    assert daemon.get_json("/api/v1/jobs/cnn/memory")["devices"] == []


def test_attach_sends_the_allocators_figures_each_step(daemon, tmp):
    """With CUDA in use attach() sends torch.cuda.memory_stats()'s current and peak allocated and
    reserved bytes per device at each step's end ("[memory stats]", docs/PROTOCOL.md 10), and
    /memory shows them as the device's allocator series. This machine has no CUDA: a stand-in
    answers memory_stats() (torch_train.py memory-stand-in); tests/device/check_cuda_attach.py
    --memory checks the real allocator on a GPU."""
    run_script(SYSTEM_PYTHON, SCRIPT, ["memory-stand-in", tmp / "mem.json", 20],
               script_env(daemon, "cudamem"))
    res = json.loads((tmp / "mem.json").read_text())
    assert res["flushed"] and res["internal_errors"] == 0 and res["dropped"] == 0, res
    calls = [c for c in res["memory_stats"] if c["device"] == 0]
    assert len(calls) == res["recorded"] == 20
    steps = [r["step"] for r in steps_of(daemon, "cudamem")]
    doc = daemon.get_json("/api/v1/jobs/cudamem/memory?points=100000")
    assert [(s["device"], s["source"]) for s in doc["devices"]] == [("GPU0", "allocator")], \
        "GPU1's allocator never held memory: no series"
    s = doc["devices"][0]
    assert s["points"] == s["kept"] == 20
    assert [p[1:] for p in s["curve"]] == \
        [[c["allocated_bytes.all.current"], c["reserved_bytes.all.current"]] for c in calls]
    # the peak: the allocator's own (larger than any sample's current), first seen at its step
    peak = max(c["allocated_bytes.all.peak"] for c in calls)
    first = next(i for i, c in enumerate(calls) if c["allocated_bytes.all.peak"] == peak)
    assert s["peak_allocated"] == peak > max(c["allocated_bytes.all.current"] for c in calls)
    assert s["peak_step"] == steps[first]
    assert s["peak_reserved"] == 4 << 20
    # each sample at its step's end (/steps' end_us, read as a double: within 1 us)
    ends = [r["end_us"] for r in steps_of(daemon, "cudamem")]
    assert len(ends) == 20
    assert all(abs(p[0] - e * 1000) < 1000 for p, e in zip(s["curve"], ends))


def check_framework_is_torch(daemon, job, res):
    """The job's rank says torch, so the helper applies torch-tb-profiler's rules and not
    MindInsight's (no device queue verdict on a DataLoader's queue), whether attach() made the
    client (its first hello names torch) or the script made one before (attach() names torch
    after that hello went: the client connects again with it)."""
    ranks = daemon.get_json(f"/api/v1/jobs/{job}")["ranks_detail"]
    assert [(r["framework"], r["framework_version"]) for r in ranks] == [("torch", res["torch"])]
    helper = daemon.get_json(f"/api/v1/jobs/{job}/helper")
    assert helper["inputs"]["framework"] == "torch", helper["inputs"]
    assert helper["inputs"]["device_queue_empty_ratio"] is None, helper["inputs"]


def test_attach_with_workers_records_prefetch_queue_depth(daemon, tmp):
    """A whole epoch with num_workers=2: 65 steps (the last one of 3 samples, ended by the loader
    running dry) and one prefetch-queue sample per step, bounded by prefetch_factor x workers."""
    res = train(daemon, "cnn-workers", tmp / "attach.json", 1000, 2)
    outer = res["steps"]
    assert len(outer) == 65 and outer[-1]["samples"] == 3
    # with workers the loader's wait has no floor: the workers load while the loop trains
    check_steps(daemon, "cnn-workers", res, (lambda n: 0, SLEEP["forward"] * 1e6,
                                             SLEEP["backward"] * 1e6, SLEEP["opt"] * 1e6))
    doc = daemon.wait_for("the dataloader queue", lambda: (lambda d: d if d["queues"] and d["queues"][0]["samples"] == 65 else None)(
        daemon.get_json("/api/v1/jobs/cnn-workers/queues")))
    qd = doc["queues"][0]
    assert qd["name"] == "dataloader" and qd["role"] == "host"
    assert qd["capacity"] == 4
    assert 0 <= qd["max_size"] <= 4
    assert [p["step"] for p in qd["series"]] == list(range(65))
    check_framework_is_torch(daemon, "cnn-workers", res)


def compare_with_key_averages(table, averages, what):
    assert set(table) == {a["name"] for a in averages}, what
    for a in averages:
        r = table[a["name"]]
        assert r["calls"] == a["calls"], (what, a, r)
        # legacy traces and key_averages() both hold whole microseconds: exact equality
        assert abs(r["self_us"] - a["self_cpu_total_us"]) < 1e-6, (what, a, r)
        assert abs(r["total_us"] - a["cpu_total_us"]) < 1e-6, (what, a, r)


def streamed_and_imported(daemon, tmp, mode, args):
    """Runs a profiler mode of torch_train.py into job mode-stream, imports the file the handler
    kept into job mode-import with `stepscope import`, returns (result, stream table, import table)."""
    out = tmp / mode
    out.mkdir()
    run_script(SYSTEM_PYTHON, SCRIPT, [mode, out] + args, script_env(daemon, mode + "-stream"))
    res = json.loads((out / "result.json").read_text())
    assert res["flushed"] and res["internal_errors"] == 0 and res["dropped"] == 0, res
    assert len(res["windows"]) == 1
    w = res["windows"][0]
    trace = json.loads(open(w["path"]).read())
    assert isinstance(trace, list), "torch without Kineto writes the legacy bare array"
    assert w["events"] == len(trace) > 100
    r = subprocess.run([str(import_cli()), "import", "--quiet", "--socket", daemon.socket,
                        "--job", mode + "-import", w["path"]], capture_output=True, text=True,
                       timeout=120, env=integ.clean_env(tmp))
    assert r.returncode == 0, r.stderr
    tables = []
    for job in (mode + "-stream", mode + "-import"):
        daemon.wait_for(f"{job}: every event", lambda: daemon.job(job)["events"] == len(trace))
        tables.append(daemon.wait_for(f"{job}: operators", lambda: operators_of(daemon, job)))
    return res, w, trace, tables


def test_trace_handler_and_import_equal_key_averages(daemon, tmp):
    """torch.profiler.profile (schedule wait=1 warmup=1 active=4) with on_trace_ready =
    stepscope.torch.trace_handler(): the streamed window and the same trace imported from its
    file both give torch's own key_averages() (Calls, Self CPU total, CPU total), row for row."""
    res, w, trace, (streamed, imported) = streamed_and_imported(daemon, tmp, "profile", [4])
    assert res["api"] == "torch.profiler.profile" and res["kineto"] is False
    names = {a["name"] for a in w["averages"]}
    assert {"ProfilerStep*", "train_step_body", "aten::conv2d"} <= names
    compare_with_key_averages(streamed, w["averages"], "streamed by trace_handler")
    compare_with_key_averages(imported, w["averages"], "stepscope import")
    # the active window's 4 steps, numbered as torch numbered its ProfilerStep#N spans
    numbers = sorted(int(e["name"][len("ProfilerStep#"):]) for e in trace
                     if e["name"].startswith("ProfilerStep#"))
    assert len(numbers) == 4
    for job in ("profile-stream", "profile-import"):
        assert [s["step"] for s in steps_of(daemon, job)] == numbers, job


STAGES = ("interval_us", "fp_bp_us", "tail_us")


def check_no_negative_stage(daemon, job, rows):
    """Every /steps row and its /step-trace: no stage below zero, and the stages sum to the
    total."""
    for r in rows:
        assert all(r[k] >= 0 for k in STAGES), r
        assert abs(sum(r[k] for k in STAGES) - r["total_us"]) < 0.01, r
        one = daemon.get_json(f"/api/v1/jobs/{q(job)}/step-trace?step={r['step']}")
        assert all(one[k] >= 0 for k in STAGES), one


def window_spans(daemon, job):
    """The job's X spans as the daemon holds them (its /timeline)."""
    doc = daemon.get_json(f"/api/v1/jobs/{q(job)}/timeline")
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def run_attach_profile(daemon, tmp, mode):
    """torch_train.py MODE (attach-profile, attach-profile-cycles) over 10 iterations into job
    MODE: its result, its loop and the iterations the schedule recorded."""
    out = tmp / mode
    out.mkdir()
    run_script(SYSTEM_PYTHON, SCRIPT, [mode, out, 10], script_env(daemon, mode))
    res = json.loads((out / "result.json").read_text())
    assert res["flushed"] and res["internal_errors"] == 0 and res["dropped"] == 0, res
    loop = res["loop"]
    assert len(loop) == res["recorded"] == 10
    return res, loop, [i for i, it in enumerate(loop) if it["action"].startswith("RECORD")]


def test_attach_and_profiler_window_share_step_numbers(daemon, tmp):
    """attach() and a torch.profiler window (wait=1, warmup=1, active=4, prof.step() each
    iteration, on_trace_ready=trace_handler()) over the same loop: one step numbering. The
    window's ProfilerStep ranges carry attach()'s numbers (torch 1.13 labels iteration i
    ProfilerStep#i-1, torch 2 ProfilerStep#i); every span torch recorded in iteration i lies in
    /steps' step i; the active steps take their points from those spans, the others from their
    phases; no stage is negative on any step; /breakdown numbers the same steps."""
    job = "attach-profile"
    res, loop, active = run_attach_profile(daemon, tmp, job)
    assert active == [2, 3, 4, 5], loop  # the schedule's own verdict, iteration by iteration
    w = res["windows"][0]
    trace = json.loads(open(w["path"]).read())
    torch_labels = sorted(int(e["name"][len("ProfilerStep#"):]) for e in trace
                          if e["name"].startswith("ProfilerStep#"))
    assert len(torch_labels) == 4
    daemon.wait_for("every event", lambda: daemon.job(job)["events"] == w["events"])
    rows = daemon.wait_for("10 steps, 4 from the trace", lambda: (lambda r: r if len(r) == 10 and sum(
        x["source"] == "trace" for x in r) == 4 else None)(steps_of(daemon, job)))
    assert [r["step"] for r in rows] == list(range(10))
    assert [r["step"] for r in rows if r["source"] == "trace"] == active, rows
    assert all(r["source"] == "phases" for r in rows if r["step"] not in active), rows
    check_no_negative_stage(daemon, job, rows)

    spans = window_spans(daemon, job)
    steps = {}
    for e in spans:
        if e["name"].startswith("ProfilerStep#"):
            steps[int(e["name"][len("ProfilerStep#"):])] = e
    assert sorted(steps) == active, sorted(steps)
    assert sorted(e["args"]["profiler_step"] for e in steps.values()) == torch_labels
    for i in active:
        r, it = rows[i], loop[i]
        ps = steps[i]
        # the range runs from the previous iteration's prof.step() to this one's
        assert loop[i - 1]["end"] / 1e3 <= ps["ts"] <= it["begin"] / 1e3, (i, ps, it)
        assert it["end"] / 1e3 <= ps["ts"] + ps["dur"] <= r["end_us"], (i, ps, it, r)
        inside = [e for e in spans if e is not ps and ps["ts"] <= e["ts"] < ps["ts"] + ps["dur"]]
        assert len(inside) > 50
        for e in inside:
            if e["ts"] >= it["begin"] / 1e3:  # what the iteration ran after its next()
                assert r["start_us"] <= e["ts"] and e["ts"] + e["dur"] <= r["end_us"], (i, e, r)
            else:  # prof.step()'s own ops, between the two iterations
                assert e["ts"] >= loop[i - 1]["end"] / 1e3, (i, e)
        one = daemon.get_json(f"/api/v1/jobs/{q(job)}/step-trace?step={i}")
        assert one["points"]["source"] == "trace", one
        assert one["points"]["fp_start"] and one["points"]["bp_end"], one
    # /breakdown: the same step numbers, each a ProfilerStep range (docs/ANALYSIS.md)
    bd = daemon.get_json(f"/api/v1/jobs/{q(job)}/breakdown")
    assert [b["step"] for b in bd["rows"]] == active, bd
    for b in bd["rows"]:
        r, ps = rows[b["step"]], steps[b["step"]]
        assert b["total_us"] == ps["dur"], (b, ps)
        # the range and attach()'s step differ only by the loop between prof.step() and next()
        assert b["start_us"] <= r["start_us"] <= b["start_us"] + 2000, (b, r)


def test_windows_cut_by_the_loop_end_keep_one_step_numbering(daemon, tmp):
    """The issue's schedule as written, schedule(wait=1, warmup=1, active=4) (repeat=0: windows
    follow each other until the loop ends), over 10 iterations: window 1 records iterations 2-5,
    window 2 records 8-9 and is cut when the loop ends. torch then closes the ProfilerStep range
    the last prof.step() opened (torch 1.13 labels it with the last iteration's number), a range
    no attach() step overlaps. Before, it kept torch's label and collided with attach()'s step of
    that number: /breakdown listed step 9 twice (a 21 ms row and a 70 us one). Each /breakdown
    row is now one /steps step, once."""
    job = "attach-profile-cycles"
    res, loop, active = run_attach_profile(daemon, tmp, job)
    assert active == [2, 3, 4, 5, 8, 9], loop
    assert len(res["windows"]) == 2
    sent = sum(w["events"] for w in res["windows"])
    daemon.wait_for("every event", lambda: daemon.job(job)["events"] == sent)
    rows = daemon.wait_for("10 steps, 6 from the trace", lambda: (lambda r: r if len(r) == 10 and sum(
        x["source"] == "trace" for x in r) == 6 else None)(steps_of(daemon, job)))
    assert [r["step"] for r in rows if r["source"] == "trace"] == active, rows
    check_no_negative_stage(daemon, job, rows)
    # the range the profiler's stop closed is in the window torch wrote, and no step of the job
    last = json.loads(open(res["windows"][1]["path"]).read())
    labels = sorted(int(e["name"][len("ProfilerStep#"):]) for e in last
                    if e["name"].startswith("ProfilerStep#"))
    assert len(labels) == 3, labels  # 8 and 9 (torch's 7 and 8), and the one the stop closed
    spans = window_spans(daemon, job)
    numbered = sorted(int(e["name"][len("ProfilerStep#"):]) for e in spans
                      if e["name"].startswith("ProfilerStep#"))
    assert numbered == active, numbered
    cut = [e for e in spans if e["name"] == "ProfilerStep (no step)"]
    assert len(cut) == 1 and cut[0]["args"]["profiler_step"] == labels[-1], cut
    nine = [e for e in spans if e["name"] == "ProfilerStep#9"][0]
    assert cut[0]["ts"] >= nine["ts"] + nine["dur"], (cut, nine)  # opened by step 9's prof.step()
    bd = daemon.get_json(f"/api/v1/jobs/{q(job)}/breakdown")
    assert [b["step"] for b in bd["rows"]] == active, bd["rows"]
    for b in bd["rows"]:
        r = rows[b["step"]]
        assert b["start_us"] <= r["start_us"] <= b["start_us"] + 2000, (b, r)


def test_trace_handler_with_autograd_profiler(daemon, tmp):
    """torch.autograd.profiler.profile (the API torch without Kineto has always had), the
    handler called with the finished profiler: the same equality."""
    res, w, _, (streamed, imported) = streamed_and_imported(daemon, tmp, "autograd", [])
    assert res["api"] == "torch.autograd.profiler.profile"
    compare_with_key_averages(streamed, w["averages"], "streamed by trace_handler")
    compare_with_key_averages(imported, w["averages"], "stepscope import")


def test_attach_never_raises_into_the_loop(daemon, tmp):
    """Dict batches, a forward that raises (the user's exception reaches the user), a user phase
    inside the attached step, detach(): 10 steps recorded, none after detach, no internal error."""
    out = tmp / "hostile.json"
    run_script(SYSTEM_PYTHON, SCRIPT, ["hostile", out], script_env(daemon, "hostile"))
    res = json.loads(out.read_text())
    assert res["raised"] == ["user error"]
    assert res["internal_errors"] == 0 and res["dropped"] == 0 and res["flushed"], res
    assert res["steps"] == res["recorded"] == 10
    rows = daemon.wait_for("10 steps", lambda: (lambda r: r if len(r) == 10 else None)(
        steps_of(daemon, "hostile")))
    assert [r["samples"] for r in rows] == [8] * 10
    time_after = daemon.get_json("/api/v1/jobs/hostile")
    assert time_after["steps"] == 10, "detach() stops the records"


def test_importable_and_harmless_without_torch(tmp):
    """The PATH python3 has no torch: importing stepscope.torch works, attach() on objects that
    are not torch's warns and returns an inactive Attachment, a handler given a profiler that
    cannot export returns 0; nothing raises."""
    code = (
        "import stepscope, stepscope.torch as st\n"
        "c = stepscope.Client(socket=%r, start=False, exit_timeout=0.1)\n"
        "a = st.attach(object(), object(), [1, 2], client=c)\n"
        "assert a is not None and not a.active, a\n"
        "a.detach(); a.close_step()\n"
        "h = st.trace_handler(client=c)\n"
        "assert h(object()) == 0 and h.events_sent == 0\n"
        "print('ok', c.stats['internal_errors'])\n") % str(tmp / "absent.sock")
    env = integ.clean_env(tmp)
    env["PYTHONPATH"] = str(HERE.parents[1] / "collectors" / "python")
    r = subprocess.run(["python3", "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok", "1"], r.stdout  # the handler's failure, counted
    assert "stepscope.torch: attach failed" in r.stderr
    assert "trace_handler could not stream" in r.stderr


KINETO_CPU = HERE.parent / "data" / "kineto" / "cpu_ops_rank_non_gpu.json.gz"


def test_trace_handler_streams_a_kineto_window_as_import_does(daemon, tmp):
    """Debian's torch has no Kineto, so a stand-in profiler whose export_chrome_trace writes a
    real Kineto trace (tests/data/kineto, gzip, as torch writes .gz names) stands for it: the
    handler sends every event as written (Kineto ts stay as they are), and the job equals
    `stepscope import` of the same file: events, timeline objects and operator table."""
    if not KINETO_CPU.exists():
        pytest.fail(f"{KINETO_CPU} is missing (tests/data)")
    code = (
        "import shutil, stepscope, stepscope.torch as st\n"
        "class Prof:\n"
        "    def export_chrome_trace(self, path):\n"
        "        shutil.copyfile(%r, path)\n"
        "h = st.trace_handler()\n"
        "n = h(Prof())\n"
        "c = stepscope.get_client()\n"
        "assert c.flush(30) and c.stats['internal_errors'] == 0, c.stats\n"
        "print(n)\n") % str(KINETO_CPU)
    env = script_env(daemon, "kineto-stream")
    r = subprocess.run(["python3", "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    events = json.loads(__import__("gzip").decompress(KINETO_CPU.read_bytes()))["traceEvents"]
    assert int(r.stdout) == len(events)
    r = subprocess.run([str(import_cli()), "import", "--quiet", "--socket", daemon.socket, "--job",
                        "kineto-import", str(KINETO_CPU)], capture_output=True, text=True,
                       timeout=120, env=integ.clean_env(tmp))
    assert r.returncode == 0, r.stderr
    for job in ("kineto-stream", "kineto-import"):
        daemon.wait_for(f"{job}: every event", lambda: daemon.job(job)["events"] == len(events))
    tl = [daemon.get_json(f"/api/v1/jobs/{j}/timeline")["traceEvents"]
          for j in ("kineto-stream", "kineto-import")]
    assert [e for e in tl[0] if e.get("ph") != "M"] == [e for e in tl[1] if e.get("ph") != "M"]
    # Each job's table is in the live snapshot only once the daemon has published it after the
    # job's last event: wait for both (the import is done in well under a publish interval).
    def both():
        a, b = operators_of(daemon, "kineto-stream"), operators_of(daemon, "kineto-import")
        return (a, b) if a and a == b else None
    try:
        streamed, imported = daemon.wait_for("both operator tables, equal", both)
    except AssertionError:  # show the difference
        streamed = operators_of(daemon, "kineto-stream")
        imported = operators_of(daemon, "kineto-import")
    assert len(streamed) > 20 and streamed == imported


KINETO_BASE = HERE.parent / "data" / "kineto" / "cpu_only_rank34.json.gz"


def test_trace_handler_puts_a_kineto_window_on_the_wall_clock(daemon, tmp):
    """Kineto (torch >= 2.1) writes ts relative to baseTimeNanoseconds. The handler adds the base
    back, exactly (a real trace, tests/data/kineto/cpu_only_rank34, through a stand-in
    profiler as above): every span's ts is the file's ts + base, to the nanosecond, so that
    spans meet attach()'s wall-clock steps; the operator table is that of `stepscope import`
    of the same file."""
    from decimal import Decimal
    if not KINETO_BASE.exists():
        pytest.fail(f"{KINETO_BASE} is missing (tests/data)")
    doc = json.loads(__import__("gzip").decompress(KINETO_BASE.read_bytes()), parse_float=Decimal)
    base = doc["baseTimeNanoseconds"]
    assert isinstance(base, int) and base > 0
    code = (
        "import shutil, stepscope, stepscope.torch as st\n"
        "class Prof:\n"
        "    def export_chrome_trace(self, path):\n"
        "        shutil.copyfile(%r, path)\n"
        "n = st.trace_handler()(Prof())\n"
        "c = stepscope.get_client()\n"
        "assert c.flush(30) and c.stats['internal_errors'] == 0, c.stats\n"
        "print(n)\n") % str(KINETO_BASE)
    r = subprocess.run(["python3", "-c", code], capture_output=True, text=True, timeout=120,
                       env=script_env(daemon, "kineto-base-stream"))
    assert r.returncode == 0, r.stderr
    events = doc["traceEvents"]
    assert int(r.stdout) == len(events)
    r = subprocess.run([str(import_cli()), "import", "--quiet", "--socket", daemon.socket, "--job",
                        "kineto-base-import", str(KINETO_BASE)], capture_output=True, text=True,
                       timeout=120, env=integ.clean_env(tmp))
    assert r.returncode == 0, r.stderr
    for job in ("kineto-base-stream", "kineto-base-import"):
        daemon.wait_for(f"{job}: every event", lambda: daemon.job(job)["events"] == len(events))
    st, _, body = daemon.request("/api/v1/jobs/kineto-base-stream/timeline")
    assert st == 200
    got = sorted((e["name"], e["ts"], e["dur"]) for e in
                 json.loads(body, parse_float=Decimal)["traceEvents"] if e.get("ph") == "X")
    want = sorted((e["name"], e["ts"] + Decimal(base) / 1000, e["dur"]) for e in events
                  if e.get("ph") == "X")
    assert len(got) == len(want) >= 10
    assert got == want

    def both():
        a, b = operators_of(daemon, "kineto-base-stream"), operators_of(daemon, "kineto-base-import")
        return (a, b) if a and a == b else None
    streamed, imported = daemon.wait_for("both operator tables, equal", both)
    assert len(streamed) >= 3
