#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Side-by-side import rounds: two builds (importer and daemon each) and python3 on one trace,
# interleaved in every round, so that the machine's load falls on all three alike.
#
#   OLD=/path/to/old/build-rel NEW=build-rel TRACE=/tmp/ssib1g/synthetic_kineto_1024mb.json \
#     ROUNDS=3 cli/bench/import_ab.sh
#
# OLD and NEW are build directories (e.g. a `git worktree add --detach /tmp/old <commit>` built with
# `meson setup build-rel --buildtype=release -Dtests=false`). Each gets its own daemon and data
# directory; each import goes into a new job, acknowledged end to end. PYTHON=0 skips python.
# One line per round: old_s=<a> new_s=<b> python_s=<c> load=<1-minute load average>.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${OLD:?OLD=<build dir of the baseline>}" "${TRACE:?TRACE=<a Chrome-trace file>}"
NEW=${NEW:-build-rel}
ROUNDS=${ROUNDS:-3}
WORK=$(mktemp -d /tmp/ssiab.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
for v in old new; do
  dir=$OLD; [ $v = new ] && dir=$NEW
  "$dir/daemon/stepscoped" --socket "$WORK/$v.sock" --data-dir "$WORK/$v" --http 127.0.0.1:0 \
    >"$WORK/$v.out" 2>"$WORK/$v.err" &
  pids+=($!)
done
for _ in $(seq 100); do [ -S "$WORK/old.sock" ] && [ -S "$WORK/new.sock" ] && break; sleep 0.1; done
now() { date +%s.%N; }
timed() { local t0; t0=$(now); "$@" >/dev/null; echo "$(now) - $t0" | bc -l; }
for i in $(seq "$ROUNDS"); do
  a=$(timed "$OLD/cli/stepscope" import --quiet --socket "$WORK/old.sock" --job "o$i" "$TRACE")
  b=$(timed "$NEW/cli/stepscope" import --quiet --socket "$WORK/new.sock" --job "n$i" "$TRACE")
  c=0
  if [ "${PYTHON:-1}" != 0 ]; then
    c=$(timed python3 cli/bench/python_baseline.py "$TRACE" 2>/dev/null)
  fi
  printf 'old_s=%.3f new_s=%.3f python_s=%.3f load=%s\n' "$a" "$b" "$c" "$(cut -d' ' -f1 /proc/loadavg)"
done
