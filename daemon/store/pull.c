/* SPDX-License-Identifier: MIT */
/*
 * pull: the store's side of the cluster view (store_pull.h): the puller's cursors, its streams'
 * sequence numbers and the ranks shipped twice, through a connection of its own.
 */
#include "store_pull.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/clock.h"
#include "../../lib/util.h"
#include "store_int.h"

enum { P_CURSOR, P_SEQ, P_SAVE_CURSOR, P_SAVE_SEQ, P_ORIGIN, P_CONFLICT, P_JOB_RANKS, P_COUNT };

struct store_pull {
    sqlite3 *db;
    sqlite3_stmt *st[P_COUNT];
};

static const char *const pull_sql[P_COUNT] = {
    [P_CURSOR] = "SELECT block, idx, step, queue, host, pipe, del FROM pull_cursors "
                 "WHERE origin = ?1",
    [P_SEQ] = "SELECT seq FROM pull_streams WHERE origin = ?1 AND job = ?2 AND rank = ?3",
    [P_SAVE_CURSOR] = "INSERT INTO pull_cursors(origin, block, idx, step, queue, updated_ns, "
                      "host, pipe, del) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
                      "ON CONFLICT(origin) DO UPDATE SET block = ?2, idx = ?3, step = ?4, "
                      "queue = ?5, updated_ns = ?6, host = ?7, pipe = ?8, del = ?9",
    [P_SAVE_SEQ] = "INSERT INTO pull_streams(origin, job, rank, seq) VALUES(?1, ?2, ?3, ?4) "
                   "ON CONFLICT(origin, job, rank) DO UPDATE SET seq = ?4",
    [P_ORIGIN] = "SELECT coalesce(" STORE_SQL_ORIGIN("s.hello") ", '') FROM sessions s "
                 "JOIN jobs j ON j.id = s.job_id WHERE j.name = ?1 AND s.rank = ?2 "
                 "ORDER BY s.id LIMIT 1",
    [P_CONFLICT] = "INSERT INTO pull_conflicts(job, rank, node, kept) VALUES(?1, ?2, ?3, ?4) "
                   "ON CONFLICT DO NOTHING",
    /* Each rank of the job and where it came from, as P_ORIGIN says it. */
    [P_JOB_RANKS] = "SELECT r.rank, coalesce((SELECT " STORE_SQL_ORIGIN("s.hello") " FROM sessions s "
                    "WHERE s.job_id = r.job_id AND s.rank = r.rank ORDER BY s.id LIMIT 1), '') "
                    "FROM ranks r JOIN jobs j ON j.id = r.job_id WHERE j.name = ?1 ORDER BY r.rank",
};

static int pull_errno(int rc)
{
    int e = store__errno(rc);
    return e == -ENOMEM || e == -EBUSY || e == -ENOSPC ? e : -EIO;
}

void store_pull_close(struct store_pull *p)
{
    if (!p)
        return;
    for (int i = 0; i < P_COUNT; i++)
        sqlite3_finalize(p->st[i]);
    sqlite3_close_v2(p->db);
    free(p);
}

int store_pull_open(struct store *st, struct store_pull **ret, char *err)
{
    struct store_pull *p = calloc(1, sizeof *p);
    if (!p) {
        store__errf(err, "out of memory");
        return -ENOMEM;
    }
    int rc = sqlite3_open_v2(st->db_path, &p->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    if (rc == SQLITE_OK)
        sqlite3_busy_timeout(p->db, STORE_BUSY_TIMEOUT_MS);
    for (int i = 0; i < P_COUNT && rc == SQLITE_OK; i++)
        rc = sqlite3_prepare_v3(p->db, pull_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &p->st[i],
                                NULL);
    if (rc != SQLITE_OK) {
        store__errf(err, "%s: cannot open the puller's connection: %s", st->db_path,
                    p->db ? sqlite3_errmsg(p->db) : sqlite3_errstr(rc));
        store_pull_close(p);
        return pull_errno(rc);
    }
    *ret = p;
    return 0;
}

int store_pull_cursor(struct store_pull *p, const char *origin, struct store_pull_cursor *ret)
{
    sqlite3_stmt *s = p->st[P_CURSOR];
    sqlite3_bind_text(s, 1, origin, -1, SQLITE_STATIC);
    *ret = (struct store_pull_cursor){0};
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *ret = (struct store_pull_cursor){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                                          sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3),
                                          sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5),
                                          sqlite3_column_int64(s, 6)};
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : pull_errno(rc);
}

