# SPDX-License-Identifier: MIT
"""The command line, configuration precedence, start-up failures and their exit codes, and
clean shutdown on signals.

Exit codes: 0 clean, 1 runtime error, 2 usage/config error, 3 another daemon is live on the socket
or holds the data dir, 4 data dir unusable, 5 cannot bind HTTP."""
import os
import re
import signal
import socket

from conftest import clean_env, project_version, run_cli
from ssclient import Client, dumps, x_event

OPTIONS = ["--socket", "--http", "--data-dir", "--config", "--log-level", "--help", "--version"]


def test_help(tmp):
    r = run_cli(["--help"], env=clean_env(tmp))
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    for opt in OPTIONS:
        assert opt in text, f"--help does not mention {opt}:\n{text}"


def test_every_option_in_help_is_accepted(tmp):
    """Every config key listed by --help is a flag getopt knows (the flag table is built from the
    config table: a fixed-size table once dropped the keys past its size)."""
    env = clean_env(tmp)
    text = run_cli(["--help"], env=env).stdout.decode()
    flags = [f for f in re.findall(r"^  (?:-\w, )?--([a-z0-9-]+)", text, re.M)
             if f not in ("config", "help", "version")]
    assert len(flags) >= 27, flags
    for f in flags:
        r = run_cli([f"--{f}", "1", "--help"], env=env)
        assert r.returncode == 0, (f, r.returncode, r.stderr)


def test_version(tmp):
    r = run_cli(["--version"], env=clean_env(tmp))
    assert r.returncode == 0, r.stderr
    assert project_version() in r.stdout.decode()


def test_unknown_option_is_usage_error(tmp):
    r = run_cli(["--no-such-option"], env=clean_env(tmp))
    assert r.returncode == 2
    assert r.stderr.strip(), "a usage error must say what was wrong"


def test_bad_values_are_usage_errors(daemons):
    cases = [
        dict(args=["--log-level", "loud"]),
        dict(args=["--http", "not-an-address"]),
        dict(config="no_such_key = 1\n"),
        dict(config="max_line_bytes = lots\n"),
        dict(config="this line has no equals sign\n"),
    ]
    for i, kw in enumerate(cases):
        d = daemons(f"bad{i}", start=False, **kw)
        r = d.run_to_exit()
        assert r.returncode == 2, (kw, r.returncode, r.stderr)
        assert r.stderr.strip(), kw
    d = daemons("nocfg", start=False, args=["--config", str(daemons.tmp / "missing.conf")])
    r = d.run_to_exit()
    assert r.returncode == 2, r.stderr
    assert b"missing.conf" in r.stderr


def test_second_daemon_on_the_same_socket_exits_3(daemons):
    first = daemons("first")
    second = daemons("second", start=False, socket=first.socket)
    r = second.run_to_exit()
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert first.socket.encode() in r.stderr, r.stderr
    # The first one is untouched and still serving.
    first.assert_alive()
    with Client(first.socket) as c:
        c.hello("still_first")
        c.send_lines([x_event(0)])
        c.wait_ack(1)
    assert first.job("still_first")["events"] == 1


def test_second_daemon_on_the_same_data_dir_exits_3(daemons):
    first = daemons("first")
    second = daemons("second", start=False, data_dir=first.data_dir)
    r = second.run_to_exit()
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert r.stderr.strip()
    first.assert_alive()
    assert not os.path.exists(second.socket), "the refused daemon left its socket behind"


def test_stale_socket_is_replaced(daemons):
    d = daemons("stale")
    path = d.socket
    d.kill9()
    assert os.path.exists(path), "kill -9 leaves the socket file"
    d.start()
    assert d.socket == path
    with Client(path) as c:
        c.hello("after_stale")
        c.send_lines([x_event(0)])
        c.wait_ack(1)
    assert d.job("after_stale")["events"] == 1


def test_socket_path_too_long_exits_2(daemons):
    long_dir = daemons.tmp / ("d" * 60)
    long_dir.mkdir()
    path = str(long_dir / ("s" * 60 + ".sock"))
    assert len(path.encode()) > 107
    d = daemons("long", start=False, socket=path)
    r = d.run_to_exit()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert b"socket" in r.stderr.lower(), r.stderr


def test_data_dir_that_is_a_file_exits_4(daemons):
    f = daemons.tmp / "not_a_dir"
    f.write_text("x")
    d = daemons("filedir", start=False, data_dir=f)
    r = d.run_to_exit()
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert r.stderr.strip()


def test_corrupt_database_exits_4(daemons):
    data = daemons.tmp / "corrupt"
    data.mkdir()
    (data / "stepscope.db").write_bytes(b"this is not an SQLite database\n" * 400)
    d = daemons("corrupt", start=False, data_dir=data)
    r = d.run_to_exit()
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert r.stderr.strip()
    assert (data / "stepscope.db").read_bytes().startswith(b"this is not"), \
        "the daemon must not overwrite a database it cannot read"


