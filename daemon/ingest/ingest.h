/* SPDX-License-Identifier: MIT */
/*
 * ingest: the Unix socket that training processes write to. It owns framing (lib/lbuf),
 * decoding (decode.c over lib/json.c, a strict single-pass JSON scanner), per-connection sequence
 * numbers, error replies and backpressure. It never includes a store header: decoded records
 * leave through the callbacks below, which main.c points at the store.
 *
 * Protocol (docs/PROTOCOL.md): line 1 is a hello, answered with a welcome; every later non-blank
 * line takes the stream's next sequence number, whatever becomes of it. A bad line is counted,
 * answered with {"error":{"line":L,"seq":S,"code":...,"message":...}} and skipped. A bad hello is
 * answered the same way and the connection is closed. The daemon sends {"ack":N} once every line
 * with seq < N is durable.
 *
 * Threading: every function here runs on the loop thread. Replies are written to clients that may
 * have gone away: the process must ignore SIGPIPE (main.c does), else such a write kills it.
 */
#ifndef STEPSCOPE_INGEST_H
#define STEPSCOPE_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../core/record.h"
#include "../core/stats.h"

#define INGEST_LINE_MAX_DEFAULT DECODE_LINE_MAX_DEFAULT
#define INGEST_CONN_MAX_DEFAULT 1024
#define INGEST_HELLO_TIMEOUT_MS_DEFAULT 10000
#define INGEST_ERR_MAX 256
/* A stream's sequence numbers run below INT64_MAX: the line that would take INT64_MAX is refused
 * (seq_exhausted), so no ack exceeds INT64_MAX, the largest "seq" a hello may carry. */
#define INGEST_SEQ_END ((uint64_t)INT64_MAX)

struct ingest;

/* A hello arrived. Fill *ret_welcome and return 0, or return a negative errno and write a
 * message for the client into err (INGEST_ERR_MAX bytes); the connection is then closed. */
typedef int (*ingest_hello_cb)(void *ud, const struct record_hello *hello,
                               struct record_welcome *ret_welcome, char *err);

/* Records decoded from one read of one connection, in sequence order, all with seq >= the
 * welcome's next_seq (replayed duplicates are already skipped). Borrowed for the call. next_seq
 * is the connection's next sequence number after this read: past the records and past the lines
 * that were rejected, so their numbers are acknowledged too (n may be 0).
 * Return 0; -EAGAIN if they were taken but the consumer is above its high watermark (ingest
 * stops reading from every connection until ingest_resume()); any other negative errno if they
 * could not be taken (ingest answers each line with an "unavailable" error). In that last case,
 * if n > 0, the session then ends (on_close, clean = false) and the connection closes: later lines
 * could not be acknowledged without acknowledging the lost ones, so the client reconnects and
 * replays from the stream's durable next_seq. Usually called once per read of a connection; more
 * often when a read holds more than 4096 records or many escaped strings.
 * Record fields: a trace "M" event without "ts" has ts_ns = INT64_MIN, like absent "ts_us". */
typedef int (*ingest_sink_cb)(void *ud, int64_t session_id, const struct record *recs, size_t n,
                              uint64_t next_seq);

/* A session ended: clean is true after a {"type":"bye"} line, false on EOF, error or ingest_close().
 * Called once per welcomed connection, after the last sink call for it. While it runs the stream is
 * still mapped, so an ingest_ack() made from inside the callback (after committing) still reaches
 * the client; the connection closes once its queued replies are written. */
typedef void (*ingest_close_cb)(void *ud, int64_t session_id, bool clean);

/* A client's {"type":"capture"} report (docs/PROTOCOL.md section 6), on a welcomed session: the
 * capture's id, the step it started recording at (-1: not said), its state ("armed",
 * "recording", "done", "failed") and reason (len 0: none), all borrowed for the call. The line is
 * not a stored record, but it takes its sequence number and is acknowledged like one. */
typedef void (*ingest_capture_cb)(void *ud, int64_t session_id, int64_t capture_id, int64_t step,
                                  const struct record_text *state,
                                  const struct record_text *reason);

struct ingest_config {
    const char *socket_path;   /* must be shorter than sizeof(sun_path) */
    unsigned socket_mode;      /* permission bits of the socket file; 0 means 0660 */
    size_t max_line_bytes;     /* INGEST_LINE_MAX_DEFAULT */
    size_t max_connections;    /* INGEST_CONN_MAX_DEFAULT */
    uint64_t hello_timeout_ms; /* a connection without a complete hello this long after it was
                                * accepted is answered hello_timeout and closed (not while
                                * reading is paused); 0: INGEST_HELLO_TIMEOUT_MS_DEFAULT */
    size_t reserved_connections; /* connections without a hello may hold at most
                                * max_connections minus this (at least 1): past it, or with every
                                * slot taken, a new connection closes the oldest of them
                                * ("evicted") once it has waited 1 s (or half hello_timeout_ms),
                                * so an idle flood cannot lock trainers out while a burst of
                                * ranks connecting at once is never thrown out */
    ingest_hello_cb on_hello;
    ingest_sink_cb sink;
    ingest_close_cb on_close;
    ingest_capture_cb on_capture; /* NULL: capture reports are counted and dropped */
    void *ud;                  /* passed to the callbacks */
    struct stats *stats;       /* borrowed; bumped here */
    /* The answer to a probe hello (docs/PROTOCOL.md section 1), one JSON line ending in '\n',
     * read at each probe: the caller may fill it after ingest_start(), before the loop runs.
     * NULL: a probe is refused as a bad hello. */
    const char *probe_answer;
};

/* Binds the socket and starts accepting. Checks the path length itself (-ENAMETOOLONG); returns
 * -EADDRINUSE if a live daemon answers on the path, or if the path exists and is not a socket;
 * unlinks a stale socket file left by a dead one; chmods the socket to socket_mode. -EINVAL without a path,
 * on_hello or sink (on_close and stats may be NULL; max_line_bytes and max_connections 0 mean the
 * defaults). Other errors are negative errnos from the socket calls or libuv. *ret_in on success;
 * on a late failure a handle may still need one uv_run() to be closed. */
int ingest_start(uv_loop_t *loop, const struct ingest_config *cfg, struct ingest **ret_in);

/* Sends {"ack":next_seq} to the connection that holds stream_id, if any (no-op otherwise, and
 * no-op if next_seq is not above the last ack sent). Acks coalesce: while a write to the client is
 * in flight only the latest value waits, and it is never dropped for lack of buffer room. */
void ingest_ack(struct ingest *in, int64_t stream_id, uint64_t next_seq);

/* Queues a control line (docs/PROTOCOL.md section 6: one JSON object ending in '\n') for the
 * client holding stream_id. Returns 0; -ENOENT if no connection holds it (or it is closing);
 * -ENOBUFS if the client has not read the replies queued before. */
int ingest_send(struct ingest *in, int64_t stream_id, const char *line, size_t len);

/* Backpressure: resume reading from every connection after a sink returned -EAGAIN. */
void ingest_resume(struct ingest *in);

/* Shutdown, step one: stop accepting and stop reading; lines already framed have been sunk. */
void ingest_stop_reading(struct ingest *in);

/* Shutdown, step two: close every connection (after the last acks were queued) and the listener,
 * unlink the socket file, and free everything once libuv has closed the handles. NULL-safe.
 * Calls on_close(clean = false) for every session still open. Replies the socket cannot take at
 * once are dropped, so a client that never reads cannot hold up shutdown. Run the loop afterwards
 * (uv_run) to let the close callbacks free the memory. */
void ingest_close(struct ingest *in);

#endif
