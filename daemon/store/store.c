/* SPDX-License-Identifier: MIT */
/*
 * store: the loop thread's side of the store. store_open() takes the data dir (a flock'd lock file
 * holding the owner's pid), opens and checks the database, loads the job and keyed-stream tables
 * into memory and starts the writer thread (writer.c). From then on the loop thread never runs
 * SQL: job, stream and session ids are allocated in memory, and store_append() only copies lines
 * into the open batch (struct store_batch), so its cost per trace event is one memcpy and a few
 * counters. Every allocation an append needs is made before anything is copied, which is what lets
 * it promise "-ENOMEM: nothing taken". store_flush() seals the batch into the writer's queue.
 *
 * The in-memory tables are small intrusive hash tables: jobs by name, keyed streams by (job, rank,
 * key), open sessions by id. Sessions are inserted and removed under live_mu because HTTP threads
 * count them to answer `live`; everything else here belongs to the loop thread alone.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "store_int.h"

/* ---- small helpers shared by the folder ---- */

static uint64_t hash_i64(uint64_t h, int64_t v)
{
    return util_hash(h, &v, sizeof v);
}

/* Makes room for one more node, so that the insert that follows cannot fail. */
static int htab_reserve(struct store_htab *t)
{
    if (t->n < t->n_buckets)
        return 0;
    size_t nb = t->n_buckets ? t->n_buckets * 2 : 16;
    struct store_hnode **b = calloc(nb, sizeof *b);
    if (!b)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_buckets; i++) {
        struct store_hnode *n = t->buckets[i];
        while (n) {
            struct store_hnode *next = n->next;
            size_t j = n->hash & (nb - 1);
            n->next = b[j];
            b[j] = n;
            n = next;
        }
    }
    free(t->buckets);
    t->buckets = b;
    t->n_buckets = nb;
    return 0;
}

static void htab_insert(struct store_htab *t, struct store_hnode *n, uint64_t hash)
{
    n->hash = hash;
    size_t j = hash & (t->n_buckets - 1);
    n->next = t->buckets[j];
    t->buckets[j] = n;
    t->n++;
}

static void htab_remove(struct store_htab *t, struct store_hnode *n)
{
    struct store_hnode **pp = &t->buckets[n->hash & (t->n_buckets - 1)];
    while (*pp && *pp != n)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = n->next;
        t->n--;
    }
}

static struct store_hnode *htab_first(const struct store_htab *t, uint64_t hash)
{
    return t->n_buckets ? t->buckets[hash & (t->n_buckets - 1)] : NULL;
}

static uint64_t job_hash(const char *name)
{
    return util_hash(UTIL_HASH_SEED, name, strlen(name));
}

static uint64_t stream_hash(int64_t job_id, int64_t rank, const char *key)
{
    return util_hash(hash_i64(hash_i64(UTIL_HASH_SEED, job_id), rank), key, strlen(key));
}

static uint64_t session_hash(int64_t id)
{
    return hash_i64(UTIL_HASH_SEED, id);
}

static struct store_jobm *find_job(const struct store *st, const char *name)
{
    uint64_t h = job_hash(name);
    for (struct store_hnode *n = htab_first(&st->jobs, h); n; n = n->next) {
        struct store_jobm *j = (struct store_jobm *)n;
        if (n->hash == h && strcmp(j->name, name) == 0)
            return j;
    }
    return NULL;
}

static struct store_stream *find_stream(const struct store *st, int64_t job_id, int64_t rank,
                                        const char *key)
{
    uint64_t h = stream_hash(job_id, rank, key);
    for (struct store_hnode *n = htab_first(&st->streams, h); n; n = n->next) {
        struct store_stream *s = (struct store_stream *)n;
        if (n->hash == h && s->job_id == job_id && s->rank == rank && strcmp(s->key, key) == 0)
            return s;
    }
    return NULL;
}

static struct store_session *find_session(const struct store *st, int64_t id)
{
    uint64_t h = session_hash(id);
    for (struct store_hnode *n = htab_first(&st->sessions, h); n; n = n->next) {
        struct store_session *s = (struct store_session *)n;
        if (s->id == id)
            return s;
    }
    return NULL;
}

static void stream_free(struct store_stream *s)
{
    if (s) {
        free(s->key);
        free(s);
    }
}

/* ---- the open batch ---- */

static struct store_batch *open_batch(struct store *st)
{
    if (!st->open) {
        st->open = calloc(1, sizeof *st->open);
        if (st->open)
            st->open->gen = ++st->batch_gen;
    }
    return st->open;
}

static bool batch_is_empty(const struct store_batch *b)
{
    return b->n_jobs == 0 && b->n_streams == 0 && b->n_sessions == 0 && b->n_slots == 0 &&
           b->n_ends == 0 && b->n_caps == 0 && b->n_cap_ranks == 0 && b->n_cap_forgets == 0 &&
           b->n_live_steps == 0 && b->n_dels == 0 && b->n_rank_dels == 0;
}

static int arena_reserve(struct store_batch *b, size_t n)
{
    return util_grow((void **)&b->arena, &b->arena_cap, b->arena_len + n, 1);
}

/* Only after arena_reserve() made room. */
static size_t arena_put(struct store_batch *b, const void *p, size_t n)
{
    size_t off = b->arena_len;
    if (n)
        memcpy(b->arena + off, p, n);
    b->arena_len += n;
    return off;
}

static void account(struct store *st, struct store_batch *b, uint64_t bytes)
{
    b->bytes += bytes;
    atomic_fetch_add_explicit(&st->buffered, bytes, memory_order_relaxed);
    STATS_ADD(st->stats, buffered_bytes, bytes);
}

/* ---- open and close ---- */

