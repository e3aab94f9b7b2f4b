/* SPDX-License-Identifier: MIT */
/*
 * query: the reader's side of the store (store_query.h), for HTTP threads. Each call borrows a
 * read-only connection from a small pool (opened lazily, at most STORE_READERS_MAX; a caller
 * waits when all are out), so queries run beside each other and, thanks to WAL, beside the writer,
 * and see committed data only. The one thing not read from SQL is `live`, which comes from the
 * loop's table of open sessions under live_mu.
 *
 * Counters come from the running totals in jobs and ranks, so listing jobs never scans data;
 * timeline events are decompressed block by block and handed to the caller line by line. A
 * block that does not decode (bad codec, raw size or compressed data) is skipped, logged once
 * naming its job, rank and id, and listed (store_query_info(), store_job.damaged_blocks): one
 * damaged block costs its own events, not the job's or the store's.
 */
#include "store_query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <zstd.h>

#include "../../lib/num.h"
#include "../core/decode.h"
#include "store_int.h"

/* ---- the pool ---- */

static int reader_get(struct store *st, struct store_reader **ret_r)
{
    pthread_mutex_lock(&st->pool_mu);
    while (!st->pool_free && st->pool_open >= STORE_READERS_MAX)
        pthread_cond_wait(&st->pool_cond, &st->pool_mu);
    struct store_reader *r = st->pool_free;
    if (r) {
        st->pool_free = r->next;
        pthread_mutex_unlock(&st->pool_mu);
        *ret_r = r;
        return 0;
    }
    st->pool_open++;
    pthread_mutex_unlock(&st->pool_mu);

    int err = -ENOMEM;
    r = calloc(1, sizeof *r);
    if (r) {
        int rc = sqlite3_open_v2(st->db_path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                                 NULL);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(r->db, STORE_BUSY_TIMEOUT_MS);
            *ret_r = r;
            return 0;
        }
        err = rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
        sqlite3_close_v2(r->db);
        free(r);
    }
    pthread_mutex_lock(&st->pool_mu);
    st->pool_open--;
    pthread_cond_signal(&st->pool_cond);
    pthread_mutex_unlock(&st->pool_mu);
    return err;
}

static void reader_put(struct store *st, struct store_reader *r)
{
    pthread_mutex_lock(&st->pool_mu);
    r->next = st->pool_free;
    st->pool_free = r;
    pthread_cond_signal(&st->pool_cond);
    pthread_mutex_unlock(&st->pool_mu);
}

void store__readers_close(struct store *st)
{
    pthread_mutex_lock(&st->pool_mu);
    struct store_reader *r = st->pool_free;
    st->pool_free = NULL;
    st->pool_open = 0;
    pthread_mutex_unlock(&st->pool_mu);
    while (r) {
        struct store_reader *next = r->next;
        sqlite3_close_v2(r->db);
        free(r);
        r = next;
    }
}

