# SPDX-License-Identifier: MIT
"""Fixtures for the framework tests (real PyTorch, Paddle and MindSpore through the collectors):
the integration suite's real-daemon fixtures (tests/integ/conftest.py: a fresh stepscoped per test
on a temp socket, alive at teardown and exiting 0 on SIGTERM). The helpers that run framework
scripts against it live in fwutil.py (also importable from here)."""
from fwutil import SYSTEM_PYTHON, import_cli, integ, run_script, script_env  # noqa: F401

tmp = integ.tmp          # noqa: F401  (fixtures, re-exported for pytest)
daemons = integ.daemons  # noqa: F401
daemon = integ.daemon    # noqa: F401
