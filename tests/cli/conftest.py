# SPDX-License-Identifier: MIT
"""Fixtures for the `stepscope import` tests: the integration suite's real-daemon fixtures
(tests/integ/conftest.py: a fresh stepscoped per test on a temp socket, alive at teardown and
exiting 0 on SIGTERM), plus the built CLI (<BUILD_DIR>/cli/stepscope)."""
import importlib.util
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("integ_conftest", REPO / "tests" / "integ" / "conftest.py")
integ = importlib.util.module_from_spec(_spec)
sys.modules["integ_conftest"] = integ
_spec.loader.exec_module(integ)

tmp = integ.tmp          # noqa: F401  (fixtures, re-exported for pytest)
daemons = integ.daemons  # noqa: F401
daemon = integ.daemon    # noqa: F401
