#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Do two daemon builds answer the capture routes the same? answers_ab.py cannot reach them: a
capture needs connected sessions. This starts each daemon on a fresh data dir (capture_expire_s
1), connects rank 0 able to capture and rank 1 not, then makes the same requests of both: four
POSTs (all ranks with "what", two ranks one of which never connects, MindSpore's start/stop
form, a bad body), one for an unknown job, a client's "armed" and "failed" (with an escaped
reason) reports, the list and single captures, and, after rank 0 disconnects and the window
passes, the failed and expired parts with their reasons. Compares status and body, with the
_us timestamps masked.

Usage: tests/bench/captures_ab.py DAEMON_A DAEMON_B
Prints each differing request and, last, "requests=<n> differing=<n>"; exit status 1 if any
differs.
"""
import http.client
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "integ"))
from ssclient import Client  # noqa: E402


def run(binary):
    d = tempfile.mkdtemp(prefix="captures-ab-")
    sock = d + "/s.sock"
    p = subprocess.Popen([binary, "--socket", sock, "--http", "127.0.0.1:0", "--data-dir",
                          d + "/data", "--capture-expire-s", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
    out = []

    def req(method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request(method, path, body=body,
                  headers={"Content-Type": "application/json"} if body is not None else {})
        r = c.getresponse()
        raw = r.read().decode()
        c.close()
        out.append("%s %s %d %s" % (method, path, r.status, re.sub(r'_us":[0-9.]+', '_us":T', raw)))

    try:
        a = Client(sock)
        a.hello("j", rank=0, world_size=3, capabilities=["capture"])
        b = Client(sock)
        b.hello("j", rank=1, world_size=3)
        time.sleep(0.3)
        req("POST", "/api/v1/jobs/j/captures", '{"steps":2,"what":["cpu","shapes"]}')
        req("POST", "/api/v1/jobs/j/captures", '{"ranks":[0,2],"start":5,"steps":1}')
        req("POST", "/api/v1/jobs/j/captures", '{"start_step":3,"stop_step":4}')
        req("POST", "/api/v1/jobs/j/captures", '{"steps":0}')
        req("POST", "/api/v1/jobs/nojob/captures", '{"steps":1}')
        time.sleep(0.1)
        a.send_lines([{"type": "capture", "id": 1, "state": "armed"}])
        a.send_lines([{"type": "capture", "id": 3, "state": "failed",
                       "reason": "no \"profiler\" here"}])
        time.sleep(0.1)
        req("GET", "/api/v1/jobs/j/captures")
        req("GET", "/api/v1/jobs/j/captures/2")
        req("GET", "/api/v1/jobs/j/captures/9")
        a.close()
        time.sleep(2.5)  # past the 1 s window, checked every 250 ms
        req("GET", "/api/v1/jobs/j/captures")
        req("GET", "/api/v1/jobs/1/captures/1")
        b.close()
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    a, b = run(sys.argv[1]), run(sys.argv[2])
    bad = 0
    for x, y in zip(a, b):
        if x != y:
            bad += 1
            print("A: %s\nB: %s" % (x, y))
    print("requests=%d differing=%d" % (len(a), bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
