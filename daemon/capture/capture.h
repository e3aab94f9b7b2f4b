/* SPDX-License-Identifier: MIT */
/*
 * capture: on-demand captures (docs/API.md "Captures", docs/PROTOCOL.md section 6). A capture asks
 * some ranks of a job for N detailed steps; each rank's part goes pending -> armed -> recording ->
 * done (or failed, with a reason), and a part no session takes up in time expires. This file
 * holds the registry of captures, the parser of a POST body (over lib/json, so a body gets the
 * same strict validation as a record line), copies of the captures for the API (daemon/web
 * renders them), and the request line sent to a client. It knows nothing of sockets, HTTP or
 * SQL: main.c feeds it sessions and client reports on the loop thread, web's POST handler adds
 * captures on an HTTP thread, and main.c persists what changed through the store. Which sessions
 * are open it reads from the daemon's one table (sessions.h).
 *
 * Threading: every function takes the registry's mutex, so any thread may call it; callbacks are
 * called with the mutex held and must not call back into the registry. Lock order: the
 * registry's mutex, then the sessions table's (which never calls the registry).
 */
#ifndef STEPSCOPE_INGEST_CAPTURE_H
#define STEPSCOPE_INGEST_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/record.h"
#include "../../lib/sbuf.h"

#define CAPTURE_BODY_MAX 16384     /* bytes of a POST body */
#define CAPTURE_RANKS_MAX 1024     /* ranks named in one request */
#define CAPTURE_STEPS_MAX 1000     /* steps of one capture */
#define CAPTURE_REPEAT_MAX 100     /* windows of one repeated capture (a series) */
#define CAPTURE_EVERY_MAX 1000000  /* steps between the starts of a series' windows */
#define CAPTURE_MAX 100000         /* captures the daemon keeps (capture_reg_new()'s default) */
#define CAPTURE_WHAT_MAX 128       /* bytes of the comma-separated "what" list */
#define CAPTURE_REASON_MAX 256     /* bytes of a failure reason kept (cut on a character) */
#define CAPTURE_ERR_MAX 160        /* bytes of a parse or refusal message */

/* A rank's part of a capture. States from DONE on are final: nothing changes them again. */
enum capture_state {
    CAPTURE_PENDING,   /* waits for a session of the rank to take the request -> ARMED, EXPIRED */
    CAPTURE_ARMED,     /* the client took it and waits for the start step -> RECORDING, ... */
    CAPTURE_RECORDING, /* the client's profiler runs -> DONE, FAILED */
    CAPTURE_DONE,
    CAPTURE_FAILED,    /* the client said so, or its session ended while armed or recording */
    CAPTURE_EXPIRED,   /* still pending expire_ns after it was made or last sent (capture_reg_expire) */
    CAPTURE_CANCELLED, /* cancelled before it started recording (capture_reg_cancel) */
    CAPTURE_STATE_COUNT,
};

/* "pending", "armed", ...; NULL for an out-of-range value. */
const char *capture_state_name(int state);
/* The state named by s[0, n), or -1. */
int capture_state_parse(const char *s, size_t n);

/* A parsed request. */
struct capture_spec {
    int64_t start_step;  /* -1: the next step */
    int64_t steps;       /* 1..CAPTURE_STEPS_MAX */
    int64_t every;       /* steps..CAPTURE_EVERY_MAX: from one window's start to the next's */
    int64_t repeat;      /* windows, 1..CAPTURE_REPEAT_MAX */
    bool all_ranks;      /* "ranks" absent or null */
    size_t n_ranks;
    int64_t ranks[CAPTURE_RANKS_MAX];
    char what[CAPTURE_WHAT_MAX]; /* comma-separated, e.g. "cpu,shapes" */
};

/* Parses a POST body: {"ranks":[..]|null, "start":"next"|N, "steps":N, "what":[..],
 * "every":N, "repeat":R} or MindSpore's {"start_step":A, "stop_step":B} (steps A..B inclusive)
 * with the same every and repeat. every defaults to steps, repeat to 1. Returns 0; -EINVAL with
 * the offending field first in err (CAPTURE_ERR_MAX bytes), e.g. "steps: must be an integer in
 * 1..1000"; -EMSGSIZE for a body over CAPTURE_BODY_MAX; -ENOMEM. */
int capture_parse(const char *body, size_t len, struct capture_spec *ret, char *err);

struct capture_reg;
struct sessions;

/* A registry that asks sessions (borrowed: sessions.h, the daemon's table of open sessions)
 * whether a capture could be served, and keeps at most max_all captures (0: CAPTURE_MAX). NULL
 * on OOM. */
struct capture_reg *capture_reg_new(struct sessions *sessions, size_t max_all);
void capture_reg_free(struct capture_reg *reg); /* NULL-safe */

/* A capture as the API shows it, copied out of the registry (web renders it: docs/API.md
 * "Captures"). Free an array of them with capture_views_free(). */
struct capture_view_part {
    int64_t rank;
    int64_t updated_ns;
    int64_t first_step;        /* the step its window starts at on this rank; -1: not known yet */
    enum capture_state state;
    char reason[CAPTURE_REASON_MAX + 1]; /* "": none */
};

struct capture_view {
    int64_t id, job_id, created_ns;
    int64_t start_step;        /* -1: the next step */
    int64_t steps;
    int64_t series, window;    /* a window of a series: the series' first window's id, and this
                                  window's index from 0; a capture made alone: its own id, 0 */
    int64_t every, repeat;     /* the series' (alone: steps, 1) */
    bool all_ranks;
    enum capture_state state;  /* the capture's, from its parts' */
    char what[CAPTURE_WHAT_MAX]; /* comma-separated */
    size_t n_parts;
    struct capture_view_part *parts; /* by rank, as they joined */
};

