/* SPDX-License-Identifier: MIT */
/*
 * test_store: the store module against real SQLite files. Every test gets a fresh data dir under
 * one temporary base directory that main() removes at the end (a failing test exits its forked
 * child before any teardown could run). Waiting for durability uses store_flush_wait(), which is
 * bounded, so no test sleeps.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>
#include <zstd.h>

#include "../../daemon/core/stats.h"
#include "../../daemon/store/store.h"
#include "../../daemon/store/store_query.h"
#include "../../daemon/store/store_ship.h"

#define WAIT_NS (10 * 1000000000LL)

static char base_dir[256];
static char data_dir[512];
static struct stats stats;

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        (void)rmdir(path);
    } else {
        (void)unlink(path);
    }
}

/* Checked fixture: a new data dir path (not yet created: store_open makes it, parents too). */
static void setup(void)
{
    char tmpl[300];
    snprintf(tmpl, sizeof tmpl, "%s/tXXXXXX", base_dir);
    ck_assert_ptr_nonnull(mkdtemp(tmpl));
    snprintf(data_dir, sizeof data_dir, "%s/state/stepscope", tmpl);
    memset(&stats, 0, sizeof stats);
}

static struct store_config config(uint64_t retention, uint64_t max_buffered)
{
    struct store_config c = {
        .data_dir = data_dir,
        .retention_bytes_per_job = retention,
        .max_buffered_bytes = max_buffered,
        .durability = CONFIG_DURABILITY_NORMAL,
        .stats = &stats,
    };
    return c;
}

static struct store *open_ok(uint64_t retention)
{
    struct store_config c = config(retention, 0);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    int r = store_open(&c, &st, err);
    ck_assert_msg(r == 0, "store_open: %d %s", r, err);
    ck_assert_ptr_nonnull(st);
    return st;
}

static struct record_hello hello(const char *job, int64_t rank, const char *stream)
{
    static char raw[512];
    snprintf(raw, sizeof raw, "{\"hello\":1,\"job\":\"%s\",\"rank\":%" PRId64 "}", job, rank);
    struct record_hello h = {
        .job = job,
        .run = "",
        .stream = stream,
        .host = "node-1",
        .framework = "pytorch",
        .framework_version = "2.3.0",
        .clock = "",
        .rank = rank,
        .world_size = 4,
        .pid = 4242,
        .raw = raw,
        .raw_len = strlen(raw),
    };
    return h;
}

static struct record_welcome session(struct store *st, const char *job, int64_t rank,
                                     const char *stream)
{
    struct record_hello h = hello(job, rank, stream);
    struct record_welcome w;
    char err[STORE_ERR_MAX];
    int r = store_session_open(st, &h, &w, err);
    ck_assert_msg(r == 0, "store_session_open: %d %s", r, err);
    return w;
}

static struct record trace(const char *raw, char ph, int64_t ts_ns, int64_t dur_ns, uint64_t seq)
{
    struct record r = {
        .kind = RECORD_TRACE,
        .seq = seq,
        .raw = raw,
        .raw_len = strlen(raw),
        .ph = ph,
        .ts_ns = ts_ns,
        .dur_ns = dur_ns,
        .step = -1,
        .samples = -1,
        .capacity = -1,
    };
    return r;
}

/* Collects query_events output as lines joined by '|'. */
struct lines {
    char buf[65536];
    size_t len;
    int64_t n;
    int64_t stop_after; /* cb returns 1 after this many; 0: never */
};

static int on_line(void *ud, const char *line, size_t len)
{
    struct lines *l = ud;
    ck_assert_uint_lt(l->len + len + 1, sizeof l->buf);
    memcpy(l->buf + l->len, line, len);
    l->len += len;
    l->buf[l->len++] = '|';
    l->buf[l->len] = '\0';
    l->n++;
    return l->stop_after && l->n >= l->stop_after;
}

static int64_t count_cb_n;
static int count_cb(void *ud, const char *line, size_t len)
{
    (void)ud;
    (void)line;
    (void)len;
    count_cb_n++;
    return 0;
}

struct durable {
    int64_t stream_id[16];
    uint64_t next_seq[16];
    int n;
};

static void on_durable_seq(void *ud, int64_t stream_id, uint64_t next_seq)
{
    struct durable *d = ud;
    ck_assert_int_lt(d->n, 16);
    d->stream_id[d->n] = stream_id;
    d->next_seq[d->n] = next_seq;
    d->n++;
}

static sqlite3 *open_raw_db(void)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", data_dir, STORE_DB_NAME);
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                     SQLITE_OK);
    return db;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

static void sql_text(sqlite3 *db, const char *sql, char *out, size_t size)
{
    sqlite3_stmt *s = NULL;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
    snprintf(out, size, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
}

/* ---- open / close ---- */

START_TEST(test_store_open_creates_wal_db)
{
    struct store *st = open_ok(0);
    struct stat sb;
    ck_assert_int_eq(stat(data_dir, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    char path[600];
    snprintf(path, sizeof path, "%s/lock", data_dir);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    long pid = 0;
    ck_assert_int_eq(fscanf(f, "%ld", &pid), 1);
    fclose(f);
    ck_assert_int_eq(pid, (long)getpid());
    store_close(st);

    sqlite3 *db = open_raw_db();
    char mode[32];
    sql_text(db, "PRAGMA journal_mode", mode, sizeof mode);
    ck_assert_str_eq(mode, "wal");
    ck_assert_int_eq(sql_int(db, "PRAGMA user_version"), 9);
    ck_assert_int_eq(sql_int(db, "SELECT count(*) FROM jobs"), 0);
    sqlite3_close(db);
    store_close(NULL); /* NULL-safe */
}
END_TEST

START_TEST(test_store_open_locked_dir_busy)
{
    struct store *st = open_ok(0);
    struct store_config c = config(0, 0);
    struct store *st2 = (struct store *)0x1;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st2, err), -EBUSY);
    ck_assert_ptr_eq(st2, (struct store *)0x1); /* untouched on failure */
    char want[128];
    snprintf(want, sizeof want, "locked by another stepscoped (pid %ld)", (long)getpid());
    ck_assert_msg(strstr(err, want) != NULL, "err: %s", err);
    store_close(st);
    /* Released on close. */
    st = open_ok(0);
    store_close(st);
}
END_TEST

START_TEST(test_store_open_corrupt_db_eio)
{
    ck_assert_int_eq(mkdir(base_dir, 0700) == 0 || errno == EEXIST, 1);
    char parent[600];
    snprintf(parent, sizeof parent, "%s", data_dir);
    *strrchr(parent, '/') = '\0';
    ck_assert_int_eq(mkdir(parent, 0700), 0);
    ck_assert_int_eq(mkdir(data_dir, 0700), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/%s", data_dir, STORE_DB_NAME);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 8192; i++)
        fputc("garbage!"[i % 8] ^ (i & 0x5a), f);
    fclose(f);
    struct store_config c = config(0, 0);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), -EIO);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err, "not a database") != NULL, "err: %s", err);
    /* The lock was released with the failure: a fixed file opens. */
    ck_assert_int_eq(unlink(path), 0);
    st = open_ok(0);
    store_close(st);
}
END_TEST

START_TEST(test_store_open_newer_schema_eproto)
{
    store_close(open_ok(0));
    sqlite3 *db = open_raw_db();
    ck_assert_int_eq(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct store_config c = config(0, 0);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), -EPROTO);
    ck_assert_msg(strstr(err, "newer stepscope") != NULL, "err: %s", err);
}
END_TEST

