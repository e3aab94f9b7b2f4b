/* SPDX-License-Identifier: MIT */
/*
 * render: the JSON documents of the API, written into an sbuf. This is the one JSON writer of
 * daemon/web/: every string goes through sbuf_json_str() (so a job or host name can never break out of
 * its string or become markup in the dashboard, and invalid UTF-8 becomes U+FFFD), and every time
 * through sbuf_json_us(), which turns the store's int64 nanoseconds into exact microseconds at
 * this edge. The sbuf's cap is the response cap: a document that does not fit leaves the buffer
 * failed, and http.c turns that into an error answer instead of a truncated body.
 */
#include "render.h"

#include "../analyse/analyse_clock.h"
#include "../analyse/analyse_cluster.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void key(struct sbuf *b, const char *k)
{
    sbuf_json_strz(b, k);
    sbuf_addc(b, ':');
}

static void member_i64(struct sbuf *b, const char *k, int64_t v)
{
    key(b, k);
    sbuf_printf(b, "%" PRId64, v);
    sbuf_addc(b, ',');
}

static void member_u64(struct sbuf *b, const char *k, uint64_t v)
{
    key(b, k);
    sbuf_printf(b, "%" PRIu64, v);
    sbuf_addc(b, ',');
}

static void member_str(struct sbuf *b, const char *k, const char *v)
{
    key(b, k);
    sbuf_json_strz(b, v);
    sbuf_addc(b, ',');
}

static void member_us(struct sbuf *b, const char *k, int64_t ns)
{
    key(b, k);
    sbuf_json_us(b, ns);
    sbuf_addc(b, ',');
}

static void member_bool_last(struct sbuf *b, const char *k, bool v)
{
    key(b, k);
    sbuf_adds(b, v ? "true" : "false");
}

void web__render_error(struct sbuf *b, const char *code, const char *message)
{
    sbuf_adds(b, "{\"error\":{");
    member_str(b, "code", code);
    key(b, "message");
    sbuf_json_strz(b, message ? message : code);
    sbuf_adds(b, "}}");
}

void web__render_health(struct sbuf *b, const char *version, const char *instance,
                        const char *socket, struct stats *s, const struct store_space *space)
{
    uint64_t failing = STATS_GET(s, commit_failing);
    bool low = space && space->low;
    if (failing || low) {
        sbuf_adds(b, "{\"status\":\"degraded\",\"problems\":[");
        char msg[200];
        if (failing) {
            snprintf(msg, sizeof msg,
                     "store: commits are failing (%s) and retried; nothing new is acknowledged",
                     strerror((int)failing));
            sbuf_json_strz(b, msg);
        }
        if (low) {
            snprintf(msg, sizeof msg,
                     "store: the data dir's file system has %" PRIu64 " bytes free, under "
                     "min_free_bytes (%" PRIu64 "); commits fail when it is full",
                     space->free_bytes, space->min_free_bytes);
            if (failing)
                sbuf_addc(b, ',');
            sbuf_json_strz(b, msg);
        }
        sbuf_adds(b, "],");
    } else {
        sbuf_adds(b, "{\"status\":\"ok\",");
    }
    key(b, "version");
    sbuf_json_strz(b, version);
    sbuf_addc(b, ',');
    key(b, "instance");
    sbuf_json_strz(b, instance);
    sbuf_addc(b, ',');
    key(b, "socket");
    sbuf_json_strz(b, socket);
    sbuf_addc(b, '}');
}

void web__render_job_fields(struct sbuf *b, const struct store_job *j)
{
    member_i64(b, "id", j->id);
    member_str(b, "name", j->name);
    member_i64(b, "ranks", j->ranks);
    member_i64(b, "world_size", j->world_size);
    member_i64(b, "sessions", j->sessions);
    member_i64(b, "steps", j->steps);
    member_i64(b, "spans", j->spans);
    member_i64(b, "events", j->events);
    member_i64(b, "queue_samples", j->queue_samples);
    member_i64(b, "host_samples", j->host_samples);
    member_i64(b, "pipelines", j->pipelines);
    member_i64(b, "stored_bytes", j->stored_bytes);
    member_i64(b, "evicted_events", j->evicted_events);
    member_us(b, "first_seen_us", j->first_seen_ns);
    member_us(b, "last_seen_us", j->last_seen_ns);
    member_i64(b, "damaged_blocks", j->damaged_blocks);
    sbuf_adds(b, "\"damaged_block_ids\":[");
    for (int64_t k = 0; k < j->damaged_blocks && k < STORE_JOB_DAMAGED_IDS; k++)
        sbuf_printf(b, "%s%" PRId64, k ? "," : "", j->damaged_block_ids[k]);
    sbuf_adds(b, "],");
    member_bool_last(b, "live", j->live);
}

void web__render_jobs(struct sbuf *b, const struct store_job *jobs, size_t n)
{
    sbuf_adds(b, "{\"jobs\":");
    web__render_jobs_records(b, jobs, n);
    sbuf_addc(b, '}');
}

static void member_us_or_null(struct sbuf *b, const char *k, bool have, int64_t ns);

/* ranks[i]'s host's row in the clocks' table; NULL with one host (or no clocks). */
static const struct analyse_clock_row *rank_clock(const struct web_clocks *c, size_t i)
{
    return c && c->table && i < c->n_ranks ? &c->table->hosts[c->rank_host[i]] : NULL;
}

/* The clock_* members of ranks[i] (with a leading comma), or the CSV columns. */
static void render_rank_clock(struct sbuf *b, const struct web_clocks *c, size_t i, bool csv)
{
    const struct analyse_clock_row *row = rank_clock(c, i);
    int64_t offset = row ? row->offset_ns : 0;
    bool aligned = row ? row->aligned : true;
    const char *reason = row ? analyse_clock_reason_text(row->reason) : "one host";
    if (csv) {
        sbuf_addc(b, ',');
        sbuf_json_us(b, offset);
        sbuf_adds(b, aligned ? ",true," : ",false,");
        web__csv_str(b, reason);
        return;
    }
    sbuf_adds(b, ",\"clock_offset_us\":");
    sbuf_json_us(b, offset);
    sbuf_adds(b, aligned ? ",\"clock_aligned\":true" : ",\"clock_aligned\":false");
    sbuf_adds(b, ",\"clock_reason\":");
    sbuf_json_strz(b, reason);
}

static void render_rank(struct sbuf *b, const struct store_rank *r, const struct web_clocks *c,
                        size_t i)
{
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_str(b, "host", r->host);
    member_str(b, "node", r->node);
    member_str(b, "framework", r->framework);
    member_str(b, "framework_version", r->framework_version);
    member_i64(b, "pid", r->pid);
    member_i64(b, "sessions", r->sessions);
    member_i64(b, "events", r->events);
    member_i64(b, "steps", r->steps);
    bool timed = r->trace_start_ns != INT64_MIN;
    member_us_or_null(b, "trace_start_us", timed, r->trace_start_ns);
    member_us_or_null(b, "trace_end_us", timed, r->trace_end_ns);
    member_bool_last(b, "live", r->live);
    if (c)
        render_rank_clock(b, c, i, false);
    sbuf_addc(b, '}');
}

void web__render_jobs_csv(struct sbuf *b, const struct store_job *jobs, size_t n)
{
    sbuf_adds(b, "id,name,ranks,world_size,sessions,steps,spans,events,queue_samples,"
                 "host_samples,pipelines,stored_bytes,evicted_events,first_seen_us,last_seen_us,"
                 "live\n");
    for (size_t i = 0; i < n; i++) {
        const struct store_job *j = &jobs[i];
        sbuf_printf(b, "%" PRId64 ",", j->id);
        web__csv_str(b, j->name);
        sbuf_printf(b,
                    ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                    ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",",
                    j->ranks, j->world_size, j->sessions, j->steps, j->spans, j->events,
                    j->queue_samples, j->host_samples, j->pipelines, j->stored_bytes,
                    j->evicted_events);
        sbuf_json_us(b, j->first_seen_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, j->last_seen_ns);
        sbuf_adds(b, j->live ? ",true\n" : ",false\n");
    }
}

void web__render_jobs_records(struct sbuf *b, const struct store_job *jobs, size_t n)
{
    sbuf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        sbuf_adds(b, i ? ",{" : "{");
        web__render_job_fields(b, &jobs[i]);
        sbuf_addc(b, '}');
    }
    sbuf_addc(b, ']');
}

void web__render_ranks_csv(struct sbuf *b, const struct store_rank *ranks, size_t n,
                           const struct web_clocks *clocks)
{
    sbuf_adds(b, "rank,host,node,framework,framework_version,pid,sessions,events,steps,"
                 "trace_start_us,trace_end_us,live");
    sbuf_adds(b, clocks ? ",clock_offset_us,clock_aligned,clock_reason\n" : "\n");
    for (size_t i = 0; i < n; i++) {
        const struct store_rank *r = &ranks[i];
        sbuf_printf(b, "%" PRId64 ",", r->rank);
        web__csv_str(b, r->host);
        sbuf_addc(b, ',');
        web__csv_str(b, r->node);
        sbuf_addc(b, ',');
        web__csv_str(b, r->framework);
        sbuf_addc(b, ',');
        web__csv_str(b, r->framework_version);
        sbuf_printf(b, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",", r->pid,
                    r->sessions, r->events, r->steps);
        if (r->trace_start_ns != INT64_MIN) {
            sbuf_json_us(b, r->trace_start_ns);
            sbuf_addc(b, ',');
            sbuf_json_us(b, r->trace_end_ns);
        } else {
            sbuf_addc(b, ',');
        }
        sbuf_adds(b, r->live ? ",true" : ",false");
        if (clocks)
            render_rank_clock(b, clocks, i, true);
        sbuf_addc(b, '\n');
    }
}

void web__render_ranks_records(struct sbuf *b, const struct store_rank *ranks, size_t n,
                               const struct web_clocks *clocks)
{
    sbuf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        render_rank(b, &ranks[i], clocks, i);
    }
    sbuf_addc(b, ']');
}

/* The job's "clocks" member (with a leading comma): null with one host, else the reference, the
 * bounds and one object per host. */
static void render_clocks(struct sbuf *b, const struct web_clocks *c)
{
    sbuf_adds(b, ",\"clocks\":");
    if (!c->table) {
        sbuf_adds(b, "null");
        return;
    }
    const struct analyse_clock *t = c->table;
    sbuf_adds(b, "{\"reference\":");
    if (t->reference >= 0)
        sbuf_json_strz(b, t->hosts[t->reference].name);
    else
        sbuf_adds(b, "null");
    sbuf_printf(b, ",\"min_steps\":%zu,\"reference_step_us\":", t->min_steps);
    sbuf_json_us(b, t->ref_step_ns);
    sbuf_adds(b, ",\"max_spread_us\":");
    sbuf_json_us(b, t->max_spread_ns);
    sbuf_adds(b, ",\"hosts\":[");
    for (size_t h = 0; h < t->n_hosts; h++) {
        const struct analyse_clock_row *row = &t->hosts[h];
        sbuf_adds(b, h ? ",{" : "{");
        member_str(b, "host", row->name);
        member_u64(b, "ranks", row->ranks);
        key(b, "aligned");
        sbuf_adds(b, row->aligned ? "true," : "false,");
        member_str(b, "reason", analyse_clock_reason_text(row->reason));
        member_us(b, "offset_us", row->offset_ns);
        member_us(b, "estimate_us", row->estimate_ns);
        member_us(b, "spread_us", row->spread_ns);
        key(b, "steps");
        sbuf_printf(b, "%zu}", row->steps);
    }
    sbuf_adds(b, "]}");
}

