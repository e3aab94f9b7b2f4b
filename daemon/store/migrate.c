/* SPDX-License-Identifier: MIT */
/*
 * migrate: the database schema and its versions. PRAGMA user_version says which schema a file
 * has; each step below brings it one version up inside a transaction, so a crash mid-migration
 * leaves the old version intact. A file from a newer stepscope is refused rather than guessed at,
 * and a file that holds tables but no version is someone else's database.
 *
 * Timeline events are not rows: they are kept verbatim in zstd blocks (one per ~1 MiB of lines per
 * job and rank and flush), because SQLite inserts rows far slower than training emits events. The
 * jobs and ranks tables carry running counters so that listing jobs never scans data.
 */
#include "store_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char schema_v1[] =
    "CREATE TABLE jobs("
    " id INTEGER PRIMARY KEY,"
    " name TEXT NOT NULL UNIQUE,"
    " first_seen_ns INTEGER NOT NULL,"
    " last_seen_ns INTEGER NOT NULL,"
    " world_size INTEGER NOT NULL DEFAULT 1,"
    " spans INTEGER NOT NULL DEFAULT 0,"
    " events INTEGER NOT NULL DEFAULT 0,"
    " steps_n INTEGER NOT NULL DEFAULT 0,"
    " queue_samples INTEGER NOT NULL DEFAULT 0,"
    " host_samples INTEGER NOT NULL DEFAULT 0,"
    " pipelines INTEGER NOT NULL DEFAULT 0,"
    " blocks INTEGER NOT NULL DEFAULT 0,"
    " stored_bytes INTEGER NOT NULL DEFAULT 0,"
    " stored_raw_bytes INTEGER NOT NULL DEFAULT 0,"
    " evicted_blocks INTEGER NOT NULL DEFAULT 0,"
    " evicted_events INTEGER NOT NULL DEFAULT 0,"
    " evicted_bytes INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE ranks("
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " events INTEGER NOT NULL DEFAULT 0,"
    " spans INTEGER NOT NULL DEFAULT 0,"
    " steps INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(job_id, rank)) WITHOUT ROWID;"
    "CREATE TABLE streams("
    " id INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " key TEXT NOT NULL,"
    " next_seq INTEGER NOT NULL DEFAULT 0);"
    "CREATE UNIQUE INDEX streams_key ON streams(job_id, rank, key) WHERE key <> '';"
    "CREATE TABLE sessions("
    " id INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " stream_id INTEGER NOT NULL REFERENCES streams(id),"
    " hello TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " pid INTEGER NOT NULL,"
    " framework TEXT NOT NULL,"
    " framework_version TEXT NOT NULL,"
    " run TEXT NOT NULL,"
    " clock TEXT NOT NULL,"
    " world_size INTEGER NOT NULL,"
    " started_ns INTEGER NOT NULL,"
    " ended_ns INTEGER,"
    " clean INTEGER);"
    "CREATE INDEX sessions_job ON sessions(job_id, rank);"
    "CREATE TABLE blocks("
    " id INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " t_min_ns INTEGER NOT NULL,"
    " t_max_ns INTEGER NOT NULL,"
    " n_events INTEGER NOT NULL,"
    " raw_bytes INTEGER NOT NULL,"
    " codec INTEGER NOT NULL,"
    " data BLOB NOT NULL);"
    "CREATE INDEX blocks_time ON blocks(job_id, rank, t_min_ns);"
    "CREATE INDEX blocks_job ON blocks(job_id);"
    "CREATE TABLE steps("
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " step INTEGER NOT NULL,"
    " begin_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL,"
    " samples INTEGER NOT NULL,"
    " phases TEXT,"
    " seq INTEGER NOT NULL);"
    "CREATE INDEX steps_job ON steps(job_id, rank, step);"
    "CREATE TABLE queue_samples("
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " name TEXT NOT NULL,"
    " ts_ns INTEGER NOT NULL,"
    " step INTEGER NOT NULL,"
    " size INTEGER NOT NULL,"
    " capacity INTEGER NOT NULL);"
    "CREATE INDEX queue_samples_job ON queue_samples(job_id, rank, ts_ns);"
    "CREATE TABLE host_samples("
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " ts_ns INTEGER NOT NULL,"
    " cpu_percent REAL NOT NULL,"
    " sys_cpu_percent REAL NOT NULL,"
    " rss_bytes INTEGER NOT NULL);"
    "CREATE INDEX host_samples_job ON host_samples(job_id, rank, ts_ns);"
    "CREATE TABLE pipelines("
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " rank INTEGER NOT NULL,"
    " ts_ns INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " json TEXT NOT NULL);"
    "CREATE INDEX pipelines_job ON pipelines(job_id, rank, seq);";

