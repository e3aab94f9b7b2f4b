#!/usr/bin/env bash
# The long fuzzing campaign of docs/RELIABILITY.md ("Fuzzing"): each libFuzzer target run to
# RUNS executions (10 M) or MAX_TIME seconds, one process per target, at most LANES at once, at
# nice 19, each from a copy of its committed corpus in a tmpfs scratch folder. Prints one
# Markdown table row per target (executions, seconds, exec/s, coverage and features from the
# start to the end, crashes) and leaves the grown corpora and any crash input under $OUT.
#
#   tests/bench/fuzz_long.sh [asan|plain] [target ...]     (default: asan, every target)
#
# asan: clang, -fsanitize=fuzzer + address,undefined (build-fuzz, as scripts/test builds it);
# plain: -fsanitize=fuzzer only (build-fuzz-plain), about 3 times faster per execution.
# Knobs: RUNS (10000000), MAX_TIME (seconds per target, 7200), LANES (2), MAX_LEN (4096),
# OUT (/dev/shm/stepscope-fuzz, else /tmp/stepscope-fuzz).
set -euo pipefail
cd "$(dirname "$0")/../.."

kind=${1:-asan}
[ $# -gt 0 ] && shift
RUNS=${RUNS:-10000000} MAX_TIME=${MAX_TIME:-7200} LANES=${LANES:-2} MAX_LEN=${MAX_LEN:-4096}
if [ -z "${OUT:-}" ]; then
  OUT=/tmp/stepscope-fuzz
  [ -d /dev/shm ] && [ -w /dev/shm ] && OUT=/dev/shm/stepscope-fuzz
fi
case $kind in
  asan) dir=build-fuzz; opts=(-Db_sanitize=address,undefined -Db_lundef=false) ;;
  plain) dir=build-fuzz-plain; opts=() ;;
  *) echo "usage: $0 [asan|plain] [target ...]" >&2; exit 2 ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for c in tests/fuzz/corpus/*/; do c=${c%/}; targets+=("${c##*/}"); done
fi
[ -d "$dir" ] || CC=clang CXX=clang++ meson setup "$dir" -Dfuzzing_engine=libfuzzer "${opts[@]}" >/dev/null
# Only the fuzz targets: without ASan's runtime the other programs of a libFuzzer-instrumented
# build do not link.
ninja -C "$dir" "${targets[@]/#/tests/fuzz/fuzz_}" >/dev/null

run_one() {
  local t=$1 work="$OUT/$kind-$1" log="$OUT/$kind-$1.log"
  rm -rf "$work" "$OUT/$kind-$1-crash"; mkdir -p "$work" "$OUT/$kind-$1-crash"
  cp -r "tests/fuzz/corpus/$t/." "$work/"
  local start rc=0
  start=$(date +%s)
  STEPSCOPE_FUZZ_QUIET=1 nice -n 19 "$dir/tests/fuzz/fuzz_$t" -runs="$RUNS" -max_len="$MAX_LEN" \
    -max_total_time="$MAX_TIME" -print_final_stats=1 -artifact_prefix="$OUT/$kind-$1-crash/" \
    "$work" >"$log" 2>&1 || rc=$?
  local secs=$(( $(date +%s) - start ))
  awk -v t="$t" -v secs="$secs" -v rc="$rc" -v kind="$kind" '
    /INITED cov:/ { for (i = 1; i <= NF; i++) { if ($i == "cov:") c0 = $(i + 1); if ($i == "ft:") f0 = $(i + 1) } }
    /^#[0-9]+.*cov:/ { for (i = 1; i <= NF; i++) { if ($i == "cov:") c1 = $(i + 1); if ($i == "ft:") f1 = $(i + 1) } }
    /stat::number_of_executed_units/ { n = $2 }
    /stat::average_exec_per_sec/ { r = $2 }
    END { printf "| `fuzz_%s` | %s | %s | %d | %s | %s → %s | %s → %s | %s |\n", t,
                 kind == "asan" ? "ASan+UBSan" : "fuzzer only", n, secs, r, c0, c1, f0, f1,
                 rc == 0 ? 0 : "1 (exit " rc ")" }' "$log"
}

echo "| target | build | executions | seconds | exec/s | coverage (edges, start → end) | features | crashes |"
echo "|---|---|---|---|---|---|---|---|"
mkdir -p "$OUT"
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$LANES" ]; do wait -n || true; done
  run_one "$t" &
done
wait
