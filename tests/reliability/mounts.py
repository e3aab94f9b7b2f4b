# SPDX-License-Identifier: MIT
"""A size-limited tmpfs for the disk tests. Needs root (or CAP_SYS_ADMIN); without it the test is
skipped and says why."""
import contextlib
import os
import subprocess

import pytest


@contextlib.contextmanager
def tmpfs(path, size):
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a size-limited tmpfs needs root; run as root (CI does)")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}): no CAP_SYS_ADMIN")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path, opts):
    subprocess.run(["mount", "-o", f"remount,{opts}", str(path)], check=True, capture_output=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