void web__render_job(struct sbuf *b, const struct store_job *j, const struct store_rank *ranks,
                     size_t n_ranks, const struct web_clocks *clocks)
{
    sbuf_addc(b, '{');
    web__render_job_fields(b, j);
    sbuf_adds(b, ",\"ranks_detail\":");
    web__render_ranks_records(b, ranks, n_ranks, clocks);
    if (clocks)
        render_clocks(b, clocks);
    sbuf_addc(b, '}');
}

void web__render_stats(struct sbuf *b, struct stats *s, const struct store_info *info)
{
    static const char *const kinds[RECORD_KIND_COUNT] = {
        [RECORD_TRACE] = "trace", [RECORD_STEP] = "step",       [RECORD_QUEUE] = "queue",
        [RECORD_PIPELINE] = "pipeline", [RECORD_HOST] = "host",
    };
    sbuf_adds(b, "{\"connections\":{");
    member_u64(b, "accepted", STATS_GET(s, connections_accepted));
    member_u64(b, "open", STATS_GET(s, connections_open));
    member_u64(b, "hello_timeouts", STATS_GET(s, connections_hello_timeouts));
    member_u64(b, "evicted", STATS_GET(s, connections_evicted));
    key(b, "rejected");
    sbuf_printf(b, "%" PRIu64 "},", (uint64_t)STATS_GET(s, connections_rejected));
    member_u64(b, "bytes", STATS_GET(s, bytes));
    member_u64(b, "lines", STATS_GET(s, lines));
    sbuf_adds(b, "\"records\":{");
    for (int k = 0; k < RECORD_KIND_COUNT; k++) {
        if (k > 0)
            sbuf_addc(b, ',');
        key(b, kinds[k]);
        sbuf_printf(b, "%" PRIu64, (uint64_t)STATS_GET(s, records[k]));
    }
    sbuf_adds(b, "},");
    member_u64(b, "hellos", STATS_GET(s, hellos));
    member_u64(b, "bad_hellos", STATS_GET(s, bad_hellos));
    member_u64(b, "malformed", STATS_GET(s, malformed));
    member_u64(b, "oversized", STATS_GET(s, oversized));
    member_u64(b, "unknown", STATS_GET(s, unknown));
    member_u64(b, "invalid", STATS_GET(s, invalid));
    member_u64(b, "duplicates", STATS_GET(s, duplicates));
    member_u64(b, "partial_lines", STATS_GET(s, partial_lines));
    member_u64(b, "acknowledged", STATS_GET(s, acknowledged));
    member_u64(b, "commits", STATS_GET(s, commits));
    member_u64(b, "commit_errors", STATS_GET(s, commit_errors));
    member_u64(b, "buffered_bytes", STATS_GET(s, buffered_bytes));
    member_u64(b, "pauses", STATS_GET(s, pauses));
    sbuf_adds(b, "\"evicted\":{");
    member_u64(b, "blocks", STATS_GET(s, evicted_blocks));
    member_u64(b, "events", STATS_GET(s, evicted_events));
    key(b, "bytes");
    sbuf_printf(b, "%" PRIu64 "},", (uint64_t)STATS_GET(s, evicted_bytes));
    sbuf_adds(b, "\"live\":{");
    member_u64(b, "bytes", STATS_GET(s, live_bytes));
    member_u64(b, "evictions", STATS_GET(s, live_evictions));
    member_u64(b, "reloads", STATS_GET(s, live_reloads));
    key(b, "untracked_jobs");
    sbuf_printf(b, "%" PRIu64 "},", (uint64_t)STATS_GET(s, live_untracked_jobs));
    sbuf_adds(b, "\"http\":{");
    member_u64(b, "requests", STATS_GET(s, http_requests));
    member_u64(b, "errors", STATS_GET(s, http_errors));
    member_u64(b, "cache_hits", STATS_GET(s, http_cache_hits));
    member_u64(b, "cache_misses", STATS_GET(s, http_cache_misses));
    member_u64(b, "cache_bytes", STATS_GET(s, http_cache_bytes));
    member_u64(b, "cache_evictions", STATS_GET(s, http_cache_evictions));
    member_u64(b, "deadline_closed", STATS_GET(s, http_deadline_closed));
    member_u64(b, "exports_refused", STATS_GET(s, http_exports_refused));
    member_u64(b, "analyses_refused", STATS_GET(s, http_analyses_refused));
    member_u64(b, "analyses_timed_out", STATS_GET(s, http_analyses_timed_out));
    member_u64(b, "analyses_abandoned", STATS_GET(s, http_analyses_abandoned));
    member_u64(b, "analyses_over_budget", STATS_GET(s, http_analyses_over_budget));
    key(b, "responses_too_large");
    sbuf_printf(b, "%" PRIu64 "},", (uint64_t)STATS_GET(s, http_responses_too_large));
    sbuf_adds(b, "\"captures\":{");
    member_u64(b, "refused", STATS_GET(s, captures_refused));
    key(b, "expired");
    sbuf_printf(b, "%" PRIu64 "},", (uint64_t)STATS_GET(s, captures_expired));
    key(b, "cluster");
    if (!STATS_GET(s, cluster_enabled)) {
        sbuf_adds(b, "null,");
    } else {
        char last[STATS_NOTE_MAX];
        stats_note_get(&s->cluster_last_error, last);
        sbuf_addc(b, '{');
        member_u64(b, "rows", STATS_GET(s, cluster_rows));
        member_u64(b, "aggregate_rows", STATS_GET(s, cluster_aggregate_rows));
        member_u64(b, "bytes", STATS_GET(s, cluster_bytes));
        member_u64(b, "batches", STATS_GET(s, cluster_batches));
        member_u64(b, "retries", STATS_GET(s, cluster_retries));
        member_u64(b, "pending_rows", STATS_GET(s, cluster_pending_rows));
        member_u64(b, "pending_batches", STATS_GET(s, cluster_pending_batches));
        member_u64(b, "lag_ms", STATS_GET(s, cluster_lag_ms));
        member_u64(b, "backoff_ms", STATS_GET(s, cluster_backoff_ms));
        member_u64(b, "deletes", STATS_GET(s, cluster_deletes));
        member_u64(b, "pending_deletes", STATS_GET(s, cluster_pending_deletes));
        sbuf_printf(b, "\"failing\":%s,", STATS_GET(s, cluster_failing) ? "true" : "false");
        key(b, "last_error");
        if (last[0])
            sbuf_json_strz(b, last);
        else
            sbuf_adds(b, "null");
        sbuf_adds(b, ",\"view\":");
        if (!STATS_GET(s, cluster_view_enabled)) {
            sbuf_adds(b, "null");
        } else {
            stats_note_get(&s->cluster_view_last_error, last);
            sbuf_addc(b, '{');
            member_u64(b, "rows", STATS_GET(s, cluster_view_rows));
            sbuf_printf(b, "\"failing\":%s,",
                        STATS_GET(s, cluster_view_failing) ? "true" : "false");
            key(b, "last_error");
            if (last[0])
                sbuf_json_strz(b, last);
            else
                sbuf_adds(b, "null");
            sbuf_addc(b, '}');
        }
        sbuf_adds(b, "},");
    }
    key(b, "store");
    if (!info) {
        sbuf_adds(b, "null}");
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "db_bytes", info->db_bytes);
    member_i64(b, "jobs", info->jobs);
    member_i64(b, "blocks", info->blocks);
    member_i64(b, "block_bytes", info->block_bytes);
    member_i64(b, "block_raw_bytes", info->block_raw_bytes);
    member_i64(b, "fs_free_bytes", info->fs_free_bytes);
    member_i64(b, "damaged_blocks", info->damaged_blocks);
    sbuf_adds(b, "\"damaged\":[");
    for (size_t i = 0; i < info->n_damaged; i++)
        sbuf_printf(b, "%s{\"job_id\":%" PRId64 ",\"rank\":%" PRId64 ",\"block\":%" PRId64 "}",
                    i ? "," : "", info->damaged[i].job_id, info->damaged[i].rank,
                    info->damaged[i].block_id);
    sbuf_adds(b, "],");
    member_bool_last(b, "started_from_empty_file", info->opened_empty_file);
    sbuf_adds(b, "}}");
}

/* ---- live documents (steps, step-trace, operators) ---- */

void web__csv_str(struct sbuf *b, const char *s)
{
    /* A text cell a spreadsheet would take for a formula (OWASP's CSV injection list) gets a
     * leading single quote. Numbers never come through here, so a negative number stays a
     * number. */
    bool formula = *s && strchr("=+-@\t\r", *s);
    if (!formula && !strpbrk(s, ",\"\r\n")) {
        sbuf_adds(b, s);
        return;
    }
    if (!strpbrk(s, ",\"\r\n")) {
        sbuf_addc(b, '\'');
        sbuf_adds(b, s);
        return;
    }
    sbuf_addc(b, '"');
    if (formula)
        sbuf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '"')
            sbuf_addc(b, '"');
        sbuf_addc(b, *s);
    }
    sbuf_addc(b, '"');
}

static void member_us_or_null(struct sbuf *b, const char *k, bool have, int64_t ns)
{
    key(b, k);
    if (have)
        sbuf_json_us(b, ns);
    else
        sbuf_adds(b, "null");
    sbuf_addc(b, ',');
}

const char web__steps_csv_header[] =
    "step,rank,start_us,end_us,total_us,interval_us,fp_bp_us,tail_us,samples,source,fp_start,"
    "bp_end,spans\n";

void web__steps_row(struct sbuf *b, enum web_format fmt, const struct live_step_row *r)
{
    bool pts = r->source != LIVE_POINTS_NONE;
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",%" PRId64 ",", r->step, r->rank);
        sbuf_json_us(b, r->start_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->end_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->total_ns);
        sbuf_addc(b, ',');
        if (pts) {
            sbuf_json_us(b, r->interval_ns);
            sbuf_addc(b, ',');
            sbuf_json_us(b, r->fp_bp_ns);
            sbuf_addc(b, ',');
            sbuf_json_us(b, r->tail_ns);
            sbuf_addc(b, ',');
        } else {
            sbuf_adds(b, ",,,");
        }
        if (r->samples >= 0)
            sbuf_printf(b, "%" PRId64, r->samples);
        sbuf_addc(b, ',');
        sbuf_adds(b, live_points_source_names[r->source]);
        sbuf_addc(b, ',');
        web__csv_str(b, r->fp_name);
        sbuf_addc(b, ',');
        web__csv_str(b, r->bp_name);
        sbuf_printf(b, ",%" PRId64 "\n", r->spans);
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "step", r->step);
    member_i64(b, "rank", r->rank);
    member_us(b, "start_us", r->start_ns);
    member_us(b, "end_us", r->end_ns);
    member_us(b, "total_us", r->total_ns);
    member_us_or_null(b, "interval_us", pts, r->interval_ns);
    member_us_or_null(b, "fp_bp_us", pts, r->fp_bp_ns);
    member_us_or_null(b, "tail_us", pts, r->tail_ns);
    key(b, "samples");
    if (r->samples >= 0)
        sbuf_printf(b, "%" PRId64 ",", r->samples);
    else
        sbuf_adds(b, "null,");
    member_str(b, "from", r->from_record ? "record" : "span");
    member_str(b, "source", live_points_source_names[r->source]);
    member_str(b, "fp_start", r->fp_name);
    member_str(b, "bp_end", r->bp_name);
    key(b, "spans");
    sbuf_printf(b, "%" PRId64 "}", r->spans);
}

