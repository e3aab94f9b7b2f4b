#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# RSS over many jobs with and without the live memory budget (docs/RELIABILITY.md, "Memory over
# many jobs"): tests/reliability/test_load.py -k budget, JOBS jobs x 8 ranks streaming one job
# after another, run ROUNDS times alternately with --live-max-bytes BUDGET_MIB MiB and with no
# budget. Prints one JSON line of figures per run (RSS after each job, live.bytes after each job).
#
# Environment: BUILD_DIR (default build), JOBS (20), SCALE (1: 300 simulated steps per rank),
# BUDGET_MIB (32), ROUNDS (2), OUT (default $TMPDIR/live-budget.jsonl).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-${TMPDIR:-/tmp}/live-budget.jsonl}
: >"$OUT"
ninja -C "$BUILD_DIR" daemon/stepscoped >&2
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for round in $(seq "${ROUNDS:-2}"); do
  for mib in "${BUDGET_MIB:-32}" 0; do
    BUILD_DIR=$BUILD_DIR BUDGET_JOBS=${JOBS:-20} BUDGET_MIB=$mib RELIABILITY_SCALE=${SCALE:-1} \
      RELIABILITY_FIGURES=$(realpath "$OUT") \
      python3 -m pytest tests/reliability/test_load.py -q -p no:cacheprovider -k budget >&2
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
cat "$OUT"