static int make_dirs(const char *dir, char *err)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p)
        return -ENOMEM;
    memcpy(p, dir, n + 1);
    int r = 0;
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST) {
            r = -errno;
            store__errf(err, "cannot create data dir %s: %s", p, strerror(errno));
            p[i] = c;
            goto out;
        }
        p[i] = c;
    }
    struct stat sb;
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
        r = stat(dir, &sb) < 0 ? -errno : -ENOTDIR;
        store__errf(err, "data dir %s is not a directory", dir);
        goto out;
    }
    if (access(dir, W_OK | X_OK) < 0) {
        r = -errno;
        store__errf(err, "data dir %s is not writable: %s", dir, strerror(errno));
        goto out;
    }
out:
    free(p);
    return r;
}

static int lock_dir(struct store *st, char *err)
{
    char path[CONFIG_PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/lock", st->data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        store__errf(err, "cannot write data dir %s: %s", st->data_dir, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int e = errno;
        if (e == EWOULDBLOCK) {
            char buf[32] = {0};
            ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
            long pid = k > 0 ? strtol(buf, NULL, 10) : 0;
            store__errf(err, "data dir %s is locked by another stepscoped (pid %ld)",
                     st->data_dir, pid);
            close(fd);
            return -EBUSY;
        }
        store__errf(err, "cannot lock %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    char buf[32];
    int k = snprintf(buf, sizeof buf, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)k, 0) != k) {
        int e = errno;
        store__errf(err, "cannot write %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    st->lock_fd = fd;
    return 0;
}

static int exec_sql(struct store *st, const char *sql, char *err)
{
    char *msg = NULL;
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        store__errf(err, "%s: %s failed: %s", st->db_path, sql,
                 msg ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return store__errno(rc);
    }
    return 0;
}

/* Runs sql (one row, one text column) and compares the answer with want. */
static int pragma_expect(struct store *st, const char *sql, const char *want, char *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    int r = 0;
    if (rc == SQLITE_ROW) {
        const unsigned char *v = sqlite3_column_text(s, 0);
        if (!v || strcmp((const char *)v, want) != 0) {
            store__errf(err, "%s: %s answered \"%.120s\"", st->db_path, sql,
                     v ? (const char *)v : "");
            r = -EIO;
        }
    } else {
        store__errf(err, "%s: %s failed: %s", st->db_path, sql, sqlite3_errmsg(st->db));
        r = store__errno(rc) == -ENOMEM ? -ENOMEM : -EIO;
    }
    sqlite3_finalize(s);
    return r;
}

static int open_db(struct store *st, enum config_durability durability, char *err)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    /* SQLite takes a 0-byte file for an empty database and fills it without a word; a store
     * truncated by accident (a copy that failed, a full disk at some earlier time) would then
     * start empty unnoticed. Say so in the log and in /api/v1/stats. */
    struct stat sb;
    if (stat(st->db_path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size == 0) {
        st->opened_empty_file = true;
        log_warn("store: %s is an empty file (0 bytes): starting an empty store in it; if it "
                 "held jobs, they were lost before this start",
                 st->db_path);
    }
    int rc = sqlite3_open_v2(st->db_path, &st->db, flags, NULL);
    if (rc != SQLITE_OK) {
        int e = st->db ? sqlite3_system_errno(st->db) : 0;
        store__errf(err, "cannot open %s: %s", st->db_path,
                 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc));
        return e ? -e : store__errno(rc);
    }
    if (sqlite3_db_readonly(st->db, "main") == 1) {
        store__errf(err, "%s is read-only", st->db_path);
        return access(st->db_path, W_OK) < 0 && errno == EROFS ? -EROFS : -EACCES;
    }
    sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
    /* quick_check reads every page once: it turns "not a database" and most corruption into a
     * clear refusal at start instead of a failed commit later. */
    sqlite3_stmt *s = NULL;
    rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &s, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        store__errf(err, "%s is not a database or is corrupt: %s", st->db_path,
                 sqlite3_errmsg(st->db));
        sqlite3_finalize(s);
        return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
    }
    const unsigned char *v = sqlite3_column_text(s, 0);
    if (!v || strcmp((const char *)v, "ok") != 0) {
        store__errf(err, "%s is corrupt: %.160s", st->db_path,
                 v ? (const char *)v : "?");
        sqlite3_finalize(s);
        return -EIO;
    }
    sqlite3_finalize(s);
    /* Big pages for a database of ~100 KiB blobs: a sixteenth of the write calls. Only takes
     * effect on a new, empty file. */
    int r = exec_sql(st, "PRAGMA page_size=65536", err);
    if (r < 0)
        return r;
    r = store__migrate(st->db, st->db_path, err);
    if (r < 0)
        return r;
    r = pragma_expect(st, "PRAGMA journal_mode=WAL", "wal", err);
    if (r < 0)
        return r;
    r = exec_sql(st,
                 durability == CONFIG_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
                                                      : "PRAGMA synchronous=NORMAL",
                 err);
    if (r == 0)
        r = exec_sql(st, "PRAGMA foreign_keys=ON", err);
    /* Checkpoint every 32 MiB of WAL (512 pages of 64 KiB): each checkpoint syncs the file. */
    if (r == 0)
        r = exec_sql(st, "PRAGMA wal_autocheckpoint=512", err);
    if (r == 0)
        r = exec_sql(st, "PRAGMA journal_size_limit=67108864", err);
    return r;
}

static int load_ids(struct store *st, const char *sql, int64_t *ret_next, char *err)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        *ret_next = sqlite3_column_int64(s, 0) + 1;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_OK) {
        store__errf(err, "%s: loading ids failed: %s", st->db_path,
                 sqlite3_errstr(rc));
        return store__errno(rc);
    }
    return 0;
}

static char *dup_text(const unsigned char *s)
{
    return strdup(s ? (const char *)s : "");
}

