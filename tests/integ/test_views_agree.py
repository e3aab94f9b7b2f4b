# SPDX-License-Identifier: MIT
"""Views of one job agree, and no answer is silently partial (issue 13, items 2 and 9), on the
real Kineto traces of tests/data/kineto through the real `stepscope import` and daemon.

- Right after `stepscope import` exits, the first GET shows everything it sent: /breakdown
  counts every breakdown span of the trace, every time.
- The jobs list's step count is the number of steps /steps lists, for every trace, also for a
  job evicted from live memory.
- Every breakdown row carries the step's own duration beside its stretched total, equal to what
  /steps says for that step (the two differ by tb-profiler's definition, docs/ANALYSIS.md).
- An imported trace past the span cap of a live job is analysed whole; a live job past it says
  exactly what its breakdown covers (`coverage`), in /breakdown and in the helper's inputs.
"""
import gzip
import json
import pathlib
import subprocess

import pytest

from conftest import build_dir, clean_env
from ssclient import Client

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
TRACES = ["gpu_5steps_rank0", "gpu_2steps_sampled_rank0", "rocm_minitoy_3steps",
          "cpu_only_rank34", "cpu_ops_rank_non_gpu"]
GPU5_BD_SPANS = 67216  # gpu_5steps_rank0's spans the breakdown takes (the settled count)


def stepscope(args, env, timeout=300):
    return subprocess.run([str(build_dir() / "cli" / "stepscope")] + args,
                          env=env, capture_output=True, text=True, timeout=timeout)


def import_trace(d, tmp, path, job):
    env = clean_env(tmp)
    env["STEPSCOPE_SOCKET"] = d.socket
    r = stepscope(["import", str(path), "--job", job, "--quiet"], env)
    assert r.returncode == 0, r.stderr
    return env


def test_first_get_after_import_is_complete(daemon, tmp):
    """Before the fix the answers were published up to 100 ms after the import's last ack: the
    first /breakdown counted e.g. 65,221 or 67,027 of 67,216 spans in most runs."""
    path = DATA / "gpu_5steps_rank0.json.gz"
    for i in range(10):
        job = "first-%d" % i
        import_trace(daemon, tmp, path, job)
        doc = daemon.get_json("/api/v1/jobs/%s/breakdown" % job)
        assert doc["spans"] == GPU5_BD_SPANS, (i, doc["spans"])
        assert doc["total"] == 5
        steps = daemon.get_json("/api/v1/jobs/%s/steps" % job)
        assert steps["total"] == 5


@pytest.mark.parametrize("name", TRACES)
def test_jobs_list_steps_equal_steps_route(daemon, tmp, name):
    """Before the fix the jobs list counted step records only: 0 for every Kineto trace."""
    import_trace(daemon, tmp, DATA / (name + ".json.gz"), name)
    steps = daemon.get_json("/api/v1/jobs/%s/steps?limit=100000" % name)
    n = len({r["step"] for r in steps["rows"]})
    assert n > 0
    job = daemon.job(name)
    assert job["steps"] == n
    listed = [j for j in daemon.get_json("/api/v1/jobs")["jobs"] if j["name"] == name]
    assert listed[0]["steps"] == n
    one = daemon.get_json("/api/v1/jobs/%s" % name)
    assert one["steps"] == n
    assert [r["steps"] for r in one["ranks_detail"]] == [n]


def test_cli_jobs_shows_kineto_steps(daemon, tmp):
    env = import_trace(daemon, tmp, DATA / "gpu_5steps_rank0.json.gz", "cli5")
    r = stepscope(["jobs", "--http", "127.0.0.1:%d" % daemon.port], env)
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split()
    row = [ln.split() for ln in r.stdout.splitlines() if " cli5 " in " %s " % ln][0]
    assert row[header.index("STEPS")] == "5", r.stdout


def test_jobs_list_steps_of_an_evicted_job(daemons, tmp):
    """A job evicted from live memory keeps the step count its last snapshot listed, and the
    jobs list does not reload it to say so."""
    d = daemons("ev", args=["--live-max-bytes", "0"])
    import_trace(d, tmp, DATA / "gpu_5steps_rank0.json.gz", "ev5")
    d.wait_for("ev5 evicted", lambda: d.stats()["live"]["evictions"] >= 1, timeout=30)
    listed = [j for j in d.get_json("/api/v1/jobs")["jobs"] if j["name"] == "ev5"]
    assert listed[0]["steps"] == 5
    assert d.stats()["live"]["reloads"] == 0
    assert d.get_json("/api/v1/jobs/ev5/steps")["total"] == 5