void web__render_live_steps(struct sbuf *b, const struct live_step_row *rows, size_t n,
                            size_t total)
{
    sbuf_printf(b, "{\"total\":%zu,\"rows\":[", total);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sbuf_addc(b, ',');
        web__steps_row(b, WEB_FORMAT_JSON, &rows[i]);
    }
    sbuf_adds(b, "]}");
}

static void stage(struct sbuf *b, const char *name, int64_t start_ns, int64_t dur_ns, double pct,
                  bool last)
{
    sbuf_addc(b, '{');
    member_str(b, "name", name);
    member_us(b, "start_us", start_ns);
    member_us(b, "dur_us", dur_ns);
    key(b, "percent");
    sbuf_printf(b, "%.4f}", pct);
    if (!last)
        sbuf_addc(b, ',');
}

/* The reduce lines of a trace: per stream, its segments (a communication op, or the gap before
 * or after one: name null), relative to the step's start; a segment with a negative start or
 * duration (ops of one stream that overlap) is null, as MindInsight draws nothing there. */
static void reduce_lines(struct sbuf *b, const struct analyse_st_trace *t)
{
    key(b, "lines");
    sbuf_addc(b, '[');
    /* By stream id, as MindInsight lists its lines (a few lines: a selection pass each). */
    int64_t after = INT64_MIN;
    for (size_t i = 0; i < t->n_lines; i++) {
        const struct analyse_st_line *l = NULL;
        for (size_t k = 0; k < t->n_lines; k++)
            if ((i == 0 || t->lines[k].stream > after) && (!l || t->lines[k].stream < l->stream))
                l = &t->lines[k];
        if (!l)
            break;
        after = l->stream;
        sbuf_printf(b, "%s{\"stream\":%" PRId64 ",\"segments\":[", i ? "," : "", l->stream);
        for (size_t k = 0; k < l->n_seg; k++) {
            const struct analyse_st_seg *g = &l->seg[k];
            if (k)
                sbuf_addc(b, ',');
            if (g->start_ns < 0 || g->dur_ns < 0) {
                sbuf_adds(b, "null");
                continue;
            }
            sbuf_adds(b, "{\"name\":");
            if (g->name)
                sbuf_json_str(b, g->name, g->name_len);
            else
                sbuf_adds(b, "null");
            sbuf_adds(b, ",\"start_us\":");
            sbuf_json_us(b, g->start_ns);
            sbuf_adds(b, ",\"dur_us\":");
            sbuf_json_us(b, g->dur_ns);
            sbuf_addc(b, '}');
        }
        sbuf_adds(b, "]}");
    }
    sbuf_adds(b, "],");
}

void web__render_live_steptrace(struct sbuf *b, const struct analyse_st_trace *t,
                                const struct live_step_row *p, size_t skip, const size_t *by_source)
{
    sbuf_addc(b, '{');
    member_i64(b, "rank", t->rank);
    key(b, "step");
    if (t->step == ANALYSE_ST_AVERAGE)
        sbuf_adds(b, "\"average\",");
    else
        sbuf_printf(b, "%" PRId64 ",", t->step);
    member_u64(b, "skip", skip);
    member_i64(b, "first_step", t->first_step);
    member_i64(b, "last_step", t->last_step);
    member_u64(b, "n_steps", t->n_steps);
    /* Which definition the numbers use: how many of the steps have points from their spans
     * ("trace") and how many from their record's phases ("phases"). */
    key(b, "sources");
    sbuf_printf(b, "{\"trace\":%zu,\"phases\":%zu},", by_source[LIVE_POINTS_TRACE],
                by_source[LIVE_POINTS_PHASES]);
    key(b, "ordered");
    sbuf_adds(b, t->ordered ? "true," : "false,");
    member_us(b, "total_us", t->total_ns);
    member_us(b, "interval_us", t->interval_ns);
    member_us(b, "fp_bp_us", t->fp_bp_ns);
    member_us(b, "tail_us", t->tail_ns);
    key(b, "stages");
    sbuf_addc(b, '[');
    stage(b, "interval", 0, t->interval_ns, t->interval_pct, false);
    stage(b, "fp_bp", t->fp_rel_ns, t->fp_bp_ns, t->fp_bp_pct, false);
    stage(b, "tail", t->bp_rel_ns, t->tail_ns, t->tail_pct, true);
    sbuf_adds(b, "],");
    reduce_lines(b, t);
    key(b, "points");
    sbuf_addc(b, '{');
    member_i64(b, "step", p->step);
    member_str(b, "source", live_points_source_names[p->source]);
    bool trace = p->source == LIVE_POINTS_TRACE;
    member_str(b, "fp_start", p->fp_name);
    member_str(b, "bp_end", p->bp_name);
    member_str(b, "fp_origin", trace ? analyse_st_origin_names[p->fp_origin] : "");
    key(b, "bp_origin");
    sbuf_json_strz(b, trace ? analyse_st_origin_names[p->bp_origin] : "");
    sbuf_adds(b, "}}");
}

static int64_t round_ns(double ns)
{
    return (int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

const char web__ops_csv_header[] =
    "name,type,calls,total_us,self_us,avg_us,min_us,max_us,percent\n";
const char web__kernels_csv_header[] = "name,calls,total_us,avg_us,min_us,max_us,percent\n";

/* One row of an operator or kernel table, as a CSV line or a JSON object; operator tables also
 * have the type and self-time columns (kernels do not nest, so self equals total there). */
void web__op_row(struct sbuf *b, enum web_format fmt, const struct analyse_op_row *r, bool ops)
{
    if (fmt == WEB_FORMAT_CSV) {
        web__csv_str(b, r->name);
        if (ops) {
            sbuf_addc(b, ',');
            web__csv_str(b, r->type);
        }
        sbuf_printf(b, ",%" PRId64 ",", r->calls);
        sbuf_json_us(b, r->total_ns);
        if (ops) {
            sbuf_addc(b, ',');
            sbuf_json_us(b, r->self_ns);
        }
        sbuf_addc(b, ',');
        sbuf_json_us(b, round_ns(r->avg_ns));
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->min_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->max_ns);
        sbuf_printf(b, ",%.4f\n", r->percent);
        return;
    }
    sbuf_addc(b, '{');
    member_str(b, "name", r->name);
    if (ops)
        member_str(b, "type", r->type);
    member_i64(b, "calls", r->calls);
    member_us(b, "total_us", r->total_ns);
    if (ops)
        member_us(b, "self_us", r->self_ns);
    member_us(b, "avg_us", round_ns(r->avg_ns));
    member_us(b, "min_us", r->min_ns);
    member_us(b, "max_us", r->max_ns);
    key(b, "percent");
    sbuf_printf(b, "%.4f}", r->percent);
}

static void render_op_rows(struct sbuf *b, const struct analyse_op_table *t, bool ops)
{
    for (size_t i = 0; i < t->n_rows; i++) {
        if (i)
            sbuf_addc(b, ',');
        web__op_row(b, WEB_FORMAT_JSON, &t->rows[i], ops);
    }
    sbuf_adds(b, "]}");
}

void web__render_live_ops(struct sbuf *b, const struct analyse_op_table *t, const char *group,
                          const char *side)
{
    sbuf_printf(b, "{\"group\":\"%s\",\"side\":\"%s\",\"total\":%zu,\"rows\":[", group, side,
                t->total);
    render_op_rows(b, t, true);
}

void web__render_live_kernels(struct sbuf *b, const struct analyse_op_table *t)
{
    sbuf_printf(b, "{\"total\":%zu,\"rows\":[", t->total);
    render_op_rows(b, t, false);
}

/* ---- data queues ---- */

static void member_f(struct sbuf *b, const char *k, double v)
{
    key(b, k);
    sbuf_printf(b, "%.10g,", v);
}

/* Up to WEB_QUEUE_POINTS_MAX points: consecutive samples are bucketed evenly and each bucket
 * shows its emptiest sample (its first on ties), so an empty queue never vanishes from the
 * chart. */
static void queue_series(struct sbuf *b, const struct live_queue_row *q)
{
    size_t n = q->n_samples, pts = n < WEB_QUEUE_POINTS_MAX ? n : WEB_QUEUE_POINTS_MAX;
    sbuf_addc(b, '[');
    for (size_t p = 0; p < pts; p++) {
        size_t lo = p * n / pts, hi = (p + 1) * n / pts, best = lo;
        for (size_t i = lo + 1; i < hi; i++)
            if (q->samples[i].size < q->samples[best].size)
                best = i;
        const struct analyse_queue_sample *s = &q->samples[best];
        sbuf_printf(b, "%s{\"step\":%" PRId64 ",\"size\":%" PRId64 ",\"capacity\":", p ? "," : "",
                    s->step, s->size);
        if (s->capacity >= 0)
            sbuf_printf(b, "%" PRId64 "}", s->capacity);
        else
            sbuf_adds(b, "null}");
    }
    sbuf_addc(b, ']');
}

static void verdict(struct sbuf *b, int64_t rank, const struct live_queue_row *rows, size_t n)
{
    const struct analyse_queue_stats *host = NULL, *device = NULL;
    const char *host_name = "", *device_name = "";
    for (size_t i = 0; i < n; i++) {
        if (rows[i].rank != rank)
            continue;
        if (rows[i].role == LIVE_QUEUE_HOST && !host) {
            host = &rows[i].stats;
            host_name = rows[i].name;
        } else if (rows[i].role == LIVE_QUEUE_DEVICE && !device) {
            device = &rows[i].stats;
            device_name = rows[i].name;
        }
    }
    struct analyse_queue_verdict v;
    analyse_queue_verdict(host, device, ANALYSE_QUEUE_EMPTY_THRESHOLD, &v);
    sbuf_addc(b, '{');
    member_i64(b, "rank", rank);
    member_str(b, "status", v.code);
    member_str(b, "message", v.message);
    member_str(b, "host_queue", host_name);
    member_str(b, "device_queue", device_name);
    member_u64(b, "host_empty", v.host_empty);
    member_u64(b, "host_full", v.host_full);
    member_u64(b, "host_total", v.host_total);
    member_u64(b, "device_empty", v.device_empty);
    member_u64(b, "device_total", v.device_total);
    member_f(b, "host_empty_percent", v.host_empty_pct);
    key(b, "threshold");
    sbuf_printf(b, "%.10g}", v.threshold);
}

const char web__queues_csv_header[] = "rank,queue,role,step,size,capacity\n";

void web__queue_sample_row(struct sbuf *b, enum web_format fmt, const struct live_queue_row *q,
                           const struct analyse_queue_sample *s)
{
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",", q->rank);
        web__csv_str(b, q->name);
        sbuf_printf(b, ",%s,%" PRId64 ",%" PRId64 ",", live_queue_role_names[q->role], s->step,
                    s->size);
        if (s->capacity >= 0)
            sbuf_printf(b, "%" PRId64, s->capacity);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", q->rank);
    member_str(b, "queue", q->name);
    member_str(b, "role", live_queue_role_names[q->role]);
    member_i64(b, "step", s->step);
    member_i64(b, "size", s->size);
    key(b, "capacity");
    if (s->capacity >= 0)
        sbuf_printf(b, "%" PRId64 "}", s->capacity);
    else
        sbuf_adds(b, "null}");
}