/* The jobs list's steps for a job live does not hold: live's last count per rank, persisted
 * (store_rank_live_steps()), kept across a reopen, the larger beside step records; a database
 * of version 2 migrates with none known. */
/* A job's commit count (store_query_job_commits()) rises with each commit that writes the job,
 * and only then: another job's commits leave it alone; its deletion raises it; a job the store
 * never wrote since it opened has 0. */
START_TEST(test_store_job_commits)
{
    struct store *st = open_ok(0);
    struct record_welcome a = session(st, "a", 0, ""), b = session(st, "b", 0, "");
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    uint64_t ca = store_query_job_commits(st, a.job_id), cb = store_query_job_commits(st, b.job_id);
    ck_assert_uint_gt(ca, 0);
    ck_assert_uint_gt(cb, 0);
    ck_assert_uint_eq(store_query_job_commits(st, b.job_id + 1000), 0);

    struct record r = trace("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2}", 'X', 1, 2, 0);
    ck_assert_int_eq(store_append(st, a.session_id, &r, 1, 1), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    uint64_t ca2 = store_query_job_commits(st, a.job_id);
    ck_assert_uint_gt(ca2, ca);
    ck_assert_uint_eq(store_query_job_commits(st, b.job_id), cb);

    r = trace("{\"ph\":\"X\",\"name\":\"k\",\"ts\":3,\"dur\":2}", 'X', 3, 2, 0);
    ck_assert_int_eq(store_append(st, b.session_id, &r, 1, 1), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    uint64_t cb2 = store_query_job_commits(st, b.job_id);
    ck_assert_uint_gt(cb2, cb);
    ck_assert_uint_eq(store_query_job_commits(st, a.job_id), ca2);

    store_session_close(st, a.session_id, true);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    uint64_t ca3 = store_query_job_commits(st, a.job_id);
    ck_assert_uint_gt(ca3, ca2);
    int64_t job_id;
    uint64_t ticket;
    ck_assert_int_eq(store_job_delete(st, "a", &job_id, &ticket), 0);
    ck_assert_int_eq(job_id, a.job_id);
    ck_assert_int_eq(store_wait_committed(st, ticket, WAIT_NS), 0);
    ck_assert_uint_gt(store_query_job_commits(st, a.job_id), ca3);
    ck_assert_uint_eq(store_query_job_commits(st, b.job_id), cb2);
    store_session_close(st, b.session_id, true);
    store_close(st);
}
END_TEST

START_TEST(test_store_rank_live_steps)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "kineto", 0, "s0");
    struct record_welcome w1 = session(st, "kineto", 1, "s1");
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    struct store_job *jobs = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(jobs[0].steps, 0);
    free(jobs);
    ck_assert_int_eq(store_rank_live_steps(st, w.job_id, 0, 5), 0);
    ck_assert_int_eq(store_rank_live_steps(st, w1.job_id, 1, 3), 0);
    ck_assert_int_eq(store_rank_live_steps(st, w.job_id, 7, 9), 0); /* no such rank: skipped */
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    store_session_close(st, w.session_id, true);
    store_session_close(st, w1.session_id, true);
    store_close(st);

    st = open_ok(0);
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(jobs[0].steps, 5);
    ck_assert_int_eq(jobs[0].ranks, 2);
    free(jobs);
    struct store_rank *ranks = NULL;
    ck_assert_int_eq(store_query_ranks(st, w.job_id, &ranks, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(ranks[0].steps, 5);
    ck_assert_int_eq(ranks[1].steps, 3);
    free(ranks);
    /* A lower count later (live keeps LIVE_STEPS_MAX) is written; step records still count. */
    ck_assert_int_eq(store_rank_live_steps(st, w.job_id, 0, 2), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n), 0);
    ck_assert_int_eq(jobs[0].steps, 3);
    free(jobs);
    store_close(st);

    /* Version 2 (no live_steps) migrates to 3, its counts unknown until live reports them (and
     * on to 4, the shipper's cursors, 5, its deleted jobs, 6, the cluster view's, and 7, the
     * captures' series). */
    sqlite3 *db = open_raw_db();
    ck_assert_int_eq(sqlite3_exec(db, "ALTER TABLE ranks DROP COLUMN live_steps; "
                                      "DROP TABLE ship_cursors; DROP TABLE ship_deletes; "
                                      "DROP TABLE pull_cursors; DROP TABLE pull_streams; "
                                      "DROP TABLE pull_conflicts; "
                                      "ALTER TABLE captures DROP COLUMN series; "
                                      "ALTER TABLE captures DROP COLUMN series_window; "
                                      "ALTER TABLE captures DROP COLUMN series_every; "
                                      "ALTER TABLE captures DROP COLUMN series_repeat; "
                                      "ALTER TABLE capture_ranks DROP COLUMN first_step; "
                                      "PRAGMA user_version = 2", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    st = open_ok(0);
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n), 0);
    ck_assert_int_eq(jobs[0].steps, 0);
    free(jobs);
    store_close(st);
    db = open_raw_db();
    ck_assert_int_eq(sql_int(db, "PRAGMA user_version"), 9);
    ck_assert_int_eq(sql_int(db, "SELECT count(*) FROM ranks WHERE live_steps IS NULL"), 2);
    sqlite3_close(db);
}
END_TEST

START_TEST(test_store_open_foreign_db_eio)
{
    store_close(open_ok(0));
    char path[600];
    snprintf(path, sizeof path, "%s/%s", data_dir, STORE_DB_NAME);
    ck_assert_int_eq(unlink(path), 0);
    sqlite3 *db = open_raw_db();
    ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    struct store_config c = config(0, 0);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), -EIO);
    ck_assert_msg(strstr(err, "not a stepscope") != NULL, "err: %s", err);
}
END_TEST

START_TEST(test_store_open_readonly_dir)
{
    if (geteuid() == 0) {
        /* Root writes through permission bits: nothing to test here. */
        return;
    }
    store_close(open_ok(0));
    ck_assert_int_eq(chmod(data_dir, 0500), 0);
    struct store_config c = config(0, 0);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    int r = store_open(&c, &st, err);
    ck_assert_msg(r == -EACCES || r == -EROFS, "r %d err %s", r, err);
    ck_assert_msg(strstr(err, data_dir) != NULL, "err: %s", err);
    ck_assert_int_eq(chmod(data_dir, 0700), 0);
}
END_TEST

/* ---- sessions ---- */

START_TEST(test_store_session_open_welcome)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "job-a", 0, "");
    ck_assert_int_eq(w.job_id, 1);
    ck_assert_int_eq(w.session_id, 1);
    ck_assert_int_eq(w.stream_id, 1);
    ck_assert_uint_eq(w.next_seq, 0);
    struct record_welcome w2 = session(st, "job-a", 1, "s");
    ck_assert_int_eq(w2.job_id, 1);
    ck_assert_int_eq(w2.session_id, 2);
    ck_assert_int_eq(w2.stream_id, 2);
    struct record_welcome w3 = session(st, "job-b", 0, "s");
    ck_assert_int_eq(w3.job_id, 2);
    ck_assert_int_eq(w3.stream_id, 3);

    struct record_hello bad = hello("", 0, "");
    char err[STORE_ERR_MAX];
    struct record_welcome wb;
    ck_assert_int_eq(store_session_open(st, &bad, &wb, err), -EINVAL);
    ck_assert_int_ne(err[0], '\0');
    bad = hello("x", -1, "");
    ck_assert_int_eq(store_session_open(st, &bad, &wb, err), -EINVAL);
    store_close(st);
}
END_TEST

