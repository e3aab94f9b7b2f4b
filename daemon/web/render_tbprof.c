/* SPDX-License-Identifier: MIT */
/*
 * render_tbprof: the documents of /kernels/details and /comm-ops (torch-tb-profiler's kernel
 * view and its communication-operator table, analyse_tbprof.h) in JSON, CSV and records.
 * No MHD here.
 */
#include "summary.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void csv_text(struct sbuf *b, const char *s, size_t n)
{
    char small[512];
    char *tmp = n < sizeof small ? small : malloc(n + 1);
    if (!tmp) {
        sbuf_adds(b, "\"\"");
        return;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    web__csv_str(b, tmp);
    if (tmp != small)
        free(tmp);
}

static void us_of(struct sbuf *b, double ns)
{
    sbuf_printf(b, "%.3f", ns / 1000);
}

/* [x, y, z] as JSON (null: none), or its text in a CSV field ("" none). */
static void dim3(struct sbuf *b, const int32_t *v, uint8_t n, bool csv)
{
    if (n == 0) {
        sbuf_adds(b, csv ? "" : "null");
        return;
    }
    sbuf_adds(b, csv ? "\"[" : "[");
    for (uint8_t i = 0; i < n; i++)
        sbuf_printf(b, i ? ", %" PRId32 : "%" PRId32, v[i]);
    sbuf_adds(b, csv ? "]\"" : "]");
}

static void opt_int(struct sbuf *b, int64_t v, bool csv)
{
    if (v < 0)
        sbuf_adds(b, csv ? "" : "null");
    else
        sbuf_printf(b, "%" PRId64, v);
}

/* A text field (none: NULL): CSV's quoted text ("" none), or a JSON string (null). */
static void opt_text(struct sbuf *b, const char *s, size_t n, bool csv)
{
    if (!s)
        sbuf_adds(b, csv ? "" : "null");
    else if (csv)
        csv_text(b, s, n);
    else
        sbuf_json_str(b, s, n);
}

/* A number the trace may not give (has false): CSV's "" or JSON's null when it does not. */
static void opt_g(struct sbuf *b, bool has, double v, bool csv)
{
    if (has)
        sbuf_printf(b, "%.6g", v);
    else
        sbuf_adds(b, csv ? "" : "null");
}

/* Before a row's next field: a CSV comma, or JSON's ,"key": */
static void next_field(struct sbuf *b, const char *key, bool csv)
{
    if (csv)
        sbuf_addc(b, ',');
    else
        sbuf_printf(b, ",\"%s\":", key);
}

/* One row: a CSV line, or a JSON object (first: without the comma before it). */
static void tbk_row(struct sbuf *b, const struct web_tbk_doc *d, const struct analyse_tbk_row *r,
                    bool csv, bool first)
{
    const struct analyse_tbk *t = d->t;
    double mean = r->calls ? (double)r->total_ns / (double)r->calls : 0;
    if (csv) {
        csv_text(b, r->name, r->name_len);
    } else {
        sbuf_adds(b, first ? "{\"name\":" : ",{\"name\":");
        sbuf_json_str(b, r->name, r->name_len);
    }
    if (d->group == ANALYSE_TBK_BY_OPERATOR) {
        next_field(b, "operator", csv);
        opt_text(b, r->op, r->op_len, csv);
        next_field(b, "grid", csv);
        dim3(b, r->grid, r->n_grid, csv);
        next_field(b, "block", csv);
        dim3(b, r->block, r->n_block, csv);
        next_field(b, "registers_per_thread", csv);
        opt_int(b, r->regs, csv);
        next_field(b, "shared_memory", csv);
        opt_int(b, r->smem, csv);
    }
    next_field(b, "tensor_cores", csv);
    sbuf_adds(b, r->tensor_core ? "true" : "false");
    next_field(b, "calls", csv);
    sbuf_printf(b, "%" PRId64, r->calls);
    next_field(b, "total_us", csv);
    sbuf_json_us(b, r->total_ns);
    next_field(b, "mean_us", csv);
    us_of(b, mean);
    next_field(b, "max_us", csv);
    sbuf_json_us(b, r->max_ns);
    next_field(b, "min_us", csv);
    sbuf_json_us(b, r->min_ns);
    next_field(b, "blocks_per_sm", csv);
    opt_g(b, t->has_blocks_per_sm, r->blocks_per_sm, csv);
    next_field(b, "occupancy_pct", csv);
    opt_g(b, t->has_occupancy, r->occupancy_pct, csv);
    sbuf_addc(b, csv ? '\n' : '}');
}

void web__render_tbk(struct sbuf *b, const struct web_tbk_doc *d, enum web_format fmt)
{
    const struct analyse_tbk *t = d->t;
    bool op = d->group == ANALYSE_TBK_BY_OPERATOR;
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_adds(b, op ? "name,operator,grid,block,registers_per_thread,shared_memory,"
                          "tensor_cores,calls,total_us,mean_us,max_us,min_us,blocks_per_sm,"
                          "occupancy_pct\n"
                        : "name,tensor_cores,calls,total_us,mean_us,max_us,min_us,"
                          "blocks_per_sm,occupancy_pct\n");
        for (size_t i = 0; i < t->n_rows; i++)
            tbk_row(b, d, &t->rows[i], true, false);
        return;
    }
    if (fmt != WEB_FORMAT_RECORDS) {
        sbuf_printf(b, "{\"rank\":%" PRId64 ",\"group\":\"%s\",\"kernels\":%" PRId64
                       ",\"total_us\":",
                    d->rank, op ? "operator" : "name", t->kernels);
        sbuf_json_us(b, t->total_ns);
        sbuf_adds(b, ",\"tensor_core_us\":");
        sbuf_json_us(b, t->tc_ns);
        sbuf_printf(b, ",\"tensor_core_pct\":%.4f,\"launched\":%" PRId64
                       ",\"has_blocks_per_sm\":%s,\"has_occupancy\":%s,\"spans_read\":%zu,"
                       "\"spans_cut\":%" PRId64 ",\"lines_bad\":%" PRId64 ",\"total\":%zu,"
                       "\"rows\":",
                    t->total_ns > 0 ? (double)t->tc_ns / (double)t->total_ns * 100 : 0.0,
                    t->launched, t->has_blocks_per_sm ? "true" : "false",
                    t->has_occupancy ? "true" : "false", d->n_read, d->spans_cut, d->lines_bad,
                    t->n_rows);
    }
    sbuf_addc(b, '[');
    for (size_t i = 0; i < t->n_rows; i++)
        tbk_row(b, d, &t->rows[i], false, i == 0);
    sbuf_addc(b, ']');
    if (fmt != WEB_FORMAT_RECORDS)
        sbuf_addc(b, '}');
}

