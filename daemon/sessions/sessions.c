/* SPDX-License-Identifier: MIT */
/* The table of open sessions (sessions.h): an unordered array, searched linearly (a daemon holds
 * up to max_connections sessions, 1024 by default), with the last hit remembered for the sink's
 * run of lookups of one session. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "sessions.h"

struct sessions {
    pthread_mutex_t mu; /* held by the loop thread while it changes the table, and by readers
                         * on other threads */
    struct session *v;
    size_t n, cap;
    size_t last;        /* index of the last sessions_find() hit; loop thread */
};

struct sessions *sessions_new(void)
{
    struct sessions *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void sessions_free(struct sessions *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t->v);
    free(t);
}

int sessions_open(struct sessions *t, const struct session *s)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        /* Readers hold the mutex, so the array may move only under it. */
        pthread_mutex_lock(&t->mu);
        struct session *v = realloc(t->v, cap * sizeof *v);
        if (v) {
            t->v = v;
            t->cap = cap;
        }
        pthread_mutex_unlock(&t->mu);
        if (!v)
            return -ENOMEM;
    }
    pthread_mutex_lock(&t->mu);
    t->v[t->n++] = *s;
    pthread_mutex_unlock(&t->mu);
    return 0;
}

const struct session *sessions_find(struct sessions *t, int64_t session_id)
{
    if (t->last < t->n && t->v[t->last].session_id == session_id)
        return &t->v[t->last];
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].session_id == session_id) {
            t->last = i;
            return &t->v[i];
        }
    }
    return NULL;
}

int sessions_close(struct sessions *t, int64_t session_id, struct session *ret)
{
    const struct session *s = sessions_find(t, session_id);
    if (!s)
        return -ENOENT;
    if (ret)
        *ret = *s;
    pthread_mutex_lock(&t->mu);
    t->v[s - t->v] = t->v[--t->n];
    pthread_mutex_unlock(&t->mu);
    return 0;
}

size_t sessions_count(const struct sessions *t)
{
    return t->n;
}

const struct session *sessions_at(const struct sessions *t, size_t i)
{
    return &t->v[i];
}

bool sessions_job_open(const struct sessions *t, int64_t job_id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].job_id == job_id)
            return true;
    return false;
}

bool sessions_can_capture(struct sessions *t, int64_t job_id, int64_t rank, bool *ret_any)
{
    bool can = false;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->n && !can; i++) {
        const struct session *s = &t->v[i];
        if (s->job_id != job_id || (rank >= 0 && s->rank != rank))
            continue;
        *ret_any = true;
        can = s->can_capture;
    }
    pthread_mutex_unlock(&t->mu);
    return can;
}