START_TEST(test_store_session_stream_busy)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "job", 3, "trainer");
    struct record_hello h = hello("job", 3, "trainer");
    struct record_welcome w2;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_session_open(st, &h, &w2, err), -EBUSY);
    /* Other rank, or a one-off stream: not the same stream. */
    session(st, "job", 4, "trainer");
    session(st, "job", 3, "");
    session(st, "job", 3, "");
    store_session_close(st, w.session_id, false);
    w2 = session(st, "job", 3, "trainer");
    ck_assert_int_eq(w2.stream_id, w.stream_id);
    store_close(st);
}
END_TEST

START_TEST(test_store_append_unknown_session)
{
    struct store *st = open_ok(0);
    struct record r = trace("{}", 'i', 1, 0, 0);
    ck_assert_int_eq(store_append(st, 77, &r, 1, 1), -ENOENT);
    store_close(st);
}
END_TEST

/* ---- the write path and the queries ---- */

static const char *const lines_a[] = {
    "{\"ph\":\"X\",\"name\":\"conv\",\"ts\":1000,\"dur\":50,\"pid\":1,\"tid\":2}",
    "{\"ph\":\"X\",\"name\":\"<script>alert(\\\"x\\\")</script>\",\"ts\":1100,\"dur\":10}",
    "{\"ph\":\"i\",\"name\":\"it's \\\"quoted\\\" \xc3\xa9\xe2\x82\xac\",\"ts\":1200}",
    "{\"ph\":\"B\",\"name\":\"fwd\",\"ts\":5000}",
    "{\"ph\":\"E\",\"name\":\"fwd\",\"ts\":6000}",
};

START_TEST(test_store_append_roundtrip)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "train \"<script>\" \xe2\x9c\x93", 2, "s0");
    struct record recs[16];
    size_t n = 0;
    int64_t ts[] = {1000000, 1100000, 1200000, 5000000, 6000000};
    int64_t dur[] = {50000, 10000, 0, 0, 0};
    char ph[] = {'X', 'X', 'i', 'B', 'E'};
    for (size_t i = 0; i < 5; i++) {
        recs[n] = trace(lines_a[i], ph[i], ts[i], dur[i], n);
        n++;
    }
    struct record step = {.kind = RECORD_STEP, .seq = n, .raw = "{}", .raw_len = 2,
                          .ts_ns = 1000000, .dur_ns = 5000000, .step = 7, .samples = 32,
                          .phases = {"{\"fwd\":1.5}", 11}, .capacity = -1};
    recs[n++] = step;
    struct record queue = {.kind = RECORD_QUEUE, .seq = n, .raw = "{}", .raw_len = 2,
                           .ts_ns = 2000000, .name = {"device_queue", 12}, .step = 7,
                           .size = 3, .capacity = 16};
    recs[n++] = queue;
    struct record host = {.kind = RECORD_HOST, .seq = n, .raw = "{}", .raw_len = 2,
                          .ts_ns = 2500000, .cpu_percent = 150.5, .sys_cpu_percent = 40.0,
                          .rss_bytes = 1 << 30, .step = -1, .capacity = -1};
    recs[n++] = host;
    const char *pipe = "{\"type\":\"pipeline\",\"ops\":[{\"name\":\"map\"}]}";
    struct record pl = {.kind = RECORD_PIPELINE, .seq = n, .raw = pipe, .raw_len = strlen(pipe),
                        .ts_ns = 3000000, .step = -1, .capacity = -1};
    recs[n++] = pl;
    /* next_seq 12: lines 9..11 were rejected by ingest but are durable with the batch. */
    ck_assert_int_eq(store_append(st, w.session_id, recs, n, 12), 0);
    ck_assert_uint_gt(store_buffered_bytes(st), 0);

    /* Nothing committed yet: no job is visible. */
    struct store_job *jobs = NULL;
    size_t n_jobs = 99;
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n_jobs), 0);
    ck_assert_uint_eq(n_jobs, 0);
    ck_assert_ptr_null(jobs);

    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    ck_assert_uint_eq(store_buffered_bytes(st), 0);
    ck_assert_uint_eq(STATS_GET(&stats, buffered_bytes), 0);
    ck_assert_uint_ge(STATS_GET(&stats, commits), 1);
    ck_assert_uint_eq(STATS_GET(&stats, acknowledged), 12);
    struct durable d = {0};
    store_collect_durable(st, on_durable_seq, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_int_eq(d.stream_id[0], w.stream_id);
    ck_assert_uint_eq(d.next_seq[0], 12);
    d.n = 0;
    store_collect_durable(st, on_durable_seq, &d);
    ck_assert_int_eq(d.n, 0);

    ck_assert_int_eq(store_query_jobs(st, &jobs, &n_jobs), 0);
    ck_assert_uint_eq(n_jobs, 1);
    struct store_job *j = &jobs[0];
    ck_assert_int_eq(j->id, w.job_id);
    ck_assert_str_eq(j->name, "train \"<script>\" \xe2\x9c\x93");
    ck_assert_int_eq(j->ranks, 1);
    ck_assert_int_eq(j->world_size, 4);
    ck_assert_int_eq(j->sessions, 1);
    ck_assert_int_eq(j->steps, 1);
    ck_assert_int_eq(j->spans, 3);
    ck_assert_int_eq(j->events, 5);
    ck_assert_int_eq(j->queue_samples, 1);
    ck_assert_int_eq(j->host_samples, 1);
    ck_assert_int_eq(j->pipelines, 1);
    ck_assert_int_gt(j->stored_bytes, 0);
    ck_assert_int_eq(j->evicted_events, 0);
    ck_assert_int_gt(j->first_seen_ns, 0);
    ck_assert_int_ge(j->last_seen_ns, j->first_seen_ns);
    ck_assert(j->live);
    free(jobs);

    struct store_job one;
    ck_assert_int_eq(store_query_job(st, "1", &one), 0);
    ck_assert_int_eq(one.id, 1);
    ck_assert_int_eq(store_query_job(st, "train \"<script>\" \xe2\x9c\x93", &one), 0);
    ck_assert_int_eq(one.id, 1);
    ck_assert_int_eq(store_query_job(st, "2", &one), -ENOENT);
    ck_assert_int_eq(store_query_job(st, "nope", &one), -ENOENT);

    struct store_rank *ranks = NULL;
    size_t n_ranks = 0;
    ck_assert_int_eq(store_query_ranks(st, w.job_id, &ranks, &n_ranks), 0);
    ck_assert_uint_eq(n_ranks, 1);
    ck_assert_int_eq(ranks[0].rank, 2);
    ck_assert_str_eq(ranks[0].host, "node-1");
    ck_assert_str_eq(ranks[0].framework, "pytorch");
    ck_assert_str_eq(ranks[0].framework_version, "2.3.0");
    ck_assert_int_eq(ranks[0].pid, 4242);
    ck_assert_int_eq(ranks[0].sessions, 1);
    ck_assert_int_eq(ranks[0].events, 5);
    ck_assert_int_eq(ranks[0].steps, 1);
    ck_assert(ranks[0].live);
    free(ranks);

    /* Byte-for-byte, in order. */
    struct lines l = {0};
    ck_assert_int_eq(store_query_events(st, w.job_id, -1, INT64_MIN, INT64_MAX, -1, on_line, &l),
                     5);
    char want[4096] = "";
    for (size_t i = 0; i < 5; i++) {
        strcat(want, lines_a[i]);
        strcat(want, "|");
    }
    ck_assert_str_eq(l.buf, want);
    /* The block spans [1000000, 6000000]: a range that misses it gives nothing. */
    ck_assert_int_eq(store_query_events(st, w.job_id, 2, 6000001, 9000000, -1, count_cb, NULL), 0);
    ck_assert_int_eq(store_query_events(st, w.job_id, 2, 0, 1000000, -1, count_cb, NULL), 5);
    ck_assert_int_eq(store_query_events(st, w.job_id, 1, INT64_MIN, INT64_MAX, -1, count_cb, NULL),
                     0);
    ck_assert_int_eq(store_query_events(st, w.job_id, -1, INT64_MIN, INT64_MAX, 2, count_cb, NULL),
                     2);
    struct lines l2 = {.stop_after = 3};
    ck_assert_int_eq(store_query_events(st, w.job_id, -1, INT64_MIN, INT64_MAX, -1, on_line, &l2),
                     3);
    ck_assert_int_eq(store_query_events(st, 99, -1, INT64_MIN, INT64_MAX, -1, count_cb, NULL),
                     -ENOENT);

    struct store_info info;
    ck_assert_int_eq(store_query_info(st, &info), 0);
    ck_assert_int_eq(info.jobs, 1);
    ck_assert_int_eq(info.blocks, 1);
    size_t raw = 0;
    for (size_t i = 0; i < 5; i++)
        raw += strlen(lines_a[i]) + 1;
    ck_assert_int_eq(info.block_raw_bytes, (int64_t)raw);
    ck_assert_int_gt(info.block_bytes, 0);
    ck_assert_int_gt(info.db_bytes, 0);

    store_session_close(st, w.session_id, true);
    ck_assert_int_eq(store_query_job(st, "1", &one), 0);
    ck_assert(!one.live);
    store_close(st);

    /* The rows themselves. */
    sqlite3 *db = open_raw_db();
    ck_assert_int_eq(sql_int(db, "SELECT step FROM steps"), 7);
    ck_assert_int_eq(sql_int(db, "SELECT end_ns - begin_ns FROM steps"), 5000000);
    ck_assert_int_eq(sql_int(db, "SELECT samples FROM steps"), 32);
    char text[256];
    sql_text(db, "SELECT phases FROM steps", text, sizeof text);
    ck_assert_str_eq(text, "{\"fwd\":1.5}");
    sql_text(db, "SELECT name FROM queue_samples", text, sizeof text);
    ck_assert_str_eq(text, "device_queue");
    ck_assert_int_eq(sql_int(db, "SELECT capacity FROM queue_samples"), 16);
    ck_assert_int_eq(sql_int(db, "SELECT rss_bytes FROM host_samples"), 1 << 30);
    sql_text(db, "SELECT json FROM pipelines", text, sizeof text);
    ck_assert_str_eq(text, pipe);
    ck_assert_int_eq(sql_int(db, "SELECT clean FROM sessions"), 1);
    ck_assert_int_eq(sql_int(db, "SELECT next_seq FROM streams"), 12);
    sql_text(db, "SELECT hello FROM sessions", text, sizeof text);
    ck_assert_str_eq(text, "{\"hello\":1,\"job\":\"train \"<script>\" \xe2\x9c\x93\",\"rank\":2}");
    sqlite3_close(db);
}
END_TEST