void web__render_live_queues(struct sbuf *b, const struct live_queue_row *rows, size_t n)
{
    sbuf_adds(b, "{\"verdicts\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && rows[i - 1].rank == rows[i].rank)
            continue;
        if (i)
            sbuf_addc(b, ',');
        verdict(b, rows[i].rank, rows, n);
    }
    sbuf_adds(b, "],\"queues\":[");
    for (size_t i = 0; i < n; i++) {
        const struct live_queue_row *q = &rows[i];
        if (i)
            sbuf_addc(b, ',');
        sbuf_addc(b, '{');
        member_i64(b, "rank", q->rank);
        member_str(b, "name", q->name);
        member_str(b, "role", live_queue_role_names[q->role]);
        member_u64(b, "samples", q->stats.n_samples);
        member_u64(b, "empty", q->stats.n_empty);
        member_u64(b, "full", q->stats.n_full);
        member_f(b, "empty_ratio", q->stats.empty_ratio);
        member_f(b, "full_ratio", q->stats.full_ratio);
        member_f(b, "avg_size", q->stats.avg_size);
        member_i64(b, "max_size", q->stats.max_size);
        key(b, "capacity");
        if (q->capacity >= 0)
            sbuf_printf(b, "%" PRId64 ",", q->capacity);
        else
            sbuf_adds(b, "null,");
        member_u64(b, "points", q->n_samples < WEB_QUEUE_POINTS_MAX ? q->n_samples
                                                                      : WEB_QUEUE_POINTS_MAX);
        key(b, "series");
        queue_series(b, q);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "]}");
}

/* ---- pipeline ---- */

static const char *const pipe_reasons[] = {"child_fuller", "leaf_low", "all_high"};

/* A number, or null when it is not finite (NAN: absent). */
static void num_or_null(struct sbuf *b, double v)
{
    if (isfinite(v))
        sbuf_printf(b, "%.10g", v);
    else
        sbuf_adds(b, "null");
}

/* A pipeline series as at most WEB_QUEUE_POINTS_MAX numbers: the kept values, or, when there are
 * more, that many even buckets of consecutive values, each shown by its mean. */
static void series_values(struct sbuf *b, const double *values, const struct record_series *s)
{
    size_t n = s->n, pts = n < WEB_QUEUE_POINTS_MAX ? n : WEB_QUEUE_POINTS_MAX;
    sbuf_addc(b, '[');
    for (size_t p = 0; p < pts; p++) {
        size_t lo = p * n / pts, hi = (p + 1) * n / pts;
        double sum = 0;
        for (size_t i = lo; i < hi; i++)
            sum += values[s->first + i];
        sbuf_printf(b, "%s%.10g", p ? "," : "", sum / (double)(hi - lo));
    }
    sbuf_addc(b, ']');
}

/* "name_avg": the mean of all the series' numbers (null without any) and, when values is not
 * NULL, "name": its numbers. */
static void series_member(struct sbuf *b, const char *name, const double *values,
                          const struct record_series *s)
{
    sbuf_printf(b, ",\"%s_avg\":", name);
    num_or_null(b, s->count ? s->sum / (double)s->count : NAN);
    if (values) {
        sbuf_printf(b, ",\"%s\":", name);
        series_values(b, values, s);
    }
}

/* One op of a pipeline as a JSON object; op_id's op also gets its series. */
static void pipe_op_json(struct sbuf *b, const struct live_pipeline_view *p,
                         const struct record_pipe_op *o, int64_t op_id)
{
    sbuf_addc(b, '{');
    member_i64(b, "id", o->id);
    member_str(b, "type", o->type);
    member_i64(b, "num_workers", o->num_workers);
    member_i64(b, "parent", o->parent_id);
    key(b, "children");
    sbuf_addc(b, '[');
    for (size_t c = 0; c < o->n_children; c++)
        sbuf_printf(b, "%s%" PRId64, c ? "," : "", p->children[o->first_child + c]);
    sbuf_adds(b, "],");
    key(b, "queue_usage");
    if (o->usage >= 0)
        sbuf_printf(b, "%.10g,", o->usage);
    else
        sbuf_adds(b, "null,");
    key(b, "queue_capacity");
    num_or_null(b, o->capacity >= 0 ? (double)o->capacity : NAN);
    bool detail = o->id == op_id;
    sbuf_printf(b, ",\"queue_samples\":%zu,\"queue_size_avg\":", o->sizes.count);
    num_or_null(b, o->queue_avg >= 0 ? o->queue_avg : NAN);
    if (detail) {
        sbuf_adds(b, ",\"queue_size\":");
        series_values(b, p->values, &o->sizes);
    }
    sbuf_adds(b, ",\"sample_interval_ms\":");
    num_or_null(b, o->sample_interval_ms >= 0 ? o->sample_interval_ms : NAN);
    series_member(b, "cpu_user", detail ? p->values : NULL, &o->cpu_user);
    series_member(b, "cpu_sys", detail ? p->values : NULL, &o->cpu_sys);
    sbuf_addc(b, '}');
}

void web__render_live_pipeline(struct sbuf *b, const struct live_pipeline_view *p, bool analysed,
                               const struct analyse_pipe_finding *f, size_t nf, int64_t op_id,
                               enum web_format fmt)
{
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_adds(b, "id,type,num_workers,parent,children,queue_usage,queue_capacity,"
                     "queue_avg_size,sample_interval_ms,cpu_user_avg,cpu_sys_avg\n");
        for (size_t i = 0; i < p->n_ops; i++) {
            const struct record_pipe_op *o = &p->ops[i];
            sbuf_printf(b, "%" PRId64 ",", o->id);
            web__csv_str(b, o->type);
            sbuf_printf(b, ",%" PRId64 ",%" PRId64 ",", o->num_workers, o->parent_id);
            for (size_t c = 0; c < o->n_children; c++)
                sbuf_printf(b, "%s%" PRId64, c ? " " : "", p->children[o->first_child + c]);
            sbuf_addc(b, ',');
            if (o->usage >= 0)
                sbuf_printf(b, "%.10g", o->usage);
            sbuf_addc(b, ',');
            if (o->capacity >= 0)
                sbuf_printf(b, "%" PRId64, o->capacity);
            double v[4] = {o->queue_avg, o->sample_interval_ms,
                           o->cpu_user.count ? o->cpu_user.sum / (double)o->cpu_user.count : -1,
                           o->cpu_sys.count ? o->cpu_sys.sum / (double)o->cpu_sys.count : -1};
            for (size_t k = 0; k < 4; k++) {
                sbuf_addc(b, ',');
                if (v[k] >= 0)
                    sbuf_printf(b, "%.10g", v[k]);
            }
            sbuf_addc(b, '\n');
        }
        return;
    }
    if (fmt == WEB_FORMAT_JSON) {
        sbuf_addc(b, '{');
        member_i64(b, "rank", p->rank);
        key(b, "ops");
    }
    sbuf_addc(b, '[');
    for (size_t i = 0; i < p->n_ops; i++) {
        if (i)
            sbuf_addc(b, ',');
        pipe_op_json(b, p, &p->ops[i], op_id);
    }
    if (fmt != WEB_FORMAT_JSON) {
        sbuf_addc(b, ']');
        return;
    }
    sbuf_adds(b, "],");
    key(b, "cpu");
    if (!p->has_cpu) {
        sbuf_adds(b, "null,");
    } else {
        sbuf_adds(b, "{\"sampling_interval_ms\":");
        num_or_null(b, p->cpu_interval_ms >= 0 ? p->cpu_interval_ms : NAN);
        sbuf_adds(b, ",\"processors\":");
        num_or_null(b, p->processors >= 0 ? (double)p->processors : NAN);
        for (size_t k = 0; k < RECORD_CPU_SERIES; k++)
            series_member(b, record_cpu_series_names[k], p->values, &p->cpu[k]);
        sbuf_adds(b, "},");
    }
    key(b, "bottlenecks");
    if (!analysed) {
        sbuf_adds(b, "null}");
        return;
    }
    sbuf_addc(b, '[');
    for (size_t i = 0; i < nf; i++) {
        const struct record_pipe_op *o = &p->ops[f[i].op];
        sbuf_adds(b, i ? ",{" : "{");
        member_i64(b, "op_id", o->id);
        member_str(b, "type", o->type);
        member_str(b, "reason", pipe_reasons[f[i].reason]);
        member_str(b, "code", f[i].code);
        member_str(b, "message", f[i].message);
        member_f(b, "usage", f[i].usage);
        member_f(b, "child_usage", f[i].child_usage);
        key(b, "threshold");
        sbuf_printf(b, "%.10g}", f[i].threshold);
    }
    sbuf_adds(b, "]}");
}

/* ---- ranks and helper ---- */

/* A duration in ns (a double: a mean) as microseconds, or null when absent or not finite. */
static void dus(struct sbuf *b, bool have, double ns)
{
    if (have && isfinite(ns))
        sbuf_printf(b, "%.12g", ns / 1000.0);
    else
        sbuf_adds(b, "null");
}

static void member_dus(struct sbuf *b, const char *k, bool have, double ns)
{
    key(b, k);
    dus(b, have, ns);
    sbuf_addc(b, ',');
}

void web__render_live_ranks(struct sbuf *b, const struct analyse_ranks *ranks,
                            enum web_format fmt, const char *const *node,
                            const char *const *host)
{
    bool csv = fmt == WEB_FORMAT_CSV;
    if (fmt == WEB_FORMAT_RECORDS) {
        sbuf_addc(b, '[');
    } else if (csv) {
        sbuf_adds(b, "rank,steps,mean_us,median_us,p90_us,min_us,max_us,std_us,"
                     "interval_mean_us,fp_bp_mean_us,tail_mean_us,straggler,excess_pct\n");
    } else {
        sbuf_adds(b, "{\"ranks\":[");
    }
    for (size_t i = 0; i < ranks->n_ranks; i++) {
        const struct analyse_rank_row *row = &ranks->rows[i];
        const struct analyse_dist *st = &row->stat[ANALYSE_RANK_STEP];
        const struct analyse_dist *iv = &row->stat[ANALYSE_RANK_INTERVAL];
        const struct analyse_dist *fb = &row->stat[ANALYSE_RANK_FP_BP];
        const struct analyse_dist *tl = &row->stat[ANALYSE_RANK_TAIL];
        bool have = st->count > 0;
        if (csv) {
            /* An absent number is an empty field, which pandas reads as NaN. */
            sbuf_printf(b, "%" PRId64 ",%zu,", row->rank, st->count);
            const double v[] = {st->mean_ns, st->median_ns, st->p90_ns, (double)st->min_ns,
                                (double)st->max_ns, st->std_ns};
            for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
                if (have)
                    dus(b, true, v[k]);
                sbuf_addc(b, ',');
            }
            const struct analyse_dist *parts[] = {iv, fb, tl};
            for (size_t k = 0; k < 3; k++) {
                if (parts[k]->count)
                    dus(b, true, parts[k]->mean_ns);
                sbuf_addc(b, ',');
            }
            sbuf_printf(b, "%s,", row->straggler ? "true" : "false");
            if (have)
                sbuf_printf(b, "%.10g", row->excess_pct);
            sbuf_addc(b, '\n');
            continue;
        }
        if (i)
            sbuf_addc(b, ',');
        sbuf_addc(b, '{');
        member_i64(b, "rank", row->rank);
        if (node && host) {
            member_str(b, "node", node[i]);
            member_str(b, "host", host[i]);
        }
        member_u64(b, "steps", st->count);
        member_dus(b, "mean_us", have, st->mean_ns);
        member_dus(b, "median_us", have, st->median_ns);
        member_dus(b, "p90_us", have, st->p90_ns);
        member_dus(b, "min_us", have, (double)st->min_ns);
        member_dus(b, "max_us", have, (double)st->max_ns);
        member_dus(b, "std_us", have, st->std_ns);
        member_dus(b, "interval_mean_us", iv->count > 0, iv->mean_ns);
        member_dus(b, "fp_bp_mean_us", fb->count > 0, fb->mean_ns);
        member_dus(b, "tail_mean_us", tl->count > 0, tl->mean_ns);
        key(b, "excess_pct");
        num_or_null(b, have ? row->excess_pct : NAN);
        sbuf_addc(b, ',');
        member_bool_last(b, "straggler", row->straggler);
        sbuf_addc(b, '}');
    }
    if (csv)
        return;
    if (fmt == WEB_FORMAT_RECORDS) {
        sbuf_addc(b, ']');
        return;
    }
    sbuf_adds(b, "],");
    size_t with_steps = 0;
    for (size_t i = 0; i < ranks->n_ranks; i++)
        with_steps += ranks->rows[i].stat[ANALYSE_RANK_STEP].count > 0;
    member_dus(b, "mean_us", with_steps > 0, ranks->mean_of_ranks_ns);
    member_dus(b, "threshold_us", with_steps > 0, ranks->threshold_ns);
    member_f(b, "straggler_ratio", ranks->straggler_ratio);
    key(b, "stragglers");
    sbuf_printf(b, "%zu}", ranks->n_stragglers);
}