int store_pull_stream_seq(struct store_pull *p, const char *origin, const char *job, int64_t rank,
                          uint64_t *ret)
{
    sqlite3_stmt *s = p->st[P_SEQ];
    sqlite3_bind_text(s, 1, origin, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, job, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, rank);
    *ret = 0;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *ret = (uint64_t)sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : pull_errno(rc);
}

static int step_done(sqlite3_stmt *s)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

int store_pull_save(struct store_pull *p, const char *origin, const struct store_pull_cursor *c,
                    const struct store_pull_seq *seqs, size_t n)
{
    int rc = sqlite3_exec(p->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return pull_errno(rc);
    sqlite3_stmt *s = p->st[P_SAVE_CURSOR];
    sqlite3_bind_text(s, 1, origin, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->block);
    sqlite3_bind_int64(s, 3, c->idx);
    sqlite3_bind_int64(s, 4, c->step);
    sqlite3_bind_int64(s, 5, c->queue);
    sqlite3_bind_int64(s, 6, clock_now_ns());
    sqlite3_bind_int64(s, 7, c->host);
    sqlite3_bind_int64(s, 8, c->pipe);
    sqlite3_bind_int64(s, 9, c->del);
    rc = step_done(s);
    s = p->st[P_SAVE_SEQ];
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        sqlite3_bind_text(s, 1, origin, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, seqs[i].job, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, seqs[i].rank);
        sqlite3_bind_int64(s, 4, (int64_t)seqs[i].seq);
        rc = step_done(s);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(p->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        (void)sqlite3_exec(p->db, "ROLLBACK", NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : pull_errno(rc);
}

int store_pull_rank_origin(struct store_pull *p, const char *job, int64_t rank, char *origin,
                           size_t size)
{
    sqlite3_stmt *s = p->st[P_ORIGIN];
    sqlite3_bind_text(s, 1, job, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, rank);
    int rc = sqlite3_step(s), r = 0;
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        snprintf(origin, size, "%s", v ? v : "");
    } else {
        r = rc == SQLITE_DONE ? -ENOENT : pull_errno(rc);
    }
    sqlite3_reset(s);
    return r;
}

int store_pull_conflict(struct store_pull *p, const char *job, int64_t rank, const char *node,
                        const char *kept)
{
    sqlite3_stmt *s = p->st[P_CONFLICT];
    sqlite3_bind_text(s, 1, job, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, rank);
    sqlite3_bind_text(s, 3, node, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, kept, -1, SQLITE_STATIC);
    int rc = step_done(s);
    return rc == SQLITE_OK ? 0 : pull_errno(rc);
}

int store_pull_job_ranks(struct store_pull *p, const char *job, const char *origin,
                         int64_t **ret_ranks, size_t *ret_n, size_t *ret_others)
{
    sqlite3_stmt *s = p->st[P_JOB_RANKS];
    sqlite3_bind_text(s, 1, job, -1, SQLITE_STATIC);
    int64_t *v = NULL;
    size_t n = 0, cap = 0, others = 0;
    int rc, r = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *o = (const char *)sqlite3_column_text(s, 1);
        if (strcmp(o ? o : "", origin) != 0) {
            others++;
            continue;
        }
        void *q = v;
        if (util_grow(&q, &cap, n + 1, sizeof *v) < 0) {
            r = -ENOMEM;
            break;
        }
        v = q;
        v[n++] = sqlite3_column_int64(s, 0);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = pull_errno(rc);
    sqlite3_reset(s);
    if (r < 0) {
        free(v);
        return r;
    }
    *ret_ranks = v;
    *ret_n = n;
    *ret_others = others;
    return 0;
}