@pytest.mark.parametrize("name", TRACES)
def test_breakdown_rows_carry_the_steps_duration(daemon, tmp, name):
    import_trace(daemon, tmp, DATA / (name + ".json.gz"), name)
    steps = {r["step"]: r for r in
             daemon.get_json("/api/v1/jobs/%s/steps?limit=100000" % name)["rows"]}
    bd = daemon.get_json("/api/v1/jobs/%s/breakdown?limit=100000" % name)
    assert bd["total"] == len(bd["rows"]) > 0
    for row in bd["rows"]:
        # Every breakdown step is a step of /steps, with the same number ...
        st = steps[row["step"]]
        # ... and its own duration is /steps' total, whatever tb-profiler stretched it to.
        assert row["step_us"] == st["total_us"]
        assert row["host_start_us"] == st["start_us"]
        assert row["host_end_us"] == st["end_us"]
    # What /steps lists and the breakdown leaves out is said, exactly.
    cov = bd["coverage"]
    assert cov["complete"] is True and cov["steps_cut"] == 0
    assert cov["steps_listed"] == len(steps)
    assert cov["steps"] == bd["total"] == len(steps) - cov["steps_trimmed"]
    assert cov["steps_trimmed"] == bd["steps_dropped"]
    if name == "gpu_5steps_rank0":
        first = bd["rows"][0]
        assert first["step"] == 550
        assert first["step_us"] == 209748       # /steps: 209.7 ms
        assert first["total_us"] == 368411      # stretched to its device work's end: 368.4 ms



def gpu5_copies(copies):
    """gpu_5steps_rank0's metadata events, then its X spans played `copies` times in a row: copy
    k shifted past copy k-1's end, its ProfilerStep#N renumbered N + 5k and its correlation and
    External ids moved apart, so each copy's device work links to its own runtime calls. Flow
    events are left out (no analysis reads them). Returns (the trace's other members, events)."""
    with gzip.open(DATA / "gpu_5steps_rank0.json.gz", "rt") as f:
        doc = json.load(f)
    src = doc.pop("traceEvents")
    timed = [e for e in src if "ts" in e]
    period = max(e["ts"] + e.get("dur", 0) for e in timed) - min(e["ts"] for e in timed) + 1000
    events = [e for e in src if e.get("ph") == "M"]
    for k in range(copies):
        for e in src:
            if e.get("ph") != "X":
                continue
            e = dict(e, ts=e["ts"] + k * period)
            name = e.get("name", "")
            if name.startswith("ProfilerStep#"):
                e["name"] = "ProfilerStep#%d" % (int(name[len("ProfilerStep#"):]) + 5 * k)
            if e.get("args"):
                e["args"] = dict(e["args"])
                for a in ("correlation", "External id"):
                    if isinstance(e["args"].get(a), int) and e["args"][a] > 0:
                        e["args"][a] += k * 10_000_000
            events.append(e)
    return doc, events


def test_imported_trace_past_the_live_span_cap_is_analysed_whole(daemon, tmp):
    """4 x 67,216 breakdown spans, past the 262,144 a live job's rank keeps. Before, the oldest
    chunk was evicted and the steps it touched left out, with nothing in the answer saying so."""
    doc, events = gpu5_copies(4)
    doc["traceEvents"] = events
    out = tmp / "gpu_5steps_x4.json"
    with open(out, "w") as f:
        json.dump(doc, f)
    import_trace(daemon, tmp, out, "x4")
    steps = daemon.get_json("/api/v1/jobs/x4/steps?limit=100000")
    assert steps["total"] == 20
    bd = daemon.get_json("/api/v1/jobs/x4/breakdown?limit=100000")
    assert bd["spans"] == 4 * GPU5_BD_SPANS > 262144
    assert bd["spans_evicted"] == 0
    cov = bd["coverage"]
    assert cov["complete"] is True
    assert cov["spans_kept"] == 4 * GPU5_BD_SPANS and cov["spans_evicted"] == 0
    assert cov["spans_max"] >= cov["spans_kept"]
    assert cov["steps_listed"] == 20 and cov["steps_cut"] == 0
    assert cov["steps"] == bd["total"] == 20 - cov["steps_trimmed"]
    assert cov["from_us"] is None
    assert [r["step"] for r in bd["rows"]] == [r["step"] for r in steps["rows"]][:bd["total"]]
    assert daemon.job("x4")["steps"] == 20
    helper = daemon.get_json("/api/v1/jobs/x4/helper")
    assert helper["inputs"]["coverage"] == cov