static int sql_errno(int rc)
{
    return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

/* ---- damaged blocks ---- */

/* Notes that block id (job_id, rank) cannot be decoded, why; logged the first time. Readers skip
 * such a block and go on with the next, so one bad block costs its own lines only. */
void store__block_damaged(struct store *st, int64_t job_id, int64_t rank, int64_t id,
                          const char *why)
{
    bool first = true;
    pthread_mutex_lock(&st->live_mu);
    for (size_t i = 0; i < st->n_damaged && first; i++)
        first = st->damaged[i].block_id != id;
    if (first) {
        st->n_damaged_all++;
        if (st->n_damaged < STORE_DAMAGED_MAX &&
            util_grow((void **)&st->damaged, &st->cap_damaged, st->n_damaged + 1,
                           sizeof *st->damaged) == 0)
            st->damaged[st->n_damaged++] = (struct store_damaged_block){job_id, rank, id};
    }
    pthread_mutex_unlock(&st->live_mu);
    if (first)
        log_error("store: job %lld rank %lld block %lld is damaged (%s): its events are skipped",
                  (long long)job_id, (long long)rank, (long long)id, why);
}

/* Fills job's damaged_blocks and damaged_block_ids from the list. */
static void job_damage(struct store *st, struct store_job *j)
{
    j->damaged_blocks = 0;
    for (size_t k = 0; k < STORE_JOB_DAMAGED_IDS; k++)
        j->damaged_block_ids[k] = -1;
    pthread_mutex_lock(&st->live_mu);
    for (size_t i = 0; i < st->n_damaged; i++) {
        if (st->damaged[i].job_id != j->id)
            continue;
        if (j->damaged_blocks < STORE_JOB_DAMAGED_IDS)
            j->damaged_block_ids[j->damaged_blocks] = st->damaged[i].block_id;
        j->damaged_blocks++;
    }
    pthread_mutex_unlock(&st->live_mu);
}

/* Decodes one stored block (codec, raw_bytes, data[0..len)) into *ret_lines / *ret_n: the data
 * itself (STORE_CODEC_NONE) or *buf, decompressed with *dctx (both created on demand). Returns
 * 0, -ENOMEM, or -EIO with *why set (the block is damaged). */
int store__decode_block(ZSTD_DCtx **dctx, char **buf, size_t *buf_cap, int64_t raw_bytes,
                        int codec, const void *data, size_t len, const char **ret_lines,
                        size_t *ret_n, const char **why)
{
    if (codec == STORE_CODEC_NONE) {
        if (raw_bytes < 0 || (uint64_t)raw_bytes != len) { /* the writer stores both as one */
            *why = "raw size does not match";
            return -EIO;
        }
        *ret_lines = data;
        *ret_n = len;
        return 0;
    }
    if (codec != STORE_CODEC_ZSTD) {
        *why = "unknown codec";
        return -EIO;
    }
    if (raw_bytes <= 0 || raw_bytes > STORE_BLOCK_DECODE_MAX) {
        *why = "bad raw size";
        return -EIO;
    }
    /* The writer's frames state their size: checked before the buffer is made, so a damaged raw
     * size (or frame header) costs its block, not an allocation that fails the reader. */
    unsigned long long framed = ZSTD_getFrameContentSize(data, len);
    if (framed == ZSTD_CONTENTSIZE_ERROR || framed == ZSTD_CONTENTSIZE_UNKNOWN) {
        *why = "compressed data does not decode";
        return -EIO;
    }
    if (framed != (unsigned long long)raw_bytes) {
        *why = "raw size does not match";
        return -EIO;
    }
    if (!*dctx && !(*dctx = ZSTD_createDCtx()))
        return -ENOMEM;
    if (util_grow((void **)buf, buf_cap, (size_t)raw_bytes, 1) < 0)
        return -ENOMEM;
    size_t z = ZSTD_decompressDCtx(*dctx, *buf, (size_t)raw_bytes, data, len);
    if (ZSTD_isError(z) || z != (size_t)raw_bytes) {
        *why = ZSTD_isError(z) ? "compressed data does not decode" : "raw size does not match";
        return -EIO;
    }
    *ret_lines = *buf;
    *ret_n = z;
    return 0;
}

/* ---- live state ---- */

struct live_pair {
    int64_t job_id;
    int64_t rank;
};

/* A copy of the (job, rank) of every open session; caller frees. */
static int live_snapshot(struct store *st, struct live_pair **ret_v, size_t *ret_n)
{
    pthread_mutex_lock(&st->live_mu);
    size_t n = st->sessions.n;
    struct live_pair *v = n ? malloc(n * sizeof *v) : NULL;
    if (n && !v) {
        pthread_mutex_unlock(&st->live_mu);
        return -ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < st->sessions.n_buckets; i++) {
        for (struct store_hnode *h = st->sessions.buckets[i]; h; h = h->next) {
            const struct store_session *s = (const struct store_session *)h;
            v[k].job_id = s->job_id;
            v[k].rank = s->rank;
            k++;
        }
    }
    pthread_mutex_unlock(&st->live_mu);
    *ret_v = v;
    *ret_n = k;
    return 0;
}

static bool is_live(const struct live_pair *v, size_t n, int64_t job_id, int64_t rank)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].job_id == job_id && (rank < 0 || v[i].rank == rank))
            return true;
    return false;
}

/* ---- jobs ---- */

#define JOB_COLS                                                                                \
    "j.id, j.name, (SELECT count(*) FROM ranks r WHERE r.job_id = j.id), j.world_size, "       \
    "(SELECT count(*) FROM sessions s WHERE s.job_id = j.id), "                                \
    "max(j.steps_n, (SELECT coalesce(max(r.live_steps), 0) FROM ranks r WHERE r.job_id = j.id)), " \
    "j.spans, j.events, "                                                                      \
    "j.queue_samples, j.host_samples, j.pipelines, j.stored_bytes, j.evicted_events, "         \
    "j.first_seen_ns, j.last_seen_ns"

static void copy_text(char *dst, size_t size, sqlite3_stmt *s, int col)
{
    const unsigned char *t = sqlite3_column_text(s, col);
    size_t n = (size_t)sqlite3_column_bytes(s, col);
    if (!t)
        n = 0;
    if (n > size - 1)
        n = size - 1;
    if (n)
        memcpy(dst, t, n);
    dst[n] = '\0';
}

static void read_job(sqlite3_stmt *s, struct store_job *j)
{
    memset(j, 0, sizeof *j);
    j->id = sqlite3_column_int64(s, 0);
    copy_text(j->name, sizeof j->name, s, 1);
    j->ranks = sqlite3_column_int64(s, 2);
    j->world_size = sqlite3_column_int64(s, 3);
    j->sessions = sqlite3_column_int64(s, 4);
    j->steps = sqlite3_column_int64(s, 5);
    j->spans = sqlite3_column_int64(s, 6);
    j->events = sqlite3_column_int64(s, 7);
    j->queue_samples = sqlite3_column_int64(s, 8);
    j->host_samples = sqlite3_column_int64(s, 9);
    j->pipelines = sqlite3_column_int64(s, 10);
    j->stored_bytes = sqlite3_column_int64(s, 11);
    j->evicted_events = sqlite3_column_int64(s, 12);
    j->first_seen_ns = sqlite3_column_int64(s, 13);
    j->last_seen_ns = sqlite3_column_int64(s, 14);
}