void web__render_live_helper(struct sbuf *b, int64_t rank, const struct analyse_helper_input *in,
                             const struct live_breakdown_view *bv,
                             const struct analyse_helper_result *res)
{
    sbuf_addc(b, '{');
    member_i64(b, "rank", rank);
    /* What the rules had to go on: a rule whose evidence is absent stays silent. */
    sbuf_adds(b, "\"inputs\":{");
    member_str(b, "framework", analyse_framework_names[in->framework]);
    key(b, "step_interval_us");
    dus(b, !isnan(in->st_interval_ns), in->st_interval_ns);
    sbuf_addc(b, ',');
    key(b, "step_us");
    dus(b, !isnan(in->st_total_ns), in->st_total_ns);
    sbuf_addc(b, ',');
    key(b, "host_queue_empty_ratio");
    num_or_null(b, in->host_queue ? in->host_queue->empty_ratio : NAN);
    sbuf_addc(b, ',');
    key(b, "device_queue_empty_ratio");
    num_or_null(b, in->device_queue ? in->device_queue->empty_ratio : NAN);
    sbuf_addc(b, ',');
    key(b, "host_cpu_percent");
    num_or_null(b, in->host_cpu_pct);
    sbuf_addc(b, ',');
    member_u64(b, "pipeline_ops", in->n_pipe_ops);
    bool bd = in->has_breakdown && in->bd_total_ns > 0;
    key(b, "dataloader_ratio");
    num_or_null(b, bd ? in->bd_avg_ns[ANALYSE_BD_DATALOADER] / in->bd_total_ns : NAN);
    sbuf_addc(b, ',');
    key(b, "communication_ratio");
    num_or_null(b, bd ? in->bd_avg_ns[ANALYSE_BD_COMMUNICATION] / in->bd_total_ns : NAN);
    sbuf_adds(b, ",\"gpu_utilization\":{");
    for (size_t i = 0; in->gpus && i < in->n_gpus; i++) {
        sbuf_printf(b, "%s\"%" PRId64 "\":", i ? "," : "", in->gpus[i].pid);
        num_or_null(b, in->gpus[i].utilization);
    }
    sbuf_adds(b, "},");
    if (bv) {
        web__render_bd_coverage(b, bv); /* what the breakdown figures above cover */
        sbuf_addc(b, ',');
    } else {
        sbuf_adds(b, "\"coverage\":null,");
    }
    key(b, "ranks");
    sbuf_printf(b, "%zu},", in->ranks ? in->ranks->n_ranks : (size_t)0);
    sbuf_adds(b, "\"suggestions\":[");
    for (size_t i = 0; res && i < res->n; i++) {
        const struct analyse_helper_suggestion *sg = &res->s[i];
        if (i)
            sbuf_addc(b, ',');
        sbuf_addc(b, '{');
        member_str(b, "code", sg->code);
        member_str(b, "severity", analyse_helper_severity_names[sg->severity]);
        member_str(b, "title", sg->title);
        member_str(b, "message", sg->message);
        member_str(b, "source", sg->source);
        member_str(b, "view", sg->view);
        key(b, "subject");
        if (sg->subject >= 0)
            sbuf_printf(b, "%" PRId64 ",", sg->subject);
        else
            sbuf_adds(b, "null,");
        sbuf_adds(b, "\"evidence\":[");
        for (size_t k = 0; k < sg->n_evidence; k++) {
            const struct analyse_helper_evidence *e = &sg->evidence[k];
            if (k)
                sbuf_addc(b, ',');
            sbuf_addc(b, '{');
            member_str(b, "name", e->name);
            key(b, "value");
            num_or_null(b, e->value);
            sbuf_addc(b, ',');
            member_str(b, "op", e->op);
            key(b, "threshold");
            num_or_null(b, e->threshold);
            sbuf_addc(b, '}');
        }
        sbuf_adds(b, "]}");
    }
    sbuf_adds(b, "]}");
}

/* ---- step-time breakdown ---- */

static void bd_costs(struct sbuf *b, const int64_t *cost_ns, bool csv)
{
    for (size_t c = 0; c < ANALYSE_BD_COUNT; c++) {
        if (csv) {
            sbuf_addc(b, ',');
            sbuf_json_us(b, cost_ns[c]);
        } else {
            sbuf_printf(b, ",\"%s_us\":", analyse_bd_cat_names[c]);
            sbuf_json_us(b, cost_ns[c]);
        }
    }
}

const char web__gpu_temporal_csv_header[] =
    "rank,kernel_us,idle_us,compute_us,non_compute_us,idle_pct,compute_pct,non_compute_pct,"
    "start_us,end_us,device_events,device_events_kept,step_names,filtered,cut_us,spans,"
    "spans_evicted\n";

/* part / whole in percent, "%.4f"; JSON null or an empty CSV field when whole is 0. */
static void pct_of(struct sbuf *b, bool csv, int64_t part, int64_t whole)
{
    if (whole > 0)
        sbuf_printf(b, "%.4f", 100.0 * (double)part / (double)whole);
    else if (!csv)
        sbuf_adds(b, "null");
}

/* HTA's last-step cut of a GPU view (analyse_gpu_filter), JSON members ending in ',':
 * step_names, filtered, cut_us (null when not filtered). */
static void step_cut(struct sbuf *b, const struct analyse_gpu_filter *f)
{
    member_u64(b, "step_names", f->n_step_names);
    key(b, "filtered");
    sbuf_adds(b, f->filtered ? "true," : "false,");
    key(b, "cut_us");
    if (f->filtered)
        sbuf_json_us(b, f->cut_ns);
    else
        sbuf_adds(b, "null");
    sbuf_addc(b, ',');
}

void web__gpu_temporal_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_row *r)
{
    const struct analyse_gpu_temporal *t = &r->temporal;
    const struct analyse_gpu_filter *f = &t->filter;
    bool csv = fmt == WEB_FORMAT_CSV, any = f->n_kept > 0;
    if (csv) {
        sbuf_printf(b, "%" PRId64 ",", r->rank);
        const int64_t us[] = {t->kernel_ns, t->idle_ns, t->compute_ns, t->non_compute_ns};
        for (size_t i = 0; i < 4; i++) {
            sbuf_json_us(b, us[i]);
            sbuf_addc(b, ',');
        }
        const int64_t part[] = {t->idle_ns, t->compute_ns, t->non_compute_ns};
        for (size_t i = 0; i < 3; i++) {
            pct_of(b, true, part[i], t->kernel_ns);
            sbuf_addc(b, ',');
        }
        if (any) {
            sbuf_json_us(b, t->start_ns);
            sbuf_addc(b, ',');
            sbuf_json_us(b, t->end_ns);
        } else {
            sbuf_addc(b, ',');
        }
        sbuf_printf(b, ",%zu,%zu,%zu,%s,", f->n_device, f->n_kept, f->n_step_names,
                    f->filtered ? "true" : "false");
        if (f->filtered)
            sbuf_json_us(b, f->cut_ns);
        sbuf_printf(b, ",%" PRId64 ",%" PRId64 "\n", r->n_spans, r->n_evicted);
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_us(b, "kernel_us", t->kernel_ns);
    member_us(b, "idle_us", t->idle_ns);
    member_us(b, "compute_us", t->compute_ns);
    member_us(b, "non_compute_us", t->non_compute_ns);
    key(b, "idle_pct");
    pct_of(b, false, t->idle_ns, t->kernel_ns);
    sbuf_adds(b, ",\"compute_pct\":");
    pct_of(b, false, t->compute_ns, t->kernel_ns);
    sbuf_adds(b, ",\"non_compute_pct\":");
    pct_of(b, false, t->non_compute_ns, t->kernel_ns);
    sbuf_adds(b, ",\"start_us\":");
    if (any)
        sbuf_json_us(b, t->start_ns);
    else
        sbuf_adds(b, "null");
    sbuf_adds(b, ",\"end_us\":");
    if (any)
        sbuf_json_us(b, t->end_ns);
    else
        sbuf_adds(b, "null");
    sbuf_addc(b, ',');
    member_u64(b, "device_events", f->n_device);
    member_u64(b, "device_events_kept", f->n_kept);
    step_cut(b, f);
    sbuf_adds(b, "\"coverage\":{");
    member_i64(b, "spans", r->n_spans);
    key(b, "spans_evicted");
    sbuf_printf(b, "%" PRId64 "}}", r->n_evicted);
}

/* A per-rank GPU document: the options, then row() of each rank. */
static void gpu_rank_doc(struct sbuf *b, const struct live_gpu_row *rows, size_t n,
                         const struct analyse_gpu_opts *opts,
                         void (*row)(struct sbuf *, enum web_format, const struct live_gpu_row *))
{
    sbuf_addc(b, '{');
    member_str(b, "last_step", opts->include_last_step ? "include" : "exclude");
    member_str(b, "rounding", opts->round_us ? "us" : "ns");
    member_u64(b, "total", n);
    sbuf_adds(b, "\"rows\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        row(b, WEB_FORMAT_JSON, &rows[i]);
    }
    sbuf_adds(b, "]}");
}

void web__render_gpu_temporal(struct sbuf *b, const struct live_gpu_row *rows, size_t n,
                              const struct analyse_gpu_opts *opts)
{
    gpu_rank_doc(b, rows, n, opts, web__gpu_temporal_row);
}

const char web__gpu_ktypes_csv_header[] = "rank,kernel_type,us,pct\n";

void web__gpu_ktype_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_ktype_row *r)
{
    char name[96];
    analyse_gpu_mask_name(r->mask, name, sizeof name);
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",%s,", r->rank, name);
        sbuf_json_us(b, r->ns);
        sbuf_addc(b, ',');
        pct_of(b, true, r->ns, r->rank_ns);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_str(b, "kernel_type", name);
    member_us(b, "us", r->ns);
    key(b, "pct");
    pct_of(b, false, r->ns, r->rank_ns);
    sbuf_addc(b, '}');
}

const char web__gpu_kmetrics_csv_header[] =
    "rank,kernel_type,name,others,sum_us,max_us,min_us,mean_us,stddev\n";

