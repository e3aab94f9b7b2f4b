/* SPDX-License-Identifier: MIT */
/*
 * cluster: the shipper thread (cluster.h). One loop: make sure the schema is applied, read the
 * next batch past the cursor (store_ship_read()), encode the spans as a Native block and the other
 * tables' rows as RowBinary (a stored block's lines: one row, its data as the store keeps it),
 * gzip (cluster_compression; not the blocks, zstd already) and POST them one INSERT per table,
 * and save the cursor once every part was taken. A failed part
 * is retried after a backoff with the batch as it was (parts already taken are not sent again,
 * and would collapse if they were); a new batch is read only after the cursor moved.
 */
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "../../lib/clock.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../core/record.h"
#include "../live/live.h"
#include "../live/live_query.h"
#include "../store/store.h"
#include "../store/store_ship.h"
#include "cluster_int.h"

#define CLUSTER_BACKOFF_MIN_MS 250
#define CLUSTER_ANSWER_MAX (64 * 1024)   /* of an answer kept (errors, the schema version) */
#define CLUSTER_CONNECT_TIMEOUT_MS 3000
#define CLUSTER_REQUEST_TIMEOUT_MS 60000 /* one INSERT of a whole batch, answered */

/* The INSERTs, one per table; the columns in the order the encoders below write them. These and
 * schema/NNNN_name.sql are the only ClickHouse SQL of the daemon; tests/cluster/test_schema.py runs them
 * on a current ClickHouse (chdb), tests/cluster/test_cluster.py on Debian's 18.16. */
enum { PART_SESSIONS, PART_EVENTS, PART_SPANS, PART_STEPS, PART_QUEUES, PART_HOSTS, PART_PIPES,
       PART_COUNT,
       INSERT_STEP_RANKS = PART_COUNT, INSERT_DELETES };
static const char *const insert_sql[PART_COUNT + 2] = {
    /* First: a node pulling the others' rows (pull.c) opens a rank once its session is there. */
    "INSERT INTO stepscope.sessions (node, job, rank, row, world_size, host, pid, framework, "
    "framework_version, run, clock, started_ns, hello) FORMAT RowBinary",
    /* Before the spans: a puller that sees a block's spans sees its lines (pull.c rebuilds lines
     * from the spans' columns only for blocks without any, a node's older than 0004_events).
     * One row per stored block, its frame as the store keeps it (0006_event_blocks.sql). */
    "INSERT INTO stepscope.event_blocks (node, job, rank, block, month, lines, raw_bytes, codec, "
    "data) FORMAT RowBinary",
    "INSERT INTO stepscope.spans (node, job, rank, ts_ns, dur_ns, ph, name, cat, pid, tid, "
    "block, idx) FORMAT Native",
    "INSERT INTO stepscope.steps (node, job, rank, step, begin_ns, end_ns, samples, phases, "
    "row) FORMAT RowBinary",
    "INSERT INTO stepscope.queue_samples (node, job, rank, ts_ns, step, name, size, capacity, "
    "row) FORMAT RowBinary",
    "INSERT INTO stepscope.host_samples (node, job, rank, ts_ns, cpu_percent, sys_cpu_percent, "
    "rss_bytes, row) FORMAT RowBinary",
    "INSERT INTO stepscope.pipelines (node, job, rank, ts_ns, json, row) FORMAT RowBinary",
    "INSERT INTO stepscope.step_ranks (node, job, rank, step, begin_ns, end_ns, samples, spans, "
    "from_record, source, interval_ns, fp_bp_ns, tail_ns, kernel_ns, memcpy_ns, memset_ns, "
    "communication_ns, runtime_ns, dataloader_ns, cpu_exec_ns, other_ns, version) "
    "FORMAT RowBinary",
    /* A job deleted here, once its ALTERs were taken: the viewers delete their copies (pull.c). */
    "INSERT INTO stepscope.deletes (node, job, id, deleted_ns, last_block, last_step, "
    "last_queue, last_host, last_pipe) FORMAT RowBinary",
};

/* A job deleted on the node: its rows of this node deleted in every table that holds them
 * (ALTER TABLE ... DELETE: a mutation, run by ClickHouse in the background on the parts there
 * now; rows inserted later are not touched). Not `deletes`: its rows say what was deleted. */
static const char *const delete_tables[] = {"events",       "event_blocks", "spans",     "steps",
                                            "queue_samples", "host_samples", "pipelines",
                                            "step_ranks",   "sessions"};

/* The spans go as one Native block per batch (ClickHouse's column format: the column count, the
 * row count, then each column's name, type and values; over HTTP without block info), which
 * ClickHouse takes with less CPU than rows to parse; a column's values are encoded as in
 * RowBinary. The columns, in insert_sql[PART_SPANS]'s order: */
enum {
    SC_NODE, SC_JOB, SC_RANK, SC_TS, SC_DUR, SC_PH, SC_NAME, SC_CAT, SC_PID, SC_TID, SC_BLOCK,
    SC_IDX, SC_COUNT
};
static const char *const span_cols[SC_COUNT][2] = {
    {"node", "String"}, {"job", "String"},  {"rank", "Int64"},  {"ts_ns", "Int64"},
    {"dur_ns", "Int64"}, {"ph", "String"},  {"name", "String"}, {"cat", "String"},
    {"pid", "String"},  {"tid", "String"},  {"block", "UInt64"}, {"idx", "UInt32"},
};

#define CLUSTER_AGG_INTERVAL_NS INT64_C(1000000000) /* aggregates shipped at most once a second */
/* What was shipped of a step's row (its bytes but the version). */
struct agg_sum {
    int64_t step;
    uint64_t sum;
};

/* What was shipped of a (job, rank)'s rows, by step. */
struct agg_mark {
    int64_t job_id, rank;
    struct agg_sum *sums;
    size_t n;
};

/* A batch: the rows past a cursor, each table's part encoded and gzipped once (a retry sends the
 * same bytes). */
struct batch {
    bool have;
    struct store_ship_cursor to;  /* where it ends: the cursor once ClickHouse took it all */
    bool sent[PART_COUNT];
    bool plain_blocks;            /* a block of PART_EVENTS is stored without compression */
    uint64_t rows[PART_COUNT];
    struct rb_buf part[PART_COUNT]; /* the request bodies: spans Native, the others RowBinary */
    struct rb_buf col[SC_COUNT];    /* the spans' columns, while they are read */
    struct rb_buf gz[PART_COUNT];
};