int store_query_jobs(struct store *st, struct store_job **ret_jobs, size_t *ret_n)
{
    struct store_reader *rd = NULL;
    struct live_pair *live = NULL;
    size_t n_live = 0;
    struct store_job *v = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s = NULL;
    int r = reader_get(st, &rd);
    if (r < 0)
        goto out;
    int rc = sqlite3_prepare_v2(rd->db,
                                "SELECT " JOB_COLS
                                " FROM jobs j ORDER BY j.last_seen_ns DESC, j.id DESC",
                                -1, &s, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (util_grow((void **)&v, &cap, n + 1, sizeof *v) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        read_job(s, &v[n++]);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_DONE) {
        r = sql_errno(rc);
        goto out;
    }
    r = live_snapshot(st, &live, &n_live);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        v[i].live = is_live(live, n_live, v[i].id, -1);
        job_damage(st, &v[i]);
    }
    if (n == 0) {
        free(v);
        v = NULL;
    }
    *ret_jobs = v;
    *ret_n = n;
    v = NULL;
out:
    sqlite3_finalize(s);
    if (rd)
        reader_put(st, rd);
    free(live);
    free(v);
    return r;
}

/* Returns 1 and fills *ret_job when found, 0 when not, or a negative errno. */
static int job_lookup(sqlite3 *db, const char *sql, bool by_id, int64_t id, const char *name,
                      struct store_job *ret_job)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        if (by_id)
            sqlite3_bind_int64(s, 1, id);
        else
            sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
        rc = sqlite3_step(s);
    }
    int r;
    if (rc == SQLITE_ROW) {
        read_job(s, ret_job);
        r = 1;
    } else {
        r = rc == SQLITE_DONE ? 0 : sql_errno(rc);
    }
    sqlite3_finalize(s);
    return r;
}

int store_query_job(struct store *st, const char *id_or_name, struct store_job *ret_job)
{
    struct store_job j;
    struct store_reader *rd = NULL;
    struct live_pair *live = NULL;
    size_t n_live = 0;
    int r = reader_get(st, &rd);
    if (r < 0)
        return r;
    size_t len = strlen(id_or_name);
    bool digits = len > 0 && len <= 18 && strspn(id_or_name, "0123456789") == len;
    r = 0;
    if (digits)
        r = job_lookup(rd->db, "SELECT " JOB_COLS " FROM jobs j WHERE j.id = ?1", true,
                       strtoll(id_or_name, NULL, 10), NULL, &j);
    if (r == 0)
        r = job_lookup(rd->db, "SELECT " JOB_COLS " FROM jobs j WHERE j.name = ?1", false, 0,
                       id_or_name, &j);
    reader_put(st, rd);
    if (r == 0)
        return -ENOENT;
    if (r < 0)
        return r;
    r = live_snapshot(st, &live, &n_live);
    if (r < 0)
        return r;
    j.live = is_live(live, n_live, j.id, -1);
    free(live);
    job_damage(st, &j);
    *ret_job = j;
    return 0;
}

int store_query_ranks(struct store *st, int64_t job_id, struct store_rank **ret_ranks,
                      size_t *ret_n)
{
    struct store_reader *rd = NULL;
    struct live_pair *live = NULL;
    size_t n_live = 0;
    struct store_rank *v = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s = NULL;
    int r = reader_get(st, &rd);
    if (r < 0)
        goto out;
    int rc = sqlite3_prepare_v2(
        rd->db,
        "SELECT r.rank, r.events, max(r.steps, coalesce(r.live_steps, 0)), "
        " (SELECT count(*) FROM sessions c WHERE c.job_id = r.job_id AND c.rank = r.rank), "
        " l.host, l.framework, l.framework_version, l.pid, "
        /* untimed blocks (store.c) have t_min_ns INT64_MIN and say nothing of the time */
        " (SELECT min(b.t_min_ns) FROM blocks b WHERE b.job_id = r.job_id AND b.rank = r.rank "
        "  AND b.t_min_ns > -9223372036854775808), "
        " (SELECT max(b.t_max_ns) FROM blocks b WHERE b.job_id = r.job_id AND b.rank = r.rank "
        "  AND b.t_min_ns > -9223372036854775808), "
        " coalesce(" STORE_SQL_ORIGIN("l.hello") ", '') "
        "FROM ranks r LEFT JOIN sessions l ON l.id = "
        " (SELECT max(m.id) FROM sessions m WHERE m.job_id = r.job_id AND m.rank = r.rank) "
        "WHERE r.job_id = ?1 ORDER BY r.rank",
        -1, &s, NULL);
    if (rc == SQLITE_OK)
        sqlite3_bind_int64(s, 1, job_id);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (util_grow((void **)&v, &cap, n + 1, sizeof *v) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        struct store_rank *k = &v[n++];
        memset(k, 0, sizeof *k);
        k->rank = sqlite3_column_int64(s, 0);
        k->events = sqlite3_column_int64(s, 1);
        k->steps = sqlite3_column_int64(s, 2);
        k->sessions = sqlite3_column_int64(s, 3);
        copy_text(k->host, sizeof k->host, s, 4);
        copy_text(k->framework, sizeof k->framework, s, 5);
        copy_text(k->framework_version, sizeof k->framework_version, s, 6);
        k->pid = sqlite3_column_type(s, 7) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 7);
        k->trace_start_ns =
            sqlite3_column_type(s, 8) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(s, 8);
        k->trace_end_ns =
            sqlite3_column_type(s, 9) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(s, 9);
        copy_text(k->node, sizeof k->node, s, 10);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_DONE) {
        r = sql_errno(rc);
        goto out;
    }
    r = live_snapshot(st, &live, &n_live);
    if (r < 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        v[i].live = is_live(live, n_live, job_id, v[i].rank);
    if (n == 0) {
        free(v);
        v = NULL;
    }
    *ret_ranks = v;
    *ret_n = n;
    v = NULL;
out:
    sqlite3_finalize(s);
    if (rd)
        reader_put(st, rd);
    free(live);
    free(v);
    return r;
}

