#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The long variants of tests/reliability (issue 7), whose figures docs/RELIABILITY.md publishes:
# 20 kill -9 runs at 2x the CI volume (KILL_SCALE: 8 x 500 000 events per run, loadgen --mode replay
# paced at KILL9_RATE events/s, default 1000000), a simulated hour (3600 steps of 1 s) of 10 jobs x 8 ranks
# with RSS sampled, and every other reliability test once; then wrk for a minute per route
# while ingest runs (tests/bench/api.sh, DURATION=60).
#
# Environment: BUILD_DIR (default build), RUNS (20), KILL_SCALE (2), KILL9_RATE, SCALE (4), API (1: run api.sh; 0: skip),
# SPANS/STEPS for api.sh (1000000/10000). Needs root for the disk tests (tmpfs), wrk for api.sh.
# Writes one JSON line of figures per test to $OUT (default $TMPDIR/reliability-figures.jsonl) and
# api.sh's lines to ${OUT%.jsonl}-api.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-${TMPDIR:-/tmp}/reliability-figures.jsonl}
: >"$OUT"
ninja -C "$BUILD_DIR" daemon/stepscoped tests/bench/loadgen >&2
export BUILD_DIR RELIABILITY_FIGURES
RELIABILITY_FIGURES=$(realpath "$OUT")
RELIABILITY_RUNS=${RUNS:-20} RELIABILITY_SCALE=${KILL_SCALE:-2} \
    python3 -m pytest tests/reliability/test_kill9.py -q -p no:cacheprovider
RELIABILITY_SCALE=${SCALE:-4} python3 -m pytest tests/reliability -q -p no:cacheprovider \
    --deselect tests/reliability/test_kill9.py
if [ "${API:-1}" = 1 ]; then
    BUILD_DIR=$BUILD_DIR DURATION=60 SPANS=${SPANS:-1000000} STEPS=${STEPS:-10000} \
        tests/bench/api.sh | tee "${OUT%.jsonl}-api.txt"
fi
