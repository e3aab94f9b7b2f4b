/* SPDX-License-Identifier: MIT */
/*
 * ship: the store's side of cluster shipping (store_ship.h). Reads committed rows past a cursor
 * in rowid order through a connection of its own, and keeps the cursor in ship_cursors.
 */
#include "store_ship.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/clock.h"
#include "store_int.h"

struct store_ship {
    struct store *st;
    sqlite3 *db;
    char *target;
    sqlite3_stmt *blocks, *steps, *queues, *hosts, *pipes, *save, *job_name, *sessions, *pulled;
    sqlite3_stmt *cur_make, *cur_load, *del_any, *del_next, *del_done, *del_prune, *del_count;
    ZSTD_DCtx *dctx;
    char *buf;
    size_t buf_cap;
};

static int ship_errno(int rc)
{
    int e = store__errno(rc);
    return e == -ENOMEM || e == -EBUSY || e == -ENOSPC ? e : -EIO;
}

void store_ship_close(struct store_ship *sh)
{
    if (!sh)
        return;
    sqlite3_finalize(sh->blocks);
    sqlite3_finalize(sh->steps);
    sqlite3_finalize(sh->queues);
    sqlite3_finalize(sh->hosts);
    sqlite3_finalize(sh->pipes);
    sqlite3_finalize(sh->save);
    sqlite3_finalize(sh->job_name);
    sqlite3_finalize(sh->cur_make);
    sqlite3_finalize(sh->cur_load);
    sqlite3_finalize(sh->del_any);
    sqlite3_finalize(sh->del_next);
    sqlite3_finalize(sh->del_done);
    sqlite3_finalize(sh->del_prune);
    sqlite3_finalize(sh->del_count);
    sqlite3_finalize(sh->sessions);
    sqlite3_finalize(sh->pulled);
    sqlite3_close_v2(sh->db);
    ZSTD_freeDCtx(sh->dctx);
    free(sh->buf);
    free(sh->target);
    free(sh);
}

/* Makes target's cursor row if there is none, and reads it. Returns an SQLite code. */
static int load_cursor(struct store_ship *sh, struct store_ship_cursor *ret)
{
    sqlite3_stmt *s = sh->cur_make;
    sqlite3_bind_text(s, 1, sh->target, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, clock_now_ns());
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return rc;
    s = sh->cur_load;
    sqlite3_bind_text(s, 1, sh->target, -1, SQLITE_STATIC);
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *ret = (struct store_ship_cursor){sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                                          sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3),
                                          sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 5),
                                          sqlite3_column_int64(s, 6)};
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_CORRUPT; /* made above, in the same connection */
    }
    sqlite3_reset(s);
    return rc;
}

int store_ship_reload(struct store_ship *sh, struct store_ship_cursor *ret_cursor)
{
    int rc = load_cursor(sh, ret_cursor);
    return rc == SQLITE_OK ? 0 : ship_errno(rc);
}