static int load_tables(struct store *st, char *err)
{
    int r = load_ids(st, "SELECT coalesce(max(id), 0) FROM jobs", &st->next_job_id, err);
    if (r == 0)
        r = load_ids(st, "SELECT coalesce(max(id), 0) FROM streams", &st->next_stream_id, err);
    if (r == 0)
        r = load_ids(st, "SELECT coalesce(max(id), 0) FROM sessions", &st->next_session_id, err);
    if (r < 0)
        return r;

    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(st->db, "SELECT id, name FROM jobs", -1, &s, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_jobm *j = calloc(1, sizeof *j);
        if (!j || htab_reserve(&st->jobs) < 0 || !(j->name = dup_text(sqlite3_column_text(s, 1)))) {
            free(j);
            rc = SQLITE_NOMEM;
            break;
        }
        j->id = sqlite3_column_int64(s, 0);
        htab_insert(&st->jobs, &j->node, job_hash(j->name));
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    s = NULL;
    if (rc == SQLITE_DONE)
        rc = sqlite3_prepare_v2(st->db,
                                "SELECT id, job_id, rank, key, next_seq FROM streams WHERE key <> ''",
                                -1, &s, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        struct store_stream *t = calloc(1, sizeof *t);
        if (!t || htab_reserve(&st->streams) < 0 || !(t->key = dup_text(sqlite3_column_text(s, 3)))) {
            free(t);
            rc = SQLITE_NOMEM;
            break;
        }
        t->id = sqlite3_column_int64(s, 0);
        t->job_id = sqlite3_column_int64(s, 1);
        t->rank = sqlite3_column_int64(s, 2);
        t->accepted_seq = (uint64_t)sqlite3_column_int64(s, 4);
        htab_insert(&st->streams, &t->node, stream_hash(t->job_id, t->rank, t->key));
        rc = SQLITE_OK;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE) {
        store__errf(err, "%s: loading jobs and streams failed: %s", st->db_path,
                 sqlite3_errstr(rc));
        return store__errno(rc);
    }
    /* Sessions still open in the file were cut by a crash or kill. */
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE sessions SET ended_ns = %" PRId64 ", clean = 0 "
             "WHERE ended_ns IS NULL", clock_now_ns());
    return exec_sql(st, sql, err);
}

static int init_sync(struct store *st)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -ENOMEM;
    (void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int e = pthread_mutex_init(&st->live_mu, NULL);
    if (e == 0 && (e = pthread_mutex_init(&st->mu, NULL)) != 0)
        pthread_mutex_destroy(&st->live_mu);
    if (e == 0 && (e = pthread_mutex_init(&st->pool_mu, NULL)) != 0) {
        pthread_mutex_destroy(&st->live_mu);
        pthread_mutex_destroy(&st->mu);
    }
    if (e == 0 && (e = pthread_cond_init(&st->cond, &ca)) != 0) {
        pthread_mutex_destroy(&st->live_mu);
        pthread_mutex_destroy(&st->mu);
        pthread_mutex_destroy(&st->pool_mu);
    }
    if (e == 0 && (e = pthread_cond_init(&st->pool_cond, NULL)) != 0) {
        pthread_mutex_destroy(&st->live_mu);
        pthread_mutex_destroy(&st->mu);
        pthread_mutex_destroy(&st->pool_mu);
        pthread_cond_destroy(&st->cond);
    }
    pthread_condattr_destroy(&ca);
    if (e != 0)
        return -e;
    st->mutexes_ready = true;
    return 0;
}

static char *path_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (p) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

static void store_free(struct store *st);

int store_open(const struct store_config *cfg, struct store **ret_st, char *err)
{
    err[0] = '\0';
    if (!cfg->data_dir || !cfg->data_dir[0] || strlen(cfg->data_dir) >= CONFIG_PATH_MAX) {
        store__errf(err, "no usable data dir given");
        return -EINVAL;
    }
    int r = -ENOMEM;
    struct store *st = calloc(1, sizeof *st);
    if (!st)
        goto fail;
    st->lock_fd = -1;
    st->stats = cfg->stats ? cfg->stats : &st->own_stats;
    st->retention_bytes = cfg->retention_bytes_per_job;
    st->max_buffered = cfg->max_buffered_bytes;
    st->min_free = cfg->min_free_bytes;
    st->on_durable = cfg->on_durable;
    st->ud = cfg->ud;
    st->data_dir = strdup(cfg->data_dir);
    st->db_path = path_join(cfg->data_dir, STORE_DB_NAME);
    st->wal_path = path_join(cfg->data_dir, STORE_DB_NAME "-wal");
    if (!st->data_dir || !st->db_path || !st->wal_path)
        goto fail;
    st->pool_max = st->max_buffered ? st->max_buffered / STORE_BLOCK_RAW_MAX : 64;
    if (st->pool_max < STORE_POOL_IDLE)
        st->pool_max = STORE_POOL_IDLE;
    if (st->pool_max > STORE_POOL_LIMIT)
        st->pool_max = STORE_POOL_LIMIT;
    st->pool = calloc(st->pool_max, sizeof *st->pool);
    if (!st->pool)
        goto fail;
    r = init_sync(st);
    if (r < 0)
        goto fail;
    r = make_dirs(st->data_dir, err);
    if (r < 0)
        goto fail;
    r = lock_dir(st, err);
    if (r < 0)
        goto fail;
    r = open_db(st, cfg->durability, err);
    if (r < 0)
        goto fail;
    r = load_tables(st, err);
    if (r < 0)
        goto fail;
    r = store__writer_prepare(st, err);
    if (r < 0)
        goto fail;
    int e = pthread_create(&st->thread, NULL, store__writer_main, st);
    if (e != 0) {
        r = -e;
        store__errf(err, "cannot start the store writer thread: %s", strerror(e));
        goto fail;
    }
    st->thread_started = true;
    *ret_st = st;
    return 0;
fail:
    if (r == -ENOMEM && !err[0])
        store__errf(err, "out of memory opening the store");
    store_free(st);
    return r;
}

