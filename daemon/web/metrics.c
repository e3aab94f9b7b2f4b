/* SPDX-License-Identifier: MIT */
/*
 * metrics: GET /metrics in the Prometheus text exposition format (version 0.0.4).
 *
 * Two steps. collect() reads the store's job list (most recently seen first) and, job by job,
 * the live snapshot, into plain arrays; a snapshot is held only while its own job is read.
 * render() then writes family after family, because the format wants every sample of one
 * family together. Per-rank numbers come from the same live queries as the JSON routes: means
 * from live_query_ranks() (/ranks), the latest step from live_query_steps() (/steps), queue
 * depths from live_query_queues() (/queues), so the two always agree.
 *
 * Cardinality is bounded by metrics_max_ranks: (job, rank) pairs are exported in job order
 * until the cap (a job without live ranks weighs one pair); what is left out is counted in
 * stepscope_metrics_omitted_ranks and _jobs. A rank has at most LIVE_QUEUES_MAX queues.
 *
 * Label values are escaped as the format says (backslash, double quote, line feed) and
 * invalid UTF-8 becomes U+FFFD, as in the JSON answers, so a label equals the JSON string.
 */
#include "../../lib/util.h"
#include "answer.h"
#include "render.h"
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* The per-rank gauges, in output order. */
enum m_rank_field {
    M_STEPS,
    M_LAST_STEP,
    M_STEP,
    M_STEP_MEAN,
    M_INTERVAL,
    M_INTERVAL_MEAN,
    M_FP_BP,
    M_FP_BP_MEAN,
    M_TAIL,
    M_TAIL_MEAN,
    M_DATALOADER,
    M_SPS,
    M_SPS_MEAN,
    M_RANK_FIELDS,
};

struct m_family {
    const char *name;
    const char *help;
};

static const struct m_family rank_families[M_RANK_FIELDS] = {
    [M_STEPS] = {"stepscope_steps", "Steps of the rank held by live analysis."},
    [M_LAST_STEP] = {"stepscope_last_step", "Number of the rank's latest step."},
    [M_STEP] = {"stepscope_step_seconds", "Duration (end - begin) of the rank's latest step."},
    [M_STEP_MEAN] = {"stepscope_step_mean_seconds",
                     "Mean step duration over the steps held (mean_us of /ranks)."},
    [M_INTERVAL] = {"stepscope_step_interval_seconds",
                    "Step interval (begin to FP start) of the latest step."},
    [M_INTERVAL_MEAN] = {"stepscope_step_interval_mean_seconds",
                         "Mean step interval (interval_mean_us of /ranks)."},
    [M_FP_BP] = {"stepscope_step_fp_bp_seconds", "FP start to BP end of the latest step."},
    [M_FP_BP_MEAN] = {"stepscope_step_fp_bp_mean_seconds",
                      "Mean FP+BP time (fp_bp_mean_us of /ranks)."},
    [M_TAIL] = {"stepscope_step_tail_seconds", "BP end to step end of the latest step."},
    [M_TAIL_MEAN] = {"stepscope_step_tail_mean_seconds", "Mean tail (tail_mean_us of /ranks)."},
    [M_DATALOADER] = {"stepscope_dataloader_share",
                      "Share of step time before the forward pass (the dataloader phase, or the "
                      "step interval of traces) over the steps with FP/BP points, 0 to 1."},
    [M_SPS] = {"stepscope_samples_per_second", "Samples of the latest step over its duration."},
    [M_SPS_MEAN] = {"stepscope_mean_samples_per_second",
                    "Samples over duration of all held steps that give samples."},
};

/* The per-queue gauges. */
enum m_queue_field { Q_SIZE, Q_CAPACITY, Q_MEAN, Q_EMPTY, Q_FIELDS };

static const struct m_family queue_families[Q_FIELDS] = {
    [Q_SIZE] = {"stepscope_queue_size", "Elements in the queue at its latest sample (by step)."},
    [Q_CAPACITY] = {"stepscope_queue_capacity", "Capacity the queue's latest sample gave."},
    [Q_MEAN] = {"stepscope_queue_mean_size", "Mean elements in the queue over its samples."},
    [Q_EMPTY] = {"stepscope_queue_empty_ratio", "Share of the queue's samples that found it empty."},
};