void web__gpu_kmetric_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_kmetric_row *r)
{
    const struct analyse_gpu_kmetric *m = &r->m;
    char type[32]; /* HTA's spelling: COMPUTATION, COMMUNICATION, MEMORY */
    analyse_gpu_mask_name(1u << m->type, type, sizeof type);
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",%s,", r->rank, type);
        if (m->name) {
            char small[512];
            char *t = m->name_len < sizeof small ? small : malloc(m->name_len + 1);
            if (t) {
                memcpy(t, m->name, m->name_len);
                t[m->name_len] = '\0';
                web__csv_str(b, t);
                if (t != small)
                    free(t);
            }
        } else {
            sbuf_adds(b, "others");
        }
        sbuf_printf(b, ",%s,%.3f,%.3f,%.3f,%.3f,%.6g\n", m->name ? "false" : "true", m->sum_us,
                    m->max_us, m->min_us, m->mean_us, m->std_us);
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_str(b, "kernel_type", type);
    key(b, "name");
    if (m->name)
        sbuf_json_str(b, m->name, m->name_len);
    else
        sbuf_adds(b, "\"others\"");
    sbuf_printf(b, ",\"others\":%s,\"sum_us\":%.3f,\"max_us\":%.3f,\"min_us\":%.3f,"
                   "\"mean_us\":%.3f,\"stddev\":%.6g}",
                m->name ? "false" : "true", m->sum_us, m->max_us, m->min_us, m->mean_us, m->std_us);
}

void web__render_gpu_kernel_metrics(struct sbuf *b, const struct live_gpu_kmetric_row *rows,
                                    size_t n, const struct analyse_gpu_opts *opts,
                                    int64_t num_kernels, double duration_ratio)
{
    sbuf_addc(b, '{');
    member_str(b, "last_step", opts->include_last_step ? "include" : "exclude");
    member_str(b, "rounding", opts->round_us ? "us" : "ns");
    member_str(b, "memory", opts->include_memory ? "include" : "exclude");
    member_i64(b, "num_kernels", num_kernels);
    member_f(b, "duration_ratio", duration_ratio);
    member_u64(b, "total", n);
    sbuf_adds(b, "\"rows\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        web__gpu_kmetric_row(b, WEB_FORMAT_JSON, &rows[i]);
    }
    sbuf_adds(b, "]}");
}

void web__render_gpu_kernel_types(struct sbuf *b, const struct web_gpu_ktype_row *rows, size_t n,
                                  const struct analyse_gpu_opts *opts)
{
    sbuf_addc(b, '{');
    member_str(b, "last_step", opts->include_last_step ? "include" : "exclude");
    member_str(b, "rounding", opts->round_us ? "us" : "ns");
    member_str(b, "memory", opts->include_memory ? "include" : "exclude");
    member_u64(b, "total", n);
    sbuf_adds(b, "\"rows\":[");
    int64_t all[ANALYSE_GPU_MASKS] = {0}, sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        web__gpu_ktype_row(b, WEB_FORMAT_JSON, &rows[i]);
        all[rows[i].mask] += rows[i].ns;
        sum += rows[i].ns;
    }
    sbuf_adds(b, "],\"all_ranks\":[");
    bool first = true;
    for (unsigned m = 1; m < ANALYSE_GPU_MASKS; m++) {
        if (all[m] <= 0)
            continue;
        if (!first)
            sbuf_addc(b, ',');
        first = false;
        char name[96];
        sbuf_addc(b, '{');
        member_str(b, "kernel_type", analyse_gpu_mask_name(m, name, sizeof name));
        member_us(b, "us", all[m]);
        key(b, "pct");
        pct_of(b, false, all[m], sum);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "]}");
}

const char web__gpu_overlap_csv_header[] = "rank,communication_us,overlap_us,overlap_pct\n";

void web__gpu_overlap_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_row *r)
{
    int64_t comm = r->ktypes.group_ns[1], both = r->ktypes.ns[3];
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",", r->rank);
        sbuf_json_us(b, comm);
        sbuf_addc(b, ',');
        sbuf_json_us(b, both);
        sbuf_addc(b, ',');
        pct_of(b, true, both, comm);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_us(b, "communication_us", comm);
    member_us(b, "overlap_us", both);
    key(b, "overlap_pct");
    pct_of(b, false, both, comm);
    sbuf_addc(b, '}');
}

void web__render_gpu_overlap(struct sbuf *b, const struct live_gpu_row *rows, size_t n,
                             const struct analyse_gpu_opts *opts)
{
    gpu_rank_doc(b, rows, n, opts, web__gpu_overlap_row);
}

const char web__gpu_launches_csv_header[] =
    "rank,correlation,runtime,kernel,cpu_ts_us,cpu_duration_us,gpu_ts_us,gpu_duration_us,"
    "launch_delay_us,short,runtime_outlier,delay_outlier\n";

void web__gpu_launch_row(struct sbuf *b, enum web_format fmt, const struct live_gpu_launch_row *r)
{
    const struct analyse_gpu_launch *l = &r->l;
    const int64_t us[] = {l->cpu_ts_ns, l->cpu_dur_ns, l->gpu_ts_ns, l->gpu_dur_ns, l->delay_ns};
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",%" PRId64 ",", r->rank, l->correlation);
        web__csv_str(b, l->runtime); /* snapshot names are NUL-terminated */
        sbuf_addc(b, ',');
        web__csv_str(b, l->kernel);
        for (size_t i = 0; i < 5; i++) {
            sbuf_addc(b, ',');
            sbuf_json_us(b, us[i]);
        }
        sbuf_printf(b, ",%s,%s,%s\n", l->is_short ? "true" : "false",
                    l->runtime_outlier ? "true" : "false", l->delay_outlier ? "true" : "false");
        return;
    }
    static const char *const keys[] = {"cpu_ts_us", "cpu_duration_us", "gpu_ts_us",
                                       "gpu_duration_us", "launch_delay_us"};
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_i64(b, "correlation", l->correlation);
    key(b, "runtime");
    sbuf_json_str(b, l->runtime, l->runtime_len);
    sbuf_addc(b, ',');
    key(b, "kernel");
    sbuf_json_str(b, l->kernel, l->kernel_len);
    sbuf_addc(b, ',');
    for (size_t i = 0; i < 5; i++)
        member_us(b, keys[i], us[i]);
    key(b, "short");
    sbuf_adds(b, l->is_short ? "true," : "false,");
    key(b, "runtime_outlier");
    sbuf_adds(b, l->runtime_outlier ? "true," : "false,");
    member_bool_last(b, "delay_outlier", l->delay_outlier);
    sbuf_addc(b, '}');
}

void web__render_gpu_launches(struct sbuf *b, const struct live_gpu_launch_row *rows, size_t n,
                              const struct analyse_gpu_opts *opts, int64_t runtime_cutoff_ns,
                              int64_t delay_cutoff_ns, size_t offset, size_t limit)
{
    sbuf_addc(b, '{');
    member_str(b, "last_step", opts->include_last_step ? "include" : "exclude");
    member_str(b, "rounding", opts->round_us ? "us" : "ns");
    member_str(b, "memory", opts->include_memory ? "include" : "exclude");
    member_us(b, "runtime_cutoff_us", runtime_cutoff_ns);
    member_us(b, "delay_cutoff_us", delay_cutoff_ns);
    member_u64(b, "total", n);
    sbuf_adds(b, "\"summary\":[");
    for (size_t i = 0; i < n;) {
        size_t j = i, sh = 0, ro = 0, dl = 0;
        for (; j < n && rows[j].rank == rows[i].rank; j++) {
            sh += rows[j].l.is_short;
            ro += rows[j].l.runtime_outlier;
            dl += rows[j].l.delay_outlier;
        }
        if (i > 0)
            sbuf_addc(b, ',');
        sbuf_printf(b, "{\"rank\":%" PRId64 ",\"launches\":%zu,\"short\":%zu,"
                       "\"runtime_outliers\":%zu,\"delay_outliers\":%zu}",
                    rows[i].rank, j - i, sh, ro, dl);
        i = j;
    }
    sbuf_adds(b, "],\"rows\":[");
    size_t from = offset < n ? offset : n;
    size_t to = limit && limit < n - from ? from + limit : n;
    for (size_t i = from; i < to; i++) {
        if (i > from)
            sbuf_addc(b, ',');
        web__gpu_launch_row(b, WEB_FORMAT_JSON, &rows[i]);
    }
    sbuf_adds(b, "]}");
}

/* v / div, or null (JSON) / nothing (CSV) when NaN. */
static void scaled_or_null(struct sbuf *b, bool csv, double v, double div)
{
    if (!csv)
        num_or_null(b, v / div);
    else if (isfinite(v))
        sbuf_printf(b, "%.10g", v / div);
}

static const char *const stat_keys[] = {"mean", "std", "min", "p25", "p50", "p75", "max"};

/* The stats' count and figures: CSV fields after a comma each; JSON members named
 * prefix + key + suffix, all but the last followed by a comma when more follow (more). */
static void stats_fields(struct sbuf *b, bool csv, const struct analyse_gpu_stats *st, double div,
                         const char *prefix, const char *suffix, bool more)
{
    const double v[] = {st->mean, st->std, st->min, st->q25, st->q50, st->q75, st->max};
    if (csv) {
        sbuf_printf(b, ",%zu", st->count);
        for (size_t i = 0; i < 7; i++) {
            sbuf_addc(b, ',');
            scaled_or_null(b, true, v[i], div);
        }
        return;
    }
    sbuf_printf(b, "\"%scount\":%zu", prefix, st->count);
    for (size_t i = 0; i < 7; i++) {
        sbuf_printf(b, ",\"%s%s%s\":", prefix, stat_keys[i], suffix);
        scaled_or_null(b, false, v[i], div);
    }
    if (more)
        sbuf_addc(b, ',');
}

/* The options of a per-stream GPU document and its ranks. */
static void gpu_stream_head(struct sbuf *b, const struct live_gpu_stream_rank *ranks, size_t n,
                            const struct analyse_gpu_opts *opts, bool queue)
{
    member_str(b, "last_step", opts->include_last_step ? "include" : "exclude");
    member_str(b, "rounding", opts->round_us ? "us" : "ns");
    sbuf_adds(b, "\"ranks\":[");
    for (size_t i = 0; i < n; i++) {
        const struct live_gpu_stream_rank *r = &ranks[i];
        size_t on_stream = 0;
        for (size_t j = 0; j < r->n_idle; j++)
            on_stream += r->idle[j].n_events;
        if (i > 0)
            sbuf_addc(b, ',');
        sbuf_addc(b, '{');
        member_i64(b, "rank", r->rank);
        member_u64(b, "device_events", r->filter.n_device);
        member_u64(b, "kept", r->filter.n_kept);
        step_cut(b, &r->filter);
        if (queue)
            member_us(b, "trace_us", r->queues.trace_ns);
        else
            member_u64(b, "on_streams", on_stream);
        sbuf_printf(b, "\"streams_folded_events\":%" PRId64 "}", r->n_stream_folded);
    }
    sbuf_adds(b, "],");
}

const char web__gpu_idle_csv_header[] =
    "rank,stream,idle_category,idle_us,idle_pct,intervals,mean_us,std_us,min_us,p25_us,p50_us,"
    "p75_us,max_us\n";