static void tbc_row(struct sbuf *b, const struct analyse_tbc_row *r, bool csv, bool first)
{
    double calls = r->calls > 0 ? (double)r->calls : 1;
    int64_t wait = r->latency_ns - r->transfer_ns;
    if (csv) {
        sbuf_printf(b, "%" PRId64 ",", r->rank);
        web__csv_str(b, r->name);
    } else {
        sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"name\":", first ? "" : ",", r->rank);
        sbuf_json_strz(b, r->name);
    }
    next_field(b, "calls", csv);
    sbuf_printf(b, "%" PRId64, r->calls);
    next_field(b, "total_bytes", csv);
    sbuf_printf(b, "%" PRId64, r->bytes);
    next_field(b, "avg_bytes", csv);
    sbuf_printf(b, "%.3f", (double)r->bytes / calls);
    next_field(b, "latency_us", csv);
    sbuf_json_us(b, r->latency_ns);
    next_field(b, "avg_latency_us", csv);
    us_of(b, (double)r->latency_ns / calls);
    next_field(b, "transfer_us", csv);
    sbuf_json_us(b, r->transfer_ns);
    next_field(b, "avg_transfer_us", csv);
    us_of(b, (double)r->transfer_ns / calls);
    next_field(b, "wait_us", csv);
    sbuf_json_us(b, wait);
    next_field(b, "unmatched", csv);
    sbuf_printf(b, "%" PRId64, r->unmatched);
    sbuf_addc(b, csv ? '\n' : '}');
}

void web__render_tbc(struct sbuf *b, const struct web_tbc_doc *d, enum web_format fmt)
{
    const struct analyse_tbc *t = d->t;
    if (fmt == WEB_FORMAT_CSV) {
        sbuf_adds(b, "rank,name,calls,total_bytes,avg_bytes,latency_us,avg_latency_us,"
                     "transfer_us,avg_transfer_us,wait_us,unmatched\n");
        for (size_t i = 0; i < t->n_rows; i++)
            if (d->rank < 0 || t->rows[i].rank == d->rank)
                tbc_row(b, &t->rows[i], true, false);
        return;
    }
    if (fmt != WEB_FORMAT_RECORDS) {
        sbuf_printf(b, "{\"link\":\"%s\",\"ranks\":[",
                    d->link == ANALYSE_TBC_LAUNCH ? "launch" : "external_id");
        for (size_t i = 0; i < d->n_ranks; i++)
            sbuf_printf(b, i ? ",%" PRId64 : "%" PRId64, d->ranks[i]);
        sbuf_printf(b, "],\"spans_read\":%zu,\"spans_cut\":%" PRId64 ",\"lines_bad\":%" PRId64
                       ",\"rows\":",
                    d->n_read, d->spans_cut, d->lines_bad);
    }
    sbuf_addc(b, '[');
    bool first = true;
    for (size_t i = 0; i < t->n_rows; i++)
        if (d->rank < 0 || t->rows[i].rank == d->rank) {
            tbc_row(b, &t->rows[i], false, first);
            first = false;
        }
    sbuf_addc(b, ']');
    if (fmt != WEB_FORMAT_RECORDS)
        sbuf_addc(b, '}');
}
