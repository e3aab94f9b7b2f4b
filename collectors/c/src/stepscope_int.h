/* SPDX-License-Identifier: MIT */
/* Internals of libstepscope shared by client.c (the hot path, thread registration, fork),
 * sender.c (the flush thread: held lines, the connection, acks and replay) and encode.c (binary
 * records to JSON lines). Never included from outside src/.
 *
 * Data flow: a recording thread writes a binary record (struct ss__rec_hdr + fixed fields +
 * copied names) into its own struct ss__ring and publishes it with a release store of head; the
 * flush thread reads it after an acquire load of head, encodes it as one line at the end of the
 * held buffer, and releases the ring space with a release store of tail.
 */
#ifndef STEPSCOPE_INT_H
#define STEPSCOPE_INT_H

#include "stepscope.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SS__CACHELINE 64
#define SS__BATCH_MIN (4 * 1024)     /* write once this much waits... */
#define SS__BATCH_MAX (64 * 1024)    /* ...in sends of at most this much */
#define SS__LINGER_NS (10 * 1000000LL) /* or once the oldest unsent line waited this long */
#define SS__BACKOFF_MIN_MS 50
#define SS__BACKOFF_MAX_MS 2000
#define SS__HANDSHAKE_NS (5 * 1000000000LL)
#define SS__RBUF_BYTES (64 * 1024)   /* longest daemon line understood */
#define SS__LINE_MAX (64 * 1024)     /* longest line one record can encode to (< 1 MiB) */
#define SS__ALIGN 8u

enum ss__rec_kind {
    SS__REC_PAD = 0,  /* filler to the ring's end; the record continues at offset 0 */
    SS__REC_SPAN,
    SS__REC_COUNTER,
    SS__REC_QUEUE,
    SS__REC_STEP,
};

/* Every record starts 8-aligned with this header; size includes it and the padding. */
struct ss__rec_hdr {
    uint32_t size;
    uint16_t kind;     /* enum ss__rec_kind */
    uint16_t len1;     /* name length (span, counter, queue) or phase count (step) */
};

/* Records carry their thread id: a ring handed to a new thread may still hold the records of
 * the thread that exited. */
struct ss__rec_span {  /* followed by name[len1], cat[cat_len] */
    int64_t begin_ns;
    int64_t end_ns;
    uint32_t cat_len;
    int32_t tid;
};

struct ss__rec_counter { /* followed by name[len1] */
    int64_t ts_ns;
    double value;
    int32_t tid;
    uint32_t pad;
};

struct ss__rec_queue { /* followed by name[len1] */
    int64_t ts_ns;
    int64_t size;
    int64_t capacity;  /* < 0: absent */
    int64_t step;      /* < 0: absent */
};

struct ss__rec_step { /* followed by len1 x (int64 dur_ns, uint16 name_len, name) unaligned */
    int64_t step;
    int64_t begin_ns;
    int64_t end_ns;
    int64_t samples;   /* < 0: absent */
};

struct ss__phase {
    uint16_t len;
    bool touched;       /* timed in the open step */
    int64_t dur_ns;     /* accumulated in the open step */
    char name[SS_PHASE_NAME_MAX];
};

/* One recording thread's ring. head and the producer-side fields are written only by the
 * owning thread; tail only by the flush thread. Ownership passes to another thread only after
 * the owner exits (owned goes 1 -> 0 -> 1 with release/acquire). */
struct ss__ring {
    /* producer side */
    _Alignas(SS__CACHELINE) _Atomic uint64_t head;  /* bytes ever written (published) */
    uint64_t tail_cache;         /* last tail seen by the producer */
    _Atomic uint64_t n_records;  /* producer-written, read by ss_stats() */
    _Atomic uint64_t n_dropped;  /* producer-written: ring full */
    int32_t tid;                 /* the owner's; copied into records */
    bool in_step;
    int64_t step, step_begin_ns;
    uint16_t n_phases, depth;
    struct { uint16_t idx; int64_t t0; } open[SS_PHASE_DEPTH_MAX];
    struct ss__phase phases[SS_PHASES_MAX];
    /* consumer side */
    _Alignas(SS__CACHELINE) _Atomic uint64_t tail; /* bytes ever consumed */
    /* shared, read-mostly */
    _Alignas(SS__CACHELINE) _Atomic int owned;     /* a live thread records into it */
    struct ss__ring *next;       /* immutable once published in the client's list */
    uint64_t mask;               /* size - 1 */
    unsigned char *data;         /* size bytes */
};

/* The flush thread's buffer of encoded lines [base_seq, next_seq). Byte offsets are absolute
 * (bytes ever encoded on this stream), so compaction never renumbers anything. Guarded by
 * client->mu. */
