/* SPDX-License-Identifier: MIT */
/* libstepscope: the C client of stepscoped (docs/PROTOCOL.md, docs/C_CLIENT.md).
 *
 * A training process makes one client, then records steps, phases, spans, counters and queue
 * samples from any thread. Recording never blocks and never talks to the daemon: each calling
 * thread appends a small fixed-layout binary record to its own lock-free ring (a single-producer,
 * single-consumer byte ring, made on the thread's first call). One background flush thread per
 * client drains the rings every few milliseconds, encodes the records as protocol lines (JSON
 * escaping, invalid UTF-8 replaced by U+FFFD), numbers them, writes batches of up to 64 KiB with
 * non-blocking sends, and keeps every line until the daemon acknowledges it, so that after a
 * reconnect (a daemon restart, say) it replays them under the same stream key and the daemon
 * stores each exactly once. Whatever the daemon does, a record that cannot be kept (its thread's
 * ring is full, or the held lines reached buffer_bytes) is dropped and counted, never waited for.
 *
 * Usable from C11 and C++. Times are int64_t nanoseconds of CLOCK_REALTIME (ss_now_ns()); the
 * wire speaks microseconds. Errors are negative errno values.
 */
#ifndef STEPSCOPE_H
#define STEPSCOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SS_VERSION "0.1.0"

/* Exported from the shared library, which hides everything else. */
#if defined(__GNUC__)
#define SS_API __attribute__((visibility("default")))
#else
#define SS_API
#endif

/* Limits (bytes). A name longer than SS_NAME_MAX is cut at a character boundary. */
#define SS_NAME_MAX 1024        /* span, counter and queue names, span categories */
#define SS_PHASE_NAME_MAX 64    /* phase names */
#define SS_PHASES_MAX 16        /* distinct phase names per thread; more are not recorded */
#define SS_PHASE_DEPTH_MAX 8    /* phases open at once per thread */

/* Daemon lines the client does not know (not welcome, ack or error), e.g. future capture
 * requests {"capture":{...}}. line is the raw line without its '\n', NUL-terminated, borrowed
 * for the call. Runs on the flush thread with the client's internal lock held: it may record
 * (ss_span() etc.) but must not call ss_flush() or ss_client_free(), and should return quickly. */
typedef void (*ss_control_cb)(const char *line, size_t len, void *userdata);

struct ss_options {
    const char *socket_path;   /* NULL: $STEPSCOPE_SOCKET, else $XDG_RUNTIME_DIR/stepscope.sock
                                  (when absolute), else /tmp/stepscope-$UID.sock */
    const char *job;           /* NULL: $STEPSCOPE_JOB, else the program's name */
    int rank;                  /* < 0: $RANK, else 0 */
    int world_size;            /* < 1: $WORLD_SIZE, else 1; raised to rank + 1 if below */
    int local_rank;            /* < 0: $LOCAL_RANK, else not sent */
    const char *stream;        /* replay key; NULL: "<host>:<pid>:<ns>" */
    const char *framework;     /* optional hello fields; NULL: not sent */
    const char *framework_version;
    const char *run;           /* NULL: $STEPSCOPE_RUN, else not sent */
    size_t buffer_bytes;       /* cap of encoded lines held until acknowledged; 0: 64 MiB */
    size_t ring_bytes;         /* per-thread ring, rounded up to a power of two; 0: 1 MiB */
    unsigned flush_interval_ms;   /* how often the flush thread drains the rings; 0: 2 */
    unsigned close_timeout_ms;    /* how long ss_client_free() waits for acks; 0: 5000 */
    ss_control_cb control_cb;     /* NULL: unknown daemon lines are only counted */
    void *control_userdata;
};

/* Filled by ss_stats(). (Not "struct ss_stats": in C++ a struct and a function of one name
 * make -Wshadow complain in every user's build.) */
