#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Times one /api/v1/jobs/{job}/summary/operator of a job with N distinct operator names (each
with an inner row), on a fresh daemon of the build in $BUILD_DIR, for each N given (default
10000 40000 80000): the figure of docs/RELIABILITY.md's issue 18 row. Run it for two builds side
by side:  BUILD_DIR=build python3 tests/bench/summary_names.py 10000 40000 80000"""
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integ"))
sys.path.insert(0, str(HERE.parent / "reliability"))

from relutil import integ  # noqa: E402
from test_analysis_http import _ingest_names  # noqa: E402


def main():
    sizes = [int(x) for x in sys.argv[1:]] or [10000, 40000, 80000]
    with tempfile.TemporaryDirectory() as t:
        for n in sizes:
            d = integ.Daemon(pathlib.Path(t), f"d{n}")
            d.start()
            try:
                _ingest_names(d, "names", n)
                t0 = time.monotonic()
                try:
                    st = d.request("/api/v1/jobs/names/summary/operator")[0]
                except OSError as e:  # the client's 30 s timeout
                    st = f"no answer ({e})"
                print(f"names={n} status={st} seconds={time.monotonic() - t0:.3f}", flush=True)
            finally:
                d.proc.kill()
                d.proc.wait()


if __name__ == "__main__":
    main()