def test_empty_database_file_is_reported(daemons):
    """Issue 18, item 8: a 0-byte stepscope.db (a copy that failed, an old full disk) started an
    empty store without a word. It still starts (SQLite takes the file for an empty database),
    but the log says so and /api/v1/stats reports store.started_from_empty_file until the next
    start."""
    data = daemons.tmp / "empty"
    data.mkdir()
    (data / "stepscope.db").write_bytes(b"")
    d = daemons("empty", data_dir=data)
    assert d.stats()["store"]["started_from_empty_file"] is True
    log = d.stderr_path.read_text()
    assert "empty file (0 bytes)" in log and str(data / "stepscope.db") in log, log
    with Client(d.socket) as c:
        c.hello("after", stream="s")
        c.send_lines([x_event(0)])
        c.wait_ack(1)
    d.restart()
    assert d.stats()["store"]["started_from_empty_file"] is False
    assert d.job("after")["events"] == 1


def test_http_port_in_use_exits_5(daemons):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        d = daemons("busyport", start=False, args=["--http", f"127.0.0.1:{port}"])
        r = d.run_to_exit()
    assert r.returncode == 5, (r.returncode, r.stderr)
    assert str(port).encode() in r.stderr, r.stderr
    assert not os.path.exists(d.socket), "a daemon that failed to start left its socket behind"


def _started_on(daemons, name, config=None, env_socket=None, flag_socket=None):
    env = clean_env(daemons.tmp)
    if env_socket:
        env["STEPSCOPE_SOCKET"] = env_socket
    args = ["--socket", flag_socket] if flag_socket else []
    d = daemons(name, pass_socket=False, config=config, env=env, args=args)
    return d


def test_config_precedence_flag_over_env_over_file(daemons):
    t = daemons.tmp
    file_sock, env_sock, flag_sock = str(t / "file.sock"), str(t / "env.sock"), str(t / "flag.sock")
    cfg = f"# socket from the file\nsocket = {file_sock}\n"

    d = _started_on(daemons, "p1", config=cfg)
    assert d.socket == file_sock and os.path.exists(file_sock)
    d.stop()

    d = _started_on(daemons, "p2", config=cfg, env_socket=env_sock)
    assert d.socket == env_sock and os.path.exists(env_sock)
    assert not os.path.exists(file_sock)
    d.stop()

    d = _started_on(daemons, "p3", config=cfg, env_socket=env_sock, flag_socket=flag_sock)
    assert d.socket == flag_sock and os.path.exists(flag_sock)
    assert not os.path.exists(env_sock)
    with Client(flag_sock) as c:
        c.hello("precedence")
    d.stop()


def test_config_precedence_env_over_file_for_max_line_bytes(daemons):
    env = clean_env(daemons.tmp)
    env["STEPSCOPE_MAX_LINE_BYTES"] = "8192"
    d = daemons("mlb", config="max_line_bytes = 2048\n", env=env)
    ev = x_event(0, args={"pad": "p" * 5000})  # over the file's limit, under the environment's
    huge = x_event(1, args={"pad": "p" * 9000})
    with Client(d.socket) as c:
        c.hello("mlb")
        c.send_lines([ev, huge])
        c.wait_ack(2)
    assert [(e["line"], e["code"]) for e in c.errors] == [(3, "oversized")]
    assert d.job("mlb")["events"] == 1


def test_default_socket_from_xdg_runtime_dir(daemons):
    d = daemons("xdg", pass_socket=False)
    assert d.socket == str(daemons.tmp / "stepscope.sock")


def _signal_after_acks(daemons, sig):
    d = daemons("sig")
    n = 5000
    with Client(d.socket) as c:
        c.hello("signals")
        c.send_lines(x_event(i) for i in range(n))
        c.wait_ack(n)
        d.stop(sig)  # asserts exit code 0
        c.read_until_eof()  # the daemon closes client connections on its way out
    assert not os.path.exists(d.socket), "a clean exit removes the socket file"
    d.start()
    assert d.job("signals")["events"] == n


def test_sigterm_exits_0_with_everything_acked_stored(daemons):
    _signal_after_acks(daemons, signal.SIGTERM)


def test_sigint_exits_0_with_everything_acked_stored(daemons):
    _signal_after_acks(daemons, signal.SIGINT)


def test_sigterm_mid_stream_keeps_everything_acked(daemons):
    """SIGTERM while a client is still writing: exit 0, and every line acked before the
    connection closed is stored."""
    d = daemons("sigmid")
    n = 50000
    with Client(d.socket) as c:
        c.hello("sigmid")
        payload = b"".join(dumps(x_event(i)).encode() + b"\n" for i in range(n))
        c.send_raw(payload[:len(payload) // 2])
        d.stop(signal.SIGTERM)
        try:
            c.send_raw(payload[len(payload) // 2:])
        except OSError:
            pass
        c.read_until_eof()
    acked = c.last_ack or 0
    d.start()
    stored = d.job("sigmid")["events"]
    assert stored >= acked, f"acked {acked} lines but only {stored} were stored"