START_TEST(test_store_reopen_persists)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "persist", 0, "stream-x");
    struct record_welcome w1 = session(st, "persist", 1, "");
    struct record r[3] = {
        trace("{\"ph\":\"X\",\"ts\":1,\"dur\":1}", 'X', 1000, 1000, 0),
        trace("{\"ph\":\"X\",\"ts\":2,\"dur\":1}", 'X', 2000, 1000, 1),
        trace("{\"ph\":\"M\",\"name\":\"process_name\"}", 'M', INT64_MIN, 0, 2),
    };
    ck_assert_int_eq(store_append(st, w.session_id, r, 3, 3), 0);
    ck_assert_int_eq(store_append(st, w1.session_id, r, 1, 1), 0);
    /* Not flushed explicitly: close flushes and waits. The session stays open, as after a
     * crash; the next open marks it ended, unclean. */
    store_close(st);

    st = open_ok(0);
    struct record_welcome w2 = session(st, "persist", 0, "stream-x");
    ck_assert_int_eq(w2.job_id, w.job_id);
    ck_assert_int_eq(w2.stream_id, w.stream_id);
    ck_assert_uint_eq(w2.next_seq, 3);
    ck_assert_int_gt(w2.session_id, w1.session_id);
    struct record_welcome w3 = session(st, "persist", 0, "");
    ck_assert_int_gt(w3.stream_id, w1.stream_id);
    ck_assert_uint_eq(w3.next_seq, 0);
    /* The untimed event is in every range; the timed ones only in theirs. */
    ck_assert_int_eq(store_query_events(st, w.job_id, 0, 0, 10, -1, count_cb, NULL), 1);
    ck_assert_int_eq(store_query_events(st, w.job_id, 0, 0, 2500, -1, count_cb, NULL), 3);
    ck_assert_int_eq(store_query_events(st, w.job_id, -1, 0, 2500, -1, count_cb, NULL), 4);
    struct store_job j;
    ck_assert_int_eq(store_query_job(st, "persist", &j), 0);
    ck_assert_int_eq(j.events, 4);
    ck_assert_int_eq(j.ranks, 2);
    ck_assert_int_eq(j.sessions, 2); /* committed ones only: the new sessions are not yet */
    ck_assert(j.live);

    /* Appending continues the stream from its durable seq. */
    struct record r4 = trace("{\"ph\":\"i\",\"ts\":9}", 'i', 9000, 0, 3);
    ck_assert_int_eq(store_append(st, w2.session_id, &r4, 1, 4), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    struct durable d = {0};
    store_collect_durable(st, on_durable_seq, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_uint_eq(d.next_seq[0], 4);
    ck_assert_uint_eq(STATS_GET(&stats, acknowledged), 3 + 1 + 1);
    store_close(st);

    sqlite3 *db = open_raw_db();
    ck_assert_int_eq(sql_int(db, "SELECT count(*) FROM sessions WHERE clean = 0"), 2);
    ck_assert_int_eq(sql_int(db, "SELECT count(*) FROM sessions WHERE ended_ns IS NULL"), 2);
    sqlite3_close(db);
}
END_TEST

struct hellos {
    int n;
    int64_t rank[4];
    char line[4][128];
};

static int on_hello_line(void *ud, int64_t rank, const char *line, size_t len)
{
    struct hellos *h = ud;
    ck_assert_int_lt(h->n, 4);
    ck_assert_uint_lt(len, sizeof h->line[0]);
    h->rank[h->n] = rank;
    memcpy(h->line[h->n], line, len);
    h->line[h->n][len] = '\0';
    return ++h->n == 3; /* stop after the third, as a callback may */
}

/* Hellos are kept with their sessions and come back, verbatim and in session order, after a
 * reopen (the daemon replays their env points from them). */
START_TEST(test_store_query_hellos_after_reopen)
{
    struct store *st = open_ok(0);
    struct record_welcome a = session(st, "hj", 2, "");
    (void)session(st, "other", 0, "");
    (void)session(st, "hj", 0, "s");
    (void)session(st, "hj", 1, "");
    (void)session(st, "hj", 0, "");
    store_close(st);
    st = open_ok(0);
    struct hellos h = {0};
    ck_assert_int_eq(store_query_hellos(st, a.job_id, on_hello_line, &h), 3);
    ck_assert_int_eq(h.n, 3);
    int64_t want_rank[3] = {2, 0, 1};
    for (int i = 0; i < 3; i++) {
        char want[128];
        snprintf(want, sizeof want, "{\"hello\":1,\"job\":\"hj\",\"rank\":%" PRId64 "}",
                 want_rank[i]);
        ck_assert_int_eq(h.rank[i], want_rank[i]);
        ck_assert_str_eq(h.line[i], want);
    }
    ck_assert_int_eq(store_query_hellos(st, a.job_id + 1000, on_hello_line, &h), 0);
    store_close(st);
}
END_TEST

START_TEST(test_store_append_seq_only)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "j", 0, "k");
    ck_assert_int_eq(store_append(st, w.session_id, NULL, 0, 5), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    struct durable d = {0};
    store_collect_durable(st, on_durable_seq, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_uint_eq(d.next_seq[0], 5);
    /* Two batches for the same stream before one collect: only the highest comes out. */
    ck_assert_int_eq(store_append(st, w.session_id, NULL, 0, 7), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    ck_assert_int_eq(store_append(st, w.session_id, NULL, 0, 9), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    d.n = 0;
    store_collect_durable(st, on_durable_seq, &d);
    ck_assert_int_eq(d.n, 1);
    ck_assert_uint_eq(d.next_seq[0], 9);
    ck_assert_uint_eq(STATS_GET(&stats, acknowledged), 9);
    store_close(st);
}
END_TEST

START_TEST(test_store_flush_ticket_committed)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "j", 0, "k");
    uint64_t t0 = store_flush_ticket(st); /* the session's batch, if any, sealed */
    ck_assert_int_eq(store_wait_committed(st, t0, WAIT_NS), 0);
    ck_assert(store_committed(st, t0));
    ck_assert_int_eq(store_append(st, w.session_id, NULL, 0, 3), 0);
    uint64_t t1 = store_flush_ticket(st);
    ck_assert_uint_eq(t1, t0 + 1); /* the append's batch */
    ck_assert(!store_committed(st, t1 + 1)); /* nothing sealed that far */
    ck_assert_int_eq(store_wait_committed(st, t1, WAIT_NS), 0);
    ck_assert(store_committed(st, t1));
    ck_assert_uint_eq(store_flush_ticket(st), t1); /* nothing new: no new batch */
    store_close(st);
}
END_TEST

START_TEST(test_store_append_eagain_over_limit)
{
    struct store_config c = config(0, 1000);
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), 0);
    struct record_welcome w = session(st, "j", 0, "");
    char line[600];
    memset(line, 'a', sizeof line - 1);
    line[0] = '{';
    line[sizeof line - 2] = '}';
    line[sizeof line - 1] = '\0';
    struct record r = trace(line, 'i', 1, 0, 0);
    ck_assert_int_eq(store_append(st, w.session_id, &r, 1, 1), 0);
    r.seq = 1;
    ck_assert_int_eq(store_append(st, w.session_id, &r, 1, 2), -EAGAIN); /* taken anyway */
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    ck_assert_int_eq(store_query_events(st, w.job_id, -1, INT64_MIN, INT64_MAX, -1, count_cb, NULL),
                     2);
    ck_assert_int_eq(store_append(st, w.session_id, &r, 1, 3), 0);
    store_close(st);
}
END_TEST

