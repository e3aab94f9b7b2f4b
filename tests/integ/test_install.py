"""Install layout and the daemon's install-related defaults (packaging/README.md): the socket's
mode (socket_mode), the dashboard directory compiled in (the build's copy from inside the build
directory, the installed one elsewhere), and what `meson install` puts where."""
import json
import os
import shutil
import signal
import stat
import subprocess

import pytest

from conftest import REPO, START_RE, build_dir, clean_env, daemon_binary


def test_socket_mode_default_flag_env_and_file(daemons, tmp):
    d = daemons("default")
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o660
    d = daemons("flag", args=["--socket-mode", "0600"])
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o600
    env = clean_env(tmp)
    env["STEPSCOPE_SOCKET_MODE"] = "0666"
    d = daemons("env", env=env)
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o666
    d = daemons("file", config="socket_mode = 640\n")
    assert stat.S_IMODE(os.stat(d.socket).st_mode) == 0o640


@pytest.mark.parametrize("bad", ["0460", "0", "777x", "1660", "-600"])
def test_socket_mode_refuses_bad_values(daemons, bad):
    d = daemons("bad", start=False, args=["--socket-mode", bad])
    r = d.run_to_exit()
    assert r.returncode == 2, r
    assert b"socket_mode" in r.stderr or b"socket-mode" in r.stderr, r.stderr


def test_build_tree_daemon_serves_the_build_dashboard(daemon):
    want = build_dir().resolve() / "static" / "static"
    daemon.wait_for(f"the log line naming {want}",
                    lambda: f"static dir {want}\n" in daemon.stderr())
    st, hdr, body = daemon.request("/")
    assert st == 200 and body.lower().startswith(b"<!doctype html>"), (st, body[:200])


def build_options():
    with open(build_dir() / "meson-info" / "intro-buildoptions.json") as f:
        return {o["name"]: o["value"] for o in json.load(f)}


def test_meson_install_layout_and_installed_default_static_dir(tmp):
    dest = tmp / "dest"
    r = subprocess.run(["meson", "install", "-C", str(build_dir()), "--no-rebuild", "--quiet",
                        "--destdir", str(dest)], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-3000:]
    o = build_options()
    prefix = o["prefix"]
    root = dest / prefix.lstrip("/")

    def under(opt, *parts):
        d = o[opt]
        base = dest / d.lstrip("/") if os.path.isabs(d) else root / d
        return base.joinpath(*parts)

    bindir, libdir = under("bindir"), under("libdir")
    for p in [bindir / "stepscoped", bindir / "stepscope", under("includedir", "stepscope.h"),
              libdir / "libstepscope.a", libdir / "libstepscope.so.0",
              libdir / "pkgconfig" / "stepscope.pc",
              under("datadir", "stepscope", "static", "index.html"),
              under("sysconfdir", "stepscope", "stepscoped.conf"),
              root / "lib" / "sysusers.d" / "stepscope.conf"]:
        assert p.exists(), f"meson install did not install {p}"
    assert os.access(bindir / "stepscoped", os.X_OK)
    assert list(dest.rglob("stepscope/_client.py")), "the Python collector was not installed"
    unit = o["systemd_unit_dir"] or os.path.join(prefix, "lib", "systemd", "system")
    unit_text = (dest / unit.lstrip("/") / "stepscoped.service").read_text()
    exec_start = [l for l in unit_text.splitlines() if l.startswith("ExecStart=")]
    assert exec_start == [f"ExecStart={os.path.join(prefix, o['bindir'])}/stepscoped --config "
                          f"{os.path.join(prefix, o['sysconfdir'])}/stepscope/stepscoped.conf "
                          "--socket /run/stepscope/stepscope.sock --data-dir /var/lib/stepscope"]
    assert "\nUser=stepscope\n" in unit_text and "\nGroup=stepscope\n" in unit_text
    assert (under("sysconfdir", "stepscope", "stepscoped.conf").read_text()
            == (REPO / "config" / "stepscoped.conf").read_text())

    # Run outside the build directory, the daemon's default dashboard is the installed one.
    exe = tmp / "stepscoped"
    shutil.copy2(bindir / "stepscoped", exe)
    env = clean_env(tmp)
    p = subprocess.Popen([str(exe), "--socket", str(tmp / "i.sock"), "--http", "127.0.0.1:0",
                          "--data-dir", str(tmp / "i.data")], env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = p.stdout.readline().decode()
        assert START_RE.match(first.rstrip("\n")), first
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err.decode(errors="replace")
    want = os.path.join(prefix, o["datadir"], "stepscope", "static")
    assert f"static dir {want}\n" in err.decode(), err.decode()
    assert str(daemon_binary().parent) not in err.decode()
