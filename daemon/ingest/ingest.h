/* SPDX-License-Identifier: MIT */
/*
 * ingest: the Unix socket that training processes write to. It owns framing (core/lbuf),
 * decoding (simdjson, in decode.cc behind an extern "C" wall), per-connection sequence numbers,
 * error replies and backpressure. It never includes a store header: decoded records leave through
 * the callbacks below, which main.c points at the store.
 *
 * Protocol (docs/PROTOCOL.md): line 1 is a hello, answered with a welcome; every later non-blank
 * line takes the stream's next sequence number, whatever becomes of it. A bad line is counted,
 * answered with {"error":{"line":L,"seq":S,"code":...,"message":...}} and skipped. A bad hello is
 * answered the same way and the connection is closed. The daemon sends {"ack":N} once every line
 * with seq < N is durable.
 *
 * Threading: every function here runs on the loop thread.
 */
#ifndef STEPSCOPE_INGEST_H
#define STEPSCOPE_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "../core/record.h"
#include "../core/stats.h"

#define INGEST_LINE_MAX_DEFAULT (1u << 20)
#define INGEST_CONN_MAX_DEFAULT 1024
#define INGEST_ERR_MAX 256

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
 * could not be taken (ingest answers each line with an "unavailable" error). */
typedef int (*ingest_sink_cb)(void *ud, int64_t session_id, const struct record *recs, size_t n,
                              uint64_t next_seq);

/* A session ended: clean is true after a {"type":"bye"} line, false on EOF or error. */
typedef void (*ingest_close_cb)(void *ud, int64_t session_id, bool clean);

struct ingest_config {
    const char *socket_path;   /* must be shorter than sizeof(sun_path) */
    size_t max_line_bytes;     /* INGEST_LINE_MAX_DEFAULT */
    size_t max_connections;    /* INGEST_CONN_MAX_DEFAULT */
    ingest_hello_cb on_hello;
    ingest_sink_cb sink;
    ingest_close_cb on_close;
    void *ud;                  /* passed to the three callbacks */
    struct stats *stats;       /* borrowed; bumped here */
};

/* Binds the socket and starts accepting. Checks the path length itself (-ENAMETOOLONG); returns
 * -EADDRINUSE if a live daemon answers on the path; unlinks a stale socket file left by a dead
 * one; chmods the socket 0660. Other errors are libuv's (negative errno). *ret_in on success. */
int ingest_start(uv_loop_t *loop, const struct ingest_config *cfg, struct ingest **ret_in);

/* Sends {"ack":next_seq} to the connection that holds stream_id, if any (no-op otherwise). */
void ingest_ack(struct ingest *in, int64_t stream_id, uint64_t next_seq);

/* Backpressure: resume reading from every connection after a sink returned -EAGAIN. */
void ingest_resume(struct ingest *in);

/* Shutdown, step one: stop accepting and stop reading; lines already framed have been sunk. */
void ingest_stop_reading(struct ingest *in);

/* Shutdown, step two: close every connection (after the last acks were queued) and the listener,
 * unlink the socket file, and free everything once libuv has closed the handles. NULL-safe. */
void ingest_close(struct ingest *in);

#endif