static uint64_t rng = 88172645463325252ULL;
static uint64_t xorshift(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One flush of 50 incompressible-ish lines numbered from first. */
static void append_random(struct store *st, int64_t session_id, uint64_t first)
{
    static char lines[50][260];
    struct record r[50];
    for (int i = 0; i < 50; i++) {
        int k = snprintf(lines[i], sizeof lines[i], "{\"n\":%" PRIu64 ",\"x\":\"", first + (uint64_t)i);
        while (k < 250)
            k += snprintf(lines[i] + k, sizeof lines[i] - (size_t)k, "%016" PRIx64, xorshift());
        lines[i][250] = '\0';
        strcat(lines[i], "\"}");
        r[i] = trace(lines[i], 'X', (int64_t)(first + (uint64_t)i) * 1000, 10, first + (uint64_t)i);
    }
    ck_assert_int_eq(store_append(st, session_id, r, 50, first + 50), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
}

static int first_n_cb(void *ud, const char *line, size_t len)
{
    (void)len;
    uint64_t *first = ud;
    if (*first == UINT64_MAX)
        *first = strtoull(line + 5, NULL, 10);
    return 0;
}

START_TEST(test_store_retention_evicts_oldest)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "ret", 0, "");
    append_random(st, w.session_id, 0);
    struct store_job j;
    ck_assert_int_eq(store_query_job(st, "ret", &j), 0);
    int64_t block = j.stored_bytes;
    ck_assert_int_gt(block, 1000);
    store_close(st);

    /* Room for about two and a half blocks. */
    uint64_t cap = (uint64_t)block * 5 / 2;
    st = open_ok(cap);
    w = session(st, "ret", 0, "");
    for (uint64_t f = 1; f <= 10; f++)
        append_random(st, w.session_id, f * 50);
    ck_assert_int_eq(store_query_job(st, "ret", &j), 0);
    ck_assert_int_le(j.stored_bytes, (int64_t)cap);
    ck_assert_int_eq(j.events, 550);
    int64_t kept = store_query_events(st, j.id, -1, INT64_MIN, INT64_MAX, -1, count_cb, NULL);
    ck_assert_int_ge(kept, 100);
    ck_assert_int_le(kept, 150);
    ck_assert_int_eq(j.evicted_events, 550 - kept);
    ck_assert_uint_eq(STATS_GET(&stats, evicted_events), (uint64_t)(550 - kept));
    ck_assert_uint_eq(STATS_GET(&stats, evicted_blocks), (uint64_t)(550 - kept) / 50);
    ck_assert_uint_gt(STATS_GET(&stats, evicted_bytes), 0);
    /* The newest survive. */
    uint64_t first = UINT64_MAX;
    store_query_events(st, j.id, -1, INT64_MIN, INT64_MAX, -1, first_n_cb, &first);
    ck_assert_uint_eq(first, (uint64_t)(550 - kept));
    struct store_info info;
    ck_assert_int_eq(store_query_info(st, &info), 0);
    ck_assert_int_eq(info.blocks, kept / 50);
    ck_assert_int_eq(info.block_bytes, j.stored_bytes);
    store_close(st);
}
END_TEST