int store_query_conflicts(struct store *st, int64_t job_id, struct store_conflict **ret,
                          size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    struct store_reader *rd = NULL;
    struct store_conflict *v = NULL;
    size_t n = 0, cap = 0;
    sqlite3_stmt *s = NULL;
    int r = reader_get(st, &rd);
    if (r < 0)
        return r;
    int rc = sqlite3_prepare_v2(rd->db,
                                "SELECT c.rank, c.node, c.kept FROM pull_conflicts c JOIN jobs j "
                                "ON j.name = c.job WHERE j.id = ?1 ORDER BY c.rank, c.node",
                                -1, &s, NULL);
    if (rc == SQLITE_OK)
        sqlite3_bind_int64(s, 1, job_id);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (util_grow((void **)&v, &cap, n + 1, sizeof *v) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
        struct store_conflict *c = &v[n++];
        c->rank = sqlite3_column_int64(s, 0);
        copy_text(c->node, sizeof c->node, s, 1);
        copy_text(c->kept, sizeof c->kept, s, 2);
        rc = SQLITE_OK;
    }
    r = rc == SQLITE_DONE ? 0 : sql_errno(rc);
    sqlite3_finalize(s);
    reader_put(st, rd);
    if (r < 0) {
        free(v);
        return r;
    }
    *ret = v;
    *ret_n = n;
    return 0;
}

static int64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
}

int store_query_space(struct store *st, struct store_space *ret)
{
    struct statvfs vfs;
    if (statvfs(st->data_dir, &vfs) != 0)
        return -errno;
    uint64_t avail = (uint64_t)vfs.f_bavail;
    uint64_t unit = vfs.f_frsize ? (uint64_t)vfs.f_frsize : (uint64_t)vfs.f_bsize;
    ret->free_bytes = unit && avail > UINT64_MAX / unit ? UINT64_MAX : avail * unit;
    ret->min_free_bytes = st->min_free;
    ret->low = ret->free_bytes < st->min_free;
    return 0;
}

int store_query_info(struct store *st, struct store_info *ret_info)
{
    struct store_reader *rd = NULL;
    int r = reader_get(st, &rd);
    if (r < 0)
        return r == -ENOMEM ? -EIO : r;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(rd->db,
                                "SELECT count(*), coalesce(sum(blocks), 0), "
                                "coalesce(sum(stored_raw_bytes), 0), coalesce(sum(stored_bytes), 0) "
                                "FROM jobs",
                                -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        struct store_info info = {0};
        info.db_bytes = file_size(st->db_path) + file_size(st->wal_path);
        info.jobs = sqlite3_column_int64(s, 0);
        info.blocks = sqlite3_column_int64(s, 1);
        info.block_raw_bytes = sqlite3_column_int64(s, 2);
        info.block_bytes = sqlite3_column_int64(s, 3);
        info.opened_empty_file = st->opened_empty_file;
        struct store_space space;
        info.fs_free_bytes = store_query_space(st, &space) == 0 && space.free_bytes <= INT64_MAX
                                 ? (int64_t)space.free_bytes
                                 : -1;
        pthread_mutex_lock(&st->live_mu);
        info.damaged_blocks = st->n_damaged_all;
        for (size_t i = 0; i < st->n_damaged && info.n_damaged < STORE_INFO_DAMAGED; i++)
            info.damaged[info.n_damaged++] = st->damaged[i];
        pthread_mutex_unlock(&st->live_mu);
        *ret_info = info;
        r = 0;
    } else {
        r = -EIO;
    }
    sqlite3_finalize(s);
    reader_put(st, rd);
    return r;
}

/* ---- timeline events ---- */

