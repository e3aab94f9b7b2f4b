# SPDX-License-Identifier: MIT
"""Fixtures for the framework tests (real PyTorch, Paddle and MindSpore through the collectors):
the integration suite's real-daemon fixtures (tests/integ/conftest.py: a fresh stepscoped per test
on a temp socket, alive at teardown and exiting 0 on SIGTERM). Helpers to run framework scripts
against it are in fwutil.py (`import fwutil`)."""
import fwutil

tmp = fwutil.integ.tmp          # noqa: F401  (fixtures, re-exported for pytest)
daemons = fwutil.integ.daemons  # noqa: F401
daemon = fwutil.integ.daemon    # noqa: F401