int store_ship_open(struct store *st, const char *target, struct store_ship **ret_sh,
                    struct store_ship_cursor *ret_cursor, char *err)
{
    struct store_ship *sh = calloc(1, sizeof *sh);
    if (!sh || !(sh->target = strdup(target))) {
        free(sh);
        store__errf(err, "out of memory");
        return -ENOMEM;
    }
    sh->st = st;
    int rc = sqlite3_open_v2(st->db_path, &sh->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             NULL);
    /* Whether the row's rank was pulled from another node (a session of it has a hello with
     * "origin": pull.c): such rows are passed over, the cursor moving past them. */
#define PULLED(t)                                                                             \
    " EXISTS (SELECT 1 FROM sessions o WHERE o.job_id = " t ".job_id AND o.rank = " t       \
    ".rank AND " STORE_SQL_ORIGIN("o.hello") " IS NOT NULL) "
    static const char *const sql[] = {
        "SELECT b.id, j.name, b.job_id, b.rank, b.raw_bytes, b.codec, b.data," PULLED("b")
        ", b.t_min_ns "
        "FROM blocks b JOIN jobs j ON j.id = b.job_id WHERE b.id > ?1 ORDER BY b.id LIMIT ?2",
        "SELECT s.rowid, j.name, s.rank, s.step, s.begin_ns, s.end_ns, s.samples, s.phases,"
        PULLED("s") "FROM steps s JOIN jobs j ON j.id = s.job_id WHERE s.rowid > ?1 "
        "ORDER BY s.rowid LIMIT ?2",
        "SELECT q.rowid, j.name, q.rank, q.ts_ns, q.step, q.size, q.capacity, q.name,"
        PULLED("q") "FROM queue_samples q JOIN jobs j ON j.id = q.job_id WHERE q.rowid > ?1 "
        "ORDER BY q.rowid LIMIT ?2",
        "INSERT INTO ship_cursors(target, block, step, queue, updated_ns, del, session, host, "
        "pipe) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT(target) DO UPDATE SET "
        "block = ?2, step = ?3, queue = ?4, updated_ns = ?5, session = ?7, host = ?8, "
        "pipe = ?9 WHERE NOT EXISTS "
        "(SELECT 1 FROM ship_deletes d WHERE d.id > ship_cursors.del)",
        "SELECT name FROM jobs WHERE id = ?1",
        "INSERT INTO ship_cursors(target, block, step, queue, updated_ns, del) "
        "SELECT ?1, 0, 0, 0, ?2, coalesce((SELECT seq FROM sqlite_sequence "
        "WHERE name = 'ship_deletes'), 0) WHERE true ON CONFLICT(target) DO NOTHING",
        "SELECT block, step, queue, del, session, host, pipe FROM ship_cursors WHERE target = ?1",
        "SELECT EXISTS (SELECT 1 FROM ship_deletes WHERE id > ?1)",
        "SELECT id, job FROM ship_deletes WHERE id > ?1 ORDER BY id LIMIT 1",
        "UPDATE ship_cursors SET del = ?2 WHERE target = ?1 AND del < ?2",
        "DELETE FROM ship_deletes WHERE id <= (SELECT min(del) FROM ship_cursors)",
        "SELECT count(*) FROM ship_deletes WHERE id > ?1",
        "SELECT s.id, j.name, s.rank, s.world_size, s.pid, s.started_ns, s.host, s.framework, "
        "s.framework_version, s.run, s.clock, s.hello," PULLED("s") "FROM sessions s "
        "JOIN jobs j ON j.id = s.job_id WHERE s.id > ?1 ORDER BY s.id",
        "SELECT" PULLED("r") "FROM (SELECT ?1 AS job_id, ?2 AS rank) r",
        "SELECT h.rowid, j.name, h.rank, h.ts_ns, h.cpu_percent, h.sys_cpu_percent, "
        "h.rss_bytes, NULL," PULLED("h") "FROM host_samples h JOIN jobs j ON j.id = h.job_id "
        "WHERE h.rowid > ?1 ORDER BY h.rowid LIMIT ?2",
        "SELECT p.rowid, j.name, p.rank, p.ts_ns, p.json, NULL, NULL, NULL," PULLED("p")
        "FROM pipelines p JOIN jobs j ON j.id = p.job_id WHERE p.rowid > ?1 "
        "ORDER BY p.rowid LIMIT ?2",
    };
#undef PULLED
    sqlite3_stmt **stmts[] = {&sh->blocks,   &sh->steps,    &sh->queues,    &sh->save,
                              &sh->job_name, &sh->cur_make, &sh->cur_load,  &sh->del_any,
                              &sh->del_next, &sh->del_done, &sh->del_prune, &sh->del_count,
                              &sh->sessions, &sh->pulled,   &sh->hosts,    &sh->pipes};
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(sh->db, STORE_BUSY_TIMEOUT_MS);
        for (size_t i = 0; i < sizeof stmts / sizeof stmts[0] && rc == SQLITE_OK; i++)
            rc = sqlite3_prepare_v3(sh->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, stmts[i], NULL);
    }
    if (rc == SQLITE_OK)
        rc = load_cursor(sh, ret_cursor);
    if (rc != SQLITE_OK) {
        store__errf(err, "%s: cannot open the shipper's connection: %s", st->db_path,
                    sh->db ? sqlite3_errmsg(sh->db) : sqlite3_errstr(rc));
        store_ship_close(sh);
        return ship_errno(rc);
    }
    *ret_sh = sh;
    return 0;
}

/* Hands the lines (sink->event) and spans of one decoded block to the sink; *ret_lines: how many
 * lines it holds. */
static int block_spans(struct store_ship *sh, const struct store_ship_sink *sink, const char *job,
                       int64_t rank, int64_t id, const char *lines, size_t n, int64_t *given,
                       uint32_t *ret_lines)
{
    uint32_t idx = 0;
    for (size_t pos = 0; pos < n; idx++) {
        const char *nl = memchr(lines + pos, '\n', n - pos);
        size_t len = nl ? (size_t)(nl - (lines + pos)) : n - pos;
        struct store_event ev = {.line = lines + pos, .len = len};
        store__scan_event(lines + pos, len, &ev);
        pos += len + 1;
        int r = sink->event ? sink->event(sink->ud, job, rank, id, idx, &ev) : 0;
        if (r != 0)
            return r;
        if (ev.ph != 'X' && ev.ph != 'B')
            continue;
        r = sink->span(sink->ud, job, rank, id, idx, &ev);
        if (r != 0)
            return r;
        (*given)++;
    }
    (void)sh;
    *ret_lines = idx;
    return 0;
}

