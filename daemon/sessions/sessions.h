/* SPDX-License-Identifier: MIT */
/*
 * sessions: the daemon's table of open sessions. A session is one welcomed trainer connection,
 * from its hello to its bye or disconnect; the table holds what the daemon's wiring needs to know
 * of it: its job, rank, stream, and whether its hello announced the capture capability. main.c
 * feeds live by a session's job and rank, offers captures to each open session, and lets a job
 * leave live memory only when none of its sessions is open; the capture registry (capture.h)
 * refuses a capture that no open session could serve.
 *
 * It is the only table of sessions outside the modules that keep their own state per session:
 * ingest's connections (by stream, for acks and control lines; a connection lives before its
 * hello and past its bye) and the store's open sessions (the batch slots and the stream each
 * holds). docs/ARCHITECTURE.md, "Sessions", says why those stay.
 *
 * ("session" means this everywhere in the daemon; the dashboard's cookie login is web's login.c.)
 *
 * Threading: sessions_open() and sessions_close() on the loop thread, which changes the table
 * under its mutex; the loop thread's own reads (sessions_find(), sessions_count(), sessions_at(),
 * sessions_job_open()) take no lock. sessions_can_capture() takes the mutex: any thread.
 */
#ifndef STEPSCOPE_SESSIONS_H
#define STEPSCOPE_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct session {
    int64_t session_id;
    int64_t job_id;
    int64_t rank;
    int64_t stream_id; /* where control lines go (ingest_send()) */
    bool can_capture;  /* the hello announced "capabilities":["capture"] */
};

struct sessions;

struct sessions *sessions_new(void); /* NULL on OOM */
void sessions_free(struct sessions *t); /* NULL-safe */

/* Adds an open session (its id must not be open). Returns 0 or -ENOMEM. Loop thread. */
int sessions_open(struct sessions *t, const struct session *s);

/* Removes session_id, copying it to *ret (may be NULL) first. Returns 0 or -ENOENT. Moves the
 * last session into its place: pointers and indexes from before are stale. Loop thread. */
int sessions_close(struct sessions *t, int64_t session_id, struct session *ret);

/* The open session session_id, or NULL; valid until the next sessions_open() or
 * sessions_close(). Loop thread. */
const struct session *sessions_find(struct sessions *t, int64_t session_id);

/* The open sessions, in no particular order: [0, sessions_count()). Loop thread. */
size_t sessions_count(const struct sessions *t);
const struct session *sessions_at(const struct sessions *t, size_t i);

/* Whether a session of job_id is open. Loop thread. */
bool sessions_job_open(const struct sessions *t, int64_t job_id);

/* Whether an open session of job_id (of rank; rank < 0: any rank) announced the capture
 * capability; *ret_any is set to true when any open session of the job (and rank) exists, and
 * left alone otherwise. Any thread. */
bool sessions_can_capture(struct sessions *t, int64_t job_id, int64_t rank, bool *ret_any);

#endif
