#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# API latency benchmark (issue 3): with SPANS trace events and STEPS steps stored in one job, wrk
# drives CONNS concurrent HTTP connections at each analysis route for DURATION seconds while
# loadgen keeps ingesting into another job at INGEST_RATE events/s, and reports p50/p99 latency.
#
# The baseline runs side by side: /api/v1/health (a route that computes nothing) under the very
# same load, so each route's figure is also given as a ratio to it; the machines this runs on are
# shared and noisy, and the ratio is what carries over from one to another.
#
# Environment: BUILD_DIR (default build), SPANS (10000000), STEPS (100000), RANKS (8),
# CONNS (200), THREADS (2, wrk's), DURATION (10), INGEST_RATE (1000000), EVENT_BYTES (160).
# Needs wrk (Debian: wrk) and python3. Prints one line per route:
#   route=<name> p50_ms=<x> p99_ms=<y> rps=<r> p99_ratio=<p99 / health p99>
# and last: ingest_events_per_s=<achieved during the wrk runs> spans=<N> steps=<M>
set -euo pipefail

cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
SPANS=${SPANS:-10000000}
STEPS=${STEPS:-100000}
RANKS=${RANKS:-8}
CONNS=${CONNS:-200}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10}
INGEST_RATE=${INGEST_RATE:-1000000}
EVENT_BYTES=${EVENT_BYTES:-160}
JOB=big

die() {
    echo "api.sh: FAIL: $*" >&2
    exit 1
}
command -v wrk >/dev/null || die "wrk is not installed (apt-get install wrk)"
[ $((SPANS % STEPS)) -eq 0 ] || die "SPANS must be a multiple of STEPS"
[ $((SPANS % RANKS)) -eq 0 ] && [ $((STEPS % RANKS)) -eq 0 ] || die "SPANS and STEPS must be multiples of RANKS"

ninja -C "$BUILD_DIR" daemon/stepscoped tests/bench/loadgen >&2
DAEMON=$BUILD_DIR/daemon/stepscoped
LOADGEN=$BUILD_DIR/tests/bench/loadgen

TMP=$(mktemp -d /tmp/ssapi.XXXXXX)
PID=
BG=
cleanup() {
    local rc=$?
    if [ -n "$BG" ]; then
        pkill -P "$BG" 2>/dev/null || true
        kill "$BG" 2>/dev/null || true
        wait "$BG" 2>/dev/null || true
    fi
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT

sock=$TMP/d.sock
"$DAEMON" --socket "$sock" --http 127.0.0.1:0 --data-dir "$TMP/data" --log-level warn \
    --http-max-connections $((CONNS + 56)) --retention-bytes-per-job 100000000000 \
    >"$TMP/daemon.out" 2>"$TMP/daemon.err" &
PID=$!
for _ in $(seq 1 150); do
    grep -q '^stepscoped: listening on socket ' "$TMP/daemon.out" && break
    kill -0 "$PID" 2>/dev/null || { cat "$TMP/daemon.err" >&2; die "the daemon exited at start"; }
    sleep 0.1
done
port=$(sed -n 's|.*dashboard http://[^ ]*:\([0-9][0-9]*\)/$|\1|p' "$TMP/daemon.out")
[ -n "$port" ] || die "no start line from the daemon"
url=http://127.0.0.1:$port

# 1. The stored job: SPANS events, a step span every SPANS/STEPS of them, over RANKS connections.
echo "api.sh: loading $SPANS spans in $STEPS steps over $RANKS ranks ($(nproc) CPUs)" >&2
"$LOADGEN" --socket "$sock" --mode daemon --job "$JOB" --connections "$RANKS" --events "$SPANS" \
    --event-bytes "$EVENT_BYTES" --step-every $((SPANS / STEPS)) >"$TMP/load.out" ||
    die "loading the job failed"
echo "api.sh: loaded: $(cat "$TMP/load.out")" >&2

# The live analysis has every step once /steps says so.
steps_total() {
    python3 -c 'import json,sys,urllib.request
print(json.load(urllib.request.urlopen(sys.argv[1], timeout=60))["total"])' \
        "$url/api/v1/jobs/$JOB/steps?limit=1"
}
for _ in $(seq 1 300); do
    [ "$(steps_total)" = "$STEPS" ] && break
    sleep 0.2
done
got=$(steps_total)
[ "$got" = "$STEPS" ] || die "/steps shows $got steps, $STEPS were sent"

# 2. Background ingest into another job, at INGEST_RATE, for the whole measuring time, in rounds
# of 2 s worth of events each (so loadgen's pre-generated stream stays small).
routes=(health "/api/v1/health"
    steps "/api/v1/jobs/$JOB/steps?limit=50&offset=40000"
    operators "/api/v1/jobs/$JOB/operators?limit=20"
    step-trace "/api/v1/jobs/$JOB/step-trace"
    helper "/api/v1/jobs/$JOB/helper")
n_routes=$((${#routes[@]} / 2))
(
    i=0
    while :; do
        i=$((i + 1))
        "$LOADGEN" --socket "$sock" --mode daemon --job "ingest$i" --connections 8 \
            --events $((INGEST_RATE * 2)) --event-bytes 240 --rate "$INGEST_RATE" \
            >>"$TMP/bg.out" 2>>"$TMP/bg.err" || exit 1
    done
) &
BG=$!
sleep 1

events_sum() { # total events of the ingest* jobs, from /api/v1/jobs
    python3 -c 'import json,sys,urllib.request
d=json.load(urllib.request.urlopen(sys.argv[1], timeout=60))
jobs=d["jobs"] if isinstance(d,dict) else d
print(sum(j["events"] for j in jobs if j["name"].startswith("ingest")))' "$url/api/v1/jobs"
}

# wrk's --latency distribution lines look like "     99%    3.21ms"; converts to ms.
to_ms() {
    awk '{ v = $1; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
           if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000;
           printf "%.3f\n", v }'
}

e0=$(events_sum)
t0=$(date +%s.%N)
health_p99=
for ((k = 0; k < n_routes; k++)); do
    name=${routes[$((2 * k))]}
    path=${routes[$((2 * k + 1))]}
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url$path")
    [ "$code" = 200 ] || die "$path answers $code"
    wrk -t "$THREADS" -c "$CONNS" -d "${DURATION}s" --latency "$url$path" >"$TMP/wrk.$name" 2>&1 ||
        die "wrk failed on $path: $(cat "$TMP/wrk.$name")"
    kill -0 "$BG" 2>/dev/null || die "the background ingest failed: $(tail -5 "$TMP/bg.err")"
    p50=$(awk '$1 == "50%" { print $2 }' "$TMP/wrk.$name" | to_ms)
    p99=$(awk '$1 == "99%" { print $2 }' "$TMP/wrk.$name" | to_ms)
    rps=$(awk '$1 == "Requests/sec:" { printf "%.0f", $2 }' "$TMP/wrk.$name")
    errs=$(awk '/Non-2xx|Socket errors/' "$TMP/wrk.$name")
    [ -z "$errs" ] || die "$path: $errs"
    [ -n "$health_p99" ] || health_p99=$p99
    ratio=$(awk -v a="$p99" -v b="$health_p99" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    echo "route=$name p50_ms=$p50 p99_ms=$p99 rps=$rps p99_ratio=$ratio"
done
t1=$(date +%s.%N)
e1=$(events_sum)
rate=$(awk -v a="$e0" -v b="$e1" -v s="$t0" -v t="$t1" 'BEGIN { printf "%.0f", (b - a) / (t - s) }')
echo "ingest_events_per_s=$rate spans=$SPANS steps=$STEPS"