struct cluster {
    char *url, *target, *user, *password, *node;
    size_t node_len;
    uint64_t batch_rows, max_rows_per_s, retry_max_ms, poll_ms;
    bool gzip;                        /* request bodies gzipped (else as they are) */
    struct store *store;
    struct stats *stats;
    struct cluster_pull *pull; /* the cluster view (pull.c); NULL: this node only ships */

    pthread_t thread;
    bool started;
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cond;

    /* Shipper thread only. */
    CURL *curl;
    struct store_ship *ship;
    CURLM *multi;                     /* runs the easy handle, so the wait can read ahead */
    struct store_ship_cursor cur;     /* shipped */
    struct batch bt[2];               /* bt[now]: in hand; bt[!now]: read ahead while ClickHouse
                                         works on bt[now] (from bt[now].to) */
    int now;
    struct batch *fill;               /* where the sink callbacks write */
    struct rb_buf gz;                 /* the aggregates' request body */
    struct rb_buf answer;
    int64_t month_day;                /* yyyymm(): the day (since 1970) month was computed for */
    uint32_t month;
    uint64_t backoff_ms;
    int64_t idle_at_ns;          /* last time nothing was pending */
    bool migrated;

    /* Aggregates (shipper thread): jobs changed since their last shipped round, the marks, and
     * those a round in progress will set once ClickHouse took it. */
    struct live *live;
    uint64_t live_cursor;
    int64_t agg_at_ns;
    int64_t *changed, *fresh;    /* grown as needed (live_query_changed()) */
    size_t n_changed, cap_changed, cap_fresh;
    int64_t *rank_ids, *rank_steps; /* [LIVE_RANKS_MAX] */
    struct agg_mark *marks, *next_marks;
    size_t n_marks, cap_marks, n_next, cap_next;
    struct rb_buf agg;
    uint64_t agg_rows;
};

static void marks_free(struct agg_mark *v, size_t *n);

/* ---- credentials and setup ---- */

int cluster_read_credentials(const char *path, char *user, char *password, size_t size,
                             char *err)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        int e = errno;
        snprintf(err, CLUSTER_ERR_MAX, "cluster_credentials_file %s: %s", path, strerror(e));
        return -e;
    }
    char line[1024];
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!got)
        line[0] = '\0';
    line[strcspn(line, "\r\n")] = '\0';
    char *colon = strchr(line, ':');
    const char *pw = "";
    if (colon) {
        *colon = '\0';
        pw = colon + 1;
    }
    int r = 0;
    if (line[0] == '\0') {
        snprintf(err, CLUSTER_ERR_MAX, "cluster_credentials_file %s: the first line must be "
                 "USER:PASSWORD", path);
        r = -EINVAL;
    } else if (strlen(line) >= size || strlen(pw) >= size) {
        snprintf(err, CLUSTER_ERR_MAX, "cluster_credentials_file %s: too long", path);
        r = -ENAMETOOLONG;
    } else {
        snprintf(user, size, "%s", line);
        snprintf(password, size, "%s", pw);
    }
    explicit_bzero(line, sizeof line);
    return r;
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static void cluster_free(struct cluster *c)
{
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < PART_COUNT; i++) {
            rb_free(&c->bt[k].part[i]);
            rb_free(&c->bt[k].gz[i]);
        }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < SC_COUNT; i++)
            rb_free(&c->bt[k].col[i]);
    rb_free(&c->gz);
    rb_free(&c->answer);
    rb_free(&c->agg);
    free(c->changed);
    free(c->fresh);
    free(c->rank_ids);
    free(c->rank_steps);
    marks_free(c->marks, &c->n_marks);
    marks_free(c->next_marks, &c->n_next);
    free(c->marks);
    free(c->next_marks);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    if (c->curl)
        curl_easy_cleanup(c->curl);
    store_ship_close(c->ship);
    free(c->url);
    free(c->target);
    free(c->node);
    wipe_free(c->user);
    wipe_free(c->password);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cond);
    free(c);
}

/* Waits ms or until stop. Returns true when stopping. */
static bool nap(struct cluster *c, uint64_t ms)
{
    return cluster__nap(&c->mu, &c->cond, &c->stop, ms, NULL, NULL);
}

/* ---- HTTP ---- */

static size_t on_answer(char *p, size_t size, size_t n, void *ud)
{
    struct rb_buf *b = ud;
    size_t len = size * n;
    if (b->len < CLUSTER_ANSWER_MAX)
        rb_add(b, p, len < CLUSTER_ANSWER_MAX - b->len ? len : CLUSTER_ANSWER_MAX - b->len);
    return len;
}

/* POSTs body (gzipped when gz) to the server, with query as the URL's query when not NULL (the
 * body then holds the data) or the body as the query. Returns 0 when ClickHouse answered 200
 * (its answer in c->answer, NUL-terminated), else -1 with err saying why. */
static int post(struct cluster *c, const char *query, const void *body, size_t n, bool gz,
                void (*idle)(struct cluster *c), char *err)
{
    char url[8192];
    if (query) {
        char *q = curl_easy_escape(c->curl, query, 0);
        if (!q) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
        snprintf(url, sizeof url, "%s%squery=%s", c->url, strchr(c->url, '?') ? "&" : "?", q);
        curl_free(q);
    } else {
        snprintf(url, sizeof url, "%s", c->url);
    }
    rb_reset(&c->answer);
    struct curl_slist *hdr = NULL;
    if (gz)
        hdr = curl_slist_append(hdr, "Content-Encoding: gzip");
    hdr = curl_slist_append(hdr, "Content-Type: application/octet-stream");
    hdr = curl_slist_append(hdr, "Expect:");
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *h = c->curl;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    /* The easy handle runs in the multi handle so that, once the body is sent and ClickHouse is
     * working on it, idle() can do the shipper's own work meanwhile (read the next batch). */
    CURLcode rc = CURLE_OUT_OF_MEMORY;
    if (curl_multi_add_handle(c->multi, h) == CURLM_OK) {
        int running = 1;
        bool idled = !idle;
        while (curl_multi_perform(c->multi, &running) == CURLM_OK && running) {
            curl_off_t up = 0;
            if (!idled && curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK &&
                up >= (curl_off_t)n) {
                idled = true;
                idle(c);
                continue;
            }
            curl_multi_poll(c->multi, NULL, 0, 100, NULL);
        }
        int left;
        CURLMsg *msg;
        rc = CURLE_RECV_ERROR;
        while ((msg = curl_multi_info_read(c->multi, &left)))
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == h)
                rc = msg->data.result;
        curl_multi_remove_handle(c->multi, h);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    curl_slist_free_all(hdr);
    rb_add(&c->answer, "", 1);
    if (c->answer.err) {
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -1;
    }
    c->answer.len--;
    if (rc != CURLE_OK) {
        snprintf(err, CLUSTER_ERR_MAX, "cannot reach ClickHouse at %s: %s", c->target,
                 cerr[0] ? cerr : curl_easy_strerror(rc));
        return -1;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        const char *a = (const char *)c->answer.p;
        size_t len = strcspn(a, "\r\n");
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse answered %ld: %.*s", status,
                 (int)(len > 300 ? 300 : len), a);
        return -1;
    }
    return 0;
}

