# SPDX-License-Identifier: MIT
"""`stepscope summary` against a real daemon holding a real Kineto trace: each kind prints the
daemon's ?format=text table byte for byte, without --kind every kind in Paddle's order, the rank,
step range and time unit reach the daemon, and failures have their exit codes."""
import pathlib

import tb_breakdown as tb
from conftest import clean_env
from ssclient import Client
from test_cli_jobs import addr, cli

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto"
KINDS = ["device", "overview", "model", "distributed", "operator", "kernel", "memory-manipulation",
         "user-defined", "memory"]


def feed(daemon, job, name="gpu_5steps_rank0"):
    lines = tb.lines(DATA / (name + ".json.gz"))
    with Client(daemon.socket) as c:
        c.hello(job)
        c.send_lines(lines)
        c.wait_ack(len(lines), timeout=60)


def text(daemon, job, kind, query=""):
    st, hdr, body = daemon.request(f"/api/v1/jobs/{job}/summary/{kind}?format=text{query}")
    assert st == 200, body
    return body


def test_summary_prints_the_daemons_tables(daemon, tmp):
    job = "cli sum/\u00e9"  # percent-encoded on the way
    feed(daemon, job)
    env = clean_env(tmp)
    env["STEPSCOPE_HTTP"] = addr(daemon)
    qjob = "cli%20sum%2F%C3%A9"
    r = cli(["summary", job, "--kind", "overview"], env)
    assert r.returncode == 0, r.stderr
    want = text(daemon, qjob, "overview")
    assert b"Overview Summary" in want and b"ProfileStep" in want
    assert r.stdout == want if want.endswith(b"\n") else want + b"\n"
    r = cli(["summary", job], env)
    assert r.returncode == 0, r.stderr
    parts = []
    for k in KINDS:
        t = text(daemon, qjob, k)
        if t:  # a table Paddle leaves out when empty has no text
            parts.append(t if t.endswith(b"\n") else t + b"\n")
    assert r.stdout == b"\n".join(parts)
    # MindInsight's AI CPU tables only by name (none in this trace: the tables are empty)
    r = cli(["summary", job, "--kind", "aicpu"], env)
    want = text(daemon, qjob, "aicpu")
    assert r.returncode == 0 and b"AI CPU Type Summary" in want, r.stderr
    assert r.stdout.rstrip(b"\n") == want.rstrip(b"\n")
    # Steps, time unit and rank reach the daemon.
    ov = daemon.get_json(f"/api/v1/jobs/{qjob}/summary/overview")
    first, last = ov["first_step"], ov["last_step"]
    assert last > first
    rng = f"{first + 1}-{last}"
    r = cli(["summary", job, "--kind", "model", "--steps", rng, "--time-unit", "us"], env)
    assert r.returncode == 0, r.stderr
    want = text(daemon, qjob, "model", f"&steps={rng}&time_unit=us")
    assert r.stdout.rstrip(b"\n") == want.rstrip(b"\n") and b"Time unit: us" in want
    assert want != text(daemon, qjob, "model", "&time_unit=us")
    r = cli(["summary", job, "--kind", "model", "--rank", "0", "--steps", str(last)], env)
    assert r.returncode == 0
    assert r.stdout.rstrip(b"\n") == text(daemon, qjob, "model", f"&steps={last}").rstrip(b"\n")


def test_summary_failures(daemon, tmp):
    feed(daemon, "cli-sumf", "cpu_ops_rank_non_gpu")
    env = clean_env(tmp)
    env["STEPSCOPE_HTTP"] = addr(daemon)
    r = cli(["summary", "cli-sumf", "--rank", "7"], env)
    assert r.returncode == 1 and "404" in r.stderr.decode()
    r = cli(["summary", "cli-sumf", "--steps", "900000-900001"], env)
    assert r.returncode == 1 and "404" in r.stderr.decode()
    r = cli(["summary", "no-such-job"], env)
    assert r.returncode == 1 and "404" in r.stderr.decode()
    for bad in (["summary"], ["summary", "a", "b"], ["summary", "a", "--kind", "flame"],
                ["summary", "a", "--rank", "-1"], ["summary", "a", "--steps", "1&x=2"],
                ["summary", "a", "--time-unit", "h"], ["summary", "a", "--nope"]):
        r = cli(bad, env)
        assert r.returncode == 2, (bad, r.stderr)
    r = cli(["help", "summary"], env)
    assert r.returncode == 0 and b"usage: stepscope summary" in r.stdout
