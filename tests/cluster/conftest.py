# SPDX-License-Identifier: MIT
"""The cluster tests' fixtures: the integration tests' real daemons (tmp, daemons) and one
Debian clickhouse-server for the session (chserver.py), its stepscope database dropped before
each test."""
import importlib.util
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
INTEG = HERE.parents[0] / "integ"
sys.path.insert(0, str(INTEG))
sys.path.insert(0, str(HERE))

_spec = importlib.util.spec_from_file_location("integ_conftest", INTEG / "conftest.py")
integ = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(integ)

tmp = integ.tmp
daemons = integ.daemons

from chserver import ClickHouse  # noqa: E402


@pytest.fixture(scope="session")
def ch_server(tmp_path_factory):
    ch = ClickHouse(tmp_path_factory.mktemp("clickhouse"))
    ch.start()
    yield ch
    ch.stop()


@pytest.fixture
def ch(ch_server):
    if ch_server.proc is None or ch_server.proc.poll() is not None:
        ch_server.start()
    ch_server.reset()
    yield ch_server