void web__gpu_idle_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_idle_row *r)
{
    bool csv = fmt == WEB_FORMAT_CSV;
    const char *name = analyse_gpu_idle_names[r->cat];
    int64_t ns = r->s->ns[r->cat];
    if (csv) {
        sbuf_printf(b, "%" PRId64 ",%" PRId64 ",%s,", r->rank, r->s->stream, name);
        sbuf_json_us(b, ns);
        sbuf_addc(b, ',');
        pct_of(b, true, ns, r->stream_ns);
        stats_fields(b, true, &r->s->stats[r->cat], 1000.0, "", "", false);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_i64(b, "stream", r->s->stream);
    member_str(b, "idle_category", name);
    member_us(b, "idle_us", ns);
    key(b, "idle_pct");
    pct_of(b, false, ns, r->stream_ns);
    sbuf_adds(b, ",\"intervals\":{");
    stats_fields(b, false, &r->s->stats[r->cat], 1000.0, "", "_us", false);
    sbuf_adds(b, "}}");
}

void web__render_gpu_idle(struct sbuf *b, const struct live_gpu_stream_rank *ranks, size_t n_ranks,
                          const struct web_gpu_idle_row *rows, size_t n,
                          const struct analyse_gpu_opts *opts, int64_t consecutive_ns)
{
    sbuf_addc(b, '{');
    member_us(b, "consecutive_kernel_delay_us", consecutive_ns);
    gpu_stream_head(b, ranks, n_ranks, opts, false);
    member_u64(b, "total", n);
    sbuf_adds(b, "\"rows\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        web__gpu_idle_row(b, WEB_FORMAT_JSON, &rows[i]);
    }
    sbuf_adds(b, "]}");
}

const char web__gpu_queue_csv_header[] =
    "rank,stream,points,count,mean,std,min,p25,p50,p75,max,full_us,full_pct\n";
const char web__gpu_queue_series_csv_header[] = "rank,stream,ts_us,queue_length\n";

/* A summary row's JSON members, '{' and all but the closing '}'. */
static void queue_summary_json(struct sbuf *b, const struct web_gpu_queue_row *r)
{
    const struct analyse_gpu_queue *q = r->q;
    sbuf_addc(b, '{');
    member_i64(b, "rank", r->rank);
    member_i64(b, "stream", q->stream);
    member_u64(b, "points", q->n_points);
    stats_fields(b, false, &q->stats, 1.0, "", "", true);
    member_us(b, "full_us", q->full_ns);
    key(b, "full_pct");
    pct_of(b, false, q->full_ns, r->trace_ns);
}

void web__gpu_queue_row(struct sbuf *b, enum web_format fmt, const struct web_gpu_queue_row *r)
{
    bool csv = fmt == WEB_FORMAT_CSV;
    const struct analyse_gpu_queue *q = r->q;
    if (r->p) {
        if (csv) {
            sbuf_printf(b, "%" PRId64 ",%" PRId64 ",", r->rank, q->stream);
            sbuf_json_us(b, r->p->ts_ns);
            sbuf_printf(b, ",%" PRId64 "\n", r->p->len);
            return;
        }
        sbuf_addc(b, '{');
        member_i64(b, "rank", r->rank);
        member_i64(b, "stream", q->stream);
        member_us(b, "ts_us", r->p->ts_ns);
        sbuf_printf(b, "\"queue_length\":%" PRId64 "}", r->p->len);
        return;
    }
    if (csv) {
        sbuf_printf(b, "%" PRId64 ",%" PRId64 ",%zu", r->rank, q->stream, q->n_points);
        stats_fields(b, true, &q->stats, 1.0, "", "", false);
        sbuf_addc(b, ',');
        sbuf_json_us(b, q->full_ns);
        sbuf_addc(b, ',');
        pct_of(b, true, q->full_ns, r->trace_ns);
        sbuf_addc(b, '\n');
        return;
    }
    queue_summary_json(b, r);
    sbuf_addc(b, '}');
}

void web__render_gpu_queue(struct sbuf *b, const struct live_gpu_stream_rank *ranks, size_t n_ranks,
                           const struct web_gpu_queue_row *rows, size_t n,
                           const struct analyse_gpu_opts *opts, int64_t max_queue,
                           size_t max_points)
{
    sbuf_addc(b, '{');
    member_i64(b, "max_queue", max_queue);
    member_u64(b, "max_points", max_points);
    gpu_stream_head(b, ranks, n_ranks, opts, true);
    member_u64(b, "total", n);
    sbuf_adds(b, "\"rows\":[");
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            sbuf_addc(b, ',');
        queue_summary_json(b, &rows[i]);
        /* The row's series, downsampled: its times and lengths side by side. */
        const struct analyse_gpu_queue *q = rows[i].q;
        sbuf_printf(b, ",\"kept\":%zu,\"series\":{\"ts_us\":[", q->n_kept);
        for (size_t j = 0; j < q->n_kept; j++) {
            if (j > 0)
                sbuf_addc(b, ',');
            sbuf_json_us(b, q->points[j].ts_ns);
        }
        sbuf_adds(b, "],\"queue_length\":[");
        for (size_t j = 0; j < q->n_kept; j++)
            sbuf_printf(b, j > 0 ? ",%" PRId64 : "%" PRId64, q->points[j].len);
        sbuf_adds(b, "]}}");
    }
    sbuf_adds(b, "]}");
}

const char web__breakdown_csv_header[] =
    "step,rank,start_us,end_us,total_us,step_us,kernel_us,memcpy_us,memset_us,communication_us,"
    "runtime_us,dataloader_us,cpu_exec_us,other_us,device_events\n";

void web__bd_row(struct sbuf *b, enum web_format fmt, int64_t rank, const struct analyse_bd_step *st)
{
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_printf(b, "%" PRId64 ",%" PRId64 ",", st->step, rank);
        sbuf_json_us(b, st->start_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, st->end_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, st->end_ns - st->start_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, st->host_end_ns - st->host_start_ns);
        bd_costs(b, st->cost_ns, true);
        sbuf_printf(b, ",%" PRId64 "\n", st->n_device);
        return;
    }
    sbuf_addc(b, '{');
    member_i64(b, "step", st->step);
    member_i64(b, "rank", rank);
    member_us(b, "start_us", st->start_ns);
    member_us(b, "end_us", st->end_ns);
    member_us(b, "host_start_us", st->host_start_ns);
    member_us(b, "host_end_us", st->host_end_ns);
    member_us(b, "step_us", st->host_end_ns - st->host_start_ns);
    member_i64(b, "device_events", st->n_device);
    key(b, "total_us");
    sbuf_json_us(b, st->end_ns - st->start_ns);
    bd_costs(b, st->cost_ns, false);
    sbuf_addc(b, '}');
}

void web__render_live_breakdown(struct sbuf *b, const struct live_breakdown_view *v, size_t offset,
                                size_t limit)
{
    const struct analyse_breakdown *bd = v->bd;
    size_t n = bd ? bd->n_steps : 0;
    size_t from = offset < n ? offset : n;
    size_t to = limit && limit < n - from ? from + limit : n;
    sbuf_addc(b, '{');
    member_i64(b, "rank", v->rank);
    member_u64(b, "total", n);
    member_u64(b, "steps_dropped", bd ? bd->n_dropped : 0);
    key(b, "device_stretched");
    sbuf_adds(b, bd && bd->device_stretched ? "true," : "false,");
    sbuf_adds(b, "\"rows\":[");
    for (size_t i = from; i < to; i++) {
        if (i > from)
            sbuf_addc(b, ',');
        web__bd_row(b, WEB_FORMAT_JSON, v->rank, &bd->steps[i]);
    }
    sbuf_adds(b, "],\"average\":");
    if (n == 0) {
        sbuf_adds(b, "null");
    } else {
        sbuf_adds(b, "{\"total_us\":");
        dus(b, true, bd->avg_total_ns);
        for (size_t c = 0; c < ANALYSE_BD_COUNT; c++) {
            sbuf_printf(b, ",\"%s_us\":", analyse_bd_cat_names[c]);
            dus(b, true, bd->avg_ns[c]);
        }
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, ",\"window\":");
    if (n == 0) {
        sbuf_adds(b, "null");
    } else {
        sbuf_adds(b, "{\"start_us\":");
        sbuf_json_us(b, bd->window_start_ns);
        sbuf_adds(b, ",\"end_us\":");
        sbuf_json_us(b, bd->window_end_ns);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, ",\"gpus\":[");
    for (size_t i = 0; bd && i < bd->n_gpus; i++) {
        const struct analyse_bd_gpu *g = &bd->gpus[i];
        if (i)
            sbuf_addc(b, ',');
        sbuf_addc(b, '{');
        member_i64(b, "device", g->pid);
        member_us(b, "busy_us", g->busy_ns);
        key(b, "utilization");
        num_or_null(b, g->utilization);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "],");
    member_i64(b, "spans", v->n_spans);
    member_i64(b, "spans_evicted", v->n_evicted);
    web__render_bd_coverage(b, v);
    sbuf_addc(b, '}');
}

void web__render_bd_coverage(struct sbuf *b, const struct live_breakdown_view *v)
{
    const struct analyse_breakdown *bd = v->bd;
    key(b, "coverage");
    sbuf_addc(b, '{');
    key(b, "complete");
    sbuf_adds(b, v->n_evicted == 0 ? "true," : "false,");
    member_u64(b, "steps", bd ? bd->n_steps : 0);
    member_i64(b, "steps_listed", v->steps_listed);
    member_u64(b, "steps_trimmed", bd ? bd->n_dropped : 0);
    member_i64(b, "steps_cut", v->steps_cut);
    member_i64(b, "spans_kept", v->n_spans - v->n_evicted);
    member_i64(b, "spans_evicted", v->n_evicted);
    member_u64(b, "spans_max", v->max_spans);
    key(b, "from_us");
    if (v->n_evicted > 0)
        sbuf_json_us(b, v->horizon_ns);
    else
        sbuf_adds(b, "null");
    sbuf_addc(b, '}');
}

/* ---- the cluster step trace (routes_cluster.c) ---- */

/* Whether the cluster step trace writes figure f: the mode's, and a torch job's device
 * communication figures when it has them. */
static bool cluster_shows(int mode, bool device_comm, int f)
{
    return analyse_cl_mode_has((enum analyse_cl_mode)mode, (enum analyse_cl_fig)f) ||
           (device_comm && analyse_cl_device_fig((enum analyse_cl_fig)f));
}

static void cluster_row(struct sbuf *b, enum web_format fmt, int mode, bool device_comm,
                        const struct analyse_cl_rank *r)
{
    if (fmt == WEB_FORMAT_CSV)
        sbuf_printf(b, "%" PRId64 ",%" PRId64, r->rank, r->stage);
    else
        sbuf_printf(b, "{\"rank\":%" PRId64 ",\"stage\":%" PRId64, r->rank, r->stage);
    for (int f = 0; f < ANALYSE_CL_N_FIGS; f++) {
        if (!cluster_shows(mode, device_comm, f))
            continue;
        if (fmt == WEB_FORMAT_CSV)
            sbuf_addc(b, ',');
        else
            sbuf_printf(b, ",\"%s_us\":", analyse_cl_fig_name((enum analyse_cl_fig)f));
        if (r->has[f])
            sbuf_json_us(b, r->fig_ns[f]);
        else if (fmt != WEB_FORMAT_CSV)
            sbuf_adds(b, "null");
    }
    sbuf_adds(b, fmt == WEB_FORMAT_CSV ? "\n" : "}");
}

void web__render_cluster_steptrace(struct sbuf *b, enum web_format fmt, const char *mode_name,
                                   int mode, int64_t stages, int64_t rank_size, int64_t step,
                                   int64_t last_step, bool ms_avg, bool device_comm,
                                   const struct analyse_cl_rank *rows, size_t n)
{
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_adds(b, "rank,stage");
        for (int f = 0; f < ANALYSE_CL_N_FIGS; f++)
            if (cluster_shows(mode, device_comm, f))
                sbuf_printf(b, ",%s_us", analyse_cl_fig_name((enum analyse_cl_fig)f));
        sbuf_addc(b, '\n');
        for (size_t i = 0; i < n; i++)
            cluster_row(b, fmt, mode, device_comm, &rows[i]);
        return;
    }
    if (fmt == WEB_FORMAT_JSON) {
        sbuf_printf(b, "{\"mode\":\"%s\",\"stages\":%" PRId64 ",\"rank_size\":%" PRId64
                       ",\"step\":", mode_name, stages, rank_size);
        if (step > 0)
            sbuf_printf(b, "%" PRId64 ",\"average_from\":null", step);
        else
            sbuf_printf(b, "\"average\",\"average_from\":\"%s\"",
                        ms_avg ? "mindspore" : "steps");
        sbuf_printf(b, ",\"last_step\":%" PRId64 ",\"communication_from\":%s,\"ranks\":",
                    last_step, device_comm ? "\"kernels\"" : "null");
    }
    sbuf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sbuf_addc(b, ',');
        cluster_row(b, fmt, mode, device_comm, &rows[i]);
    }
    sbuf_addc(b, ']');
    if (fmt == WEB_FORMAT_JSON)
        sbuf_addc(b, '}');
}