static int read_blocks(struct store_ship *sh, int64_t from, int64_t max_rows,
                       const struct store_ship_sink *sink, int64_t *ret_to, int64_t *given)
{
    sqlite3_stmt *s = sh->blocks;
    sqlite3_bind_int64(s, 1, from);
    sqlite3_bind_int64(s, 2, 1 << 20);
    int rc = SQLITE_DONE, r = 0;
    int64_t start = *given;
    while (*given - start < max_rows && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        if (sqlite3_column_int(s, 7)) { /* pulled: its own node ships it */
            *ret_to = id;
            continue;
        }
        const char *job = (const char *)sqlite3_column_text(s, 1);
        int64_t job_id = sqlite3_column_int64(s, 2), rank = sqlite3_column_int64(s, 3);
        const void *data = sqlite3_column_blob(s, 6);
        size_t len = (size_t)sqlite3_column_bytes(s, 6);
        const char *lines = NULL, *why = NULL;
        size_t n = 0;
        r = store__decode_block(&sh->dctx, &sh->buf, &sh->buf_cap, sqlite3_column_int64(s, 4),
                                sqlite3_column_int(s, 5), data, len, &lines, &n, &why);
        if (r == -EIO) {
            store__block_damaged(sh->st, job_id, rank, id, why);
            r = 0;
        } else if (r == 0) {
            uint32_t nl = 0;
            r = block_spans(sh, sink, job ? job : "", rank, id, lines, n, given, &nl);
            /* The codecs are the store's own (store_int.h): the frame goes as it is stored. */
            struct store_ship_block blk = {
                .id = id, .t_min_ns = sqlite3_column_int64(s, 8),
                .raw_bytes = sqlite3_column_int64(s, 4), .lines = nl,
                .codec = sqlite3_column_int(s, 5) == STORE_CODEC_ZSTD ? STORE_SHIP_CODEC_ZSTD
                                                                       : STORE_SHIP_CODEC_NONE,
                .data = data, .len = len};
            if (r == 0 && sink->block && nl > 0)
                r = sink->block(sink->ud, job ? job : "", rank, &blk);
        }
        if (r != 0)
            break;
        *ret_to = id;
    }
    if (r == 0 && *given - start < max_rows && rc != SQLITE_DONE)
        r = ship_errno(rc);
    sqlite3_reset(s);
    return r;
}

/* One row of the steps, queue_samples, host_samples or pipelines statement (its rowid, the job's name, then the row's
 * columns) to the sink, with *id its rowid; returns the sink's answer. */
typedef int (*ship_row_fn)(sqlite3_stmt *s, const char *job, const struct store_ship_sink *sink,
                           int64_t *id);

static int give_step(sqlite3_stmt *s, const char *job, const struct store_ship_sink *sink,
                     int64_t *id)
{
    struct store_ship_step row = {
        .id = sqlite3_column_int64(s, 0),
        .rank = sqlite3_column_int64(s, 2),
        .step = sqlite3_column_int64(s, 3),
        .begin_ns = sqlite3_column_int64(s, 4),
        .end_ns = sqlite3_column_int64(s, 5),
        .samples = sqlite3_column_int64(s, 6),
        .phases = (const char *)sqlite3_column_text(s, 7),
        .phases_len = (size_t)sqlite3_column_bytes(s, 7),
    };
    *id = row.id;
    return sink->step(sink->ud, job, &row);
}

static int give_queue(sqlite3_stmt *s, const char *job, const struct store_ship_sink *sink,
                      int64_t *id)
{
    struct store_ship_queue row = {
        .id = sqlite3_column_int64(s, 0),
        .rank = sqlite3_column_int64(s, 2),
        .ts_ns = sqlite3_column_int64(s, 3),
        .step = sqlite3_column_int64(s, 4),
        .size = sqlite3_column_int64(s, 5),
        .capacity = sqlite3_column_int64(s, 6),
        .name = (const char *)sqlite3_column_text(s, 7),
        .name_len = (size_t)sqlite3_column_bytes(s, 7),
    };
    *id = row.id;
    return sink->queue(sink->ud, job, &row);
}

