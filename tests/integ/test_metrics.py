# SPDX-License-Identifier: MIT
"""GET /metrics (Prometheus text format) against a real daemon: `promtool check metrics` accepts
it (hostile job and queue names included), every per-rank value equals what the JSON routes say
(/ranks, /steps, /step-trace, /queues), the daemon counters equal /api/v1/stats, and the
(job, rank) cap bounds the series and counts what it left out."""
import shutil
import subprocess
import urllib.parse

import pytest

from ssclient import Client

T0 = 1000000  # us
HOSTILE_JOB = 'job"a\\b c\u00e9 \u00bd'
HOSTILE_QUEUE = 'q"x\n\\y\r\tz'

PROMTOOL = shutil.which("promtool")


def steps(rank, n, samples=True):
    """n step records with phases; rank r's steps are r * 50 us longer (tail)."""
    out = []
    for s in range(n):
        rec = {"type": "step", "step": s, "begin_us": T0 + s * 2000,
               "end_us": T0 + s * 2000 + 900 + 37 * s + rank * 50,
               "phases": {"dataloader": 100 + 10 * s, "forward": 300, "backward": 400}}
        if samples:
            rec["samples"] = 32 + s
        out.append(rec)
    return out


def queue(name, step, size, cap=8):
    rec = {"type": "queue", "name": name, "step": step, "size": size, "ts_us": T0 + step}
    if cap is not None:
        rec["capacity"] = cap
    return rec


def feed(d, job, ranks, n_steps=5, queues=True):
    for rank in ranks:
        recs = steps(rank, n_steps, samples=rank % 2 == 0)
        if queues:
            recs += [queue("device_queue", s, (s * 3 + rank) % 9) for s in reversed(range(6))]
            recs += [queue(HOSTILE_QUEUE, s, s, cap=None) for s in range(3)]
        with Client(d.socket) as c:
            c.hello(job, rank=rank, world_size=len(ranks))
            c.send_lines(recs)
            c.wait_ack(len(recs))


def unescape(v):
    out, i = [], 0
    while i < len(v):
        if v[i] == "\\":
            out.append({"\\": "\\", '"': '"', "n": "\n"}[v[i + 1]])
            i += 2
        else:
            out.append(v[i])
            i += 1
    return "".join(out)


def parse(text):
    """{(name, ((label, value), ...sorted)): float} of every sample; asserts each family has
    HELP and TYPE before its samples and appears once."""
    samples, declared, seen_families = {}, set(), []
    for line in text.split("\n"):
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            name = line.split(" ")[2]
            if line.startswith("# TYPE "):
                assert name not in declared, f"family {name} declared twice"
                declared.add(name)
                seen_families.append(name)
            continue
        assert not line.startswith("#"), line
        brace = line.find("{")
        labels = ()
        if brace >= 0:
            name = line[:brace]
            i, lab = brace + 1, []
            while line[i] != "}":
                eq = line.index("=", i)
                key = line[i:eq]
                assert line[eq + 1] == '"'
                j = eq + 2
                while line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                lab.append((key, unescape(line[eq + 2:j])))
                i = j + 1
                if line[i] == ",":
                    i += 1
            rest = line[i + 1:]
            labels = tuple(sorted(lab))
        else:
            name, rest = line.split(" ", 1)
        assert name == seen_families[-1], f"{name} sample outside its family block"
        key = (name, labels)
        assert key not in samples, f"duplicate series {key}"
        samples[key] = float(rest.strip())
    return samples


def get_metrics(d):
    st, hdr, body = d.request("/metrics")
    assert st == 200, body[:300]
    assert hdr["content-type"].startswith("text/plain; version=0.0.4")
    return body


def promtool_check(body):
    assert PROMTOOL, "promtool (Debian package prometheus) is required: scripts/deps"
    p = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True,
                       timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), (
        f"promtool check metrics: rc {p.returncode}\n{p.stdout.decode()}{p.stderr.decode()}")


def rank_value(m, name, job, rank):
    return m.get((name, (("job", job), ("rank", str(rank)))))


def close(a, b, rel=1e-9):
    return a == pytest.approx(b, rel=rel, abs=1e-12)