/* ---- the schema ---- */

/* Runs each statement of a schema file (statements end with ';' at the end of a line; lines
 * starting with "--" are comments). */
static int run_file(struct cluster *c, const char *sql, char *err)
{
    const char *p = sql;
    while (*p) {
        const char *end = p;
        for (;;) {
            end = strchr(end, ';');
            if (!end || end[1] == '\n' || end[1] == '\0')
                break;
            end++;
        }
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* Skip comments and blanks; send the rest. */
        char *stmt = malloc(len + 2);
        if (!stmt) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
        size_t w = 0;
        for (size_t i = 0; i < len;) {
            size_t ll = strcspn(p + i, "\n");
            if (ll > len - i)
                ll = len - i;
            size_t j = i;
            while (j < i + ll && (p[j] == ' ' || p[j] == '\t'))
                j++;
            if (!(j + 1 < i + ll && p[j] == '-' && p[j + 1] == '-')) {
                memcpy(stmt + w, p + i, ll);
                w += ll;
                stmt[w++] = '\n';
            }
            i += ll + 1;
        }
        while (w > 0 && (stmt[w - 1] == '\n' || stmt[w - 1] == ' '))
            w--;
        stmt[w > len ? len : w] = '\0';
        bool blank = strspn(stmt, " \t\n") == strlen(stmt);
        int r = blank ? 0 : post(c, NULL, stmt, strlen(stmt), false, NULL, err);
        free(stmt);
        if (r < 0)
            return -1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

static int migrate(struct cluster *c, char *err)
{
    if (run_file(c, cluster__migrations[0].sql, err) < 0)
        return -1;
    static const char q[] = "SELECT max(version) FROM stepscope.schema_migrations FORMAT TabSeparated";
    if (post(c, NULL, q, sizeof q - 1, false, NULL, err) < 0)
        return -1;
    unsigned long applied = strtoul((const char *)c->answer.p, NULL, 10);
    unsigned known = cluster__migrations[cluster__n_migrations - 1].version;
    if (applied > known) {
        snprintf(err, CLUSTER_ERR_MAX, "ClickHouse holds stepscope schema version %lu, newer "
                 "than this daemon's %u: not shipping", applied, known);
        return -1;
    }
    /* Every file runs, applied or not: each statement is idempotent (IF NOT EXISTS), so a table
     * dropped behind the shipper's back comes back at the next attempt (failed() makes the next
     * attempt check the schema first); only new versions are recorded. */
    for (size_t i = 1; i < cluster__n_migrations; i++) {
        const struct cluster_migration *m = &cluster__migrations[i];
        if (run_file(c, m->sql, err) < 0)
            return -1;
        if (m->version <= applied)
            continue;
        char ins[512];
        int n = snprintf(ins, sizeof ins,
                         "INSERT INTO stepscope.schema_migrations (version, name, node) "
                         "VALUES (%u, '%s', '%s')", m->version, m->name, c->node);
        if (post(c, NULL, ins, (size_t)n, false, NULL, err) < 0)
            return -1;
        log_info("cluster: applied ClickHouse schema %s", m->name);
    }
    return 0;
}

/* ---- batches ---- */

/* Every table's rows begin with (node, job, rank). */
static void put_head(struct cluster *c, struct rb_buf *b, const char *job, int64_t rank)
{
    rb_str(b, c->node, c->node_len);
    rb_str(b, job, strlen(job));
    rb_i64(b, rank);
}

static int on_span(void *ud, const char *job, int64_t rank, int64_t block_id, uint32_t idx,
                   const struct store_event *ev)
{
    struct cluster *c = ud;
    struct rb_buf *col = c->fill->col;
    char ph = ev->ph;
    rb_str(&col[SC_NODE], c->node, c->node_len);
    rb_str(&col[SC_JOB], job, strlen(job));
    rb_i64(&col[SC_RANK], rank);
    rb_i64(&col[SC_TS], ev->ts_ns);
    rb_i64(&col[SC_DUR], ev->dur_ns);
    rb_str(&col[SC_PH], &ph, 1);
    rb_json_str(&col[SC_NAME], ev->name, ev->name_len);
    rb_json_str(&col[SC_CAT], ev->cat, ev->cat_len);
    rb_json_str(&col[SC_PID], ev->pid, ev->pid_len);
    rb_json_str(&col[SC_TID], ev->tid, ev->tid_len);
    rb_u64(&col[SC_BLOCK], (uint64_t)block_id);
    rb_u32(&col[SC_IDX], idx);
    c->fill->rows[PART_SPANS]++;
    int err = 0;
    for (int i = 0; i < SC_COUNT; i++)
        err |= col[i].err;
    return err;
}

/* The UTC month of t (ns) as YYYYMM, the events table's partition; gmtime_r() once per day met. */
static uint32_t yyyymm(struct cluster *c, int64_t t)
{
    int64_t sec = t / 1000000000 - (t % 1000000000 < 0), day = sec / 86400 - (sec % 86400 < 0);
    if (day != c->month_day || c->month == 0) {
        time_t tt = (time_t)(day * 86400);
        struct tm tm;
        if (!gmtime_r(&tt, &tm))
            return 197001;
        c->month_day = day;
        c->month = (uint32_t)(tm.tm_year + 1900) * 100 + (uint32_t)tm.tm_mon + 1;
    }
    return c->month;
}

/* Every stored line of the block, verbatim (the event_blocks table): its args, and the events
 * that are not spans, go to the nodes that view this one's ranks, as one row holding the block
 * as the store keeps it (its zstd frame: nothing decoded or compressed again for it). */
static int on_block(void *ud, const char *job, int64_t rank, const struct store_ship_block *blk)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_EVENTS];
    put_head(c, b, job, rank);
    rb_u64(b, (uint64_t)blk->id);
    /* 197001 for a block without a time (the store keeps INT64_MIN or INT64_MAX then). */
    int64_t t = blk->t_min_ns;
    rb_u32(b, yyyymm(c, t < 0 || t == INT64_MAX ? 0 : t));
    rb_u32(b, blk->lines);
    rb_u64(b, (uint64_t)blk->raw_bytes);
    rb_u8(b, (uint8_t)blk->codec);
    rb_str(b, blk->data, blk->len);
    if (blk->codec == STORE_SHIP_CODEC_NONE)
        c->fill->plain_blocks = true;
    c->fill->rows[PART_EVENTS]++;
    return b->err;
}