struct ss__held {
    char *buf;              /* buf[0] is absolute offset buf_base */
    size_t alloc;
    uint64_t buf_base;
    uint64_t b_head;        /* absolute offset of line base_seq */
    uint64_t b_end;         /* absolute end of the last line */
    uint64_t *ends;         /* ends[i - l_head]: absolute end of line base_seq + i */
    size_t ends_alloc, l_head, l_n; /* held lines are ends[l_head, l_n) */
    uint64_t base_seq;      /* seq of the oldest held line */
};

enum ss__conn_state {
    SS__DISCONNECTED,  /* waits for next_connect_ns, then connects -> HANDSHAKE */
    SS__HANDSHAKE,     /* hello written (hs_off of hs_len), waits for the welcome -> CONNECTED */
    SS__CONNECTED,     /* writes held lines from wpos; EOF or error -> DISCONNECTED */
};

struct ss_client {
    /* immutable after new (reset only in a forked child) */
    char *socket_path, *job, *given_stream, *framework, *framework_version, *run;
    char *stream;
    char host[256];
    int rank, world_size, local_rank;
    int pid;
    uint64_t gen;               /* unique per client and per fork: TLS cache key */
    size_t buffer_bytes, ring_bytes;
    unsigned flush_interval_ms, close_timeout_ms;
    ss_control_cb control_cb;
    void *control_userdata;
    ss_capture_cb capture_cb;   /* under mu (ss_on_capture) */
    void *capture_userdata;
    bool capture_changed;       /* under mu: reconnect so the hello says the new capability */

    _Atomic(struct ss__ring *) rings; /* lock-free push-only list */
    _Atomic int running;        /* flush thread started */
    pthread_mutex_t start_mu;   /* serialises lazy starts */

    /* the flush thread's state, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cond;        /* flush progress (done_gen) */
    pthread_t thread;
    int wake_r, wake_w;         /* pipe: ss_flush/free wake the thread */
    bool stop, closing, bye_queued;
    uint64_t req_gen, seen_gen, pending_gen, done_gen;
    uint64_t flush_target;      /* pending_gen is done once base_seq >= this */
    struct ss__held held;
    int fd;
    enum ss__conn_state state;
    char hs[16384];             /* hello line */
    size_t hs_len, hs_off;
    int64_t hs_deadline_ns, next_connect_ns, unsent_since_ns;
    unsigned backoff_ms;
    uint64_t wpos;              /* absolute: bytes of held lines written on this connection */
    uint64_t written_line;      /* index (like l_head) past the last line fully written */
    uint64_t acked_upto;        /* highest ack of this stream */
    uint64_t hi_sent_seq;       /* lines below it were written at least once */
    char rbuf[SS__RBUF_BYTES];
    size_t rlen;
    bool rskip;                 /* discarding an over-long daemon line up to its '\n' */

    /* counters written by the flush thread, read by ss_stats() */
    _Atomic uint64_t st_dropped_buffer, st_dropped_noring, st_acked, st_replayed, st_errors,
        st_connects, st_connect_failures, st_control, st_bytes, st_writes, st_sent, st_held_lines,
        st_held_bytes, st_capture_requests;
    _Atomic int st_connected;

    struct ss_client *reg_next; /* the registry of live clients (client.c), under its lock */
};

/* encode.c: appends the JSON line for the record at rec (contiguous, hdr->size bytes) to out,
 * which has room for SS__LINE_MAX bytes. Returns the line's length ('\n' included). */
size_t ss__encode_record(const struct ss_client *c, const struct ss__rec_hdr *hdr, char *out);
/* Appends the hello line (with stream and seq) to out (size cap). Returns its length, 0 if too
 * long. */
size_t ss__encode_hello(const struct ss_client *c, uint64_t seq, char *out, size_t cap);
/* Appends s[0, n) as a JSON string literal (quotes included); needs 6 * n + 2 bytes. */
char *ss__put_str(char *p, const char *s, size_t n);
/* n bytes of s cut to at most max bytes on a UTF-8 character boundary. */
size_t ss__clamp_utf8(const char *s, size_t n, size_t max);

/* sender.c */
void *ss__sender_main(void *arg);
void ss__held_reset(struct ss__held *h);
void ss__held_free(struct ss__held *h);
int64_t ss__mono_ns(void);
/* Under c->mu: encodes every record the rings hold, then holds line (n bytes, '\n' ended) after
 * them. Returns 0 or -ENOBUFS (dropped and counted). */
int ss__sender_append(struct ss_client *c, const char *line, size_t n);
/* Parses a daemon line {"capture":{...}} (NUL-terminated) into *req. Returns false if it is not
 * one (req->id is then -1, or the id when only the rest is bad). */
bool ss__parse_capture(const char *line, struct ss_capture_request *req);

#endif /* STEPSCOPE_INT_H */