struct m_job {
    char name[RECORD_NAME_MAX + 1];
    bool live;
    int64_t ranks;
};

struct m_rank {
    size_t job; /* index into m_doc.jobs */
    int64_t rank;
    double v[M_RANK_FIELDS]; /* NaN: no value, no sample */
};

struct m_queue {
    size_t rank; /* index into m_doc.ranks */
    char *name;  /* owned */
    double v[Q_FIELDS];
};

struct m_doc {
    struct m_job *jobs;
    size_t n_jobs;
    struct m_rank *ranks;
    size_t n_ranks, cap_ranks;
    struct m_queue *queues;
    size_t n_queues, cap_queues;
    uint64_t omitted_ranks, omitted_jobs;
    bool have_info;
    struct store_info info;
};

static void doc_done(struct m_doc *d)
{
    for (size_t i = 0; i < d->n_queues; i++)
        free(d->queues[i].name);
    free(d->queues);
    free(d->ranks);
    free(d->jobs);
}

static double ns_to_s(double ns)
{
    return ns / 1e9;
}

/* The rank's step figures: means from row (as /ranks gives them), the latest step and the
 * sums behind the shares and rates from its step rows. */
static int add_rank(struct m_doc *d, const struct live_snapshot *snap, size_t job,
                    const struct analyse_rank_row *row)
{
    struct live_step_row *rows = NULL;
    size_t n = 0, total = 0;
    int r = live_query_steps(snap, row->rank, false, 0, 0, &rows, &n, &total);
    if (r < 0)
        return r;
    r = util_grow((void **)&d->ranks, &d->cap_ranks, d->n_ranks + 1, sizeof *d->ranks);
    if (r < 0) {
        free(rows);
        return r;
    }
    struct m_rank *m = &d->ranks[d->n_ranks++];
    m->job = job;
    m->rank = row->rank;
    for (size_t k = 0; k < M_RANK_FIELDS; k++)
        m->v[k] = NAN;
    m->v[M_STEPS] = (double)total;
    static const enum m_rank_field means[ANALYSE_RANK_METRIC_COUNT] = {
        M_STEP_MEAN, M_INTERVAL_MEAN, M_FP_BP_MEAN, M_TAIL_MEAN};
    for (size_t k = 0; k < ANALYSE_RANK_METRIC_COUNT; k++)
        if (row->stat[k].count > 0)
            m->v[means[k]] = ns_to_s(row->stat[k].mean_ns);
    /* Doubles: a hostile step can hold any int64 duration, and sums must not overflow. */
    double samples = 0, samples_ns = 0, before_fp_ns = 0, with_points_ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].samples >= 0 && rows[i].total_ns > 0) {
            samples += (double)rows[i].samples;
            samples_ns += (double)rows[i].total_ns;
        }
        if (rows[i].source != LIVE_POINTS_NONE) {
            before_fp_ns += (double)rows[i].interval_ns;
            with_points_ns += (double)rows[i].total_ns;
        }
    }
    if (samples_ns > 0)
        m->v[M_SPS_MEAN] = samples / ns_to_s(samples_ns);
    if (with_points_ns > 0)
        m->v[M_DATALOADER] = before_fp_ns / with_points_ns;
    if (n > 0) {
        const struct live_step_row *last = &rows[n - 1];
        m->v[M_LAST_STEP] = (double)last->step;
        m->v[M_STEP] = ns_to_s((double)last->total_ns);
        if (last->source != LIVE_POINTS_NONE) {
            m->v[M_INTERVAL] = ns_to_s((double)last->interval_ns);
            m->v[M_FP_BP] = ns_to_s((double)last->fp_bp_ns);
            m->v[M_TAIL] = ns_to_s((double)last->tail_ns);
        }
        if (last->samples >= 0 && last->total_ns > 0)
            m->v[M_SPS] = (double)last->samples / ns_to_s((double)last->total_ns);
    }
    free(rows);
    return 0;
}

