# SPDX-License-Identifier: MIT
"""Fixtures for the stepscoped integration tests.

Every test gets its own daemon (the built binary, <BUILD_DIR>/daemon/stepscoped) on a temp socket,
a temp data dir and --http 127.0.0.1:0, so every counter a test reads is its own. The port is
parsed from the daemon's start line. At teardown the daemon must still be alive (it must never
crash on input) and must exit 0 on SIGTERM.
"""
import http.client
import json
import os
import pathlib
import queue
import re
import signal
import subprocess
import threading
import time

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
START_RE = re.compile(r"^stepscoped: listening on socket (.+), dashboard http://(.+):(\d+)/$")
START_TIMEOUT = 20.0
STOP_TIMEOUT = 30.0


def build_dir():
    b = pathlib.Path(os.environ.get("BUILD_DIR", "build"))
    if not b.is_absolute():
        b = b.resolve() if b.exists() else REPO / b
    return b


def daemon_binary():
    return build_dir() / "daemon" / "stepscoped"


def project_version():
    m = re.search(r"version:\s*'([^']+)'", (REPO / "meson.build").read_text())
    return m.group(1)


def clean_env(tmp):
    """The test process's environment without STEPSCOPE_* variables, with XDG and HOME pointed
    into tmp so a default path can never touch the real user's socket or state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STEPSCOPE_")}
    env["XDG_RUNTIME_DIR"] = str(tmp)
    env["XDG_STATE_HOME"] = str(tmp / "state")
    env["HOME"] = str(tmp)
    return env


def run_cli(args, env=None, timeout=20):
    """Runs the daemon binary to completion (for --help, --version and start failures)."""
    return subprocess.run([str(daemon_binary())] + list(args), env=env, capture_output=True,
                          timeout=timeout)


class Daemon:
    """A running stepscoped. socket/url/data_dir/proc are set once started."""

    def __init__(self, tmp, name, socket=None, data_dir=None, args=(), env=None, config=None,
                 pass_socket=True):
        self.tmp = tmp
        self.name = name
        self.socket = str(socket or tmp / f"{name}.sock")
        self.data_dir = str(data_dir or tmp / f"{name}.data")
        self.extra_args = list(args)
        self.env = env if env is not None else clean_env(tmp)
        self.config = config           # text of a --config file, or None
        self.pass_socket = pass_socket # False: let file/env/default choose the socket
        self.proc = None
        self.url = None
        self.host = None
        self.port = None
        self.start_line = None
        self.stdout_lines = []
        self.stderr_path = tmp / f"{name}.stderr"
        self.starts = 0
        self.stopped = False           # True when the test itself stopped or killed it

    # -- life cycle ------------------------------------------------------------------------

    def argv(self):
        a = [str(daemon_binary())]
        if self.pass_socket:
            a += ["--socket", self.socket]
        a += ["--http", "127.0.0.1:0", "--data-dir", self.data_dir]
        if self.config is not None:
            cfg = self.tmp / f"{self.name}.conf"
            cfg.write_text(self.config)
            a += ["--config", str(cfg)]
        return a + self.extra_args

    def start(self):
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        self.stopped = False
        err = open(self.stderr_path, "ab")
        err.write(f"--- start {self.starts}\n".encode())
        err.flush()
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=err, env=self.env)
        err.close()
        lines = queue.Queue()

        def drain(out, q):
            # Keeps reading stdout for the daemon's whole life, so it can never block on it.
            for raw in out:
                q.put(raw.decode(errors="replace").rstrip("\n"))
            q.put(None)

        threading.Thread(target=drain, args=(self.proc.stdout, lines), daemon=True).start()
        try:
            first = lines.get(timeout=START_TIMEOUT)
        except queue.Empty:
            self.stopped = True
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"daemon printed no start line in {START_TIMEOUT} s; stderr:\n"
                        + self.stderr())
        if first is None:
            self.stopped = True
            rc = self.proc.wait()
            pytest.fail(f"daemon exited with {rc} before its start line; stderr:\n" + self.stderr())
        self.start_line = first
        m = START_RE.match(first)
        assert m, f"start line not in the documented form: {first!r}"
        self.socket = m.group(1)
        self.host, self.port = m.group(2), int(m.group(3))
        assert self.port != 0, "--http 127.0.0.1:0 must report the port actually bound"
        self.url = f"http://{self.host}:{self.port}/"
        return self

    def run_to_exit(self, timeout=20):
        """Runs this daemon's command line expecting it to exit by itself (a start failure).
        Returns the CompletedProcess; a daemon that keeps running is killed after timeout and
        fails the test."""
        try:
            return subprocess.run(self.argv(), env=self.env, capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"daemon kept running for {timeout} s; expected it to refuse to start")

    def stderr(self):
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def assert_alive(self):
        assert self.alive(), (f"daemon died with exit code {self.proc.returncode}; stderr:\n"
                              + self.stderr()[-4000:])

    def stop(self, sig=signal.SIGTERM, expect=0):
        """Signals the daemon, waits, asserts the exit code; returns it."""
        self.assert_alive()
        self.stopped = True
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"daemon did not exit within {STOP_TIMEOUT} s of {sig.name}")
        if expect is not None:
            assert rc == expect, (f"daemon exited {rc} on {sig.name}, expected {expect}; "
                                  f"stderr:\n{self.stderr()[-4000:]}")
        return rc

    def kill9(self):
        self.assert_alive()
        self.stopped = True
        self.proc.kill()
        self.proc.wait()

    def restart(self):
        """kill -9 (if running), then start again on the same socket and data dir."""
        if self.alive():
            self.kill9()
        return self.start()

    # -- HTTP ------------------------------------------------------------------------------

    def request(self, path, method="GET"):
        """Sends path exactly as given (no normalisation). Returns (status, headers, body)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            conn.endheaders()
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def get_json(self, path, status=200):
        st, hdr, body = self.request(path)
        assert st == status, f"GET {path}: status {st}, expected {status}; body {body[:500]!r}"
        try:
            return json.loads(body)
        except ValueError as e:
            raise AssertionError(f"GET {path}: body is not JSON ({e}): {body[:500]!r}")

    def stats(self):
        return self.get_json("/api/v1/stats")

    def jobs(self):
        doc = self.get_json("/api/v1/jobs")
        return doc["jobs"] if isinstance(doc, dict) else doc

    def job(self, name):
        """The jobs[] item named name; fails when absent."""
        for j in self.jobs():
            if j["name"] == name:
                return j
        raise AssertionError(f"job {name!r} not in /api/v1/jobs: {[j['name'] for j in self.jobs()]}")

    def wait_for(self, what, pred, timeout=15.0):
        """Polls pred() until it is truthy; fails with what and the last value otherwise."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = pred()
            except (AssertionError, KeyError) as e:  # e.g. the job is not committed yet
                last = e
            else:
                if last:
                    return last
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


class DaemonFactory:
    def __init__(self, tmp):
        self.tmp = tmp
        self.daemons = []

    def __call__(self, name="d", start=True, **kw):
        d = Daemon(self.tmp, name, **kw)
        self.daemons.append(d)
        return d.start() if start else d

    def teardown(self):
        problems = []
        for d in self.daemons:
            if d.proc is None:
                continue
            if d.proc.poll() is not None:
                if not d.stopped:
                    problems.append(f"{d.name}: daemon died with exit code {d.proc.returncode}; "
                                    f"stderr:\n{d.stderr()[-4000:]}")
                continue
            d.proc.send_signal(signal.SIGTERM)
            try:
                rc = d.proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                d.proc.kill()
                d.proc.wait()
                problems.append(f"{d.name}: daemon ignored SIGTERM for {STOP_TIMEOUT} s")
                continue
            if rc != 0:
                problems.append(f"{d.name}: daemon exited {rc} on SIGTERM, expected 0; "
                                f"stderr:\n{d.stderr()[-4000:]}")
        return problems


@pytest.fixture
def tmp(tmp_path_factory):
    """A short temp dir: Unix socket paths must fit in 107 bytes."""
    import tempfile
    d = pathlib.Path(tempfile.mkdtemp(prefix="ssi.", dir="/tmp"))
    yield d
    import shutil
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def daemons(tmp):
    """Starts daemons on demand: daemons(name, args=..., env=..., config=...). Each must be alive
    at teardown (unless the test stopped it itself) and exit 0 on SIGTERM."""
    if not daemon_binary().exists():
        pytest.fail(f"{daemon_binary()} is not built: ninja -C {build_dir()} daemon/stepscoped")
    f = DaemonFactory(tmp)
    yield f
    problems = f.teardown()
    if problems:
        pytest.fail("\n".join(problems))


@pytest.fixture
def daemon(daemons):
    """One daemon with default settings."""
    return daemons("d")