START_TEST(test_store_big_append_splits_blocks)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "big", 0, "");
    static char line[241];
    memset(line, 'z', 240);
    line[0] = '{';
    line[239] = '}';
    enum { N = 12000 }; /* about 2.8 MiB */
    static struct record r[N];
    for (int i = 0; i < N; i++)
        r[i] = trace(line, 'X', i, 1, (uint64_t)i);
    for (int i = 0; i < N; i += 1000)
        ck_assert_int_eq(store_append(st, w.session_id, r + i, 1000, (uint64_t)i + 1000), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    count_cb_n = 0;
    ck_assert_int_eq(store_query_events(st, w.job_id, 0, INT64_MIN, INT64_MAX, -1, count_cb, NULL),
                     N);
    ck_assert_int_eq(count_cb_n, N);
    struct store_info info;
    ck_assert_int_eq(store_query_info(st, &info), 0);
    ck_assert_int_ge(info.blocks, 3);
    ck_assert_int_eq(info.block_raw_bytes, (int64_t)N * 241);
    ck_assert_int_lt(info.block_bytes, info.block_raw_bytes / 10);
    /* Blocks partition time: a narrow range reads one block, not all. */
    int64_t one = store_query_events(st, w.job_id, 0, 100, 101, -1, count_cb, NULL);
    ck_assert_int_gt(one, 0);
    ck_assert_int_lt(one, N / 2);
    store_close(st);
}
END_TEST

START_TEST(test_store_names_exact)
{
    const char *names[] = {"a \"quoted\" job", "<script>alert(1)</script>",
                           "\xe8\xae\xad\xe7\xbb\x83-\xf0\x9f\x9a\x80", "123abc", "42"};
    struct store *st = open_ok(0);
    for (size_t i = 0; i < 5; i++)
        session(st, names[i], 0, "");
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    struct store_job *jobs = NULL;
    size_t n = 0;
    ck_assert_int_eq(store_query_jobs(st, &jobs, &n), 0);
    ck_assert_uint_eq(n, 5);
    for (size_t i = 0; i < 5; i++) {
        bool found = false;
        for (size_t k = 0; k < n; k++)
            found = found || strcmp(jobs[k].name, names[i]) == 0;
        ck_assert_msg(found, "%s", names[i]);
    }
    free(jobs);
    struct store_job j;
    ck_assert_int_eq(store_query_job(st, names[2], &j), 0);
    ck_assert_str_eq(j.name, names[2]);
    /* "42" is a name, but no job has id 42: the name wins. "3" is id 3. */
    ck_assert_int_eq(store_query_job(st, "42", &j), 0);
    ck_assert_str_eq(j.name, "42");
    ck_assert_int_eq(store_query_job(st, "3", &j), 0);
    ck_assert_str_eq(j.name, names[2]);
    store_close(st);
}
END_TEST

START_TEST(test_store_on_durable_optional)
{
    struct store_config c = config(0, 0);
    c.on_durable = NULL;
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), 0);
    session(st, "j", 0, "");
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0); /* no callback: fine */
    store_close(st);
}
END_TEST

static _Atomic int durable_calls;
static void on_durable(void *ud)
{
    (void)ud;
    durable_calls++;
}