/* Version 2: on-demand captures (docs/API.md), one row per capture and one per (capture, rank). */
static const char schema_v2[] =
    "CREATE TABLE captures("
    " id INTEGER PRIMARY KEY,"
    " job_id INTEGER NOT NULL REFERENCES jobs(id),"
    " created_ns INTEGER NOT NULL,"
    " start_step INTEGER NOT NULL," /* -1: the next step */
    " steps INTEGER NOT NULL,"
    " all_ranks INTEGER NOT NULL,"
    " what TEXT NOT NULL);"          /* comma-separated */
    "CREATE INDEX captures_job ON captures(job_id);"
    "CREATE TABLE capture_ranks("
    " capture_id INTEGER NOT NULL,"
    " rank INTEGER NOT NULL,"
    " state TEXT NOT NULL,"
    " reason TEXT NOT NULL,"
    " updated_ns INTEGER NOT NULL,"
    " PRIMARY KEY(capture_id, rank)) WITHOUT ROWID;";

/* Version 3: each rank's step count as live analysis lists it (store_rank_live_steps()), NULL
 * until live reports one (a database of version 2: until the job is next loaded). */
static const char schema_v3[] = "ALTER TABLE ranks ADD COLUMN live_steps INTEGER;";

/* Version 4: where the cluster shipper (daemon/cluster) has got to, per target (a ClickHouse URL
 * without its credentials): the last blocks, steps and queue_samples rowid it shipped
 * (store_ship.h). */
static const char schema_v4[] =
    "CREATE TABLE ship_cursors("
    " target TEXT PRIMARY KEY,"
    " block INTEGER NOT NULL,"
    " step INTEGER NOT NULL,"
    " queue INTEGER NOT NULL,"
    " updated_ns INTEGER NOT NULL);";

/* Version 5: jobs deleted here whose rows the cluster shipper must delete in ClickHouse too
 * (store_ship.h), in order; each target's cursor gains the last one it carried out (del). The
 * writer queues a job only once a shipper opened (a ship_cursors row exists); AUTOINCREMENT so
 * that an id is never given twice once carried-out rows are pruned. */
static const char schema_v5[] =
    "CREATE TABLE ship_deletes("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " job TEXT NOT NULL,"
    " deleted_ns INTEGER NOT NULL);"
    "ALTER TABLE ship_cursors ADD COLUMN del INTEGER NOT NULL DEFAULT 0;";

/* Version 6: the cluster view (daemon/cluster/pull.c, store_pull.h). The shipper's cursor also
 * counts the sessions it shipped; the puller keeps, per origin node, the last span (block, idx),
 * step and queue-sample row it fed, per pulled stream the sequence number its next line takes
 * (both saved in one transaction once the lines were acknowledged), and the ranks that more than
 * one node shipped (only one is kept; the job's answer names the others). A pulled session is one
 * whose hello carries "origin" (the node it came from). */
static const char schema_v6[] =
    "ALTER TABLE ship_cursors ADD COLUMN session INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE pull_cursors("
    " origin TEXT PRIMARY KEY,"
    " block INTEGER NOT NULL,"
    " idx INTEGER NOT NULL,"
    " step INTEGER NOT NULL,"
    " queue INTEGER NOT NULL,"
    " updated_ns INTEGER NOT NULL);"
    "CREATE TABLE pull_streams("
    " origin TEXT NOT NULL,"
    " job TEXT NOT NULL,"
    " rank INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " PRIMARY KEY(origin, job, rank)) WITHOUT ROWID;"
    "CREATE TABLE pull_conflicts("
    " job TEXT NOT NULL,"
    " rank INTEGER NOT NULL,"
    " node TEXT NOT NULL,"
    " kept TEXT NOT NULL,"
    " PRIMARY KEY(job, rank, node)) WITHOUT ROWID;";