int64_t store_query_events(struct store *st, int64_t job_id, int64_t rank, int64_t t0_ns,
                           int64_t t1_ns, int64_t max,
                           int (*cb)(void *ud, const char *line, size_t len), void *ud)
{
    struct store_reader *rd = NULL;
    sqlite3_stmt *s = NULL;
    ZSTD_DCtx *dctx = NULL;
    char *buf = NULL;
    size_t buf_cap = 0;
    int64_t given = 0;
    int64_t r = reader_get(st, &rd);
    if (r < 0)
        goto out;
    int rc = sqlite3_prepare_v2(rd->db, "SELECT 1 FROM jobs WHERE id = ?1", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, job_id);
        rc = sqlite3_step(s);
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc != SQLITE_ROW) {
        r = rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
        goto out;
    }
    /* Two statements rather than "rank = ?2 OR ?2 < 0", which would hide the index. */
    const char *sql = rank < 0 ? "SELECT raw_bytes, codec, data, id, rank FROM blocks "
                                 "WHERE job_id = ?1 AND t_min_ns <= ?4 AND t_max_ns >= ?3 "
                                 "ORDER BY id"
                               : "SELECT raw_bytes, codec, data, id, rank FROM blocks "
                                 "WHERE job_id = ?1 AND rank = ?2 AND t_min_ns <= ?4 "
                                 "AND t_max_ns >= ?3 ORDER BY id";
    rc = sqlite3_prepare_v2(rd->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, job_id);
        if (rank >= 0)
            sqlite3_bind_int64(s, 2, rank);
        sqlite3_bind_int64(s, 3, t0_ns);
        sqlite3_bind_int64(s, 4, t1_ns);
    }
    bool stop = max == 0;
    while (!stop && rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t raw_bytes = sqlite3_column_int64(s, 0);
        int codec = sqlite3_column_int(s, 1);
        /* The blob pointer lives until the next step: decompress (or read) it in place. */
        const void *data = sqlite3_column_blob(s, 2);
        size_t len = (size_t)sqlite3_column_bytes(s, 2);
        const char *lines = NULL, *why = NULL;
        size_t n_lines = 0;
        int e = store__decode_block(&dctx, &buf, &buf_cap, raw_bytes, codec, data, len, &lines,
                             &n_lines, &why);
        if (e == -EIO) { /* damaged: noted, skipped */
            store__block_damaged(st, job_id, sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 3),
                          why);
            rc = SQLITE_OK;
            continue;
        }
        if (e < 0) {
            r = e;
            goto out;
        }
        size_t pos = 0;
        while (pos < n_lines) {
            const char *nl = memchr(lines + pos, '\n', n_lines - pos);
            size_t end = nl ? (size_t)(nl - lines) : n_lines;
            given++;
            if (cb(ud, lines + pos, end - pos) != 0 || (max > 0 && given >= max)) {
                stop = true;
                break;
            }
            pos = end + 1;
        }
        rc = SQLITE_OK;
    }
    if (!stop && rc != SQLITE_DONE) {
        r = sql_errno(rc);
        goto out;
    }
    r = given;
out:
    sqlite3_finalize(s);
    if (rd)
        reader_put(st, rd);
    ZSTD_freeDCtx(dctx);
    free(buf);
    return r;
}

/* ---- store_event_iter ---- */

struct store_event_iter {
    struct store *st;       /* borrowed */
    int64_t t0_ns, t1_ns;
    int64_t *ids;           /* the overlapping blocks, in id order */
    size_t n_ids, next_id;  /* ids[next_id..] not read yet */
    ZSTD_DCtx *dctx;
    char *buf;              /* the current block's lines, a copy */
    size_t buf_cap, buf_len, pos; /* buf[pos, buf_len) not given yet */
};

static size_t skip_ws(const char *p, size_t n, size_t i)
{
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    return i;
}

/* p[i] is '"': returns the index just past the closing quote (n if unterminated). */
static size_t skip_string(const char *p, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\')
            i++;
        else if (p[i] == '"')
            return i + 1;
    }
    return n;
}

/* Skips one JSON value starting at p[i] (no leading blanks): a string, an object or array with
 * everything nested in it, or a scalar up to the next delimiter. Returns the index past it. */