START_TEST(test_store_on_durable_wakes)
{
    struct store_config c = config(0, 0);
    c.on_durable = on_durable;
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    ck_assert_int_eq(store_open(&c, &st, err), 0);
    struct record_welcome w = session(st, "j", 0, "");
    ck_assert_int_eq(store_append(st, w.session_id, NULL, 0, 1), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    /* The writer wakes flush_wait() when it publishes, and calls on_durable just after: wait a
     * bounded time for the call rather than assume the order. */
    for (int i = 0; i < 5000 && durable_calls < 1; i++)
        usleep(1000);
    ck_assert_int_ge(durable_calls, 1);
    store_close(st);
}
END_TEST

START_TEST(test_store_event_iter_exact_window)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "iter", 0, "s0");
    /* ts/dur the store reads from the line itself; the args members must not answer for them. */
    static const char *const lines[] = {
        ("{\"ph\":\"X\",\"args\":{\"ts\":1,\"pid\":9,\"s\":\"}\\\"{\"},\"ts\":1000,\"dur\":50,"
         "\"pid\":\"GPU 0\"}"),
        "{\"ph\":\"X\",\"ts\":2000,\"dur\":10,\"pid\":3}",
        "{\"ph\":\"i\",\"ts\":3000.5,\"pid\":3,\"dur\":-4}",
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3,\"args\":{\"name\":\"p\"}}",
    };
    int64_t ts[] = {1000000, 2000000, 3000500, INT64_MIN};
    int64_t dur[] = {50000, 10000, 0, 0};
    char ph[] = {'X', 'X', 'i', 'M'};
    struct record recs[4];
    for (size_t i = 0; i < 4; i++)
        recs[i] = trace(lines[i], ph[i], ts[i], dur[i], i);
    ck_assert_int_eq(store_append(st, w.session_id, recs, 4, 4), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
    static const struct {
        int64_t t0, t1;
        const char *want; /* the first char of each name given: X, x (second X), i, M */
    } cases[] = {
        {INT64_MIN, INT64_MAX, "XxiM"},
        {1040000, 1999999, "XM"},  /* overlaps the first span's tail only */
        {1050001, 1999999, "M"},   /* between the spans: metadata only */
        {2010000, 3000500, "xiM"}, /* touching ends count */
        {3000501, 9000000, "M"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct store_event_iter *it = NULL;
        ck_assert_int_eq(store_event_iter_new(st, w.job_id, 0, cases[c].t0, cases[c].t1, &it), 0);
        char got[8] = "";
        size_t n = 0;
        struct store_event ev;
        int r;
        while ((r = store_event_iter_next(it, &ev)) == 1 && n < 7) {
            if (ev.len == strlen(lines[0]) && memcmp(ev.line, lines[0], ev.len) == 0) {
                got[n++] = 'X';
                ck_assert_int_eq(ev.ts_ns, 1000000);
                ck_assert_int_eq(ev.dur_ns, 50000);
                ck_assert_uint_eq(ev.pid_len, 7);
                ck_assert_int_eq(memcmp(ev.pid, "\"GPU 0\"", 7), 0);
            } else if (ev.ts_ns == 2000000) {
                got[n++] = 'x';
                ck_assert_int_eq(ev.dur_ns, 10000);
            } else if (ev.ts_ns == 3000500) {
                got[n++] = 'i';
                ck_assert_int_eq(ev.dur_ns, 0); /* a negative dur reads as none */
            } else {
                ck_assert_int_eq(ev.ts_ns, INT64_MIN);
                ck_assert_uint_eq(ev.pid_len, 1);
                got[n++] = 'M';
            }
        }
        ck_assert_int_eq(r, 0);
        got[n] = '\0';
        ck_assert_msg(strcmp(got, cases[c].want) == 0, "case %zu: %s", c, got);
        store_event_iter_free(it);
    }
    struct store_event_iter *it = NULL;
    ck_assert_int_eq(store_event_iter_new(st, w.job_id + 99, -1, 0, 1, &it), -ENOENT);
    ck_assert_ptr_null(it);
    store_event_iter_free(NULL);
    store_close(st);
}
END_TEST

/* The shipper's side: rows come past the cursor with an identity that does not depend on how
 * they are read, only X and B events count as spans, the cursor survives a reopen, and a read
 * past everything gives nothing. */
#define SHIP_PIPE "{\"type\":\"pipeline\",\"ops\":[{\"id\":0,\"name\":\"map\"}]}"

/* A host sample and a pipeline record at sequence number seq, as ship_host and ship_pipe want. */
static void ship_host_pipe(struct record *r, uint64_t seq)
{
    r[0] = (struct record){.kind = RECORD_HOST, .seq = seq, .raw = "{}", .raw_len = 2,
                           .ts_ns = 2500000, .cpu_percent = 150.5, .sys_cpu_percent = 40.25,
                           .rss_bytes = INT64_C(1) << 30, .step = -1, .capacity = -1,
                           .samples = -1, .size = -1};
    r[1] = (struct record){.kind = RECORD_PIPELINE, .seq = seq + 1, .raw = SHIP_PIPE,
                           .raw_len = strlen(SHIP_PIPE), .ts_ns = 3000000, .step = -1,
                           .capacity = -1, .samples = -1, .size = -1};
}

struct ship_seen {
    int64_t spans, steps, queues, sessions, hosts, pipes, blocks, block_lines;
    int64_t last_block;
    uint32_t last_idx;
    char name[64];
    const char *job; /* the job every row must be of: NULL "ship", "*" any */
};

/* A block whole, after its spans: its lines, the index of its last span below them, and its data
 * as the store keeps it (a zstd frame of raw_bytes, or the lines themselves). */
static int ship_block(void *ud, const char *job, int64_t rank, const struct store_ship_block *b)
{
    struct ship_seen *s = ud;
    ck_assert_int_eq(b->id, s->last_block);
    ck_assert_uint_gt(b->lines, s->last_idx);
    ck_assert(b->codec == STORE_SHIP_CODEC_ZSTD || b->codec == STORE_SHIP_CODEC_NONE);
    if (b->codec == STORE_SHIP_CODEC_ZSTD)
        ck_assert_uint_eq(ZSTD_getFrameContentSize(b->data, b->len), (uint64_t)b->raw_bytes);
    else
        ck_assert_uint_eq(b->len, (uint64_t)b->raw_bytes);
    ck_assert_int_ge(b->t_min_ns, 0);
    s->blocks++;
    s->block_lines += b->lines;
    return 0;
}

static int ship_span(void *ud, const char *job, int64_t rank, int64_t block_id, uint32_t idx,
                     const struct store_event *ev)
{
    struct ship_seen *s = ud;
    if (!s->job || strcmp(s->job, "*") != 0)
        ck_assert_str_eq(job, s->job ? s->job : "ship");
    ck_assert(ev->ph == 'X' || ev->ph == 'B');
    ck_assert(block_id > s->last_block || (block_id == s->last_block && idx > s->last_idx) ||
              s->spans == 0);
    s->last_block = block_id;
    s->last_idx = idx;
    if (s->spans == 0)
        snprintf(s->name, sizeof s->name, "%.*s", (int)ev->name_len, ev->name);
    s->spans++;
    return 0;
}

static int ship_step(void *ud, const char *job, const struct store_ship_step *st)
{
    struct ship_seen *s = ud;
    ck_assert_int_eq(st->end_ns - st->begin_ns, 900);
    s->steps++;
    return 0;
}

static int ship_queue(void *ud, const char *job, const struct store_ship_queue *q)
{
    ((struct ship_seen *)ud)->queues++;
    return 0;
}

static int ship_host(void *ud, const char *job, const struct store_ship_host *h)
{
    ck_assert(h->cpu_percent == 150.5 && h->sys_cpu_percent == 40.25);
    ck_assert_int_eq(h->rss_bytes, INT64_C(1) << 30);
    ((struct ship_seen *)ud)->hosts++;
    return 0;
}

static int ship_pipe(void *ud, const char *job, const struct store_ship_pipe *p)
{
    ck_assert_int_eq(p->json_len, strlen(SHIP_PIPE));
    ck_assert(memcmp(p->json, SHIP_PIPE, p->json_len) == 0);
    ((struct ship_seen *)ud)->pipes++;
    return 0;
}

static int ship_session(void *ud, const char *job, const struct store_ship_session *se)
{
    struct ship_seen *s = ud;
    if (!s->job || strcmp(s->job, "*") != 0)
        ck_assert_str_eq(job, s->job ? s->job : "ship");
    if (!s->job)
        ck_assert_int_eq(se->rank, 2);
    s->sessions++;
    return 0;
}

START_TEST(test_store_ship_cursor)
{
    struct store *st = open_ok(0);
    struct record_welcome w = session(st, "ship", 2, "");
    enum { N = 3000 };
    static struct record r[N + 5];
    for (int i = 0; i < N; i++)
        r[i] = trace(i % 3 == 2 ? "{\"ph\":\"i\",\"name\":\"mark\",\"ts\":1}"
                                : "{\"ph\":\"X\",\"name\":\"k\\\"1\",\"ts\":1,\"dur\":2,\"tid\":7}",
                     i % 3 == 2 ? 'i' : 'X', i, 1, (uint64_t)i);
    r[N] = (struct record){.kind = RECORD_STEP, .seq = N, .raw = "", .step = 4, .ts_ns = 100,
                           .dur_ns = 900, .samples = -1, .size = -1, .capacity = -1};
    r[N + 1] = r[N];
    r[N + 1].seq = N + 1;
    r[N + 2] = (struct record){.kind = RECORD_QUEUE, .seq = N + 2, .raw = "", .step = 1,
                               .ts_ns = 5, .size = 2, .capacity = 8, .samples = -1,
                               .name = {"q", 1}};
    ship_host_pipe(&r[N + 3], N + 3);
    ck_assert_int_eq(store_append(st, w.session_id, r, N + 5, N + 5), 0);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);

    char err[STORE_ERR_MAX];
    struct store_ship *sh;
    struct store_ship_cursor cur, to;
    ck_assert_int_eq(store_ship_open(st, "http://ch:8123", &sh, &cur, err), 0);
    ck_assert_int_eq(cur.block + cur.step + cur.queue, 0);
    int64_t pending;
    ck_assert_int_eq(store_ship_pending(sh, &cur, &pending), 0);
    ck_assert_int_eq(pending, N + 5);
    struct ship_seen seen = {0};
    struct store_ship_sink sink = {ship_session, ship_span, ship_step, ship_queue, &seen,
                                   NULL,         ship_host, ship_pipe, ship_block};
    ck_assert_int_eq(store_ship_read(sh, &cur, 1 << 20, &sink, &to), 2 * N / 3 + 5 + 1);
    ck_assert_int_gt(seen.blocks, 0);
    ck_assert_int_eq(seen.block_lines, N); /* every line, not only the spans */
    ck_assert_int_eq(seen.sessions, 1);
    ck_assert_int_eq(seen.hosts, 1);
    ck_assert_int_eq(seen.pipes, 1);
    ck_assert_int_eq(seen.spans, 2 * N / 3);
    ck_assert_int_eq(seen.steps, 2);
    ck_assert_int_eq(seen.queues, 1);
    ck_assert_str_eq(seen.name, "\"k\\\"1\""); /* the raw JSON text: the shipper unescapes */
    ck_assert_int_gt(to.block, 0);
    ck_assert_int_eq(store_ship_save(sh, &to), 0);
    store_ship_close(sh);
    store_close(st);

    /* Reopened: the cursor is where it was saved, and nothing is left to read. */
    st = open_ok(0);
    ck_assert_int_eq(store_ship_open(st, "http://ch:8123", &sh, &cur, err), 0);
    ck_assert_int_eq(cur.block, to.block);
    ck_assert_int_eq(cur.step, to.step);
    ck_assert_int_eq(cur.queue, to.queue);
    ck_assert_int_eq(cur.host, to.host);
    ck_assert_int_eq(cur.pipe, to.pipe);
    ck_assert_int_gt(to.host, 0);
    ck_assert_int_gt(to.pipe, 0);
    ck_assert_int_eq(store_ship_pending(sh, &cur, &pending), 0);
    ck_assert_int_eq(pending, 0);
    memset(&seen, 0, sizeof seen);
    ck_assert_int_eq(store_ship_read(sh, &cur, 100, &sink, &to), 0);
    ck_assert_int_eq(memcmp(&cur, &to, sizeof cur), 0);
    store_ship_close(sh);
    /* Another target starts from the beginning, and reads the same rows in small batches. */
    ck_assert_int_eq(store_ship_open(st, "http://other:8123", &sh, &cur, err), 0);
    ck_assert_int_eq(cur.block, 0);
    memset(&seen, 0, sizeof seen);
    int64_t total = 0, n;
    while ((n = store_ship_read(sh, &cur, 10, &sink, &to)) > 0) {
        total += n;
        cur = to;
    }
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq(total, 2 * N / 3 + 5 + 1);
    store_ship_close(sh);
    store_close(st);
}
END_TEST