/* Releases everything; the writer thread must be stopped (or never started). */
static void store_free(struct store *st)
{
    if (!st)
        return;
    if (st->open)
        store__batch_free(st->open);
    while (st->queue_head) {
        struct store_batch *b = st->queue_head;
        st->queue_head = b->next;
        store__batch_free(b);
    }
    for (int i = 0; i < STMT_COUNT; i++)
        sqlite3_finalize(st->stmt[i]);
    if (st->db)
        sqlite3_close_v2(st->db);
    if (st->mutexes_ready)
        store__readers_close(st);
    ZSTD_freeCCtx(st->zctx);
    for (size_t i = 0; i < st->sessions.n_buckets; i++) {
        struct store_hnode *n = st->sessions.buckets[i];
        while (n) {
            struct store_session *s = (struct store_session *)n;
            n = n->next;
            if (s->stream && !s->stream->key[0])
                stream_free(s->stream);
            free(s);
        }
    }
    for (size_t i = 0; i < st->streams.n_buckets; i++) {
        struct store_hnode *n = st->streams.buckets[i];
        while (n) {
            struct store_stream *s = (struct store_stream *)n;
            n = n->next;
            stream_free(s);
        }
    }
    for (size_t i = 0; i < st->jobs.n_buckets; i++) {
        struct store_hnode *n = st->jobs.buckets[i];
        while (n) {
            struct store_jobm *j = (struct store_jobm *)n;
            n = n->next;
            free(j->name);
            free(j);
        }
    }
    free(st->sessions.buckets);
    free(st->streams.buckets);
    free(st->jobs.buckets);
    free(st->durable);
    free(st->job_commits);
    free(st->touched);
    free(st->damaged);
    for (size_t i = 0; i < st->n_pool; i++)
        free(st->pool[i]);
    free(st->pool);
    free(st->zbuf);
    if (st->lock_fd >= 0)
        close(st->lock_fd); /* releases the flock */
    if (st->mutexes_ready) {
        pthread_mutex_destroy(&st->live_mu);
        pthread_mutex_destroy(&st->mu);
        pthread_mutex_destroy(&st->pool_mu);
        pthread_cond_destroy(&st->cond);
        pthread_cond_destroy(&st->pool_cond);
    }
    free(st->data_dir);
    free(st->db_path);
    free(st->wal_path);
    free(st);
}

void store_close(struct store *st)
{
    if (!st)
        return;
    if (st->thread_started) {
        store_flush(st);
        pthread_mutex_lock(&st->mu);
        st->stopping = true;
        pthread_cond_broadcast(&st->cond);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
        st->thread_started = false;
    }
    store_free(st);
}

/* ---- sessions ---- */

static size_t bounded_len(const char *s)
{
    return s ? strnlen(s, RECORD_NAME_MAX + 1) : 0;
}

/* Whether the hello's job name is non-empty and it and the stream key, host, framework, framework
 * version, run and clock names are at most RECORD_NAME_MAX bytes, and its rank is not negative. */
static bool hello_ok(const struct record_hello *hello, const char *key)
{
    size_t job_len = bounded_len(hello->job);
    return !(job_len == 0 || job_len > RECORD_NAME_MAX || hello->rank < 0 ||
             bounded_len(key) > RECORD_NAME_MAX || bounded_len(hello->host) > RECORD_NAME_MAX ||
             bounded_len(hello->framework) > RECORD_NAME_MAX ||
             bounded_len(hello->framework_version) > RECORD_NAME_MAX ||
             bounded_len(hello->run) > RECORD_NAME_MAX ||
             bounded_len(hello->clock) > RECORD_NAME_MAX);
}

/* Queues the sessions row of the session sess, just opened with hello, in batch b (the writer
 * inserts it with write_sessions()), its texts copied into b's arena. store_session_open() reserved
 * the row and the arena bytes (hello_len of the raw hello and the bounded names), so this cannot
 * fail. */
static void put_new_session(struct store_batch *b, const struct store_session *sess,
                            const struct record_hello *hello, size_t hello_len, int64_t now)
{
    struct store_new_session *ns = &b->sessions[b->n_sessions++];
    ns->id = sess->id;
    ns->job_id = sess->job_id;
    ns->rank = hello->rank;
    ns->stream_id = sess->stream->id;
    ns->world_size = hello->world_size > 0 ? hello->world_size : 1;
    ns->pid = hello->pid;
    ns->started_ns = now;
    ns->hello_len = hello_len;
    ns->hello_off = arena_put(b, hello->raw, hello_len);
#define PUT_STR(field, s)                                     \
    do {                                                      \
        ns->field##_len = bounded_len(s);                     \
        ns->field##_off = arena_put(b, s, ns->field##_len);   \
    } while (0)
    PUT_STR(host, hello->host);
    PUT_STR(fw, hello->framework);
    PUT_STR(fwv, hello->framework_version);
    PUT_STR(run, hello->run);
    PUT_STR(clock, hello->clock);
#undef PUT_STR
}

int store_session_open(struct store *st, const struct record_hello *hello,
                       struct record_welcome *ret_welcome, char *err)
{
    err[0] = '\0';
    const char *key = hello->stream ? hello->stream : "";
    size_t job_len = bounded_len(hello->job);
    if (!hello_ok(hello, key)) {
        store__errf(err, "hello has an empty or over-long name, or a negative rank");
        return -EINVAL;
    }
    struct store_jobm *job = find_job(st, hello->job);
    struct store_stream *stream = job && key[0] ? find_stream(st, job->id, hello->rank, key) : NULL;
    if (stream && stream->holder) {
        store__errf(err, "stream \"%.64s\" of rank %" PRId64 " is held by session %" PRId64,
                 key, hello->rank, stream->holder->id);
        return -EBUSY;
    }