static size_t skip_value(const char *p, size_t n, size_t i)
{
    if (i >= n)
        return n;
    if (p[i] == '"')
        return skip_string(p, n, i);
    if (p[i] == '{' || p[i] == '[') {
        size_t depth = 0;
        while (i < n) {
            char ch = p[i];
            if (ch == '"') {
                i = skip_string(p, n, i);
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if ((ch == '}' || ch == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return n;
    }
    while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' ' && p[i] != '\t' &&
           p[i] != '\r' && p[i] != '\n')
        i++;
    return i;
}

/* Reads the top-level "ts", "dur", "pid", "tid", "name", "cat" and "ph" of a stored line. The lines were validated by
 * ingest when they arrived, so this scan only has to find members, not judge the syntax; on
 * anything unexpected it stops and keeps what it found. Keys are compared as raw text (the
 * first occurrence wins). */
void store__scan_event(const char *p, size_t n, struct store_event *ev)
{
    const char *ts = NULL, *dur = NULL;
    size_t ts_n = 0, dur_n = 0;
    ev->pid = ev->tid = ev->name = ev->cat = NULL;
    ev->pid_len = ev->tid_len = ev->name_len = ev->cat_len = 0;
    ev->ph = 0;
    bool has_ph = false;
    size_t i = skip_ws(p, n, 0);
    if (i < n && p[i] == '{') {
        i++;
        for (;;) {
            i = skip_ws(p, n, i);
            if (i >= n || p[i] != '"')
                break;
            size_t k0 = i + 1;
            i = skip_string(p, n, i);
            size_t klen = i > k0 ? i - k0 - 1 : 0;
            i = skip_ws(p, n, i);
            if (i >= n || p[i] != ':')
                break;
            i = skip_ws(p, n, i + 1);
            size_t v0 = i;
            i = skip_value(p, n, i);
            const char *k = p + k0;
            if (klen == 2 && memcmp(k, "ts", 2) == 0 && !ts) {
                ts = p + v0;
                ts_n = i - v0;
            } else if (klen == 3 && memcmp(k, "dur", 3) == 0 && !dur) {
                dur = p + v0;
                dur_n = i - v0;
            } else if (klen == 3 && memcmp(k, "pid", 3) == 0 && !ev->pid) {
                ev->pid = p + v0;
                ev->pid_len = i - v0;
            } else if (klen == 3 && memcmp(k, "tid", 3) == 0 && !ev->tid) {
                ev->tid = p + v0;
                ev->tid_len = i - v0;
            } else if (klen == 4 && memcmp(k, "name", 4) == 0 && !ev->name) {
                ev->name = p + v0;
                ev->name_len = i - v0;
            } else if (klen == 3 && memcmp(k, "cat", 3) == 0 && !ev->cat) {
                ev->cat = p + v0;
                ev->cat_len = i - v0;
            } else if (klen == 2 && memcmp(k, "ph", 2) == 0 && !has_ph) {
                has_ph = true;
                if (i - v0 == 3 && p[v0] == '"') /* a one-letter phase */
                    ev->ph = p[v0 + 1];
            }
            i = skip_ws(p, n, i);
            if (i >= n || p[i] != ',')
                break;
            i++;
        }
    }
    if (!ts || num_us_to_ns(ts, ts_n, &ev->ts_ns) < 0) {
        ev->ts_ns = INT64_MIN;
        ts = NULL;
        ts_n = 0;
    }
    ev->ts = ts;
    ev->ts_len = ts_n;
    if (!dur || num_us_to_ns(dur, dur_n, &ev->dur_ns) < 0 || ev->dur_ns < 0)
        ev->dur_ns = 0;
}

static int job_exists(sqlite3 *db, int64_t job_id)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM jobs WHERE id = ?1", -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, job_id);
        rc = sqlite3_step(s);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : sql_errno(rc);
}

void store_event_iter_free(struct store_event_iter *it)
{
    if (!it)
        return;
    free(it->ids);
    ZSTD_freeDCtx(it->dctx);
    free(it->buf);
    free(it);
}

int store_event_iter_new(struct store *st, int64_t job_id, int64_t rank, int64_t t0_ns,
                         int64_t t1_ns, struct store_event_iter **ret_it)
{
    struct store_reader *rd = NULL;
    sqlite3_stmt *s = NULL;
    struct store_event_iter *it = calloc(1, sizeof *it);
    int r = -ENOMEM;
    if (!it)
        goto fail;
    it->st = st;
    it->t0_ns = t0_ns;
    it->t1_ns = t1_ns;
    r = reader_get(st, &rd);
    if (r < 0)
        goto fail;
    r = job_exists(rd->db, job_id);
    if (r < 0)
        goto fail;
    /* Two statements rather than "rank = ?2 OR ?2 < 0", which would hide the index. */
    const char *sql = rank < 0 ? "SELECT id FROM blocks WHERE job_id = ?1 "
                                 "AND t_min_ns <= ?4 AND t_max_ns >= ?3 ORDER BY id"
                               : "SELECT id FROM blocks WHERE job_id = ?1 "
                                 "AND rank = ?2 AND t_min_ns <= ?4 AND t_max_ns >= ?3 ORDER BY id";
    int rc = sqlite3_prepare_v2(rd->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, job_id);
        if (rank >= 0)
            sqlite3_bind_int64(s, 2, rank);
        sqlite3_bind_int64(s, 3, t0_ns);
        sqlite3_bind_int64(s, 4, t1_ns);
    }
    size_t cap = 0;
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (util_grow((void **)&it->ids, &cap, it->n_ids + 1, sizeof *it->ids) < 0) {
            r = -ENOMEM;
            goto fail;
        }
        it->ids[it->n_ids++] = sqlite3_column_int64(s, 0);
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_DONE) {
        r = sql_errno(rc);
        goto fail;
    }
    sqlite3_finalize(s);
    reader_put(st, rd);
    *ret_it = it;
    return 0;
fail:
    sqlite3_finalize(s);
    if (rd)
        reader_put(st, rd);
    store_event_iter_free(it);
    return r;
}

/* Copies block id out into it->buf (decompressed). Returns 1, 0 if the block is gone (evicted
 * since _new()), or -ENOMEM / -EIO. */
static int load_block(struct store_event_iter *it, int64_t id)
{
    struct store_reader *rd = NULL;
    sqlite3_stmt *s = NULL;
    int r = reader_get(it->st, &rd);
    if (r < 0)
        return r;
    int rc = sqlite3_prepare_v2(rd->db,
                                "SELECT raw_bytes, codec, data, job_id, rank FROM blocks "
                                "WHERE id = ?1",
                                -1, &s, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(s, 1, id);
        rc = sqlite3_step(s);
    }
    if (rc == SQLITE_DONE) {
        r = 0;
        goto out;
    }
    if (rc != SQLITE_ROW) {
        r = sql_errno(rc);
        goto out;
    }
    int64_t raw_bytes = sqlite3_column_int64(s, 0);
    int codec = sqlite3_column_int(s, 1);
    const void *data = sqlite3_column_blob(s, 2);
    size_t len = (size_t)sqlite3_column_bytes(s, 2);
    const char *lines = NULL, *why = NULL;
    size_t n_lines = 0;
    r = store__decode_block(&it->dctx, &it->buf, &it->buf_cap, raw_bytes, codec, data, len, &lines,
                     &n_lines, &why);
    if (r == -EIO) { /* damaged: noted, and skipped like a block that is gone */
        store__block_damaged(it->st, sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4), id, why);
        r = 0;
        goto out;
    }
    if (r < 0)
        goto out;
    if (lines != it->buf) { /* not compressed: copied out of SQLite's row */
        r = -ENOMEM;
        if (n_lines > 0 && util_grow((void **)&it->buf, &it->buf_cap, n_lines, 1) < 0)
            goto out;
        if (n_lines > 0)
            memcpy(it->buf, lines, n_lines);
    }
    it->buf_len = n_lines;
    it->pos = 0;
    r = 1;