def test_metrics_pass_promtool_and_match_json(daemon):
    feed(daemon, HOSTILE_JOB, [0, 1])
    feed(daemon, "plain-job", [0, 1, 2], n_steps=7, queues=False)
    # feed() has closed its clients, but the daemon sees a close when its loop reads it: wait
    # until no session of either job is connected ("live": false), else /metrics, read later,
    # can say 0 where this list said true.
    jobs = {j["name"]: j for j in daemon.wait_for(
        "both jobs, their sessions closed",
        lambda: (lambda js: len(js) == 2 and not any(j["live"] for j in js) and js)(daemon.jobs()))}
    # Live republishes within 100 ms; wait until every rank's steps are visible.
    for name, n in ((HOSTILE_JOB, 2 * 5), ("plain-job", 3 * 7)):
        base = "/api/v1/jobs/%d" % jobs[name]["id"]
        daemon.wait_for(f"{name} steps", lambda: daemon.get_json(base + "/steps")["total"] == n)
    body = get_metrics(daemon)
    promtool_check(body)
    m = parse(body.decode())

    for name in (HOSTILE_JOB, "plain-job"):
        job = jobs[name]
        base = "/api/v1/jobs/%d" % job["id"]
        assert m[("stepscope_job_ranks", (("job", name),))] == job["ranks"]
        assert m[("stepscope_job_live", (("job", name),))] == (1 if job["live"] else 0)
        ranks = daemon.get_json(base + "/ranks")["ranks"]
        assert len(ranks) == job["ranks"]
        for r in ranks:
            rk = r["rank"]
            for metric, field in (("step", "mean_us"), ("step_interval", "interval_mean_us"),
                                  ("step_fp_bp", "fp_bp_mean_us"), ("step_tail", "tail_mean_us")):
                got = rank_value(m, f"stepscope_{metric}_mean_seconds", name, rk)
                assert close(got * 1e6, r[field]), (metric, got, r[field])
            rows = daemon.get_json(f"{base}/steps?rank={rk}")["rows"]
            last = rows[-1]
            assert rank_value(m, "stepscope_steps", name, rk) == len(rows)
            assert rank_value(m, "stepscope_last_step", name, rk) == last["step"]
            for metric, field in (("step", "total_us"), ("step_interval", "interval_us"),
                                  ("step_fp_bp", "fp_bp_us"), ("step_tail", "tail_us")):
                got = rank_value(m, f"stepscope_{metric}_seconds", name, rk)
                assert close(got * 1e6, last[field]), (metric, got, last[field])
            sps = rank_value(m, "stepscope_samples_per_second", name, rk)
            mean_sps = rank_value(m, "stepscope_mean_samples_per_second", name, rk)
            if rk % 2 == 0:
                assert close(sps, last["samples"] / (last["total_us"] / 1e6))
                want = sum(x["samples"] for x in rows) / (sum(x["total_us"] for x in rows) / 1e6)
                assert close(mean_sps, want)
            else:  # no samples in the step records: no series rather than a made-up number
                assert sps is None and mean_sps is None
            # The dataloader phase's share of the step = the step trace's interval percentage.
            st = daemon.get_json(f"{base}/step-trace?rank={rk}")
            share = rank_value(m, "stepscope_dataloader_share", name, rk)
            assert st["stages"][0]["name"] == "interval"
            assert share * 100 == pytest.approx(st["stages"][0]["percent"], abs=1e-4)
            want = sum(x["interval_us"] for x in rows) / sum(x["total_us"] for x in rows)
            assert close(share, want)

    # Queue depths: the latest sample by step, capacity, mean and empty share, as /queues.
    base = "/api/v1/jobs/%d" % jobs[HOSTILE_JOB]["id"]
    queues = daemon.get_json(base + "/queues")["queues"]
    assert {q["name"] for q in queues} == {"device_queue", HOSTILE_QUEUE}
    for q in queues:
        lab = (("job", HOSTILE_JOB), ("queue", q["name"]), ("rank", str(q["rank"])))
        assert m[("stepscope_queue_size", lab)] == q["series"][-1]["size"]
        assert close(m[("stepscope_queue_mean_size", lab)], q["avg_size"])
        assert close(m[("stepscope_queue_empty_ratio", lab)], q["empty_ratio"])
        if q["capacity"] is None:
            assert ("stepscope_queue_capacity", lab) not in m
        else:
            assert m[("stepscope_queue_capacity", lab)] == q["capacity"]
    assert not any(k[0].startswith("stepscope_queue") and ("job", "plain-job") in k[1] for k in m)

    # The daemon's counters equal /api/v1/stats (nothing is ingested between the two reads; the
    # HTTP counters move with every request, so they are compared in order).
    stats = daemon.stats()
    assert m[("stepscope_received_bytes_total", ())] == stats["bytes"]
    assert m[("stepscope_lines_total", ())] == stats["lines"]
    assert m[("stepscope_hellos_total", ())] == stats["hellos"] == 5
    assert m[("stepscope_acknowledged_lines_total", ())] == stats["acknowledged"]
    assert m[("stepscope_connections_accepted_total", ())] == stats["connections"]["accepted"]
    for kind, n in stats["records"].items():
        assert m[("stepscope_records_total", (("kind", kind),))] == n
    assert stats["records"]["step"] == 2 * 5 + 3 * 7
    for reason in ("malformed", "oversized", "unknown", "invalid"):
        assert m[("stepscope_rejected_lines_total", (("reason", reason),))] == stats[reason]
    assert m[("stepscope_http_requests_total", ())] < stats["http"]["requests"]
    assert m[("stepscope_store_jobs", ())] == stats["store"]["jobs"] == 2
    assert m[("stepscope_store_bytes", ())] > 0
    assert m[("stepscope_metrics_omitted_ranks", ())] == 0
    assert m[("stepscope_metrics_omitted_jobs", ())] == 0