/* The queues of the exported ranks d->ranks[first, d->n_ranks) of one job. */
static int add_queues(struct m_doc *d, const struct live_snapshot *snap, size_t first)
{
    struct live_queue_row *rows = NULL;
    size_t n = 0;
    int r = live_query_queues(snap, -1, &rows, &n);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n && r == 0; i++) {
        const struct live_queue_row *q = &rows[i];
        size_t k = first;
        while (k < d->n_ranks && d->ranks[k].rank != q->rank)
            k++;
        if (k == d->n_ranks || q->n_samples == 0)
            continue;
        r = util_grow((void **)&d->queues, &d->cap_queues, d->n_queues + 1, sizeof *d->queues);
        char *name = r == 0 ? strdup(q->name) : NULL;
        if (!name) {
            r = -ENOMEM;
            break;
        }
        struct m_queue *m = &d->queues[d->n_queues++];
        m->rank = k;
        m->name = name;
        m->v[Q_SIZE] = (double)q->samples[q->n_samples - 1].size;
        m->v[Q_CAPACITY] = q->capacity >= 0 ? (double)q->capacity : NAN;
        m->v[Q_MEAN] = q->stats.avg_size;
        m->v[Q_EMPTY] = q->stats.empty_ratio;
    }
    live_queue_rows_free(rows, n);
    return r;
}

/* One job: its ranks in rank order while the budget lasts. */
static int add_job(struct web *w, struct m_doc *d, const struct store_job *j, size_t *budget)
{
    const struct live_snapshot *snap = NULL;
    struct analyse_ranks *ar = NULL;
    int r = 0;
    if (w->live && live_snapshot_get(w->live, j->id, &snap) == 0)
        r = live_query_ranks(snap, w->helper_rules.straggler_ratio, &ar);
    size_t n = ar ? ar->n_ranks : 0;
    if (r < 0)
        goto out;
    if (*budget == 0) {
        d->omitted_jobs++;
        d->omitted_ranks += n;
        goto out;
    }
    size_t take = n < *budget ? n : *budget;
    *budget -= take ? take : 1;
    d->omitted_ranks += n - take;
    size_t job = d->n_jobs++;
    struct m_job *mj = &d->jobs[job];
    memcpy(mj->name, j->name, sizeof mj->name);
    mj->live = j->live;
    mj->ranks = j->ranks;
    size_t first = d->n_ranks;
    for (size_t k = 0; k < take && r == 0; k++)
        r = add_rank(d, snap, job, &ar->rows[k]);
    if (r == 0 && take > 0)
        r = add_queues(d, snap, first);
out:
    analyse_ranks_free(ar);
    live_snapshot_put(snap);
    return r;
}

static int collect(struct web *w, struct m_doc *d)
{
    int r = store_query_info(w->store, &d->info);
    if (r < 0)
        return r;
    d->have_info = true;
    struct store_job *jobs = NULL;
    size_t n = 0;
    r = store_query_jobs(w->store, &jobs, &n);
    if (r < 0)
        return r;
    d->jobs = calloc(n ? n : 1, sizeof *d->jobs);
    if (!d->jobs)
        r = -ENOMEM;
    size_t budget = w->metrics_max_ranks;
    for (size_t i = 0; i < n && r == 0; i++)
        r = add_job(w, d, &jobs[i], &budget);
    free(jobs);
    return r;
}

static const char *prom_escape(unsigned char c, char *buf)
{
    (void)buf;
    return c == '\\' ? "\\\\" : c == '"' ? "\\\"" : c == '\n' ? "\\n" : NULL;
}

void web__prom_label_value(struct sbuf *b, const char *s, size_t n)
{
    sbuf_add_escaped(b, s, n, prom_escape, "\xef\xbf\xbd"); /* U+FFFD */
}