out:
    sqlite3_finalize(s);
    reader_put(it->st, rd);
    return r;
}

int store_event_iter_next(struct store_event_iter *it, struct store_event *ret)
{
    for (;;) {
        while (it->pos < it->buf_len) {
            const char *p = it->buf + it->pos;
            const char *nl = memchr(p, '\n', it->buf_len - it->pos);
            size_t len = nl ? (size_t)(nl - p) : it->buf_len - it->pos;
            it->pos += len + 1;
            if (len == 0)
                continue;
            struct store_event ev = {.line = p, .len = len};
            store__scan_event(p, len, &ev);
            if (ev.ts_ns != INT64_MIN && ev.ph != 'M') {
                int64_t end = ev.dur_ns > 0 && ev.ts_ns > INT64_MAX - ev.dur_ns
                                  ? INT64_MAX
                                  : ev.ts_ns + ev.dur_ns;
                if (ev.ts_ns > it->t1_ns || end < it->t0_ns)
                    continue;
            }
            *ret = ev;
            return 1;
        }
        if (it->next_id >= it->n_ids)
            return 0;
        it->buf_len = it->pos = 0;
        int r = load_block(it, it->ids[it->next_id++]);
        if (r < 0) {
            it->buf_len = it->pos = 0;
            it->next_id = it->n_ids;
            return r;
        }
    }
}

/* A record with every optional field "absent", as the decoder leaves it. */
static void record_blank(struct record *rec, enum record_kind kind)
{
    memset(rec, 0, sizeof *rec);
    rec->kind = kind;
    rec->raw = "";
    rec->step = -1;
    rec->samples = -1;
    rec->size = -1;
    rec->capacity = -1;
    rec->cpu_percent = -1;
    rec->sys_cpu_percent = -1;
    rec->rss_bytes = -1;
    rec->correlation = -1;
    rec->external_id = -1;
    rec->dispatch_ns = -1;
    rec->exec_ns = -1;
    rec->phase_ns = (struct record_phases){-1, -1, -1};
}

/* Text column col as a record_text (empty when NULL); borrowed until the next step. */
static struct record_text column_text(sqlite3_stmt *s, int col)
{
    const unsigned char *p = sqlite3_column_text(s, col);
    if (!p)
        return (struct record_text){NULL, 0};
    return (struct record_text){(const char *)p, (size_t)sqlite3_column_bytes(s, col)};
}

static void fill_step(sqlite3_stmt *s, struct record *rec)
{
    record_blank(rec, RECORD_STEP);
    rec->step = sqlite3_column_int64(s, 1);
    rec->ts_ns = sqlite3_column_int64(s, 2);
    rec->dur_ns = sqlite3_column_int64(s, 3) - rec->ts_ns;
    rec->samples = sqlite3_column_int64(s, 4);
    rec->phases = column_text(s, 5);
    decode_phases(rec->phases.ptr, rec->phases.len, &rec->phase_ns);
}

static void fill_queue(sqlite3_stmt *s, struct record *rec)
{
    record_blank(rec, RECORD_QUEUE);
    rec->name = column_text(s, 1);
    rec->ts_ns = sqlite3_column_int64(s, 2);
    rec->step = sqlite3_column_int64(s, 3);
    rec->size = sqlite3_column_int64(s, 4);
    rec->capacity = sqlite3_column_int64(s, 5);
}

static void fill_host(sqlite3_stmt *s, struct record *rec)
{
    record_blank(rec, RECORD_HOST);
    rec->ts_ns = sqlite3_column_int64(s, 1);
    rec->cpu_percent = sqlite3_column_double(s, 2);
    rec->sys_cpu_percent = sqlite3_column_double(s, 3);
    rec->rss_bytes = sqlite3_column_int64(s, 4);
}

static void fill_pipeline(sqlite3_stmt *s, struct record *rec)
{
    record_blank(rec, RECORD_PIPELINE);
    rec->ts_ns = sqlite3_column_int64(s, 1);
    struct record_text json = column_text(s, 2);
    if (json.ptr) {
        rec->raw = json.ptr;
        rec->raw_len = json.len;
    }
}

/* Runs sql (job_id bound as ?1; column 0 is the rank) on a reader and hands each row, made a
 * record by fill(), to cb until cb returns non-zero. Returns the number given, or -errno. */