static int give_host(sqlite3_stmt *s, const char *job, const struct store_ship_sink *sink,
                     int64_t *id)
{
    struct store_ship_host row = {
        .id = sqlite3_column_int64(s, 0),
        .rank = sqlite3_column_int64(s, 2),
        .ts_ns = sqlite3_column_int64(s, 3),
        .cpu_percent = sqlite3_column_double(s, 4),
        .sys_cpu_percent = sqlite3_column_double(s, 5),
        .rss_bytes = sqlite3_column_int64(s, 6),
    };
    *id = row.id;
    return sink->host(sink->ud, job, &row);
}

static int give_pipe(sqlite3_stmt *s, const char *job, const struct store_ship_sink *sink,
                     int64_t *id)
{
    struct store_ship_pipe row = {
        .id = sqlite3_column_int64(s, 0),
        .rank = sqlite3_column_int64(s, 2),
        .ts_ns = sqlite3_column_int64(s, 3),
        .json = (const char *)sqlite3_column_text(s, 4),
        .json_len = (size_t)sqlite3_column_bytes(s, 4),
    };
    *id = row.id;
    return sink->pipe(sink->ud, job, &row);
}

/* The rows of s (sh->steps, queues, hosts or pipes) past rowid from, at most max_rows, each given to the
 * sink by give; *ret_to is the last one given. Returns 0, the sink's non-zero answer, or a
 * negative errno. */
static int read_rows(sqlite3_stmt *s, ship_row_fn give, int64_t from, int64_t max_rows,
                     const struct store_ship_sink *sink, int64_t *ret_to, int64_t *given)
{
    sqlite3_bind_int64(s, 1, from);
    sqlite3_bind_int64(s, 2, max_rows);
    int rc = SQLITE_DONE, r = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *job = (const char *)sqlite3_column_text(s, 1);
        if (sqlite3_column_int(s, 8)) { /* pulled: its own node ships it */
            *ret_to = sqlite3_column_int64(s, 0);
            continue;
        }
        int64_t id;
        if ((r = give(s, job ? job : "", sink, &id)) != 0)
            break;
        (*given)++;
        *ret_to = id;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = ship_errno(rc);
    sqlite3_reset(s);
    return r;
}

static const char *col_text(sqlite3_stmt *s, int i)
{
    const char *v = (const char *)sqlite3_column_text(s, i);
    return v ? v : "";
}

static int read_sessions(struct store_ship *sh, int64_t from, const struct store_ship_sink *sink,
                         int64_t *ret_to, int64_t *given)
{
    sqlite3_stmt *s = sh->sessions;
    sqlite3_bind_int64(s, 1, from);
    int rc = SQLITE_DONE, r = 0;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_ship_session row = {
            .id = sqlite3_column_int64(s, 0),
            .rank = sqlite3_column_int64(s, 2),
            .world_size = sqlite3_column_int64(s, 3),
            .pid = sqlite3_column_int64(s, 4),
            .started_ns = sqlite3_column_int64(s, 5),
            .host = col_text(s, 6),
            .framework = col_text(s, 7),
            .framework_version = col_text(s, 8),
            .run = col_text(s, 9),
            .clock = col_text(s, 10),
            .hello = col_text(s, 11),
            .hello_len = (size_t)sqlite3_column_bytes(s, 11),
        };
        if (sqlite3_column_int(s, 12)) {
            *ret_to = row.id;
            continue;
        }
        if ((r = sink->session(sink->ud, col_text(s, 1), &row)) != 0)
            break;
        (*given)++;
        *ret_to = row.id;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = ship_errno(rc);
    sqlite3_reset(s);
    return r;
}