    /* Every allocation first, so that a failure changes nothing. */
    struct store_batch *b = open_batch(st);
    if (!b)
        return -ENOMEM;
    size_t hello_len = hello->raw ? hello->raw_len : 0;
    size_t strs = job_len + strlen(key) + hello_len + bounded_len(hello->host) +
                  bounded_len(hello->framework) + bounded_len(hello->framework_version) +
                  bounded_len(hello->run) + bounded_len(hello->clock);
    struct store_jobm *new_job = NULL;
    struct store_stream *new_stream = NULL;
    struct store_session *sess = NULL;
    int r = -ENOMEM;
    if (STORE_RESERVE(b, jobs, 1) < 0 || STORE_RESERVE(b, streams, 1) < 0 ||
        STORE_RESERVE(b, sessions, 1) < 0 || arena_reserve(b, strs) < 0 ||
        htab_reserve(&st->jobs) < 0 || htab_reserve(&st->streams) < 0)
        goto fail;
    pthread_mutex_lock(&st->live_mu);
    r = htab_reserve(&st->sessions);
    pthread_mutex_unlock(&st->live_mu);
    if (r < 0)
        goto fail;
    r = -ENOMEM;
    if (!job) {
        new_job = calloc(1, sizeof *new_job);
        if (!new_job || !(new_job->name = strdup(hello->job)))
            goto fail;
    }
    if (!stream) {
        new_stream = calloc(1, sizeof *new_stream);
        if (!new_stream || !(new_stream->key = strdup(key)))
            goto fail;
    }
    sess = calloc(1, sizeof *sess);
    if (!sess)
        goto fail;

    int64_t now = clock_now_ns();
    size_t arena_before = b->arena_len;
    if (new_job) {
        job = new_job;
        job->id = st->next_job_id++;
        htab_insert(&st->jobs, &job->node, job_hash(job->name));
        struct store_new_job *nj = &b->jobs[b->n_jobs++];
        nj->id = job->id;
        nj->name_off = arena_put(b, job->name, job_len);
        nj->name_len = job_len;
        nj->seen_ns = now;
    }
    if (new_stream) {
        stream = new_stream;
        stream->id = st->next_stream_id++;
        stream->job_id = job->id;
        stream->rank = hello->rank;
        if (key[0])
            htab_insert(&st->streams, &stream->node,
                        stream_hash(stream->job_id, stream->rank, stream->key));
        struct store_new_stream *ns = &b->streams[b->n_streams++];
        ns->id = stream->id;
        ns->job_id = job->id;
        ns->rank = hello->rank;
        ns->key_len = strlen(key);
        ns->key_off = arena_put(b, key, ns->key_len);
    }
    sess->id = st->next_session_id++;
    sess->job_id = job->id;
    sess->rank = hello->rank;
    sess->stream = stream;
    stream->holder = sess;
    pthread_mutex_lock(&st->live_mu);
    htab_insert(&st->sessions, &sess->node, session_hash(sess->id));
    pthread_mutex_unlock(&st->live_mu);

    put_new_session(b, sess, hello, hello_len, now);
    account(st, b, b->arena_len - arena_before);

    ret_welcome->job_id = job->id;
    ret_welcome->session_id = sess->id;
    ret_welcome->stream_id = stream->id;
    ret_welcome->next_seq = stream->accepted_seq;
    return 0;
fail:
    if (new_job)
        free(new_job->name);
    free(new_job);
    stream_free(new_stream);
    free(sess);
    store__errf(err, "out of memory");
    return r;
}

int store_capture_put(struct store *st, const struct record_capture *c)
{
    size_t len = strlen(c->what);
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, caps, 1) < 0 || arena_reserve(b, len) < 0)
        return -ENOMEM;
    struct store_capture_row *w = &b->caps[b->n_caps++];
    *w = (struct store_capture_row){c->id, c->job_id, c->created_ns, c->start_step, c->steps,
                                    c->all_ranks, 0, len, c->series, c->window, c->every,
                                    c->repeat};
    w->what_off = arena_put(b, c->what, len);
    account(st, b, sizeof *w + len);
    return 0;
}

int store_capture_rank_put(struct store *st, const struct record_capture_rank *r)
{
    size_t sl = strlen(r->state), rl = strlen(r->reason);
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, cap_ranks, 1) < 0 || arena_reserve(b, sl + rl) < 0)
        return -ENOMEM;
    struct store_capture_rank_row *w = &b->cap_ranks[b->n_cap_ranks++];
    w->capture_id = r->capture_id;
    w->rank = r->rank;
    w->updated_ns = r->updated_ns;
    w->first_step = r->first_step;
    w->state_len = sl;
    w->state_off = arena_put(b, r->state, sl);
    w->reason_len = rl;
    w->reason_off = arena_put(b, r->reason, rl);
    account(st, b, sizeof *w + sl + rl);
    return 0;
}

int store_capture_forget(struct store *st, int64_t capture_id)
{
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, cap_forgets, 1) < 0)
        return -ENOMEM;
    b->cap_forgets[b->n_cap_forgets++] = capture_id;
    account(st, b, sizeof *b->cap_forgets);
    return 0;
}

int store_rank_live_steps(struct store *st, int64_t job_id, int64_t rank, int64_t steps)
{
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, live_steps, 1) < 0)
        return -ENOMEM;
    b->live_steps[b->n_live_steps++] = (struct store_live_steps){job_id, rank, steps};
    account(st, b, sizeof(struct store_live_steps));
    return 0;
}

void store_session_close(struct store *st, int64_t session_id, bool clean)
{
    struct store_session *s = find_session(st, session_id);
    if (!s)
        return;
    struct store_batch *b = open_batch(st);
    if (b && STORE_RESERVE(b, ends, 1) == 0) {
        struct store_session_end *e = &b->ends[b->n_ends++];
        e->id = s->id;
        e->job_id = s->job_id;
        e->ended_ns = clock_now_ns();
        e->clean = clean;
    } else {
        /* The next store_open() marks it ended (unclean), so nothing stays open forever. */
        log_warn("store: out of memory recording the end of session %" PRId64, session_id);
    }
    pthread_mutex_lock(&st->live_mu);
    htab_remove(&st->sessions, &s->node);
    pthread_mutex_unlock(&st->live_mu);
    s->stream->holder = NULL;
    if (!s->stream->key[0])
        stream_free(s->stream);
    free(s);
}