/* Version 7: repeated captures (docs/API.md "Captures"): a capture is a window of a series, the
 * series' first window's id (0 in rows from before: the capture alone), its index, and the
 * series' every and repeat; each rank's part keeps the step its window starts at (-1: unknown). */
static const char schema_v7[] =
    "ALTER TABLE captures ADD COLUMN series INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE captures ADD COLUMN series_window INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE captures ADD COLUMN series_every INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE captures ADD COLUMN series_repeat INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE capture_ranks ADD COLUMN first_step INTEGER NOT NULL DEFAULT -1;";

/* Version 8: host samples and pipeline records are shipped and pulled too (store_ship.h,
 * store_pull.h): the shipper's and the puller's cursors gain their last rowid (host, pipe). */
static const char schema_v8[] =
    "ALTER TABLE ship_cursors ADD COLUMN host INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE ship_cursors ADD COLUMN pipe INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE pull_cursors ADD COLUMN host INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE pull_cursors ADD COLUMN pipe INTEGER NOT NULL DEFAULT 0;";

/* Version 9: a job deleted on the node it was pulled from is deleted here too (store_pull.h,
 * daemon/cluster/pull.c): the puller's cursor gains the last of that node's deletes it carried
 * out (del: the node's ship_deletes id). */
static const char schema_v9[] = "ALTER TABLE pull_cursors ADD COLUMN del INTEGER NOT NULL DEFAULT 0;";

/* steps[i] migrates version i to i + 1. */
static const char *const steps[] = {schema_v1, schema_v2, schema_v3, schema_v4, schema_v5,
                                    schema_v6, schema_v7, schema_v8, schema_v9};

void store__errf(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, STORE_ERR_MAX, fmt, ap);
    va_end(ap);
}

int store__errno(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_OK:
        return 0;
    case SQLITE_NOMEM:
        return -ENOMEM;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return -EBUSY;
    case SQLITE_FULL:
        return -ENOSPC;
    case SQLITE_READONLY:
        return -EROFS;
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return -EACCES;
    case SQLITE_CANTOPEN:
        return -ENOENT;
    case SQLITE_TOOBIG:
        return -EMSGSIZE;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
        return -EINVAL;
    default: /* IOERR, CORRUPT, NOTADB, SCHEMA, ... */
        return -EIO;
    }
}

static int query_int(sqlite3 *db, const char *sql, int64_t *ret_v)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (rc == SQLITE_ROW) {
            *ret_v = sqlite3_column_int64(s, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(s);
    return rc;
}

int store__migrate(sqlite3 *db, const char *path, char *err)
{
    int64_t version = 0;
    int rc = query_int(db, "PRAGMA user_version", &version);
    if (rc != SQLITE_OK) {
        store__errf(err, "%s: cannot read the schema version: %s", path,
                 sqlite3_errmsg(db));
        return store__errno(rc) == -ENOMEM ? -ENOMEM : -EIO;
    }
    size_t known = sizeof steps / sizeof steps[0];
    if (version > (int64_t)known) {
        snprintf(err, STORE_ERR_MAX,
                 "%s has schema version %lld, written by a newer stepscope (this one knows %zu)",
                 path, (long long)version, known);
        return -EPROTO;
    }
    if (version == 0) {
        int64_t n_tables = 0;
        rc = query_int(db, "SELECT count(*) FROM sqlite_schema", &n_tables);
        if (rc != SQLITE_OK || n_tables != 0) {
            store__errf(err, "%s is an SQLite database but not a stepscope one", path);
            return -EIO;
        }
    }
    for (size_t v = (size_t)version; v < known; v++) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %zu", v + 1);
        char *msg = NULL;
        rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, steps[v], NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, "COMMIT", NULL, NULL, &msg);
        if (rc != SQLITE_OK) {
            store__errf(err, "%s: migrating to schema version %zu failed: %s", path,
                     v + 1, msg ? msg : sqlite3_errstr(rc));
            sqlite3_free(msg);
            (void)sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return store__errno(rc);
        }
    }
    return 0;
}
