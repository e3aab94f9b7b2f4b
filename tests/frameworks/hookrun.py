# SPDX-License-Identifier: MIT
"""Shared by test_paddle.py and test_mindspore.py: run a training script against the daemon and
read its steps back."""
import json
import pathlib
import sys

from conftest import run_script, script_env

HERE = pathlib.Path(__file__).resolve().parent


def train(daemon, tmp, script, mode, job, timeout=900):
    """Runs HERE/script MODE OUT.json as job; returns OUT.json's content, after checking that
    the client had everything acknowledged and dropped nothing."""
    out = tmp / f"{job}.json"
    r = run_script(sys.executable, HERE / script, [mode, out], script_env(daemon, job),
                   timeout=timeout)
    info = json.loads(out.read_text())
    assert info["acked"] is True, \
        f"not everything was acknowledged: {info['stats']}\n{r.stderr[-2000:]}"
    st = info["stats"]
    assert st["dropped"] == 0 and st["internal_errors"] == 0 and st["errors"] == 0, st
    # closed with everything acknowledged: nothing is held (the bye line counted in and out)
    assert st["buffered_bytes"] == 0, st
    return info


def steps_of(daemon, job, n):
    """The job's /steps rows, once there are n."""
    daemon.wait_for(f"{n} steps of {job}",
                    lambda: daemon.get_json(f"/api/v1/jobs/{job}/steps?limit=1000")["total"] == n)
    return daemon.get_json(f"/api/v1/jobs/{job}/steps?limit=1000")["rows"]


def run_inline(daemon, tmp, text, job):
    """Runs the script text with python3 as job (OUT.json its one argument); returns OUT.json's
    content."""
    script = tmp / f"{job}.py"
    script.write_text(text)
    out = tmp / f"{job}.json"
    run_script("python3", script, [out], script_env(daemon, job))
    return json.loads(out.read_text())


def check_job_meta(daemon, job, framework, version):
    """The hello named the framework, and host CPU samples arrived (one at the first step's end,
    then at most one a second)."""
    j = daemon.get_json(f"/api/v1/jobs/{job}")
    r0 = j["ranks_detail"][0]
    assert (r0["framework"], r0["framework_version"]) == (framework, version), j
    daemon.wait_for(f"host samples of {job}", lambda: daemon.job(job)["host_samples"] >= 1)