int store_job_delete(struct store *st, const char *name, int64_t *ret_job_id,
                     uint64_t *ret_ticket)
{
    struct store_jobm *j = find_job(st, name);
    if (!j)
        return -ENOENT;
    for (size_t i = 0; i < st->sessions.n_buckets; i++)
        for (struct store_hnode *n = st->sessions.buckets[i]; n; n = n->next)
            if (((struct store_session *)n)->job_id == j->id)
                return -EBUSY;
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, dels, 1) < 0)
        return -ENOMEM;
    b->dels[b->n_dels++] = j->id;
    account(st, b, sizeof *b->dels);
    /* No session holds them (checked above), so the job's streams can go now. */
    for (size_t i = 0; i < st->streams.n_buckets; i++) {
        struct store_hnode *n = st->streams.buckets[i];
        while (n) {
            struct store_stream *s = (struct store_stream *)n;
            n = n->next;
            if (s->job_id == j->id) {
                htab_remove(&st->streams, &s->node);
                stream_free(s);
            }
        }
    }
    *ret_job_id = j->id;
    htab_remove(&st->jobs, &j->node);
    free(j->name);
    free(j);
    store_flush(st);
    *ret_ticket = st->sealed;
    return 0;
}

int store_job_delete_ranks(struct store *st, const char *name, const int64_t *ranks, size_t n,
                           int64_t *ret_job_id, uint64_t *ret_ticket)
{
    struct store_jobm *j = find_job(st, name);
    if (!j)
        return -ENOENT;
    for (size_t i = 0; i < st->sessions.n_buckets; i++)
        for (struct store_hnode *h = st->sessions.buckets[i]; h; h = h->next)
            if (((struct store_session *)h)->job_id == j->id)
                return -EBUSY;
    struct store_batch *b = open_batch(st);
    if (!b || STORE_RESERVE(b, rank_dels, n) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < n; k++)
        b->rank_dels[b->n_rank_dels++] = (struct store_rank_del){j->id, ranks[k]};
    account(st, b, n * sizeof *b->rank_dels);
    /* No session holds them (checked above): the ranks' streams go now, so that a later hello
     * of such a rank starts its stream afresh, as the writer's delete leaves it. */
    for (size_t i = 0; i < st->streams.n_buckets; i++) {
        struct store_hnode *h = st->streams.buckets[i];
        while (h) {
            struct store_stream *s = (struct store_stream *)h;
            h = h->next;
            bool gone = false;
            for (size_t k = 0; k < n && !gone && s->job_id == j->id; k++)
                gone = s->rank == ranks[k];
            if (gone) {
                htab_remove(&st->streams, &s->node);
                stream_free(s);
            }
        }
    }
    *ret_job_id = j->id;
    store_flush(st);
    *ret_ticket = st->sealed;
    return 0;
}

int store_wait_committed(struct store *st, uint64_t ticket, int64_t timeout_ns)
{
    int64_t deadline = clock_mono_ns() + timeout_ns;
    struct timespec ts = {.tv_sec = deadline / 1000000000, .tv_nsec = deadline % 1000000000};
    int r = 0;
    pthread_mutex_lock(&st->mu);
    while (st->committed < ticket) {
        if (pthread_cond_timedwait(&st->cond, &st->mu, &ts) == ETIMEDOUT &&
            st->committed < ticket) {
            r = -ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&st->mu);
    return r;
}

/* ---- append ---- */

/* Makes sure block idx (SIZE_MAX: none yet) of the slot can take need more bytes: grows it, or
 * allocates in *ret_raw and *ret_cap the buffer of a new block when there is none or it would pass
 * STORE_BLOCK_RAW_MAX. b->blocks must have room for the new block. */
static int prepare_block(struct store *st, struct store_batch *b, size_t idx, size_t need,
                         char **ret_raw, size_t *ret_cap)
{
    if (need == 0)
        return 0;
    if (idx != SIZE_MAX) {
        struct store_block *k = &b->blocks[idx];
        if (k->len + need <= STORE_BLOCK_RAW_MAX || k->len == 0) {
            if (k->len + need <= k->cap)
                return 0;
            size_t cap = k->cap * 2;
            while (cap < k->len + need)
                cap *= 2;
            if (cap > STORE_BLOCK_RAW_MAX && k->len + need <= STORE_BLOCK_RAW_MAX)
                cap = STORE_BLOCK_RAW_MAX;
            char *p = realloc(k->raw, cap);
            if (!p)
                return -ENOMEM;
            k->raw = p;
            k->cap = cap;
            return 0;
        }
    }
    char *p = NULL;
    size_t cap = STORE_BLOCK_RAW_FIRST;
    if (need <= STORE_BLOCK_RAW_MAX) {
        /* A spare from the writer: once per MiB of lines, so the lock costs nothing. */
        pthread_mutex_lock(&st->mu);
        if (st->n_pool)
            p = st->pool[--st->n_pool];
        pthread_mutex_unlock(&st->mu);
        if (p) {
            *ret_raw = p;
            *ret_cap = STORE_BLOCK_RAW_MAX;
            return 0;
        }
    }
    while (cap < need)
        cap *= 2;
    p = malloc(cap);
    if (!p)
        return -ENOMEM;
    *ret_raw = p;
    *ret_cap = cap;
    return 0;
}

static size_t push_block(struct store_batch *b, const struct store_slot *slot, char *raw,
                         size_t cap, bool timed)
{
    struct store_block *k = &b->blocks[b->n_blocks];
    memset(k, 0, sizeof *k);
    k->job_id = slot->job_id;
    k->rank = slot->rank;
    k->t_min_ns = timed ? INT64_MAX : INT64_MIN;
    k->t_max_ns = timed ? INT64_MIN : INT64_MAX;
    k->raw = raw;
    k->cap = cap;
    return b->n_blocks++;
}

static int64_t add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    return a + b;
}

