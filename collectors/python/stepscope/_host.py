# SPDX-License-Identifier: MIT
"""Host samples: this process's CPU (% of one core) and RSS, and the machine's CPU use."""
import os
import time

try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):  # pragma: no cover
    _PAGE = 4096


def rss_bytes():
    """Resident set size from /proc/self/statm (second field, in pages); None if unreadable."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def _sys_cpu_times():
    """(busy, total) jiffies of the aggregate cpu line of /proc/stat, or None."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
        if not fields or fields[0] != b"cpu":
            return None
        vals = [int(x) for x in fields[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
        total = sum(vals[:8])  # guest time is already counted in user/nice
        return total - idle, total
    except (OSError, ValueError, IndexError):
        return None


class HostSampler:
    """Deltas since the previous sample (the first one: since the sampler was made)."""

    def __init__(self):
        self.reset()

    def reset(self):
        t = os.times()
        self._cpu = t[0] + t[1]
        self._wall = time.monotonic()
        self._sys = _sys_cpu_times()

    def sample(self):
        """A host record dict (without ts_us)."""
        t = os.times()
        cpu = t[0] + t[1]
        wall = time.monotonic()
        rec = {"type": "host"}
        dw = wall - self._wall
        if dw > 0:
            rec["cpu_percent"] = round(max(0.0, (cpu - self._cpu) / dw * 100.0), 3)
        self._cpu, self._wall = cpu, wall
        s = _sys_cpu_times()
        if s is not None and self._sys is not None:
            dt = s[1] - self._sys[1]
            if dt > 0:
                rec["sys_cpu_percent"] = round(max(0.0, (s[0] - self._sys[0]) / dt * 100.0), 3)
        self._sys = s
        r = rss_bytes()
        if r is not None:
            rec["rss_bytes"] = r
        return rec
