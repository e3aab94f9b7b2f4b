#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two builds side by side: the ingest benchmark (tests/bench/ingest.sh, one round of each build
# in turn, ROUNDS times) and the import (cli/bench/import_ab.sh, interleaved) on each
# TRACES file, so that the machine's load falls on both alike. What docs/PERFORMANCE.md's
# "Side by side with the commit before" section ran.
#
#   OLD=/abs/old/build-rel NEW=/abs/new/build-rel TRACES="tests/data/kineto/gpu_5steps_rank0.json.gz /tmp/syn200.json" \
#     ROUNDS=3 tests/bench/ab_builds.sh
#
# OLD and NEW are release build directories (meson setup build-rel --buildtype=release), e.g. of a
# `git worktree add --detach /tmp/old <commit>`. A synthetic trace: cli/bench/gen_kineto.py.
# Prints one line per ingest round and build, then import_ab.sh's lines per trace.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OLD:?OLD build dir}" "${NEW:?NEW build dir}"
ROUNDS=${ROUNDS:-3}
EVENTS=${EVENTS:-2000000}
TRACES=${TRACES:-tests/data/kineto/gpu_5steps_rank0.json.gz}
for r in $(seq "$ROUNDS"); do
  for side in OLD NEW; do
    dir=${!side}
    line=$(BUILD_DIR=$dir EVENTS=$EVENTS REPEAT=1 tests/bench/ingest.sh 2>/dev/null | tail -1)
    echo "ingest round=$r build=$side $line load=$(cut -d' ' -f1 /proc/loadavg)"
  done
done
for t in $TRACES; do
  OLD=$OLD NEW=$NEW TRACE=$t ROUNDS=$ROUNDS PYTHON=0 cli/bench/import_ab.sh 2>&1 |
    grep '^old_s=' | sed "s|^|import $(basename "$t") |"
done
