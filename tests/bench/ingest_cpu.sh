#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The daemon's CPU per imported event, two daemon builds side by side: `stepscope import` of one
# trace into a fresh daemon (own socket and data dir) of build A, then of build B, ROUNDS times,
# interleaved. Per round it reads the CPU time of the daemon's main thread (the libuv loop, which
# decodes, stores and aggregates every line: /proc/PID/task/PID/schedstat, in ns) and of the whole
# daemon (/proc/PID/stat utime + stime, every thread, in ticks) before and after the import, and
# checks through /api/v1/jobs/{job} that the job holds the trace's events. The same importer
# binary (IMPORTER) feeds both, so only the daemon differs. CPU time is used instead of wall time
# because the machines this runs on are shared: it moves less with the neighbours' load.
#
# Usage: tests/bench/ingest_cpu.sh DAEMON_A DAEMON_B TRACE
# Environment: ROUNDS (3), IMPORTER (build-rel/cli/stepscope), WORK (a temp dir).
# Prints one line per run, then
#   A main_ms_median=<ms> total_s_median=<s> ns_per_event=<ns>
#   B main_ms_median=<ms> total_s_median=<s> ns_per_event=<ns>
#   B/A main=<ratio> total=<ratio>
set -euo pipefail

cd "$(dirname "$0")/../.."
A=$1
B=$2
TRACE=$3
ROUNDS=${ROUNDS:-3}
IMPORTER=${IMPORTER:-build-rel/cli/stepscope}
WORK=${WORK:-$(mktemp -d /tmp/ingest_cpu.XXXXXX)}
TICK=$(getconf CLK_TCK)

die() {
    echo "ingest_cpu.sh: FAIL: $*" >&2
    exit 1
}

[ -x "$A" ] && [ -x "$B" ] && [ -x "$IMPORTER" ] && [ -r "$TRACE" ] ||
    die "usage: $0 DAEMON_A DAEMON_B TRACE (and IMPORTER=...)"

# One import into a fresh daemon of binary $1: prints "<main_ns> <total_ticks> <events>".
run() {
    local bin=$1 dir pid port i m0 m1 t0 t1 events
    dir=$(mktemp -d "$WORK/run.XXXXXX")
    "$bin" --socket "$dir/s.sock" --data-dir "$dir/data" --http 127.0.0.1:0 --log-level warn \
        >"$dir/out" 2>&1 &
    pid=$!
    for i in $(seq 200); do
        port=$(grep -o '127\.0\.0\.1:[0-9]*/' "$dir/out" 2>/dev/null | head -1 | tr -dc '0-9.:' || true)
        [ -S "$dir/s.sock" ] && [ -n "$port" ] && break
        sleep 0.05
    done
    [ -S "$dir/s.sock" ] || die "$bin did not start"
    m0=$(awk '{print $1}' "/proc/$pid/task/$pid/schedstat")
    t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    "$IMPORTER" import --quiet --socket "$dir/s.sock" --job bench "$TRACE" ||
        die "import into $bin failed"
    m1=$(awk '{print $1}' "/proc/$pid/task/$pid/schedstat")
    t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
    events=$(curl -s "http://$port/api/v1/jobs/bench" | grep -o '"events":[0-9]*' | head -1 |
        cut -d: -f2)
    kill "$pid"
    wait "$pid" || true
    rm -rf "$dir"
    [ -n "$events" ] && [ "$events" -gt 0 ] || die "$bin: the job holds no events"
    echo "$((m1 - m0)) $((t1 - t0)) $events"
}

median() {
    sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/A"
: >"$WORK/B"
for r in $(seq "$ROUNDS"); do
    for side in A B; do
        bin=$A
        [ "$side" = B ] && bin=$B
        read -r main total events < <(run "$bin")
        echo "round $r $side main_ms=$((main / 1000000)) total_s=$(awk -v t="$total" -v h="$TICK" 'BEGIN {printf "%.2f", t / h}') events=$events"
        echo "$main $total $events" >>"$WORK/$side"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
for side in A B; do
    m=$(cut -d' ' -f1 "$WORK/$side" | median)
    t=$(cut -d' ' -f2 "$WORK/$side" | median)
    e=$(cut -d' ' -f3 "$WORK/$side" | head -1)
    echo "$side main_ms_median=$(awk -v m="$m" 'BEGIN {printf "%.0f", m / 1e6}') total_s_median=$(awk -v t="$t" -v h="$TICK" 'BEGIN {printf "%.2f", t / h}') ns_per_event=$(awk -v m="$m" -v e="$e" 'BEGIN {printf "%.0f", m / e}')"
    eval "${side}_m=$m ${side}_t=$t"
done
echo "B/A main=$(awk -v a="$A_m" -v b="$B_m" 'BEGIN {printf "%.3f", b / a}') total=$(awk -v a="$A_t" -v b="$B_t" 'BEGIN {printf "%.3f", b / a}')"