/* Events stored in the (job, rank)'s untimed block, which overlaps every time range: those
 * without a ts, and metadata ("M": thread_name, process_name), which names its thread in every
 * window although Kineto gives it a ts. */
static bool untimed_event(const struct record *rec)
{
    return rec->ts_ns == INT64_MIN || rec->ph == 'M';
}

/* The sizes store_append() reserves before it takes anything: the bytes of timeline lines (each
 * with its newline) for the slot's timed and untimed blocks, the arena bytes of the rows' texts,
 * and the count of records of each kind. */
struct append_sizes {
    size_t timed, untimed, arena;
    size_t n_kind[RECORD_KIND_COUNT];
};

/* Pass 1 of store_append(): fills *z for recs[0..n). Reads only; cannot fail. */
static void measure_records(const struct record *recs, size_t n, struct append_sizes *z)
{
    *z = (struct append_sizes){0};
    for (size_t i = 0; i < n; i++) {
        const struct record *rec = &recs[i];
        z->n_kind[rec->kind]++;
        switch (rec->kind) {
        case RECORD_TRACE:
            if (untimed_event(rec))
                z->untimed += rec->raw_len + 1;
            else
                z->timed += rec->raw_len + 1;
            break;
        case RECORD_STEP:
            z->arena += rec->phases.len;
            break;
        case RECORD_QUEUE:
            z->arena += rec->name.len;
            break;
        case RECORD_PIPELINE:
            z->arena += rec->raw_len;
            break;
        default:
            break;
        }
    }
}

/* Pass 2 of store_append() for a RECORD_TRACE: appends its line and a newline to the slot's
 * untimed block bu or timed block bt (whichever untimed_event() picks; pass 1 reserved the room),
 * widens bt's time range to cover it, and counts it in the slot. Cannot fail. */
static void put_trace(struct store_block *bt, struct store_block *bu, struct store_slot *slot,
                      const struct record *rec)
{
    struct store_block *k = untimed_event(rec) ? bu : bt;
    memcpy(k->raw + k->len, rec->raw, rec->raw_len);
    k->len += rec->raw_len;
    k->raw[k->len++] = '\n';
    k->n_events++;
    if (k == bt) {
        int64_t end = add_sat(rec->ts_ns, rec->dur_ns);
        if (rec->ts_ns < k->t_min_ns)
            k->t_min_ns = rec->ts_ns;
        if (end > k->t_max_ns)
            k->t_max_ns = end;
        if (rec->ts_ns > k->t_max_ns)
            k->t_max_ns = rec->ts_ns;
    }
    slot->events++;
    if (rec->ph == 'X' || rec->ph == 'B')
        slot->spans++;
}

/* Pass 2 of store_append() for any other record: a step, queue, host or pipeline record becomes
 * a row of the batch (its text copied into the arena), counted in the slot; other kinds are
 * ignored. Pass 1 reserved the rows and arena bytes, so this cannot fail. */
static void put_row(struct store_batch *b, const struct store_session *s, struct store_slot *slot,
                    const struct record *rec)
{
    switch (rec->kind) {
    case RECORD_STEP: {
        struct store_step_row *w = &b->steps[b->n_steps++];
        w->job_id = s->job_id;
        w->rank = s->rank;
        w->step = rec->step;
        w->begin_ns = rec->ts_ns;
        w->end_ns = add_sat(rec->ts_ns, rec->dur_ns);
        w->samples = rec->samples;
        w->seq = rec->seq;
        w->phases_len = rec->phases.len;
        w->phases_off = arena_put(b, rec->phases.ptr, rec->phases.len);
        slot->steps++;
        break;
    }
    case RECORD_QUEUE: {
        struct store_queue_row *w = &b->queues[b->n_queues++];
        w->job_id = s->job_id;
        w->rank = s->rank;
        w->ts_ns = rec->ts_ns;
        w->step = rec->step;
        w->size = rec->size;
        w->capacity = rec->capacity;
        w->name_len = rec->name.len;
        w->name_off = arena_put(b, rec->name.ptr, rec->name.len);
        slot->queues++;
        break;
    }
    case RECORD_HOST: {
        struct store_host_row *w = &b->hosts[b->n_hosts++];
        w->job_id = s->job_id;
        w->rank = s->rank;
        w->ts_ns = rec->ts_ns;
        w->cpu_percent = rec->cpu_percent;
        w->sys_cpu_percent = rec->sys_cpu_percent;
        w->rss_bytes = rec->rss_bytes;
        slot->hosts++;
        break;
    }
    case RECORD_PIPELINE: {
        struct store_pipe_row *w = &b->pipes[b->n_pipes++];
        w->job_id = s->job_id;
        w->rank = s->rank;
        w->ts_ns = rec->ts_ns;
        w->seq = rec->seq;
        w->json_len = rec->raw_len;
        w->json_off = arena_put(b, rec->raw, rec->raw_len);
        slot->pipelines++;
        break;
    }
    default:
        break;
    }
}

