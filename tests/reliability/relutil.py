# SPDX-License-Identifier: MIT
"""Shared by the reliability tests: the integration tests' real-daemon fixtures (tmp, daemons,
daemon: a real stepscoped on a temp socket and data dir, alive at teardown, exit 0 on SIGTERM)
and their protocol client, reused as they are (conftest.py re-exports the fixtures), plus the
knobs that turn a CI run into the long variant (tests/bench/reliability.sh):

  RELIABILITY_RUNS      kill -9 runs (CI 3, long 20)
  RELIABILITY_SCALE     multiplies every event count and duration (CI 1)
  RELIABILITY_FIGURES   a file each test appends one JSON line of figures to (for RELIABILITY.md)
"""
import importlib.util
import json
import os
import pathlib
import resource
import sys

import pytest

INTEG = pathlib.Path(__file__).resolve().parents[1] / "integ"
sys.path.insert(0, str(INTEG))

_spec = importlib.util.spec_from_file_location("integ_conftest", INTEG / "conftest.py")
integ = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(integ)

tmp = integ.tmp
daemons = integ.daemons
daemon = integ.daemon

RUNS = int(os.environ.get("RELIABILITY_RUNS", "3"))
SCALE = float(os.environ.get("RELIABILITY_SCALE", "1"))


def publish(test, **figures):
    """Prints the figures and appends them to $RELIABILITY_FIGURES as one JSON line."""
    rec = {"test": test, **figures}
    print("FIGURES " + json.dumps(rec, sort_keys=True))
    path = os.environ.get("RELIABILITY_FIGURES")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")


def raise_fd_limit(n):
    """Raises this process's soft RLIMIT_NOFILE to n (at most the hard limit); returns it. The
    daemons started afterwards inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(n, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_kib(pid, field="VmRSS"):
    """VmRSS of pid in KiB, from /proc (field="VmHWM": its peak so far)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for pid {pid}")


@pytest.fixture
def figures(request):
    return lambda **kw: publish(request.node.name, **kw)