def test_metrics_counters_follow_rejections(daemon):
    """A malformed line and an unknown record move both /stats and /metrics the same way."""
    with Client(daemon.socket) as c:
        c.hello("bad-lines")
        c.send_lines([b"{not json", {"type": "nosuchtype"}, steps(0, 1)[0]])
        c.wait_ack(3)
    m = parse(get_metrics(daemon).decode())
    stats = daemon.stats()
    assert m[("stepscope_rejected_lines_total", (("reason", "malformed"),))] == \
        stats["malformed"] == 1
    assert m[("stepscope_rejected_lines_total", (("reason", "unknown"),))] == stats["unknown"] == 1
    assert m[("stepscope_records_total", (("kind", "step"),))] == 1


def per_rank_series(m):
    return {(dict(k[1])["job"], dict(k[1])["rank"]) for k in m
            if k[0] == "stepscope_step_seconds"}


@pytest.mark.parametrize("cap", [0, 1, 3, 5, 100])
def test_metrics_cardinality_cap(daemons, cap):
    """metrics_max_ranks bounds the (job, rank) pairs, most recently seen job first; the rest is
    counted, and every exported pair keeps all its series."""
    d = daemons("cap", args=["--metrics-max-ranks", str(cap)])
    feed(d, "older", [0, 1, 2], queues=False)
    feed(d, "newer", [0, 1], queues=False)
    d.wait_for("two jobs", lambda: len(d.jobs()) == 2)
    for name, n in (("older", 15), ("newer", 10)):
        base = "/api/v1/jobs/%d" % d.job(name)["id"]
        d.wait_for(f"{name} steps", lambda: d.get_json(base + "/steps")["total"] == n)
    body = get_metrics(d)
    promtool_check(body)
    m = parse(body.decode())
    order = [("newer", "0"), ("newer", "1"), ("older", "0"), ("older", "1"), ("older", "2")]
    want = set(order[:cap])
    assert per_rank_series(m) == want
    assert m[("stepscope_metrics_omitted_ranks", ())] == 5 - len(want)
    jobs_out = {j for j, _ in want}
    assert m[("stepscope_metrics_omitted_jobs", ())] == 2 - len(jobs_out)
    assert {dict(k[1])["job"] for k in m if k[0] == "stepscope_job_live"} == jobs_out
    # The daemon's own series do not depend on the cap.
    assert m[("stepscope_store_jobs", ())] == 2


def test_metrics_head_and_empty_store(daemon):
    st, hdr, body = daemon.request("/metrics", method="HEAD")
    assert st == 200 and body == b""
    body = get_metrics(daemon)
    promtool_check(body)
    m = parse(body.decode())
    assert m[("stepscope_store_jobs", ())] == 0
    assert not per_rank_series(m)
    assert m[("stepscope_build_info", (("version", daemon.get_json("/api/v1/health")["version"]),))] == 1
    # Not a dashboard file, and only the exact path.
    st, _, _ = daemon.request("/metrics/")
    assert st == 404
    st, _, _ = daemon.request("/" + urllib.parse.quote("metrics", safe="") + "x")
    assert st == 404