int store_append(struct store *st, int64_t session_id, const struct record *recs, size_t n,
                 uint64_t next_seq)
{
    struct store_session *s = find_session(st, session_id);
    if (!s)
        return -ENOENT;
    struct store_batch *b = open_batch(st);
    if (!b)
        return -ENOMEM;

    /* Pass 1: sizes, so that every allocation happens before anything is taken. */
    struct append_sizes z;
    measure_records(recs, n, &z);
    size_t timed = z.timed, untimed = z.untimed, arena = z.arena;
    bool fresh = s->batch_gen != b->gen;
    struct store_slot new_slot = {.job_id = s->job_id, .rank = s->rank, .timed = SIZE_MAX,
                                  .untimed = SIZE_MAX};
    struct store_slot *slot = fresh ? &new_slot : &b->slots[s->slot];
    char *raw_t = NULL, *raw_u = NULL;
    size_t cap_t = 0, cap_u = 0;
    if ((fresh && (STORE_RESERVE(b, slots, 1) < 0 || STORE_RESERVE(b, seqs, 1) < 0)) ||
        STORE_RESERVE(b, blocks, 2) < 0 || STORE_RESERVE(b, steps, z.n_kind[RECORD_STEP]) < 0 ||
        STORE_RESERVE(b, queues, z.n_kind[RECORD_QUEUE]) < 0 ||
        STORE_RESERVE(b, hosts, z.n_kind[RECORD_HOST]) < 0 ||
        STORE_RESERVE(b, pipes, z.n_kind[RECORD_PIPELINE]) < 0 || arena_reserve(b, arena) < 0 ||
        prepare_block(st, b, slot->timed, timed, &raw_t, &cap_t) < 0 ||
        prepare_block(st, b, slot->untimed, untimed, &raw_u, &cap_u) < 0) {
        free(raw_t);
        return -ENOMEM;
    }

    /* Pass 2: nothing below can fail. */
    if (fresh) {
        s->batch_gen = b->gen;
        s->slot = b->n_slots;
        b->slots[b->n_slots++] = new_slot;
        slot = &b->slots[s->slot];
        s->seq_idx = b->n_seqs;
        b->seqs[b->n_seqs++] = (struct store_seq){.stream_id = s->stream->id,
                                                  .from = s->stream->accepted_seq,
                                                  .to = s->stream->accepted_seq};
    }
    if (raw_t)
        slot->timed = push_block(b, slot, raw_t, cap_t, true);
    if (raw_u)
        slot->untimed = push_block(b, slot, raw_u, cap_u, false);
    struct store_block *bt = slot->timed != SIZE_MAX ? &b->blocks[slot->timed] : NULL;
    struct store_block *bu = slot->untimed != SIZE_MAX ? &b->blocks[slot->untimed] : NULL;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == RECORD_TRACE)
            put_trace(bt, bu, slot, &recs[i]);
        else
            put_row(b, s, slot, &recs[i]);
    }
    struct store_seq *q = &b->seqs[s->seq_idx];
    if (next_seq > q->to)
        q->to = next_seq;
    if (next_seq > s->stream->accepted_seq)
        s->stream->accepted_seq = next_seq;

    uint64_t rows = z.n_kind[RECORD_STEP] * sizeof(struct store_step_row) +
                    z.n_kind[RECORD_QUEUE] * sizeof(struct store_queue_row) +
                    z.n_kind[RECORD_HOST] * sizeof(struct store_host_row) +
                    z.n_kind[RECORD_PIPELINE] * sizeof(struct store_pipe_row);
    account(st, b, timed + untimed + arena + rows);
    b->raw_bytes += timed + untimed;
    /* A full block is sealed: the slot's next lines start a new one. */
    if (bt && bt->len >= STORE_BLOCK_RAW_MAX)
        slot->timed = SIZE_MAX;
    if (bu && bu->len >= STORE_BLOCK_RAW_MAX)
        slot->untimed = SIZE_MAX;
    /* Big batches go to the writer without waiting for the flush timer, so that it keeps busy
     * and a transaction stays a bounded amount of work. */
    if (b->raw_bytes >= STORE_BATCH_RAW_MAX)
        store_flush(st);
    uint64_t buffered = atomic_load_explicit(&st->buffered, memory_order_relaxed);
    return st->max_buffered && buffered > st->max_buffered ? -EAGAIN : 0;
}

/* ---- hand-off to the writer ---- */

void store_flush(struct store *st)
{
    struct store_batch *b = st->open;
    if (!b || batch_is_empty(b))
        return;
    st->open = NULL;
    pthread_mutex_lock(&st->mu);
    if (st->queue_tail)
        st->queue_tail->next = b;
    else
        st->queue_head = b;
    st->queue_tail = b;
    st->sealed++;
    pthread_cond_broadcast(&st->cond);
    pthread_mutex_unlock(&st->mu);
}

uint64_t store_flush_ticket(struct store *st)
{
    store_flush(st);
    return st->sealed;
}

uint64_t store_query_job_commits(struct store *st, int64_t job_id)
{
    pthread_mutex_lock(&st->mu);
    uint64_t n = st->all_jobs_commits;
    size_t lo = 0, hi = st->n_job_commits;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (st->job_commits[mid].job_id < job_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < st->n_job_commits && st->job_commits[lo].job_id == job_id &&
        st->job_commits[lo].commits > n)
        n = st->job_commits[lo].commits;
    pthread_mutex_unlock(&st->mu);
    return n;
}

bool store_committed(struct store *st, uint64_t ticket)
{
    pthread_mutex_lock(&st->mu);
    bool r = st->committed >= ticket;
    pthread_mutex_unlock(&st->mu);
    return r;
}

int store_flush_wait(struct store *st, int64_t timeout_ns)
{
    store_flush(st);
    return store_wait_committed(st, st->sealed, timeout_ns);
}

static int cmp_seq(const void *a, const void *b)
{
    const struct store_seq *x = a, *y = b;
    if (x->stream_id != y->stream_id)
        return x->stream_id < y->stream_id ? -1 : 1;
    return x->to < y->to ? -1 : x->to > y->to;
}

void store_collect_durable(struct store *st,
                           void (*cb)(void *ud, int64_t stream_id, uint64_t next_seq), void *ud)
{
    pthread_mutex_lock(&st->mu);
    struct store_seq *v = st->durable;
    size_t n = st->n_durable;
    st->durable = NULL;
    st->n_durable = st->cap_durable = 0;
    pthread_mutex_unlock(&st->mu);
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_seq);
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1].stream_id == v[i].stream_id)
            continue; /* only the highest of each stream */
        cb(ud, v[i].stream_id, v[i].to);
    }
    free(v);
}

uint64_t store_buffered_bytes(const struct store *st)
{
    return atomic_load_explicit(&st->buffered, memory_order_relaxed);
}