static void family(struct sbuf *b, const char *name, const char *type, const char *help)
{
    sbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void label(struct sbuf *b, const char *key, const char *value, bool first)
{
    sbuf_printf(b, "%s%s=\"", first ? "{" : ",", key);
    web__prom_label_value(b, value, strlen(value));
    sbuf_addc(b, '"');
}

/* name{job="...",rank="..." without the closing brace. */
static void rank_head(struct sbuf *b, const struct m_doc *d, const char *name,
                      const struct m_rank *m)
{
    sbuf_adds(b, name);
    label(b, "job", d->jobs[m->job].name, true);
    sbuf_printf(b, ",rank=\"%" PRId64 "\"", m->rank);
}

static void value(struct sbuf *b, double v)
{
    sbuf_printf(b, "} %.15g\n", v);
}

struct m_counter {
    const char *name;
    const char *type;
    const char *help;
    size_t offset; /* of the _Atomic uint64_t in struct stats */
};

#define C(field) offsetof(struct stats, field)
static const struct m_counter counters[] = {
    {"stepscope_connections_accepted_total", "counter", "Client connections accepted.",
     C(connections_accepted)},
    {"stepscope_connections_open", "gauge", "Client connections open now.", C(connections_open)},
    {"stepscope_connections_rejected_total", "counter",
     "Client connections refused over max_connections.", C(connections_rejected)},
    {"stepscope_connections_hello_timeouts_total", "counter",
     "Client connections closed for sending no complete hello within hello_timeout_ms.",
     C(connections_hello_timeouts)},
    {"stepscope_connections_evicted_total", "counter",
     "Client connections without a hello closed to make room for new ones.",
     C(connections_evicted)},
    {"stepscope_received_bytes_total", "counter", "Bytes received on client connections.",
     C(bytes)},
    {"stepscope_lines_total", "counter", "Protocol lines after the hello, blank ones excluded.",
     C(lines)},
    {"stepscope_hellos_total", "counter", "Valid hellos.", C(hellos)},
    {"stepscope_bad_hellos_total", "counter", "Connections closed for a bad first line.",
     C(bad_hellos)},
    {"stepscope_duplicate_lines_total", "counter", "Replayed lines already held, skipped.",
     C(duplicates)},
    {"stepscope_partial_lines_total", "counter", "Unterminated lines dropped at close.",
     C(partial_lines)},
    {"stepscope_acknowledged_lines_total", "counter", "Lines made durable and acknowledged.",
     C(acknowledged)},
    {"stepscope_commits_total", "counter", "Store transactions committed.", C(commits)},
    {"stepscope_commit_errors_total", "counter", "Store commits that failed.", C(commit_errors)},
    {"stepscope_buffered_bytes", "gauge", "Bytes accepted but not yet durable.",
     C(buffered_bytes)},
    {"stepscope_backpressure_pauses_total", "counter", "Times reading paused for backpressure.",
     C(pauses)},
    {"stepscope_evicted_blocks_total", "counter", "Timeline blocks evicted by retention.",
     C(evicted_blocks)},
    {"stepscope_evicted_events_total", "counter", "Trace events evicted by retention.",
     C(evicted_events)},
    {"stepscope_evicted_bytes_total", "counter", "Compressed bytes evicted by retention.",
     C(evicted_bytes)},
    {"stepscope_live_bytes", "gauge", "Bytes the live analyses hold (budget live_max_bytes).",
     C(live_bytes)},
    {"stepscope_live_evictions_total", "counter", "Ended jobs evicted from live memory.",
     C(live_evictions)},
    {"stepscope_live_reloads_total", "counter", "Evicted jobs reloaded from the store.",
     C(live_reloads)},
    {"stepscope_live_untracked_jobs", "gauge",
     "Jobs refused live analysis because live_max_jobs were tracked.", C(live_untracked_jobs)},
    {"stepscope_http_requests_total", "counter", "HTTP requests handled.", C(http_requests)},
    {"stepscope_http_errors_total", "counter", "HTTP answers with status 400 or more.",
     C(http_errors)},
    {"stepscope_http_deadline_closed_total", "counter",
     "HTTP connections closed because a request was not in by http_request_timeout_s.",
     C(http_deadline_closed)},
    {"stepscope_http_exports_refused_total", "counter",
     "Timeline exports refused (503) because http_max_exports were in progress.",
     C(http_exports_refused)},
    {"stepscope_http_analyses_refused_total", "counter",
     "Analyses refused (503 busy) because http_threads - 1 were running.",
     C(http_analyses_refused)},
    {"stepscope_http_analyses_timed_out_total", "counter",
     "Analyses stopped (503 deadline) past http_analysis_timeout_ms.",
     C(http_analyses_timed_out)},
    {"stepscope_http_analyses_abandoned_total", "counter",
     "Analyses stopped because their client hung up.", C(http_analyses_abandoned)},
    {"stepscope_http_analyses_over_budget_total", "counter",
     "Analyses stopped (413 or 503) because they would pass http_analysis_max_bytes.",
     C(http_analyses_over_budget)},
    {"stepscope_http_responses_too_large_total", "counter",
     "Answers refused (413 response_too_large) because they would exceed max_response_bytes.",
     C(http_responses_too_large)},
    {"stepscope_captures_refused_total", "counter",
     "Captures refused: no connected session could serve them (409), or past capture_max_open "
     "(429).",
     C(captures_refused)},
    {"stepscope_captures_expired_total", "counter",
     "Capture parts expired after capture_expire_s pending.", C(captures_expired)},
    {"stepscope_cluster_rows_total", "counter",
     "Rows (spans, steps, queue samples) ClickHouse took from this node.", C(cluster_rows)},
    {"stepscope_cluster_aggregate_rows_total", "counter",
     "Per-step per-rank aggregate rows sent to ClickHouse (a step again while it may change).",
     C(cluster_aggregate_rows)},
    {"stepscope_cluster_bytes_total", "counter",
     "Compressed request bytes of the batches ClickHouse took.", C(cluster_bytes)},
    {"stepscope_cluster_batches_total", "counter", "Batches shipped to ClickHouse.",
     C(cluster_batches)},
    {"stepscope_cluster_retries_total", "counter",
     "Failed shipping attempts, each followed by a backoff.", C(cluster_retries)},
    {"stepscope_cluster_pending_rows", "gauge", "Rows committed here, not yet shipped.",
     C(cluster_pending_rows)},
    {"stepscope_cluster_pending_batches", "gauge",
     "Batches of cluster_batch_rows not yet shipped.", C(cluster_pending_batches)},
    {"stepscope_cluster_failing", "gauge", "1 while the last shipping attempt failed.",
     C(cluster_failing)},
    {"stepscope_cluster_deletes_total", "counter",
     "Jobs deleted here whose rows of this node ClickHouse was told to delete.",
     C(cluster_deletes)},
    {"stepscope_cluster_pending_deletes", "gauge",
     "Jobs deleted here, not yet deleted in ClickHouse.", C(cluster_pending_deletes)},
    {"stepscope_cluster_view_rows_total", "counter",
     "Rows pulled from the other nodes' shipments and acknowledged here (the cluster view).",
     C(cluster_view_rows)},
    {"stepscope_cluster_view_failing", "gauge", "1 while the cluster view's last round failed.",
     C(cluster_view_failing)},
};
#undef C

static uint64_t counter_get(struct stats *s, size_t offset)
{
    return atomic_load_explicit((_Atomic uint64_t *)(void *)((char *)s + offset),
                                memory_order_relaxed);
}

static void render_daemon(struct sbuf *b, struct stats *s, const struct m_doc *d,
                          const char *version)
{
    static const char *const kinds[RECORD_KIND_COUNT] = {
        [RECORD_TRACE] = "trace", [RECORD_STEP] = "step",       [RECORD_QUEUE] = "queue",
        [RECORD_PIPELINE] = "pipeline", [RECORD_HOST] = "host",
    };
    family(b, "stepscope_build_info", "gauge", "Always 1; the daemon's version as a label.");
    sbuf_adds(b, "stepscope_build_info");
    label(b, "version", version, true);
    value(b, 1);
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++) {
        family(b, counters[i].name, counters[i].type, counters[i].help);
        sbuf_printf(b, "%s %" PRIu64 "\n", counters[i].name, counter_get(s, counters[i].offset));
    }
    /* The shipper's two times are kept in ms; Prometheus wants seconds. */
    family(b, "stepscope_cluster_lag_seconds", "gauge",
           "Seconds since the shipper last had nothing pending (0 when caught up).");
    sbuf_printf(b, "stepscope_cluster_lag_seconds %.3f\n", (double)STATS_GET(s, cluster_lag_ms) / 1e3);
    family(b, "stepscope_cluster_backoff_seconds", "gauge", "Wait before the next shipping attempt.");
    sbuf_printf(b, "stepscope_cluster_backoff_seconds %.3f\n",
                (double)STATS_GET(s, cluster_backoff_ms) / 1e3);
    family(b, "stepscope_records_total", "counter", "Records accepted, by kind.");
    for (int k = 0; k < RECORD_KIND_COUNT; k++)
        sbuf_printf(b, "stepscope_records_total{kind=\"%s\"} %" PRIu64 "\n", kinds[k],
                    (uint64_t)STATS_GET(s, records[k]));
    family(b, "stepscope_rejected_lines_total", "counter",
           "Lines refused, by reason (as in /api/v1/stats).");
    const struct {
        const char *reason;
        uint64_t n;
    } rejected[] = {
        {"malformed", STATS_GET(s, malformed)},
        {"oversized", STATS_GET(s, oversized)},
        {"unknown", STATS_GET(s, unknown)},
        {"invalid", STATS_GET(s, invalid)},
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++)
        sbuf_printf(b, "stepscope_rejected_lines_total{reason=\"%s\"} %" PRIu64 "\n",
                    rejected[i].reason, rejected[i].n);
    if (d->have_info) {
        const struct {
            const char *name, *help;
            int64_t v;
        } store[] = {
            {"stepscope_store_bytes", "Database plus WAL file size.", d->info.db_bytes},
            {"stepscope_store_jobs", "Jobs in the store.", d->info.jobs},
            {"stepscope_store_blocks", "Compressed timeline blocks stored.", d->info.blocks},
            {"stepscope_store_block_bytes", "Their compressed size.", d->info.block_bytes},
            {"stepscope_store_block_raw_bytes", "Their size before compression.",
             d->info.block_raw_bytes},
        };
        for (size_t i = 0; i < sizeof store / sizeof store[0]; i++) {
            family(b, store[i].name, "gauge", store[i].help);
            sbuf_printf(b, "%s %" PRId64 "\n", store[i].name, store[i].v);
        }
    }
    family(b, "stepscope_metrics_omitted_ranks", "gauge",
           "(job, rank) pairs left out of this answer by metrics_max_ranks.");
    sbuf_printf(b, "stepscope_metrics_omitted_ranks %" PRIu64 "\n", d->omitted_ranks);
    family(b, "stepscope_metrics_omitted_jobs", "gauge",
           "Jobs left out of this answer by metrics_max_ranks.");
    sbuf_printf(b, "stepscope_metrics_omitted_jobs %" PRIu64 "\n", d->omitted_jobs);
}

