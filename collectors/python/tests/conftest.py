# SPDX-License-Identifier: MIT
import os
import pathlib
import shutil
import sys
import tempfile

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1]
if str(PKG) not in sys.path:  # the tests run from a checkout without pip install
    sys.path.insert(0, str(PKG))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from fakeserver import FakeServer  # noqa: E402


@pytest.fixture
def sockdir():
    """A short directory for sockets (sun_path holds 108 bytes; pytest's tmp_path can be longer)."""
    d = tempfile.mkdtemp(prefix="ssc", dir="/tmp")
    yield pathlib.Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def server(sockdir):
    s = FakeServer(sockdir / "d.sock").start()
    yield s
    s.stop()


@pytest.fixture
def clean_env(monkeypatch, sockdir):
    for k in list(os.environ):
        if k.startswith("STEPSCOPE_") or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(sockdir))
    return monkeypatch
