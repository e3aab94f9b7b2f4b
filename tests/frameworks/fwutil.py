# SPDX-License-Identifier: MIT
"""Helpers for the framework tests (`import fwutil`): the integration suite's conftest (loaded
as integ_conftest, for build_dir() and clean_env()), and how to run a framework script against a
test's daemon with the collector on its path."""
import importlib.util
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
COLLECTOR = REPO / "collectors" / "python"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch 1.13 (torch without Kineto)

_spec = importlib.util.spec_from_file_location("integ_conftest", REPO / "tests" / "integ" / "conftest.py")
integ = importlib.util.module_from_spec(_spec)
sys.modules["integ_conftest"] = integ
_spec.loader.exec_module(integ)


def script_env(daemon, job, **extra):
    """The environment for a framework script: the daemon's socket, the job name, the collector
    (collectors/python) first on PYTHONPATH, and no stray STEPSCOPE_* or rank variables."""
    env = integ.clean_env(daemon.tmp)
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(k, None)
    env["STEPSCOPE_SOCKET"] = daemon.socket
    env["STEPSCOPE_JOB"] = job
    env["PYTHONPATH"] = os.pathsep.join([str(COLLECTOR)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_script(python, script, args, env, timeout=600):
    """Runs a helper script to completion; fails the test with its output when it exits non-zero."""
    r = subprocess.run([python, str(script)] + [str(a) for a in args], env=env, capture_output=True,
                       text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, (f"{script} exited {r.returncode}\nstdout:\n{r.stdout[-4000:]}\n"
                               f"stderr:\n{r.stderr[-4000:]}")
    return r


def import_cli():
    """The built `stepscope` tool (<BUILD_DIR>/cli/stepscope)."""
    return integ.build_dir() / "cli" / "stepscope"