struct ss_client_stats {
    uint64_t records;          /* records accepted into the rings */
    uint64_t dropped;          /* records dropped: dropped_ring_full + dropped_buffer_full */
    uint64_t dropped_ring_full;   /* the recording thread's ring was full */
    uint64_t dropped_buffer_full; /* the held lines had reached buffer_bytes */
    uint64_t sent;             /* lines written to the daemon at least once (hello excluded) */
    uint64_t acked;            /* lines the daemon acknowledged (durable, or rejected) */
    uint64_t replayed;         /* lines written again after a reconnect */
    uint64_t errors_from_daemon;  /* {"error":...} lines received */
    uint64_t connects;         /* welcomes received */
    uint64_t reconnects;       /* welcomes after the first */
    uint64_t connect_failures; /* connect or handshake attempts that failed */
    uint64_t control_lines;    /* unknown daemon lines passed to control_cb */
    uint64_t capture_requests; /* capture requests passed to the capture callback */
    uint64_t bytes_written;    /* socket bytes, hello and replays included */
    uint64_t writes;           /* send() calls that wrote something */
    uint64_t held_lines;       /* lines kept until acknowledged, now */
    uint64_t held_bytes;       /* their bytes, now (<= buffer_bytes) */
    bool connected;            /* a welcomed connection is open now */
};

/* Fills *opt with the defaults (every field "unset"). Call it before setting some fields. */
SS_API void ss_options_init(struct ss_options *opt);

/* Makes a client and starts its flush thread, which connects in the background: an absent or
 * dead daemon is not an error (records wait, up to the bounds, and go out once it is there).
 * opt may be NULL (all defaults); its strings are copied. Returns NULL only when memory, a
 * thread or a pipe cannot be had. In a forked child every client of the parent turns into a
 * fresh one (new stream, empty buffers, parent's socket not used) whose flush thread starts
 * with the child's first record. */
SS_API struct ss_client *ss_client_new(const struct ss_options *opt);

/* Records a {"type":"bye"}, waits up to close_timeout_ms (at most 1 s when not connected) for
 * the daemon to acknowledge everything, stops and joins the flush thread and frees c. Records
 * not acknowledged by then are lost (ss_stats() before this call shows how many are held).
 * NULL-safe. No other call on c may run concurrently or follow. Returns 0 when everything was
 * acknowledged, -ETIMEDOUT otherwise. */
SS_API int ss_client_free(struct ss_client *c);

/* The hot path. Every call below is thread-safe, lock-free and never blocks or makes a system
 * call; only a thread's first call on c allocates its ring (ring_bytes). Each returns 0 when the
 * record was taken, -ENOBUFS when it was dropped (counted: the thread's ring is full),
 * -EINVAL for a NULL client or name, -ENOMEM when the thread's ring could not be made (counted
 * as dropped). NULL cat means "user_annotation". */

/* Starts a step on the calling thread; an open step of this thread is discarded. step >= 0. */
SS_API int ss_step_begin(struct ss_client *c, int64_t step);

/* Ends the calling thread's step and records {"type":"step","step","begin_us","end_us",
 * "samples","phases"}; samples < 0 leaves "samples" out. -ENOENT when no step is open. */
SS_API int ss_step_end(struct ss_client *c, int64_t samples);

/* Opens a phase on the calling thread (nestable up to SS_PHASE_DEPTH_MAX, -EOVERFLOW past
 * it). ss_phase_end() closes the innermost one and adds its duration to the thread's open step
 * under that name (repeated names add up); outside a step it records nothing. -ENOENT: no
 * phase open. Phases past SS_PHASES_MAX distinct names are timed but not recorded (-ENOSPC
 * from ss_phase_begin). */
SS_API int ss_phase_begin(struct ss_client *c, const char *name);
SS_API int ss_phase_end(struct ss_client *c);

/* A Chrome trace complete event {"ph":"X","name","cat","ts","dur","pid","tid"} from two
 * ss_now_ns() readings (end < begin: dur 0). Names are copied. */
SS_API int ss_span(struct ss_client *c, const char *name, const char *cat, int64_t begin_ns,
                   int64_t end_ns);

/* A Chrome trace counter event {"ph":"C","name","ts","pid","args":{"value":v}} at now.
 * A value that is not finite is sent as null. */
SS_API int ss_counter(struct ss_client *c, const char *name, double value);

/* A queue depth sample {"type":"queue","name","size","capacity","step","ts_us"} at now;
 * capacity < 0 leaves "capacity" out; "step" is the calling thread's open step, if any. */
SS_API int ss_queue(struct ss_client *c, const char *name, int64_t size, int64_t capacity);