static int on_session(void *ud, const char *job, const struct store_ship_session *s)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_SESSIONS];
    put_head(c, b, job, s->rank);
    rb_u64(b, (uint64_t)s->id);
    rb_i64(b, s->world_size);
    rb_str(b, s->host, strlen(s->host));
    rb_i64(b, s->pid);
    rb_str(b, s->framework, strlen(s->framework));
    rb_str(b, s->framework_version, strlen(s->framework_version));
    rb_str(b, s->run, strlen(s->run));
    rb_str(b, s->clock, strlen(s->clock));
    rb_i64(b, s->started_ns);
    rb_str(b, s->hello, s->hello_len);
    c->fill->rows[PART_SESSIONS]++;
    return b->err;
}

static int on_step(void *ud, const char *job, const struct store_ship_step *s)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_STEPS];
    put_head(c, b, job, s->rank);
    rb_i64(b, s->step);
    rb_i64(b, s->begin_ns);
    rb_i64(b, s->end_ns);
    rb_i64(b, s->samples);
    rb_str(b, s->phases ? s->phases : "", s->phases ? s->phases_len : 0);
    rb_u64(b, (uint64_t)s->id);
    c->fill->rows[PART_STEPS]++;
    return b->err;
}

static int on_queue(void *ud, const char *job, const struct store_ship_queue *q)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_QUEUES];
    put_head(c, b, job, q->rank);
    rb_i64(b, q->ts_ns);
    rb_i64(b, q->step);
    rb_str(b, q->name ? q->name : "", q->name ? q->name_len : 0);
    rb_i64(b, q->size);
    rb_i64(b, q->capacity);
    rb_u64(b, (uint64_t)q->id);
    c->fill->rows[PART_QUEUES]++;
    return b->err;
}

static int on_host(void *ud, const char *job, const struct store_ship_host *h)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_HOSTS];
    put_head(c, b, job, h->rank);
    rb_i64(b, h->ts_ns);
    rb_f64(b, h->cpu_percent);
    rb_f64(b, h->sys_cpu_percent);
    rb_i64(b, h->rss_bytes);
    rb_u64(b, (uint64_t)h->id);
    c->fill->rows[PART_HOSTS]++;
    return b->err;
}

static int on_pipe(void *ud, const char *job, const struct store_ship_pipe *p)
{
    struct cluster *c = ud;
    struct rb_buf *b = &c->fill->part[PART_PIPES];
    put_head(c, b, job, p->rank);
    rb_i64(b, p->ts_ns);
    rb_str(b, p->json ? p->json : "", p->json ? p->json_len : 0);
    rb_u64(b, (uint64_t)p->id);
    c->fill->rows[PART_PIPES]++;
    return b->err;
}

static void update_pending(struct cluster *c)
{
    int64_t pending = 0, deletes = 0;
    if (store_ship_deletes_pending(c->ship, c->cur.del, &deletes) == 0)
        STATS_SET(c->stats, cluster_pending_deletes, (uint64_t)deletes);
    if (store_ship_pending(c->ship, &c->cur, &pending) < 0)
        return;
    int64_t now = clock_now_ns();
    if (pending == 0)
        c->idle_at_ns = now;
    STATS_SET(c->stats, cluster_pending_rows, (uint64_t)pending);
    STATS_SET(c->stats, cluster_pending_batches,
              (uint64_t)((pending + (int64_t)c->batch_rows - 1) / (int64_t)c->batch_rows));
    STATS_SET(c->stats, cluster_lag_ms,
              pending == 0 ? 0 : (uint64_t)((now - c->idle_at_ns) / 1000000));
}

/* Whether part i of b goes gzipped: every part when cluster_compression is gzip, but the blocks
 * only when one of them is stored uncompressed (deflate over zstd frames costs the node CPU and
 * ClickHouse an inflate for nothing). */
static bool gzipped(const struct cluster *c, const struct batch *b, int i)
{
    return c->gzip && (i != PART_EVENTS || b->plain_blocks);
}

/* Reads the batch past from into b, encoded and gzipped. Returns 1 when one is in hand, 0 when
 * nothing is pending, 2 when jobs were deleted (carry_out_deletes() first), -1 on error (b left
 * empty). */
static int read_batch(struct cluster *c, struct batch *b, const struct store_ship_cursor *from,
                      char *err)
{
    for (int i = 0; i < PART_COUNT; i++) {
        rb_reset(&b->part[i]);
        b->rows[i] = 0;
        b->sent[i] = false;
    }
    b->plain_blocks = false;
    for (int i = 0; i < SC_COUNT; i++)
        rb_reset(&b->col[i]);
    b->have = false;
    c->fill = b;
    struct store_ship_sink sink = {.session = on_session, .span = on_span, .step = on_step,
                                   .queue = on_queue, .host = on_host, .pipe = on_pipe,
                                   .ud = c, .block = on_block};
    int64_t n = store_ship_read(c->ship, from, (int64_t)c->batch_rows, &sink, &b->to);
    if (n == -EAGAIN)
        return 2;
    if (n < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "reading the store: %s", strerror((int)-n));
        return -1;
    }
    if (memcmp(&b->to, from, sizeof b->to) == 0)
        return 0;
    if (b->rows[PART_SPANS]) { /* the spans' Native block */
        struct rb_buf *p = &b->part[PART_SPANS];
        rb_varuint(p, SC_COUNT);
        rb_varuint(p, b->rows[PART_SPANS]);
        for (int i = 0; i < SC_COUNT; i++) {
            rb_str(p, span_cols[i][0], strlen(span_cols[i][0]));
            rb_str(p, span_cols[i][1], strlen(span_cols[i][1]));
            rb_add(p, b->col[i].p, b->col[i].len);
            p->err |= b->col[i].err;
        }
    }
    for (int i = 0; i < PART_COUNT; i++) {
        if (b->rows[i] && (b->part[i].err ||
                           (gzipped(c, b, i) && rb_gzip(b->part[i].p, b->part[i].len, &b->gz[i]) < 0))) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
    }
    b->have = true;
    return 1;
}

