# SPDX-License-Identifier: MIT
"""The one-rank analyses read the job's lowest rank when no ?rank= is given, as /breakdown and
/helper do. A file of one rank of a larger job keeps its rank (cpu_only_rank34.json.gz is rank 34
of its job, tests/data/README.md): before, /summary/*, /benchmark, /memory, /operator-view, /tree
and /kernels/details answered 404 "rank: no such rank" for it unless the caller guessed ?rank=34.
"""
import pathlib
import subprocess

from conftest import build_dir, clean_env

TRACE = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto" / "cpu_only_rank34.json.gz"

ROUTES = ["summary/operator", "summary/overview", "benchmark", "memory", "operator-view",
          "tree?kind=operator", "kernels/details"]


def test_one_rank_routes_default_to_the_jobs_lowest_rank(daemon, tmp):
    imp = subprocess.run([str(build_dir() / "cli" / "stepscope"), "import", "--quiet",
                          "--socket", daemon.socket, "--job", "r34", str(TRACE)],
                         capture_output=True, text=True, timeout=300, env=clean_env(tmp))
    assert imp.returncode == 0, imp.stderr
    job = daemon.job("r34")["id"]
    assert [r["rank"] for r in daemon.get_json(f"/api/v1/jobs/{job}")["ranks_detail"]] == [34]
    for route in ROUTES:
        sep = "&" if "?" in route else "?"
        doc = daemon.get_json(f"/api/v1/jobs/{job}/{route}")
        assert doc == daemon.get_json(f"/api/v1/jobs/{job}/{route}{sep}rank=34"), route
        if "rank" in doc:
            assert doc["rank"] == 34, route
        # a rank the job lacks, asked for, is still a 404
        err = daemon.get_json(f"/api/v1/jobs/{job}/{route}{sep}rank=0", status=404)
        assert err["error"]["message"] == "rank: no such rank", route
    ops = daemon.get_json(f"/api/v1/jobs/{job}/operator-view")
    assert ops["rows"], "rank 34's operators"