/* ---- cluster FLOPs and memory (routes_cluster_summary.c) ---- */

static void sum_num(struct sbuf *b, bool csv, const char *name, bool has, double v)
{
    if (csv)
        sbuf_addc(b, ',');
    else
        sbuf_printf(b, ",\"%s\":", name);
    if (has)
        sbuf_printf(b, "%.10g", v);
    else if (!csv)
        sbuf_adds(b, "null");
}

static void sum_int(struct sbuf *b, bool csv, const char *name, int64_t v)
{
    if (csv)
        sbuf_addc(b, ',');
    else
        sbuf_printf(b, ",\"%s\":", name);
    if (v >= 0)
        sbuf_printf(b, "%" PRId64, v);
    else if (!csv)
        sbuf_adds(b, "null");
}

static void sum_row(struct sbuf *b, bool csv, bool memory, const struct web_cl_sum_row *r)
{
    if (csv)
        sbuf_printf(b, "%" PRId64, r->rank);
    else
        sbuf_printf(b, "{\"rank\":%" PRId64, r->rank);
    if (memory) {
        sum_int(b, csv, "capacity_bytes", r->bytes[0]);
        sum_int(b, csv, "peak_bytes", r->bytes[1]);
        sum_int(b, csv, "static_bytes", r->bytes[2]);
        sum_num(b, csv, "allocations", r->has[3], r->v[3]);
        sum_num(b, csv, "deallocations", r->has[4], r->v[4]);
        sum_num(b, csv, "peak_ratio", r->ratio >= 0, r->ratio);
    } else {
        sum_num(b, csv, "flops_m", r->has[0], r->v[0]);
        sum_num(b, csv, "flops_per_second_g", r->has[1], r->v[1]);
        sum_num(b, csv, "flops_utilization", r->has[2], r->v[2]);
        sum_num(b, csv, "flops_norm", r->ratio >= 0, r->ratio);
    }
    sbuf_adds(b, csv ? "\n" : "}");
}

void web__render_cluster_summary(struct sbuf *b, enum web_format fmt, bool memory,
                                 const struct web_cl_sum_row *rows, size_t n,
                                 const int64_t *missing, size_t n_missing)
{
    bool csv = fmt == WEB_FORMAT_CSV;
    if (csv) {
        sbuf_adds(b, memory ? "rank,capacity_bytes,peak_bytes,static_bytes,allocations,"
                              "deallocations,peak_ratio\n"
                            : "rank,flops_m,flops_per_second_g,flops_utilization,flops_norm\n");
        for (size_t i = 0; i < n; i++)
            sum_row(b, true, memory, &rows[i]);
        return;
    }
    if (fmt == WEB_FORMAT_JSON)
        sbuf_adds(b, "{\"ranks\":");
    sbuf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            sbuf_addc(b, ',');
        sum_row(b, false, memory, &rows[i]);
    }
    sbuf_addc(b, ']');
    if (fmt != WEB_FORMAT_JSON)
        return;
    sbuf_adds(b, ",\"missing_ranks\":[");
    for (size_t i = 0; i < n_missing; i++)
        sbuf_printf(b, "%s%" PRId64, i ? "," : "", missing[i]);
    sbuf_adds(b, "]}");
}

/* ---- diff ---- */

const char web__diff_csv_header[] =
    "table,name,status,base_calls,exp_calls,delta_calls,base_total_us,exp_total_us,"
    "delta_total_us,base_self_us,exp_self_us,delta_self_us\n";

static const char *diff_status(const struct web_diff_row *r)
{
    return !r->base ? "added" : !r->exp ? "removed" : "both";
}

/* base, exp and exp - base of one figure; a side without the name counts 0. CSV: three fields
 * after a comma each; JSON: three members after a comma each, named "base_", "exp_", "delta_"
 * + what. */
static void diff_triple(struct sbuf *b, enum web_format fmt, const char *what, int64_t base,
                        int64_t exp, bool us)
{
    static const char *const side[] = {"base_", "exp_", "delta_"};
    int64_t v[3] = {base, exp, exp - base};
    for (size_t i = 0; i < 3; i++) {
        sbuf_addc(b, ',');
        if (fmt != WEB_FORMAT_CSV)
            sbuf_printf(b, "\"%s%s\":", side[i], what);
        if (us)
            sbuf_json_us(b, v[i]);
        else
            sbuf_printf(b, "%" PRId64, v[i]);
    }
}

static void diff_row(struct sbuf *b, enum web_format fmt, const struct web_diff_row *r, bool ops)
{
    const struct analyse_op_row zero = {0};
    const struct analyse_op_row *x = r->base ? r->base : &zero, *y = r->exp ? r->exp : &zero;
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_adds(b, ops ? "operator," : "kernel,");
        web__csv_str(b, r->name);
        sbuf_printf(b, ",%s", diff_status(r));
    } else {
        sbuf_addc(b, '{');
        if (fmt == WEB_FORMAT_RECORDS)
            sbuf_adds(b, ops ? "\"table\":\"operator\"," : "\"table\":\"kernel\",");
        member_str(b, "name", r->name);
        key(b, "status");
        sbuf_json_strz(b, diff_status(r));
    }
    diff_triple(b, fmt, "calls", x->calls, y->calls, false);
    diff_triple(b, fmt, "total_us", x->total_ns, y->total_ns, true);
    if (ops)
        diff_triple(b, fmt, "self_us", x->self_ns, y->self_ns, true);
    else if (fmt == WEB_FORMAT_CSV)
        sbuf_adds(b, ",,,");
    else if (fmt == WEB_FORMAT_RECORDS)
        sbuf_adds(b, ",\"base_self_us\":null,\"exp_self_us\":null,\"delta_self_us\":null");
    sbuf_addc(b, fmt == WEB_FORMAT_CSV ? '\n' : '}');
}

void web__diff_table(struct sbuf *b, enum web_format fmt, const struct web_diff_row *ops,
                     size_t n_ops, const struct web_diff_row *kernels, size_t n_kernels)
{
    bool csv = fmt == WEB_FORMAT_CSV;
    sbuf_adds(b, csv ? web__diff_csv_header : "[");
    for (size_t i = 0; i < n_ops + n_kernels; i++) {
        if (!csv && i)
            sbuf_addc(b, ',');
        bool op = i < n_ops;
        diff_row(b, csv ? WEB_FORMAT_CSV : WEB_FORMAT_RECORDS, op ? &ops[i] : &kernels[i - n_ops],
                 op);
    }
    if (!csv)
        sbuf_addc(b, ']');
}

/* A step bound as asked: null for none. */
static void step_bound(struct sbuf *b, const char *name, int64_t v, int64_t none)
{
    key(b, name);
    if (v == none)
        sbuf_adds(b, "null");
    else
        sbuf_printf(b, "%lld", (long long)v);
}

static void diff_side(struct sbuf *b, const struct web_diff_side *s)
{
    size_t n = s->bd.n_steps;
    sbuf_addc(b, '{');
    member_str(b, "job", s->job);
    member_i64(b, "job_id", s->job_id);
    if (s->rank < 0) {
        sbuf_adds(b, "\"rank\":null,");
    } else {
        member_i64(b, "rank", s->rank);
    }
    member_i64(b, "breakdown_rank", s->bd.rank);
    member_u64(b, "steps", n);
    member_dus(b, "step_time_us", n > 0, s->bd.total_ns);
    key(b, "breakdown");
    if (n == 0) {
        sbuf_adds(b, "null,");
    } else {
        for (size_t c = 0; c < ANALYSE_BD_COUNT; c++) {
            sbuf_printf(b, "%s\"%s_us\":", c ? "," : "{", analyse_bd_cat_names[c]);
            dus(b, true, s->bd.ns[c]);
        }
        sbuf_adds(b, "},");
    }
    key(b, "steps_range");
    if (s->ranged) {
        sbuf_addc(b, '{');
        step_bound(b, "first", s->first, ANALYSE_ST_ALL_FIRST);
        sbuf_addc(b, ',');
        step_bound(b, "last", s->last, ANALYSE_ST_ALL_LAST);
        sbuf_addc(b, ',');
        member_u64(b, "step_spans", s->range_steps);
        member_i64(b, "first_step", s->first_step);
        member_i64(b, "last_step", s->last_step);
        member_i64(b, "spans_read", s->spans_read);
        key(b, "spans_cut");
        sbuf_printf(b, "%lld},", (long long)s->spans_cut);
    } else {
        sbuf_adds(b, "null,");
    }
    member_u64(b, "operators", s->ops ? s->ops->n_rows : 0);
    member_us(b, "operators_total_us", s->ops ? s->ops->sum_total_ns : 0);
    member_us(b, "operators_self_us", s->ops ? s->ops->sum_self_ns : 0);
    member_u64(b, "kernels", s->kernels ? s->kernels->n_rows : 0);
    key(b, "kernels_total_us");
    sbuf_json_us(b, s->kernels ? s->kernels->sum_total_ns : 0);
    sbuf_addc(b, '}');
}

/* The names of rows of one status ("added" or "removed"), as a JSON array. */
static void diff_names(struct sbuf *b, const struct web_diff_row *rows, size_t n, bool added)
{
    bool first = true;
    sbuf_addc(b, '[');
    for (size_t i = 0; i < n; i++) {
        if (added ? rows[i].base != NULL : rows[i].exp != NULL)
            continue;
        if (!first)
            sbuf_addc(b, ',');
        first = false;
        sbuf_json_strz(b, rows[i].name);
    }
    sbuf_addc(b, ']');
}

void web__render_diff(struct sbuf *b, const struct web_diff_side *base,
                      const struct web_diff_side *exp, const struct web_diff_row *ops,
                      size_t n_ops, const struct web_diff_row *kernels, size_t n_kernels)
{
    sbuf_adds(b, "{\"base\":");
    diff_side(b, base);
    sbuf_adds(b, ",\"exp\":");
    diff_side(b, exp);
    sbuf_adds(b, ",\"operators\":[");
    for (size_t i = 0; i < n_ops; i++) {
        if (i)
            sbuf_addc(b, ',');
        diff_row(b, WEB_FORMAT_JSON, &ops[i], true);
    }
    sbuf_adds(b, "],\"kernels\":[");
    for (size_t i = 0; i < n_kernels; i++) {
        if (i)
            sbuf_addc(b, ',');
        diff_row(b, WEB_FORMAT_JSON, &kernels[i], false);
    }
    for (int added = 1; added >= 0; added--) {
        sbuf_adds(b, added ? "],\"added\":{\"operators\":" : "},\"removed\":{\"operators\":");
        diff_names(b, ops, n_ops, added);
        sbuf_adds(b, ",\"kernels\":");
        diff_names(b, kernels, n_kernels, added);
    }
    sbuf_adds(b, "}}");
}
