# SPDX-License-Identifier: MIT
"""`stepscope diff BASE EXP` against a real daemon holding the two real H200 runs
(tests/data/kineto/cuda_views_h200, imported with `stepscope import`): it prints the daemon's
/api/v1/diff CSV byte for byte, names reach the daemon percent-encoded, --rank reaches it, and
failures have their exit codes."""
import pathlib

from conftest import clean_env
from test_cli_jobs import addr, cli

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cuda_views_h200"


def test_diff_prints_the_daemons_csv(daemon, tmp):
    env = clean_env(tmp)
    env["STEPSCOPE_HTTP"] = addr(daemon)
    base, exp = "run a/\u00e9", "run b&exp=x"  # both need percent-encoding in a query
    for job, f in ((base, "trace_a.json.gz"), (exp, "trace_b.json.gz")):
        r = cli(["import", "--quiet", "--socket", daemon.socket, "--job", job, str(DATA / f)],
                env, timeout=300)
        assert r.returncode == 0, r.stderr
    ids = {j["name"]: j["id"] for j in daemon.jobs()}
    st, _, want = daemon.request(f"/api/v1/diff?format=csv&base={ids[base]}&exp={ids[exp]}")
    assert st == 200 and want.startswith(b"table,name,status,")
    assert b"aten::conv2d,both,10,15,5," in want  # b's extra layer
    r = cli(["diff", base, exp], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want
    st, _, want0 = daemon.request(f"/api/v1/diff?format=csv&base={ids[base]}&exp={ids[exp]}&rank=0")
    r = cli(["diff", base, exp, "--rank", "0"], env)
    assert r.returncode == 0 and r.stdout == want0, r.stderr
    # step ranges and per-side ranks reach the daemon
    q = "&base_steps=2-4&exp_steps=3&base_rank=0&exp_rank=0"
    st, _, want_r = daemon.request(f"/api/v1/diff?format=csv&base={ids[base]}&exp={ids[exp]}{q}")
    assert st == 200 and b"aten::conv2d,both,6,3,-3," in want_r  # 3 steps of 2, 1 step of 3
    r = cli(["diff", base, exp, "--base-steps", "2-4", "--exp-steps", "3", "--base-rank", "0",
             "--exp-rank", "0"], env)
    assert r.returncode == 0 and r.stdout == want_r, r.stderr
    r = cli(["diff", base, exp, "--base-steps", "40-50"], env)
    assert r.returncode == 1 and b"base_steps" in r.stderr and not r.stdout
    # the other way round: the same rows, added and removed swapped
    r = cli(["diff", exp, base], env)
    assert r.returncode == 0 and b"aten::conv2d,both,15,10,-5," in r.stdout

    r = cli(["diff", base, "nosuch"], env)
    assert r.returncode == 1 and b'no job "nosuch"' in r.stderr and not r.stdout
    r = cli(["diff", base, exp, "--rank", "9"], env)
    assert r.returncode == 1 and b"rank" in r.stderr
    for args in (["diff", base], ["diff", base, exp, exp], ["diff", base, exp, "--rank", "x"],
                 ["diff", base, exp, "--base-steps", "2-x"], ["diff", base, exp, "--exp-rank", ""]):
        r = cli(args, env)
        assert r.returncode == 2 and b"usage: stepscope diff" in r.stderr, args
    r = cli(["help", "diff"], env)
    assert r.returncode == 0 and r.stdout.startswith(b"usage: stepscope diff")