static int64_t replay_rows(struct store *st, int64_t job_id, const char *sql,
                           void (*fill)(sqlite3_stmt *s, struct record *rec),
                           int (*cb)(void *ud, int64_t rank, const struct record *rec), void *ud)
{
    struct store_reader *rd = NULL;
    sqlite3_stmt *s = NULL;
    int64_t given = 0;
    int64_t r = reader_get(st, &rd);
    if (r < 0)
        goto out;
    int rc = sqlite3_prepare_v2(rd->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK)
        sqlite3_bind_int64(s, 1, job_id);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct record rec;
        fill(s, &rec);
        given++;
        if (cb(ud, sqlite3_column_int64(s, 0), &rec) != 0)
            break;
        rc = SQLITE_OK;
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        r = sql_errno(rc);
        goto out;
    }
    r = given;
out:
    sqlite3_finalize(s);
    if (rd)
        reader_put(st, rd);
    return r;
}

int64_t store_query_steps(struct store *st, int64_t job_id,
                          int (*cb)(void *ud, int64_t rank, const struct record *rec), void *ud)
{
    return replay_rows(st, job_id,
                       "SELECT rank, step, begin_ns, end_ns, samples, phases FROM steps "
                       "WHERE job_id = ?1 ORDER BY rank, rowid",
                       fill_step, cb, ud);
}

int64_t store_query_queue_samples(struct store *st, int64_t job_id,
                                  int (*cb)(void *ud, int64_t rank, const struct record *rec),
                                  void *ud)
{
    return replay_rows(st, job_id,
                       "SELECT rank, name, ts_ns, step, size, capacity FROM queue_samples "
                       "WHERE job_id = ?1 ORDER BY rank, rowid",
                       fill_queue, cb, ud);
}

int64_t store_query_host_samples(struct store *st, int64_t job_id,
                                 int (*cb)(void *ud, int64_t rank, const struct record *rec),
                                 void *ud)
{
    return replay_rows(st, job_id,
                       "SELECT rank, ts_ns, cpu_percent, sys_cpu_percent, rss_bytes "
                       "FROM host_samples WHERE job_id = ?1 ORDER BY rank, rowid",
                       fill_host, cb, ud);
}

int64_t store_query_pipelines(struct store *st, int64_t job_id,
                              int (*cb)(void *ud, int64_t rank, const struct record *rec),
                              void *ud)
{
    return replay_rows(st, job_id,
                       "SELECT rank, ts_ns, json FROM pipelines WHERE job_id = ?1 "
                       "ORDER BY rank, rowid",
                       fill_pipeline, cb, ud);
}

/* A session row as a record whose raw is its hello line (record_blank() otherwise). */
static void fill_hello(sqlite3_stmt *s, struct record *rec)
{
    record_blank(rec, RECORD_PIPELINE);
    struct record_text hello = column_text(s, 1);
    if (hello.ptr) {
        rec->raw = hello.ptr;
        rec->raw_len = hello.len;
    }
}

struct hello_cb {
    int (*cb)(void *ud, int64_t rank, const char *line, size_t len);
    void *ud;
};

static int on_hello_row(void *ud, int64_t rank, const struct record *rec)
{
    const struct hello_cb *h = ud;
    return h->cb(h->ud, rank, rec->raw, rec->raw_len);
}

int64_t store_query_hellos(struct store *st, int64_t job_id,
                           int (*cb)(void *ud, int64_t rank, const char *line, size_t len),
                           void *ud)
{
    struct hello_cb h = {cb, ud};
    return replay_rows(st, job_id, "SELECT rank, hello FROM sessions WHERE job_id = ?1 ORDER BY id",
                       fill_hello, on_hello_row, &h);
}

static const char *column_str(sqlite3_stmt *s, int i)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    return t ? t : "";
}

int store_query_captures(struct store *st, int (*on_capture)(void *ud, const struct record_capture *c),
                         int (*on_rank)(void *ud, const struct record_capture_rank *r),
                         void *ud)
{
    struct store_reader *rd = NULL;
    int r = reader_get(st, &rd);
    if (r < 0)
        return r;
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(rd->db,
                                "SELECT id, job_id, created_ns, start_step, steps, all_ranks, what, "
                                "series, series_window, series_every, series_repeat "
                                "FROM captures ORDER BY id",
                                -1, &s, NULL);
    bool stop = false;
    while (rc == SQLITE_OK && !stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct record_capture c = {
            sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
            sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4),
            sqlite3_column_int64(s, 7), sqlite3_column_int64(s, 8),
            sqlite3_column_int64(s, 9), sqlite3_column_int64(s, 10),
            sqlite3_column_int(s, 5) != 0, column_str(s, 6),
        };
        stop = on_capture(ud, &c) != 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    s = NULL;
    if ((rc == SQLITE_OK || rc == SQLITE_DONE) && !stop)
        rc = sqlite3_prepare_v2(rd->db,
                                "SELECT capture_id, rank, state, reason, updated_ns, first_step "
                                "FROM capture_ranks ORDER BY capture_id, rank",
                                -1, &s, NULL);
    while (rc == SQLITE_OK && !stop && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct record_capture_rank cr = {
            sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 4),
            sqlite3_column_int64(s, 5), column_str(s, 2), column_str(s, 3),
        };
        stop = on_rank(ud, &cr) != 0;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    reader_put(st, rd);
    return rc == SQLITE_OK || rc == SQLITE_DONE ? 0 : sql_errno(rc);
}