static void render_jobs(struct sbuf *b, const struct m_doc *d)
{
    family(b, "stepscope_job_live", "gauge", "1 while a session of the job is open, else 0.");
    for (size_t i = 0; i < d->n_jobs; i++) {
        sbuf_adds(b, "stepscope_job_live");
        label(b, "job", d->jobs[i].name, true);
        value(b, d->jobs[i].live ? 1 : 0);
    }
    family(b, "stepscope_job_ranks", "gauge", "Distinct ranks the job has had.");
    for (size_t i = 0; i < d->n_jobs; i++) {
        sbuf_adds(b, "stepscope_job_ranks");
        label(b, "job", d->jobs[i].name, true);
        value(b, (double)d->jobs[i].ranks);
    }
    for (size_t f = 0; f < M_RANK_FIELDS; f++) {
        family(b, rank_families[f].name, "gauge", rank_families[f].help);
        for (size_t i = 0; i < d->n_ranks; i++) {
            if (isnan(d->ranks[i].v[f]))
                continue;
            rank_head(b, d, rank_families[f].name, &d->ranks[i]);
            value(b, d->ranks[i].v[f]);
        }
    }
    for (size_t f = 0; f < Q_FIELDS; f++) {
        family(b, queue_families[f].name, "gauge", queue_families[f].help);
        for (size_t i = 0; i < d->n_queues; i++) {
            const struct m_queue *q = &d->queues[i];
            if (isnan(q->v[f]))
                continue;
            rank_head(b, d, queue_families[f].name, &d->ranks[q->rank]);
            label(b, "queue", q->name, false);
            value(b, q->v[f]);
        }
    }
}

int web__route_metrics(struct web *w, struct web_answer *a)
{
    if (!w->store)
        return web__no_store(a);
    struct m_doc d;
    memset(&d, 0, sizeof d);
    int r = collect(w, &d);
    if (r < 0) {
        doc_done(&d);
        return web__store_error(a, r, "metrics");
    }
    struct sbuf b;
    sbuf_init(&b, w->max_response_bytes);
    render_daemon(&b, w->stats, &d, w->version);
    render_jobs(&b, &d);
    doc_done(&d);
    return web__doc(w, a, WEB_HTTP_OK, &b, METRICS_CONTENT_TYPE, NULL);
}