/* While ClickHouse inserts the batch in hand: read the one after it (once). */
static void read_ahead(struct cluster *c)
{
    struct batch *cur = &c->bt[c->now], *next = &c->bt[!c->now];
    char err[CLUSTER_ERR_MAX];
    if (cur->have && !next->have)
        (void)read_batch(c, next, &cur->to, err); /* a failure is met again, in turn */
}

/* Sends the parts of the batch in hand not yet taken, then saves the cursor and makes the batch
 * read ahead (if any) the one in hand. Returns 0, 2 when jobs were deleted meanwhile (nothing
 * saved: carry_out_deletes() first), or -1 with err. */
static int send_batch(struct cluster *c, char *err)
{
    struct batch *b = &c->bt[c->now];
    for (int i = 0; i < PART_COUNT; i++) {
        if (b->sent[i] || b->rows[i] == 0)
            continue;
        bool gz = gzipped(c, b, i);
        const struct rb_buf *body = gz ? &b->gz[i] : &b->part[i];
        /* The next batch is read while ClickHouse inserts the spans, the part that takes it
         * longest: read during the blocks' insert (a few ms: the lines are one string per
         * block), the spans' would wait for the read, and the node's work and the engine's
         * would no longer overlap. */
        bool ahead = i == PART_SPANS || b->rows[PART_SPANS] == 0;
        if (post(c, insert_sql[i], body->p, body->len, gz, ahead ? read_ahead : NULL, err) < 0)
            return -1;
        b->sent[i] = true;
        STATS_ADD(c->stats, cluster_bytes, body->len);
    }
    int r = store_ship_save(c->ship, &b->to);
    if (r == -EAGAIN)
        return 2;
    if (r < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "saving the cursor: %s", strerror(-r));
        return -1;
    }
    c->cur = b->to;
    b->have = false;
    c->now = !c->now;
    STATS_ADD(c->stats, cluster_rows, b->rows[PART_SPANS] + b->rows[PART_STEPS] +
                                          b->rows[PART_QUEUES] + b->rows[PART_HOSTS] +
                                          b->rows[PART_PIPES]);
    STATS_ADD(c->stats, cluster_batches, 1);
    return 0;
}

/* ---- deleted jobs ---- */

/* Appends s as a ClickHouse string literal (quotes, backslash escapes). */
static void put_literal(struct rb_buf *b, const char *s)
{
    rb_add(b, "'", 1);
    for (; *s; s++) {
        if (*s == '\'' || *s == '\\')
            rb_add(b, "\\", 1);
        rb_add(b, s, 1);
    }
    rb_add(b, "'", 1);
}

/* Jobs deleted on the node (store_ship.h): drops what was read (it may hold their rows; parts
 * already taken collapse when sent again), takes the cursor as the delete left it, and deletes
 * each job's rows of this node in ClickHouse, in order, recording each once every table took
 * it. Returns 0 or -1 with err (the rest stays queued in the store, for the next attempt). */
static int carry_out_deletes(struct cluster *c, char *err)
{
    for (int k = 0; k < 2; k++)
        c->bt[k].have = false;
    int r = store_ship_reload(c->ship, &c->cur);
    if (r < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "reading the cursor: %s", strerror(-r));
        return -1;
    }
    struct rb_buf sql = {0};
    char job[RECORD_NAME_MAX + 1];
    int64_t id = 0;
    while ((r = store_ship_next_delete(c->ship, c->cur.del, &id, job, sizeof job)) == 1) {
        for (size_t t = 0; t < sizeof delete_tables / sizeof delete_tables[0] && r == 1; t++) {
            rb_reset(&sql);
            rb_add(&sql, "ALTER TABLE stepscope.", 22);
            rb_add(&sql, delete_tables[t], strlen(delete_tables[t]));
            rb_add(&sql, " DELETE WHERE node = ", 21);
            put_literal(&sql, c->node);
            rb_add(&sql, " AND job = ", 11);
            put_literal(&sql, job);
            if (sql.err) {
                snprintf(err, CLUSTER_ERR_MAX, "out of memory");
                r = -1;
            } else if (post(c, NULL, sql.p, sql.len, false, NULL, err) < 0) {
                r = -1;
            }
        }
        if (r == 1) { /* then the viewers' cue (pull.c), before any row committed after it */
            rb_reset(&sql);
            rb_str(&sql, c->node, strlen(c->node));
            rb_str(&sql, job, strlen(job));
            rb_i64(&sql, id);
            rb_i64(&sql, clock_now_ns());
            rb_i64(&sql, c->cur.block);
            rb_i64(&sql, c->cur.step);
            rb_i64(&sql, c->cur.queue);
            rb_i64(&sql, c->cur.host);
            rb_i64(&sql, c->cur.pipe);
            if (sql.err) {
                snprintf(err, CLUSTER_ERR_MAX, "out of memory");
                r = -1;
            } else if (post(c, insert_sql[INSERT_DELETES], sql.p, sql.len, false, NULL, err) < 0) {
                r = -1;
            }
        }
        if (r < 0)
            break;
        int s = store_ship_delete_done(c->ship, id);
        if (s < 0) {
            snprintf(err, CLUSTER_ERR_MAX, "saving the cursor: %s", strerror(-s));
            r = -1;
            break;
        }
        c->cur.del = id;
        STATS_ADD(c->stats, cluster_deletes, 1);
        log_info("cluster: job %s deleted: its rows of node %s deleted in ClickHouse", job,
                 c->node);
    }
    rb_free(&sql);
    if (r < 0 && r != -1)
        snprintf(err, CLUSTER_ERR_MAX, "reading the deleted jobs: %s", strerror(-r));
    update_pending(c);
    return r < 0 ? -1 : 0;
}

/* ---- per-step aggregates ---- */

static struct agg_mark *mark_find(struct agg_mark *v, size_t n, int64_t job_id, int64_t rank)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].job_id == job_id && v[i].rank == rank)
            return &v[i];
    return NULL;
}