int64_t store_ship_read(struct store_ship *sh, const struct store_ship_cursor *from,
                        int64_t max_rows, const struct store_ship_sink *sink,
                        struct store_ship_cursor *ret_to)
{
    *ret_to = *from;
    int64_t given = 0;
    if (max_rows < 1)
        max_rows = 1;
    int rc = sqlite3_exec(sh->db, "BEGIN", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return ship_errno(rc);
    /* In the read's own snapshot: a job deleted after it would be seen by the next read. */
    sqlite3_stmt *d = sh->del_any;
    sqlite3_bind_int64(d, 1, from->del);
    rc = sqlite3_step(d);
    bool deleted = rc == SQLITE_ROW && sqlite3_column_int(d, 0) != 0;
    sqlite3_reset(d);
    if (rc != SQLITE_ROW || deleted) {
        (void)sqlite3_exec(sh->db, "COMMIT", NULL, NULL, NULL);
        return deleted ? -EAGAIN : ship_errno(rc);
    }
    int r = read_sessions(sh, from->session, sink, &ret_to->session, &given);
    if (r == 0)
        r = read_blocks(sh, from->block, max_rows, sink, &ret_to->block, &given);
    if (r == 0)
        r = read_rows(sh->steps, give_step, from->step, max_rows, sink, &ret_to->step, &given);
    if (r == 0)
        r = read_rows(sh->queues, give_queue, from->queue, max_rows, sink, &ret_to->queue,
                      &given);
    if (r == 0)
        r = read_rows(sh->hosts, give_host, from->host, max_rows, sink, &ret_to->host, &given);
    if (r == 0)
        r = read_rows(sh->pipes, give_pipe, from->pipe, max_rows, sink, &ret_to->pipe, &given);
    (void)sqlite3_exec(sh->db, "COMMIT", NULL, NULL, NULL);
    if (r != 0)
        *ret_to = *from;
    return r != 0 ? r : given;
}

int store_ship_pending(struct store_ship *sh, const struct store_ship_cursor *c, int64_t *ret_rows)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(
        sh->db,
        "SELECT (SELECT coalesce(sum(n_events), 0) FROM blocks WHERE id > ?1)"
        " + (SELECT count(*) FROM steps WHERE rowid > ?2)"
        " + (SELECT count(*) FROM queue_samples WHERE rowid > ?3)"
        " + (SELECT count(*) FROM host_samples WHERE rowid > ?4)"
        " + (SELECT count(*) FROM pipelines WHERE rowid > ?5)",
        -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, c->block);
        sqlite3_bind_int64(s, 2, c->step);
        sqlite3_bind_int64(s, 3, c->queue);
        sqlite3_bind_int64(s, 4, c->host);
        sqlite3_bind_int64(s, 5, c->pipe);
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *ret_rows = sqlite3_column_int64(s, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? 0 : ship_errno(rc);
}

int store_ship_save(struct store_ship *sh, const struct store_ship_cursor *c)
{
    sqlite3_stmt *s = sh->save;
    sqlite3_bind_text(s, 1, sh->target, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, c->block);
    sqlite3_bind_int64(s, 3, c->step);
    sqlite3_bind_int64(s, 4, c->queue);
    sqlite3_bind_int64(s, 5, clock_now_ns());
    sqlite3_bind_int64(s, 6, c->del);
    sqlite3_bind_int64(s, 7, c->session);
    sqlite3_bind_int64(s, 8, c->host);
    sqlite3_bind_int64(s, 9, c->pipe);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE)
        return ship_errno(rc);
    return sqlite3_changes(sh->db) == 1 ? 0 : -EAGAIN;
}

int store_ship_next_delete(struct store_ship *sh, int64_t after, int64_t *ret_id, char *name,
                           size_t size)
{
    sqlite3_stmt *s = sh->del_next;
    sqlite3_bind_int64(s, 1, after);
    int rc = sqlite3_step(s), r = 0;
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 1);
        *ret_id = sqlite3_column_int64(s, 0);
        snprintf(name, size, "%s", v ? v : "");
        r = 1;
    } else if (rc != SQLITE_DONE) {
        r = ship_errno(rc);
    }
    sqlite3_reset(s);
    return r;
}

int store_ship_delete_done(struct store_ship *sh, int64_t id)
{
    sqlite3_stmt *s = sh->del_done;
    sqlite3_bind_text(s, 1, sh->target, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, id);
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE) {
        rc = sqlite3_step(sh->del_prune);
        sqlite3_reset(sh->del_prune);
    }
    return rc == SQLITE_DONE ? 0 : ship_errno(rc);
}

int store_ship_deletes_pending(struct store_ship *sh, int64_t after, int64_t *ret_n)
{
    sqlite3_stmt *s = sh->del_count;
    sqlite3_bind_int64(s, 1, after);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *ret_n = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    return rc == SQLITE_ROW ? 0 : ship_errno(rc);
}

int store_ship_job_name(struct store_ship *sh, int64_t job_id, char *name, size_t size)
{
    sqlite3_stmt *s = sh->job_name;
    sqlite3_bind_int64(s, 1, job_id);
    int rc = sqlite3_step(s), r = 0;
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(s, 0);
        snprintf(name, size, "%s", v ? v : "");
    } else {
        r = rc == SQLITE_DONE ? -ENOENT : ship_errno(rc);
    }
    sqlite3_reset(s);
    return r;
}

int store_ship_pulled(struct store_ship *sh, int64_t job_id, int64_t rank)
{
    sqlite3_stmt *s = sh->pulled;
    sqlite3_bind_int64(s, 1, job_id);
    sqlite3_bind_int64(s, 2, rank);
    int rc = sqlite3_step(s);
    int r = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) != 0 : ship_errno(rc);
    sqlite3_reset(s);
    return r;
}