def test_live_job_past_the_cap_says_what_its_breakdown_covers(daemon):
    """A live (not imported) sender keeps the newest 262,144 spans per rank; the answer says
    exactly which steps that leaves out."""
    _, events = gpu5_copies(4)
    with Client(daemon.socket) as c:
        c.hello("live4")
        c.send_lines(events)
        c.send_lines([{"type": "bye"}])
        c.read_until_eof(timeout=300)
    bd = daemon.get_json("/api/v1/jobs/live4/breakdown?limit=100000")
    cov = bd["coverage"]
    assert cov["complete"] is False
    assert cov["spans_max"] == 262144
    assert cov["spans_kept"] + cov["spans_evicted"] == bd["spans"] == 4 * GPU5_BD_SPANS
    assert cov["spans_evicted"] > 0 and cov["from_us"] is not None
    steps = daemon.get_json("/api/v1/jobs/live4/steps?limit=100000")["rows"]
    cut = [s for s in steps if s["start_us"] <= cov["from_us"]]
    assert cov["steps_listed"] == len(steps) == 20
    assert cov["steps_cut"] == len(cut) > 0
    assert cov["steps"] == bd["total"] == 20 - cov["steps_cut"] - cov["steps_trimmed"]
    assert bd["rows"][0]["step"] == steps[len(cut)]["step"]


def test_jobs_list_steps_of_a_job_not_replayed_at_start_up(daemons, tmp):
    """After a restart, a job start-up did not replay into live memory (past live_max_bytes; it
    loads on first use) lists the steps /steps will list, in the jobs list, the job's route (per
    rank too) and `stepscope jobs`, before anything reads it. Before the fix they said the stored
    step-record count until the job was loaded: 0 for a Kineto trace (its steps are spans)."""
    d = daemons("up5")
    env = import_trace(d, tmp, DATA / "gpu_5steps_rank0.json.gz", "up5")
    import_trace(d, tmp, DATA / "gpu_2steps_sampled_rank0.json.gz", "newer")
    d.stop()
    d.extra_args = ["--live-max-bytes", "1"]
    d.start()
    # The most recent job is replayed (the first always is); up5 waits for its first use.
    assert d.stats()["live"]["reloads"] == 0
    listed = [j for j in d.get_json("/api/v1/jobs")["jobs"] if j["name"] == "up5"]
    assert listed[0]["steps"] == 5
    one = d.get_json("/api/v1/jobs/up5")
    assert one["steps"] == 5
    assert [r["steps"] for r in one["ranks_detail"]] == [5]
    r = stepscope(["jobs", "--http", "127.0.0.1:%d" % d.port], env)
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split()
    row = [ln.split() for ln in r.stdout.splitlines() if " up5 " in " %s " % ln][0]
    assert row[header.index("STEPS")] == "5", r.stdout
    assert d.stats()["live"]["reloads"] == 0  # none of that loaded the job
    # And /steps, which does load it, agrees.
    assert d.get_json("/api/v1/jobs/up5/steps")["total"] == 5
    assert d.stats()["live"]["reloads"] == 1


def test_per_rank_steps_of_an_evicted_job(daemons, tmp):
    """The job route's per-rank counts of an evicted job are /steps' too (before: the stored
    step-record count, 0 for a Kineto trace), without reloading it."""
    d = daemons("evr", args=["--live-max-bytes", "0"])
    import_trace(d, tmp, DATA / "gpu_5steps_rank0.json.gz", "evr5")
    d.wait_for("evr5 evicted", lambda: d.stats()["live"]["evictions"] >= 1, timeout=30)
    one = d.get_json("/api/v1/jobs/evr5")
    assert one["steps"] == 5
    assert [r["steps"] for r in one["ranks_detail"]] == [5]
    assert d.stats()["live"]["reloads"] == 0
