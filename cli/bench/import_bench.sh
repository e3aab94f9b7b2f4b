#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmarks `stepscope import` against Python on the same synthetic Kineto trace.
#
#   BUILD_DIR=build SIZE_MB=1024 REPEAT=3 cli/bench/import_bench.sh
#   BUILD_DIR=build TRACE=tests/data/kineto/gpu_5steps_rank0.json.gz REPEAT=5 cli/bench/import_bench.sh
#
# 1. Generates a synthetic Kineto trace of SIZE_MB megabytes (default 1024; gen_kineto.py) in
#    WORK (default a new /tmp dir; an existing trace of the same size there is reused), or takes
#    TRACE: a real one, or a real-shaped one of any size (tile_kineto.py: a real multi-thread
#    trace's layout, which the synthetic one lacks). peers_bench.py times the same files against
#    HolisticTraceAnalysis and torch-tb-profiler.
# 2. Starts a fresh stepscoped (data dir in WORK) and times `stepscope import` end to end:
#    both passes (validation, then sending) until the daemon has acknowledged every event; checks
#    through /api/v1/jobs that the job holds exactly the events written. Each round imports into
#    a new job, so nothing is skipped as already held. Peak RSS of the importer via /usr/bin/time.
# 3. Times python3 `json.load` of the same file plus a per-operator aggregation (calls and total
#    duration per name of every ph X event), with its peak RSS.
# Figures are medians of REPEAT rounds (default 1). The last line is
#   import_s=<a> python_s=<b> speedup=<b/a> peak_rss_ratio=<importer rss / file size>
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
BUILD_DIR=${BUILD_DIR:-build}
SIZE_MB=${SIZE_MB:-1024}
REPEAT=${REPEAT:-1}
PYTHON=${PYTHON:-python3}
WORK=${WORK:-$(mktemp -d /tmp/ssib.XXXXXX)}
mkdir -p "$WORK"
[ -x /usr/bin/time ] || { echo "import_bench: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

ninja -C "$BUILD_DIR" daemon/stepscoped cli/stepscope >/dev/null
cli=$BUILD_DIR/cli/stepscope
daemon_bin=$BUILD_DIR/daemon/stepscoped

if [ -n "${TRACE:-}" ]; then
  trace=$TRACE
  events=$("$PYTHON" -c 'import gzip, json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
print(len(d if isinstance(d, list) else d["traceEvents"]))' "$trace")
else
  trace=$WORK/synthetic_kineto_${SIZE_MB}mb.json
  if [ ! -s "$trace" ] || [ ! -s "$trace.count" ]; then
    echo "generating $trace ..." >&2
    "$PYTHON" cli/bench/gen_kineto.py --mb "$SIZE_MB" "$trace" >"$trace.count"
  fi
  events=$(cat "$trace.count")
fi
size=$(stat -c %s "$trace")
echo "trace: $trace, $size bytes, $events events" >&2

sock=$WORK/s.sock
rm -rf "$WORK/data" "$sock" "$WORK/daemon.out"  # an old daemon.out would pass the wait below
"$daemon_bin" --socket "$sock" --data-dir "$WORK/data" --http 127.0.0.1:0 >"$WORK/daemon.out" \
  2>"$WORK/daemon.err" &
dpid=$!
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/daemon.out" ] && break; sleep 0.1; done
port=$(sed -n 's|.*dashboard http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$WORK/daemon.out" | head -1)
[ -n "$port" ] || { echo "daemon did not start:" >&2; cat "$WORK/daemon.err" >&2; exit 1; }

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rss_kb() { sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\).*/\1/p' "$1"; }

: >"$WORK/import.times"; : >"$WORK/import.rss"; : >"$WORK/python.times"; : >"$WORK/python.rss"
for i in $(seq "$REPEAT"); do
  sync
  t0=$(now)
  /usr/bin/time -v -o "$WORK/import.time" "$cli" import --quiet --socket "$sock" --job "bench$i" "$trace"
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/import.times"
  rss_kb "$WORK/import.time" >>"$WORK/import.rss"
  got=$(curl -s "http://127.0.0.1:$port/api/v1/jobs/bench$i" |
        "$PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["events"])')
  [ "$got" = "$events" ] || { echo "job bench$i holds $got events, expected $events" >&2; exit 1; }
  echo "round $i: import $(tail -1 "$WORK/import.times") s, rss $(tail -1 "$WORK/import.rss") kB" >&2

  t0=$(now)
  /usr/bin/time -v -o "$WORK/python.time" "$PYTHON" cli/bench/python_baseline.py \
    "$trace" 2>>"$WORK/python.out"
  t1=$(now)
  echo "$t1 - $t0" | bc -l >>"$WORK/python.times"
  rss_kb "$WORK/python.time" >>"$WORK/python.rss"
  echo "round $i: python $(tail -1 "$WORK/python.times") s, rss $(tail -1 "$WORK/python.rss") kB" >&2
done

import_s=$(median <"$WORK/import.times")
python_s=$(median <"$WORK/python.times")
rss=$(sort -n "$WORK/import.rss" | tail -1)
py_rss=$(sort -n "$WORK/python.rss" | tail -1)
echo "importer peak rss ${rss} kB, python peak rss ${py_rss} kB, daemon: $(grep -c . "$WORK/daemon.err" || true) log lines" >&2
printf 'import_s=%.3f python_s=%.3f speedup=%.2f peak_rss_ratio=%.4f\n' "$import_s" "$python_s" \
  "$(echo "$python_s / $import_s" | bc -l)" "$(echo "$rss * 1024 / $size" | bc -l)"
