# SPDX-License-Identifier: MIT
"""Defaults from the environment, with the same socket rule as the daemon."""
import os
import re
import socket as _socket
import sys

NAME_MAX = 256  # bytes, protocol section 1
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def default_socket_path(environ=None):
    """STEPSCOPE_SOCKET, else $XDG_RUNTIME_DIR/stepscope.sock (when absolute), else
    /tmp/stepscope-$UID.sock: the daemon's rule (daemon/core/config.c)."""
    env = os.environ if environ is None else environ
    v = env.get("STEPSCOPE_SOCKET")
    if v:
        return v
    v = env.get("XDG_RUNTIME_DIR")
    if v and v.startswith("/"):
        return v + "/stepscope.sock"
    return "/tmp/stepscope-%d.sock" % os.getuid()


def truncate_utf8(s, limit=NAME_MAX):
    """s cut to at most limit UTF-8 bytes, on a character boundary."""
    b = s.encode("utf-8", "replace")
    if len(b) <= limit:
        return b.decode("utf-8")
    return b[:limit].decode("utf-8", "ignore")


def clean_name(s, fallback):
    """A hello string: no control characters, valid UTF-8, 1..256 bytes."""
    try:
        s = "" if s is None else str(s)
        s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        s = _CONTROL.sub("_", s).strip()
        s = truncate_utf8(s)
    except Exception:
        s = ""
    return s or fallback


def default_job(environ=None):
    env = os.environ if environ is None else environ
    v = env.get("STEPSCOPE_JOB")
    if v:
        return v
    argv0 = sys.argv[0] if getattr(sys, "argv", None) else ""
    base = os.path.basename(argv0 or "")
    if base.endswith(".py"):
        base = base[:-3]
    if not base or base in ("-c", "-m", "-"):
        return "python"
    return base


def env_int(name, environ=None):
    env = os.environ if environ is None else environ
    v = env.get(name)
    if v is None or v.strip() == "":
        return None
    try:
        return int(v.strip())
    except ValueError:
        return None


def hostname():
    try:
        return _socket.gethostname() or "localhost"
    except Exception:
        return "localhost"