/* Waits until the daemon has acknowledged every record recorded before the call (by this
 * thread, or by others before something this thread saw). timeout_ns < 0: no limit. Blocks the
 * caller (never the flush thread), so not for the hot path. Returns 0, or -ETIMEDOUT. */
SS_API int ss_flush(struct ss_client *c, int64_t timeout_ns);

/* On-demand captures (docs/PROTOCOL.md section 6, docs/C_CLIENT.md "Captures"): the daemon asks
 * a running client to record a few detailed steps with its profiler; libstepscope hands the
 * request to a callback and carries the client's progress reports back. */

/* What a capture asks to record: bits of ss_capture_request.what (a client records what it can). */
enum ss_capture_what {
    SS_CAPTURE_WHAT_CPU = 1,
    SS_CAPTURE_WHAT_CUDA = 2,
    SS_CAPTURE_WHAT_DEVICE = 4,
    SS_CAPTURE_WHAT_SHAPES = 8,
    SS_CAPTURE_WHAT_STACK = 16,
    SS_CAPTURE_WHAT_MEMORY = 32,
    SS_CAPTURE_WHAT_FLOPS = 64,
    SS_CAPTURE_WHAT_MODULES = 128,
};

struct ss_capture_request {
    int64_t id;         /* the capture's id, for ss_capture_state() */
    int64_t start_step; /* the step (as ss_step_begin numbers them) to start at; < 0: the next
                           step the client begins */
    int64_t steps;      /* how many steps to record, >= 1 */
    unsigned what;      /* enum ss_capture_what bits */
};

/* The progress a client reports, in this order; FAILED at any point. */
enum ss_capture_state {
    SS_CAPTURE_ARMED = 1,   /* took the request, waits for its start step */
    SS_CAPTURE_RECORDING,   /* the profiler started at the first step */
    SS_CAPTURE_DONE,        /* the window's records are recorded (they precede this report) */
    SS_CAPTURE_FAILED,      /* with a reason */
};

/* Called on the flush thread for each capture request, with the client's internal lock held
 * (like ss_control_cb): it may record and call ss_capture_state(), and should only take note of
 * the request (arm) and return; the training loop starts and stops its profiler. req is
 * borrowed for the call. */
typedef void (*ss_capture_cb)(struct ss_client *c, const struct ss_capture_request *req,
                              void *userdata);

/* Sets (cb non-NULL) or clears the capture callback. The hello announces the "capture"
 * capability only while a callback is set, so the daemon sends requests only then (a rank
 * without it fails every capture with "client cannot capture"); when the setting changes on a
 * connected client, the flush thread reconnects (the stream replays: nothing is lost or
 * doubled). Set it right after ss_client_new(). Returns 0 or -EINVAL. */
SS_API int ss_on_capture(struct ss_client *c, ss_capture_cb cb, void *userdata);

/* Reports the client's progress on capture id: state is an enum ss_capture_state, reason (may be
 * NULL; cut to SS_NAME_MAX bytes) says why it failed. The report is ordered after every record
 * recorded before the call (by any thread that the caller synchronised with), so a DONE follows
 * the window's spans on the stream. Takes the client's lock briefly: not for the hot path, but
 * callable from the capture callback. Returns 0, -EINVAL (NULL client, id < 0, bad state) or
 * -ENOBUFS (the held lines are at buffer_bytes: the report is dropped and counted). */
SS_API int ss_capture_state(struct ss_client *c, int64_t id, int state, const char *reason);

/* Fills *ret_st with the counters (struct ss_client_stats); any thread, any time. Returns 0 or
 * -EINVAL. */
SS_API int ss_stats(struct ss_client *c, struct ss_client_stats *ret_st);

/* The replay key of c's stream (changes in a forked child). Borrowed until ss_client_free. */
SS_API const char *ss_client_stream(const struct ss_client *c);

/* The socket path c connects to. Borrowed until ss_client_free. */
SS_API const char *ss_client_socket_path(const struct ss_client *c);

/* CLOCK_REALTIME in nanoseconds: the clock of every record. */
SS_API int64_t ss_now_ns(void);

#ifdef __cplusplus
}
#endif

#endif /* STEPSCOPE_H */
