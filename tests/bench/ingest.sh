#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Ingest benchmark: how many Chrome-trace events per second stepscoped makes durable (acked), next
# to how many the same machine moves through a Unix socket into a sink that only discards them.
#
# Runs daemon and raw rounds alternately REPEAT times (a fresh daemon and data dir per round) and
# reports the median of each, because the machines this runs on are shared and noisy. After every
# daemon round it checks through /api/v1/jobs that the job holds exactly the events sent.
#
# REPLAY=1 uses the kill -9 test's client instead (loadgen --mode replay: its shorter records, a
# stream and seq, a ring of unacknowledged lines), paced at RATE events/s (0: unpaced), and a sink
# that also acknowledges (--sink-ack) as the baseline; the rounds then print both processes' CPU.
#
# Environment: BUILD_DIR (default build), EVENTS (2000000), REPEAT (3), CONNECTIONS (8),
# EVENT_BYTES (240), BATCH_BYTES (65536). The last line printed is
#   events_per_s=<N> raw_events_per_s=<M> ratio=<N/M>
set -euo pipefail

cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
EVENTS=${EVENTS:-2000000}
REPEAT=${REPEAT:-3}
CONNECTIONS=${CONNECTIONS:-8}
EVENT_BYTES=${EVENT_BYTES:-240}
BATCH_BYTES=${BATCH_BYTES:-65536}
JOB=bench

die() {
    echo "ingest.sh: FAIL: $*" >&2
    exit 1
}

ninja -C "$BUILD_DIR" daemon/stepscoped tests/bench/loadgen >&2
DAEMON=$BUILD_DIR/daemon/stepscoped
LOADGEN=$BUILD_DIR/tests/bench/loadgen
if [ "${REPLAY:-0}" = 1 ]; then
    DAEMON_MODE=(--mode replay --rate "${RATE:-0}")
    RAW_MODE=(--mode replay --rate "${RATE:-0}")
    SINK=--sink-ack
else
    DAEMON_MODE=(--mode daemon)
    RAW_MODE=(--mode raw)
    SINK=--sink
fi

TMP=$(mktemp -d /tmp/ssbench.XXXXXX)
PID=
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill "$PID" 2>/dev/null || true
        wait "$PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

# wait_line FILE PATTERN: waits up to 15 s for a line matching PATTERN in FILE, prints it.
wait_line() {
    local i
    for i in $(seq 1 150); do
        if grep -m1 -E "$2" "$1" 2>/dev/null; then
            return 0
        fi
        if ! kill -0 "$PID" 2>/dev/null; then
            cat "$1" "$1.err" >&2 2>/dev/null || true
            die "process $PID exited before printing its start line"
        fi
        sleep 0.1
    done
    die "no start line in $1 after 15 s"
}

# stop PID: SIGTERM, then the exit code must be 0.
stop() {
    local rc=0
    kill -TERM "$PID"
    wait "$PID" || rc=$?
    PID=
    return $rc
}

# events_of URL JOB: the job's "events" field from /api/v1/jobs.
events_of() {
    python3 - "$1" "$2" <<'EOF'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "api/v1/jobs", timeout=30) as r:
    doc = json.load(r)
jobs = doc["jobs"] if isinstance(doc, dict) else doc
for j in jobs:
    if j.get("name") == sys.argv[2]:
        print(j["events"])
        break
else:
    print("missing")
EOF
}

rate_of() {
    sed -n 's/.*events_per_s=\([0-9]*\).*/\1/p' <<<"$1" | tail -n1
}

median() {
    sort -n | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit 1;
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%d\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

SHAPE="$EVENT_BYTES B"
[ "${REPLAY:-0}" != 1 ] || SHAPE="replay records (about 105 B) at ${RATE:-0}/s (0: unpaced)"
echo "ingest.sh: $EVENTS events of $SHAPE over $CONNECTIONS connections," \
    "batch $BATCH_BYTES B, $REPEAT rounds, $(nproc) CPUs" >&2
DAEMON_RATES=()
RAW_RATES=()
for round in $(seq 1 "$REPEAT"); do
    # Daemon round: a fresh daemon on a fresh data dir, so the job's count is this round's alone.
    data=$TMP/data.$round
    sock=$TMP/d.sock
    # Truncate here: '>' on a background command truncates in the child, later, and a fast
    # wait_line would read the previous round's line (and its dead daemon's port).
    : >"$TMP/daemon.out"
    "$DAEMON" --socket "$sock" --http 127.0.0.1:0 --data-dir "$data" --log-level warn \
        >>"$TMP/daemon.out" 2>"$TMP/daemon.out.err" &
    PID=$!
    line=$(wait_line "$TMP/daemon.out" '^stepscoped: listening on socket ')
    port=$(sed -n 's|.*dashboard http://[^ ]*:\([0-9][0-9]*\)/$|\1|p' <<<"$line")
    [ -n "$port" ] || die "cannot parse the port from: $line"
    url=http://127.0.0.1:$port/
    out=$("$LOADGEN" --socket "$sock" "${DAEMON_MODE[@]}" --job "$JOB" --connections "$CONNECTIONS" \
        --events "$EVENTS" --event-bytes "$EVENT_BYTES" --batch-bytes "$BATCH_BYTES") ||
        die "loadgen (daemon mode) failed in round $round"
    stored=$(events_of "$url" "$JOB")
    [ "$stored" = "$EVENTS" ] ||
        die "round $round: /api/v1/jobs says job '$JOB' holds $stored events, $EVENTS were sent and acked"
    # utime + stime of the daemon, fields 14 and 15 of /proc/PID/stat (its name has no space).
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$PID/stat")
    stop || die "round $round: the daemon exited with $? on SIGTERM, expected 0"
    rate=$(rate_of "$out")
    DAEMON_RATES+=("$rate")
    echo "round $round daemon: $out (stored $stored, daemon_cpu_s=$cpu)" >&2

    # Raw round: the same bytes into a discard sink.
    sink=$TMP/s.sock
    : >"$TMP/sink.out"
    "$LOADGEN" "$SINK" "$sink" >>"$TMP/sink.out" 2>"$TMP/sink.out.err" &
    PID=$!
    wait_line "$TMP/sink.out" '^loadgen: sink listening' >/dev/null
    out=$("$LOADGEN" --socket "$sink" "${RAW_MODE[@]}" --job "$JOB" --connections "$CONNECTIONS" \
        --events "$EVENTS" --event-bytes "$EVENT_BYTES" --batch-bytes "$BATCH_BYTES") ||
        die "loadgen (raw mode) failed in round $round"
    stop || true # the sink has no drain to check; it exits on SIGTERM
    rate=$(rate_of "$out")
    RAW_RATES+=("$rate")
    echo "round $round raw:    $out" >&2
    rm -rf "$data"
done

N=$(printf '%s\n' "${DAEMON_RATES[@]}" | median)
M=$(printf '%s\n' "${RAW_RATES[@]}" | median)
echo "daemon rounds: ${DAEMON_RATES[*]}; raw rounds: ${RAW_RATES[*]}"
echo "events_per_s=$N raw_events_per_s=$M ratio=$(awk -v n="$N" -v m="$M" 'BEGIN { printf "%.3f", n / m }')"