void capture_views_free(struct capture_view *v, size_t n); /* NULL-safe */

/* Appends what (comma-separated) as a JSON array of strings, as both the request line to a client
 * and the API say it. */
void capture_what_json(struct sbuf *b, const char *what);

/* Adds a capture of job_id for spec's ranks, or for known_ranks when spec->all_ranks (ranks that
 * connect later while the capture is pending join it): spec->repeat captures, the windows of one
 * series with consecutive ids, each counting as one capture against every cap below. Window i
 * starts spec->every * i steps after window 0 (a fixed start: its start_step says so; "next":
 * the request line names window 0 and the offset, and the client counts from the step window 0
 * started at). Sets *ret_view (may be NULL; window 0's view, taken in the same lock as the add)
 * and returns window 0's id (> 0), the series' id. To make room it first
 * forgets, oldest first, the job's captures that have ended while the job keeps max_kept (0: no
 * cap), then any job's that have ended while the registry keeps max_all; their ids go to the
 * store through capture_reg_collect(). Refuses, with the reason in err (CAPTURE_ERR_MAX bytes):
 * -EHOSTDOWN when no open session of the job (of one of spec's ranks) announced the capture
 * capability (the job ended, was imported, or its clients cannot capture); -EDQUOT when the job
 * already has max_open captures that have not ended (0: no cap), or keeps max_kept and none has
 * ended; -ENOSPC when the registry keeps max_all and none has ended; -ENOMEM. */
int64_t capture_reg_add(struct capture_reg *reg, int64_t job_id, const struct capture_spec *spec,
                        const int64_t *known_ranks, size_t n_known, size_t max_open,
                        size_t max_kept, int64_t now_ns, struct capture_view **ret_view,
                        char *err);

/* Cancels what has not started of series (a window's id: that window's series) of job_id: every
 * part still pending or armed of every window becomes CAPTURE_CANCELLED ("cancelled"), and the
 * clients that were sent those windows are told to drop them at their next capture_reg_offer();
 * parts recording go on to their end. Returns how many parts were cancelled (>= 0), or -ENOENT
 * (no such capture in that job). */
int capture_reg_cancel(struct capture_reg *reg, int64_t job_id, int64_t series, int64_t now_ns);

/* Forgets every capture of job_id (the job was deleted; the store deletes their rows). */
void capture_reg_drop_job(struct capture_reg *reg, int64_t job_id);

/* Start-up: a stored capture, then its ranks' states. Return 0, -ENOMEM or -EINVAL (a duplicate,
 * an unknown capture or state). A pending part's expiry clock starts again at now_ns, so the
 * clients of a restarted daemon have the whole window to reconnect. */
int capture_reg_load(struct capture_reg *reg, const struct record_capture *c);
int capture_reg_load_rank(struct capture_reg *reg, const struct record_capture_rank *r,
                          int64_t now_ns);

/* Copies the captures of job_id (id < 0; *ret_n may be 0) or the one capture id of job_id into
 * *ret, in the order they were made. Returns 0; -ENOENT (no such capture in that job); -ENOMEM. */
int capture_reg_views(struct capture_reg *reg, int64_t job_id, int64_t id,
                      struct capture_view **ret, size_t *ret_n);

/* A session of (job_id, rank) is connected: sends it, through send(), the request of every
 * capture that waits for this rank and was not yet sent to this session; a session without the
 * capability fails those ranks instead ("client cannot capture"). send returns 0 if the line was
 * queued. */
typedef int (*capture_send_fn)(void *ud, const char *line, size_t len);
void capture_reg_offer(struct capture_reg *reg, int64_t job_id, int64_t rank, int64_t session_id,
                       bool can_capture, capture_send_fn send, void *ud, int64_t now_ns);

/* A client's {"type":"capture"} report for its (job_id, rank), with the step it started
 * recording at (state CAPTURE_RECORDING; -1: not said). That step is the part's first_step, and,
 * for window 0 of a series that starts at "next", places the rank's later windows (step + window
 * * every), which until then wait unsent; without a step, or when window 0 ends on the rank
 * before it recorded, they fail with the reason. Returns 0; -ENOENT if that rank has no part in
 * capture id of job_id; -EALREADY if its part had already ended (kept as it was). */
int capture_reg_report(struct capture_reg *reg, int64_t job_id, int64_t rank, int64_t id,
                       enum capture_state state, int64_t step, const char *reason,
                       size_t reason_len, int64_t now_ns);

/* A session ended (and has left the sessions table first, so that no capture added meanwhile
 * counts on it): parts it had armed or was recording fail ("client disconnected"); parts sent to
 * it but not yet armed wait for the rank's next session, and expire if none takes them within the
 * expiry window from now. */
void capture_reg_session_closed(struct capture_reg *reg, int64_t session_id, int64_t now_ns);

/* Parts still pending expire_ns after their capture was made, or after the request was last sent
 * or its session ended, become CAPTURE_EXPIRED with a reason saying which: the client did not arm
 * it, or no session of the rank took it. Returns how many parts expired. Loop thread, on a timer. */
size_t capture_reg_expire(struct capture_reg *reg, int64_t now_ns, int64_t expire_ns);

/* What changed since the last call, for the store: on_capture once per changed capture, then
 * on_rank for each of its ranks, then on_forget for each capture forgotten (capture_reg_add()).
 * A callback returning non-zero leaves the capture marked changed, or the forgotten id kept
 * (retried on the next call). */
void capture_reg_collect(struct capture_reg *reg,
                         int (*on_capture)(void *ud, const struct record_capture *c),
                         int (*on_rank)(void *ud, const struct record_capture_rank *r),
                         int (*on_forget)(void *ud, int64_t capture_id), void *ud);

#endif