/* A job's spans, one step, one queue sample, one host sample and one pipeline record,
 * committed, its session closed. */
static void ship_job(struct store *st, const char *job)
{
    struct record_welcome w = session(st, job, 0, "");
    static struct record r[5];
    r[0] = trace("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2}", 'X', 1, 2, 0);
    r[1] = (struct record){.kind = RECORD_STEP, .seq = 1, .raw = "", .step = 4, .ts_ns = 100,
                           .dur_ns = 900, .samples = -1, .size = -1, .capacity = -1};
    r[2] = (struct record){.kind = RECORD_QUEUE, .seq = 2, .raw = "", .step = 1, .ts_ns = 5,
                           .size = 2, .capacity = 8, .samples = -1, .name = {"q", 1}};
    ship_host_pipe(&r[3], 3);
    ck_assert_int_eq(store_append(st, w.session_id, r, 5, 5), 0);
    store_session_close(st, w.session_id, true);
    ck_assert_int_eq(store_flush_wait(st, WAIT_NS), 0);
}

static int64_t ship_all(struct store_ship *sh, struct store_ship_cursor *cur, const char *job)
{
    struct ship_seen seen = {.job = job};
    struct store_ship_sink sink = {ship_session, ship_span, ship_step, ship_queue, &seen,
                                   NULL,         ship_host, ship_pipe, NULL};
    struct store_ship_cursor to;
    int64_t n = store_ship_read(sh, cur, 1 << 20, &sink, &to);
    if (n > 0) {
        ck_assert_int_eq(store_ship_save(sh, &to), 0);
        *cur = to;
    }
    return n;
}

/* A deleted job: queued for the shipper in the transaction that deleted it, reads and saves
 * refused until the shipper carried it out, and the cursor brought down to the tables' last
 * rowids, which the next job's rows take again (they must ship). */
START_TEST(test_store_ship_deletes)
{
    struct store *st = open_ok(0);
    ship_job(st, "old");
    ship_job(st, "it's");
    char err[STORE_ERR_MAX], name[64];
    struct store_ship *sh;
    struct store_ship_cursor cur, low, to;
    ck_assert_int_eq(store_ship_open(st, "http://ch:8123", &sh, &cur, err), 0);
    ck_assert_int_eq(cur.del, 0);
    ck_assert_int_eq(ship_all(sh, &cur, "*"), 12); /* each job: its session and 5 rows */
    int64_t job_id, id, n;
    uint64_t ticket;
    ck_assert_int_eq(store_job_delete(st, "it's", &job_id, &ticket), 0);
    ck_assert_int_eq(store_wait_committed(st, ticket, WAIT_NS), 0);

    struct ship_seen seen = {0};
    struct store_ship_sink sink = {ship_session, ship_span, ship_step, ship_queue, &seen,
                                   NULL,         ship_host, ship_pipe, NULL};
    ck_assert_int_eq(store_ship_read(sh, &cur, 100, &sink, &to), -EAGAIN);
    ck_assert_int_eq(store_ship_save(sh, &cur), -EAGAIN);
    ck_assert_int_eq(store_ship_deletes_pending(sh, cur.del, &n), 0);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(store_ship_reload(sh, &low), 0);
    ck_assert_int_lt(low.block, cur.block);
    ck_assert_int_lt(low.step, cur.step);
    ck_assert_int_lt(low.queue, cur.queue);
    ck_assert_int_lt(low.host, cur.host);
    ck_assert_int_lt(low.pipe, cur.pipe);
    ck_assert_int_lt(low.session, cur.session);
    ck_assert_int_eq(store_ship_next_delete(sh, low.del, &id, name, sizeof name), 1);
    ck_assert_str_eq(name, "it's");
    ck_assert_int_eq(store_ship_delete_done(sh, id), 0);
    low.del = id;
    ck_assert_int_eq(store_ship_next_delete(sh, low.del, &id, name, sizeof name), 0);
    ck_assert_int_eq(store_ship_deletes_pending(sh, low.del, &n), 0);
    ck_assert_int_eq(n, 0);

    /* The next job's rows take the deleted rows' rowids: read from the lowered cursor. */
    ship_job(st, "new");
    cur = low;
    ck_assert_int_eq(ship_all(sh, &cur, "new"), 6);
    ck_assert_int_eq(ship_all(sh, &cur, "new"), 0);
    store_ship_close(sh);
    /* A target opened after the delete has nothing of it to carry out. */
    ck_assert_int_eq(store_ship_open(st, "http://other:8123", &sh, &cur, err), 0);
    ck_assert_int_eq(cur.del, id);
    ck_assert_int_eq(ship_all(sh, &cur, "*"), 12);
    store_ship_close(sh);
    store_close(st);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("open");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_store_open_creates_wal_db);
    tcase_add_test(tc, test_store_open_locked_dir_busy);
    tcase_add_test(tc, test_store_open_corrupt_db_eio);
    tcase_add_test(tc, test_store_open_newer_schema_eproto);
    tcase_add_test(tc, test_store_open_foreign_db_eio);
    tcase_add_test(tc, test_store_rank_live_steps);
    tcase_add_test(tc, test_store_ship_cursor);
    tcase_add_test(tc, test_store_ship_deletes);
    tcase_add_test(tc, test_store_open_readonly_dir);
    suite_add_tcase(s, tc);

    tc = tcase_create("session");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_store_session_open_welcome);
    tcase_add_test(tc, test_store_query_hellos_after_reopen);
    tcase_add_test(tc, test_store_session_stream_busy);
    tcase_add_test(tc, test_store_append_unknown_session);
    tcase_add_test(tc, test_store_names_exact);
    suite_add_tcase(s, tc);

    tc = tcase_create("write");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, test_store_append_roundtrip);
    tcase_add_test(tc, test_store_event_iter_exact_window);
    tcase_add_test(tc, test_store_reopen_persists);
    tcase_add_test(tc, test_store_append_seq_only);
    tcase_add_test(tc, test_store_flush_ticket_committed);
    tcase_add_test(tc, test_store_append_eagain_over_limit);
    tcase_add_test(tc, test_store_retention_evicts_oldest);
    tcase_add_test(tc, test_store_big_append_splits_blocks);
    tcase_add_test(tc, test_store_on_durable_optional);
    tcase_add_test(tc, test_store_on_durable_wakes);
    tcase_add_test(tc, test_store_job_commits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(base_dir, sizeof base_dir, "%s/test_store.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(base_dir)) {
        perror("mkdtemp");
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(store_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    rm_rf(base_dir);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