/* Adds m to v, taking its sums (a (job, rank) already there has its sums replaced). */
static int mark_put(struct agg_mark **v, size_t *n, size_t *cap, struct agg_mark m)
{
    struct agg_mark *o = mark_find(*v, *n, m.job_id, m.rank);
    if (o) {
        free(o->sums);
        *o = m;
        return 0;
    }
    if (util_grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return -ENOMEM;
    (*v)[(*n)++] = m;
    return 0;
}

static void marks_free(struct agg_mark *v, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free(v[i].sums);
    *n = 0;
}

/* A job no longer live (evicted or deleted): what was shipped of it is not compared again. */
static void marks_drop_job(struct cluster *c, int64_t job_id)
{
    size_t u = 0;
    for (size_t i = 0; i < c->n_marks; i++) {
        if (c->marks[i].job_id == job_id)
            free(c->marks[i].sums);
        else
            c->marks[u++] = c->marks[i];
    }
    c->n_marks = u;
}

/* Drops the marks of the jobs no longer live (deleted or evicted, whether they changed or not). */
static void marks_prune(struct cluster *c)
{
    size_t u = 0;
    for (size_t i = 0; i < c->n_marks; i++) {
        const struct live_snapshot *snap;
        bool live = u > 0 && c->marks[u - 1].job_id == c->marks[i].job_id; /* its ranks, together */
        if (!live && live_snapshot_get(c->live, c->marks[i].job_id, &snap) == 0) {
            live_snapshot_put(snap);
            live = true;
        }
        if (live)
            c->marks[u++] = c->marks[i];
        else
            free(c->marks[i].sums);
    }
    c->n_marks = u;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Encodes the rows of one rank that differ from what was shipped of them (old, NULL: none), and
 * fills sums[0..n) with every row's sum. */
static void encode_rank(struct cluster *c, const char *job, const struct live_step_row *rows,
                        size_t n, const struct analyse_breakdown *bd, uint64_t version,
                        const struct agg_mark *old, struct agg_sum *sums)
{
    struct rb_buf *b = &c->agg;
    size_t k = 0; /* breakdown steps are by start time, as the rows are by step */
    size_t j = 0; /* old sums, by step too */
    for (size_t i = 0; i < n; i++) {
        const struct live_step_row *r = &rows[i];
        const struct analyse_bd_step *bs = NULL;
        if (bd && !r->from_record) {
            while (k < bd->n_steps && bd->steps[k].step < r->step)
                k++;
            if (k < bd->n_steps && bd->steps[k].step == r->step)
                bs = &bd->steps[k];
        }
        bool pts = r->source != LIVE_POINTS_NONE;
        const char *src = live_points_source_names[r->source];
        size_t at = b->len;
        put_head(c, b, job, r->rank);
        rb_i64(b, r->step);
        rb_i64(b, r->start_ns);
        rb_i64(b, r->end_ns);
        rb_i64(b, r->samples);
        rb_i64(b, r->spans);
        rb_u8(b, r->from_record ? 1 : 0);
        rb_str(b, src, strlen(src));
        rb_i64(b, pts ? r->interval_ns : -1);
        rb_i64(b, pts ? r->fp_bp_ns : -1);
        rb_i64(b, pts ? r->tail_ns : -1);
        for (int cat = 0; cat < ANALYSE_BD_COUNT; cat++)
            rb_i64(b, bs ? bs->cost_ns[cat] : -1);
        if (b->err)
            return; /* out of memory: the caller gives up the round */
        sums[i] = (struct agg_sum){r->step, util_hash(UTIL_HASH_SEED, b->p + at, b->len - at)};
        bool same = false;
        if (old) {
            while (j < old->n && old->sums[j].step < r->step)
                j++;
            for (size_t q = j; q < old->n && old->sums[q].step == r->step && !same; q++)
                same = old->sums[q].sum == sums[i].sum;
        }
        if (same) {
            b->len = at; /* shipped as it is */
            continue;
        }
        rb_u64(b, version);
        c->agg_rows++;
    }
}

/* Encodes the aggregates of one changed job: every row of its ranks that is not in ClickHouse as
 * it is now. A step may change long after later steps appeared (a trace's lines come in file
 * order, not time order), so each row is compared with what was shipped of it. Returns 0, or
 * -ENOMEM. */
static int encode_job(struct cluster *c, int64_t job_id, uint64_t version, bool *stale)
{
    char job[512];
    const struct live_snapshot *snap;
    if (live_snapshot_get(c->live, job_id, &snap) < 0) {
        marks_drop_job(c, job_id); /* deleted, or evicted from live memory: shipped while live */
        return 0;
    }
    if (store_ship_job_name(c->ship, job_id, job, sizeof job) < 0) {
        live_snapshot_put(snap);
        *stale = true; /* not committed yet, or unreadable for now: asked again next round */
        return 0;
    }
    size_t nr = live_query_rank_step_counts(c->live, job_id, c->rank_ids, c->rank_steps,
                                            LIVE_RANKS_MAX);
    int r = 0;
    for (size_t i = 0; i < nr && r == 0; i++) {
        int pulled = store_ship_pulled(c->ship, job_id, c->rank_ids[i]);
        if (pulled < 0)
            *stale = true; /* unreadable for now */
        if (pulled != 0)
            continue; /* another node's rank (pull.c): its node ships it */
        struct live_step_row *rows = NULL;
        size_t n = 0, total = 0;
        r = live_query_steps(snap, c->rank_ids[i], false, 0, SIZE_MAX, &rows, &n, &total);
        if (r < 0 || n == 0) {
            free(rows);
            continue;
        }
        struct agg_sum *sums = malloc(n * sizeof *sums);
        if (!sums) {
            free(rows);
            r = -ENOMEM;
            break;
        }
        struct live_breakdown_view view = {0};
        /* A recent breakdown is good enough while the job runs (one computation per rank per
         * LIVE_BD_STALE_NS, shared with the HTTP readers); one computed from fewer spans than
         * the snapshot's keeps the job for the next round, so the last one shipped is exact. */
        bool have_bd = live_query_breakdown(snap, c->rank_ids[i], LIVE_BD_STALE_NS, &view) == 0;
        if (have_bd && view.stale)
            *stale = true;
        encode_rank(c, job, rows, n, have_bd ? view.bd : NULL, version,
                    mark_find(c->marks, c->n_marks, job_id, c->rank_ids[i]), sums);
        if (have_bd)
            live_breakdown_view_done(&view);
        free(rows);
        struct agg_mark m = {job_id, c->rank_ids[i], sums, n};
        if (c->agg.err || mark_put(&c->next_marks, &c->n_next, &c->cap_next, m) < 0) {
            free(sums);
            r = -ENOMEM;
        }
    }
    live_snapshot_put(snap);
    return r < 0 ? -ENOMEM : 0;
}

/* Ships the aggregates of the jobs live republished since the last round, at most once per
 * CLUSTER_AGG_INTERVAL_NS. Returns 0 or -1 with err (the jobs stay changed for the next try). */
static int ship_aggregates(struct cluster *c, char *err)
{
    if (!c->live)
        return 0;
    int64_t now = clock_mono_ns();
    if (now - c->agg_at_ns < CLUSTER_AGG_INTERVAL_NS)
        return 0;
    c->agg_at_ns = now;
    int64_t deletes = 0;
    if (store_ship_deletes_pending(c->ship, c->cur.del, &deletes) == 0 && deletes > 0)
        return 0; /* a job of the same name may be among them: after the deletes */
    size_t n;
    uint64_t cursor = c->live_cursor;
    if (live_query_changed(c->live, &cursor, &c->fresh, &c->cap_fresh, &n) < 0 ||
        util_grow((void **)&c->changed, &c->cap_changed, c->n_changed + n,
                  sizeof *c->changed) < 0) {
        snprintf(err, CLUSTER_ERR_MAX, "out of memory"); /* the cursor stays: asked again */
        return -1;
    }
    c->live_cursor = cursor;
    if (n > 0) /* both NULL before the first change */
        memcpy(c->changed + c->n_changed, c->fresh, n * sizeof *c->changed);
    c->n_changed += n;
    marks_prune(c);
    if (c->n_changed == 0)
        return 0;
    qsort(c->changed, c->n_changed, sizeof *c->changed, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < c->n_changed; i++)
        if (u == 0 || c->changed[u - 1] != c->changed[i])
            c->changed[u++] = c->changed[i];
    c->n_changed = u;
    rb_reset(&c->agg);
    c->agg_rows = 0;
    marks_free(c->next_marks, &c->n_next); /* a failed round's */
    uint64_t version = (uint64_t)clock_now_ns();
    size_t keep = 0; /* jobs sent on a stale breakdown stay changed, first in the list */
    for (size_t i = 0; i < c->n_changed; i++) {
        bool stale = false;
        if (encode_job(c, c->changed[i], version, &stale) < 0 || c->agg.err) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
        if (stale)
            c->changed[keep++] = c->changed[i]; /* keep <= i: in place */
    }
    if (c->agg_rows > 0) {
        if (c->gzip && rb_gzip(c->agg.p, c->agg.len, &c->gz) < 0) {
            snprintf(err, CLUSTER_ERR_MAX, "out of memory");
            return -1;
        }
        const struct rb_buf *body = c->gzip ? &c->gz : &c->agg;
        if (post(c, insert_sql[INSERT_STEP_RANKS], body->p, body->len, c->gzip, NULL, err) < 0)
            return -1;
        STATS_ADD(c->stats, cluster_bytes, body->len);
        STATS_ADD(c->stats, cluster_aggregate_rows, c->agg_rows);
    }
    for (size_t i = 0; i < c->n_next; i++)
        if (mark_put(&c->marks, &c->n_marks, &c->cap_marks, c->next_marks[i]) < 0)
            free(c->next_marks[i].sums); /* out of memory: its rows are sent again, harmlessly */
    c->n_next = 0; /* their sums are the marks' now */
    c->n_changed = keep;
    return 0;
}

static void update_pending(struct cluster *c);

static void failed(struct cluster *c, const char *err)
{
    if (c->ship) /* the backlog keeps growing while the engine is away: /stats shows it */
        update_pending(c);
    c->migrated = false; /* the next attempt checks the schema first (a dropped table) */
    c->backoff_ms = c->backoff_ms ? c->backoff_ms * 2 : CLUSTER_BACKOFF_MIN_MS;
    if (c->backoff_ms > c->retry_max_ms)
        c->backoff_ms = c->retry_max_ms;
    STATS_ADD(c->stats, cluster_retries, 1);
    STATS_SET(c->stats, cluster_failing, 1);
    STATS_SET(c->stats, cluster_backoff_ms, c->backoff_ms);
    stats_note_set(&c->stats->cluster_last_error, err);
    if (c->ship)
        update_pending(c); /* the backlog (and deletes) grow while the engine is away */
    if (STATS_GET(c->stats, cluster_retries) == 1 || c->backoff_ms == c->retry_max_ms)
        log_warn("cluster: %s (retrying in %" PRIu64 " ms)", err, c->backoff_ms);
}

static void succeeded(struct cluster *c)
{
    if (STATS_GET(c->stats, cluster_failing))
        log_info("cluster: shipping to %s again", c->target);
    c->backoff_ms = 0;
    STATS_SET(c->stats, cluster_failing, 0);
    STATS_SET(c->stats, cluster_backoff_ms, 0);
}

static void *ship_main(void *arg)
{
    struct cluster *c = arg;
    char err[CLUSTER_ERR_MAX];
    while (!atomic_load(&c->stop)) {
        int r = 0;
        if (!c->ship) {
            char serr[STORE_ERR_MAX];
            r = store_ship_open(c->store, c->target, &c->ship, &c->cur, serr);
            if (r < 0)
                snprintf(err, sizeof err, "%s", serr);
        }
        if (r == 0 && !c->migrated) {
            r = migrate(c, err);
            c->migrated = r == 0;
        }
        if (r == 0 && !c->bt[c->now].have) {
            update_pending(c);
            r = read_batch(c, &c->bt[c->now], &c->cur, err);
            if (r == 2)
                r = carry_out_deletes(c, err) < 0 ? -1 : 3;
            if (r == 3)
                continue;
            if (r == 0) { /* nothing new: the aggregates' turn */
                if (ship_aggregates(c, err) < 0) {
                    failed(c, err);
                    if (nap(c, c->backoff_ms))
                        break;
                    continue;
                }
                if (nap(c, c->poll_ms))
                    break;
                continue;
            }
            r = r < 0 ? -1 : 0;
        }
        int64_t t0 = clock_mono_ns();
        const struct batch *sent = &c->bt[c->now];
        if (r == 0)
            r = send_batch(c, err);
        if (r == 2 && carry_out_deletes(c, err) == 0)
            continue;
        if (r != 0) {
            failed(c, err);
            if (nap(c, c->backoff_ms))
                break;
            continue;
        }
        succeeded(c);
        /* A long backlog does not hold the aggregates back (at most one round a second). */
        if (ship_aggregates(c, err) < 0) {
            failed(c, err);
            if (nap(c, c->backoff_ms))
                break;
            continue;
        }
        if (c->max_rows_per_s) { /* the catch-up bound */
            uint64_t rows = sent->rows[PART_SPANS] + sent->rows[PART_STEPS] + sent->rows[PART_QUEUES] +
                            sent->rows[PART_HOSTS] + sent->rows[PART_PIPES];
            int64_t want_ns = (int64_t)(rows * 1000000000.0 / (double)c->max_rows_per_s);
            int64_t took = clock_mono_ns() - t0;
            if (want_ns > took && nap(c, (uint64_t)((want_ns - took) / 1000000)))
                break;
        }
    }
    return NULL;
}

/* ---- start and stop ---- */

int cluster_start(const struct cluster_config *cfg, struct cluster **ret, char *err)
{
    const char *u = cfg->url ? cfg->url : "";
    if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) {
        snprintf(err, CLUSTER_ERR_MAX, "cluster_url %s: not an http:// or https:// URL", u);
        return -EINVAL;
    }
    const char *auth = strstr(u, "://") + 3;
    size_t alen = strcspn(auth, "/?#");
    if (memchr(auth, '@', alen)) {
        snprintf(err, CLUSTER_ERR_MAX, "cluster_url: credentials go in cluster_credentials_file, "
                 "not in the URL");
        return -EINVAL;
    }
    if (!cfg->node || !cfg->node[0]) {
        snprintf(err, CLUSTER_ERR_MAX, "node: empty");
        return -EINVAL;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, CLUSTER_ERR_MAX, "libcurl would not start");
        return -ENOMEM;
    }
    struct cluster *c = calloc(1, sizeof *c);
    if (!c) {
        curl_global_cleanup();
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->url = strdup(u);
    c->target = strndup(u, (size_t)(auth - u) + alen);
    c->node = strdup(cfg->node);
    c->user = strdup(cfg->user ? cfg->user : "");
    c->password = strdup(cfg->password ? cfg->password : "");
    c->node_len = strlen(cfg->node);
    c->batch_rows = cfg->batch_rows ? cfg->batch_rows : 1;
    c->max_rows_per_s = cfg->max_rows_per_s;
    c->retry_max_ms = cfg->retry_max_ms > CLUSTER_BACKOFF_MIN_MS ? cfg->retry_max_ms
                                                                 : CLUSTER_BACKOFF_MIN_MS;
    c->poll_ms = cfg->poll_ms ? cfg->poll_ms : 200;
    c->gzip = !cfg->no_gzip;
    c->store = cfg->store;
    c->stats = cfg->stats;
    c->curl = curl_easy_init();
    c->multi = curl_multi_init();
    c->live = cfg->live;
    if (c->live) {
        c->rank_ids = malloc(LIVE_RANKS_MAX * sizeof *c->rank_ids);
        c->rank_steps = malloc(LIVE_RANKS_MAX * sizeof *c->rank_steps);
    }
    bool agg_ok = !c->live || (c->rank_ids && c->rank_steps);
    if (!agg_ok || !c->multi || !c->url || !c->target || !c->node || !c->user || !c->password || !c->curl) {
        cluster_free(c);
        curl_global_cleanup();
        snprintf(err, CLUSTER_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    cluster__curl_setup(c->curl, CLUSTER_CONNECT_TIMEOUT_MS, CLUSTER_REQUEST_TIMEOUT_MS,
                        on_answer, &c->answer, &c->stop, c->user, c->password);
    STATS_SET(c->stats, cluster_enabled, 1);
    /* The backlog is known before the node answers HTTP: /stats never shows a node that has
     * not looked yet as caught up. A store that cannot open the connection now is retried by
     * the thread. */
    char serr[STORE_ERR_MAX];
    c->idle_at_ns = clock_now_ns();
    if (store_ship_open(c->store, c->target, &c->ship, &c->cur, serr) == 0)
        update_pending(c);
    if (pthread_create(&c->thread, NULL, ship_main, c) != 0) {
        cluster_free(c);
        curl_global_cleanup();
        snprintf(err, CLUSTER_ERR_MAX, "cannot start the shipper thread");
        return -ENOMEM;
    }
    c->started = true;
    *ret = c;
    return 0;
}

void cluster_stop(struct cluster *c)
{
    if (!c)
        return;
    cluster_pull_stop(c->pull);
    c->pull = NULL;
    pthread_mutex_lock(&c->mu);
    atomic_store(&c->stop, true);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mu);
    if (c->started)
        pthread_join(c->thread, NULL);
    cluster_free(c);
    curl_global_cleanup();
}

int cluster_hold_job(struct cluster *c, const char *job, bool hold)
{
    return c && c->pull ? cluster_pull_hold(c->pull, job, hold) : 0;
}

int cluster_start_config(const struct config *cfg, struct store *store, struct live *live,
                         struct stats *stats, const struct cluster_ops *ops,
                         struct cluster **ret, char *err)
{
    *ret = NULL;
    if (!cfg->cluster_url[0])
        return 0;
    char user[256] = "", password[256] = "";
    int r = 0;
    if (cfg->cluster_credentials_file[0])
        r = cluster_read_credentials(cfg->cluster_credentials_file, user, password, sizeof user,
                                     err);
    if (r == 0) {
        struct cluster_config cc = {
            .url = cfg->cluster_url,
            .user = user,
            .password = password,
            .node = cfg->node,
            .batch_rows = cfg->cluster_batch_rows,
            .max_rows_per_s = cfg->cluster_max_rows_per_s,
            .retry_max_ms = cfg->cluster_retry_max_ms,
            .no_gzip = !cfg->cluster_gzip,
            .store = store,
            .live = live,
            .stats = stats,
            .ops = ops ? *ops : (struct cluster_ops){0},
        };
        r = cluster_start(&cc, ret, err);
        if (r == 0 && cfg->cluster_view) {
            r = cluster_pull_start(&cc, cfg->socket, &(*ret)->pull, err);
            if (r < 0) {
                cluster_stop(*ret);
                *ret = NULL;
            }
        }
    }
    explicit_bzero(password, sizeof password);
    if (r == 0)
        log_info("cluster: shipping to %s as node %s%s", cfg->cluster_url, cfg->node,
                 cfg->cluster_view ? ", showing the other nodes' ranks" : "");
    return r;
}
