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

static void tbk_row(struct sbuf *b, const struct web_tbk_doc *d, const struct analyse_tbk_row *r,
                    bool csv, bool first)
{
    const struct analyse_tbk *t = d->t;
    bool op = d->group == ANALYSE_TBK_BY_OPERATOR;
    double mean = r->calls ? (double)r->total_ns / (double)r->calls : 0;
    if (csv) {
        csv_text(b, r->name, r->name_len);
        sbuf_addc(b, ',');
        if (op) {
            if (r->op)
                csv_text(b, r->op, r->op_len);
            sbuf_addc(b, ',');
            dim3(b, r->grid, r->n_grid, true);
            sbuf_addc(b, ',');
            dim3(b, r->block, r->n_block, true);
            sbuf_addc(b, ',');
            opt_int(b, r->regs, true);
            sbuf_addc(b, ',');
            opt_int(b, r->smem, true);
            sbuf_addc(b, ',');
        }
        sbuf_printf(b, "%s,%" PRId64 ",", r->tensor_core ? "true" : "false", r->calls);
        sbuf_json_us(b, r->total_ns);
        sbuf_addc(b, ',');
        us_of(b, mean);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->max_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->min_ns);
        sbuf_addc(b, ',');
        if (t->has_blocks_per_sm)
            sbuf_printf(b, "%.6g", r->blocks_per_sm);
        sbuf_addc(b, ',');
        if (t->has_occupancy)
            sbuf_printf(b, "%.6g", r->occupancy_pct);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_adds(b, first ? "{\"name\":" : ",{\"name\":");
    sbuf_json_str(b, r->name, r->name_len);
    if (op) {
        sbuf_adds(b, ",\"operator\":");
        if (r->op)
            sbuf_json_str(b, r->op, r->op_len);
        else
            sbuf_adds(b, "null");
        sbuf_adds(b, ",\"grid\":");
        dim3(b, r->grid, r->n_grid, false);
        sbuf_adds(b, ",\"block\":");
        dim3(b, r->block, r->n_block, false);
        sbuf_adds(b, ",\"registers_per_thread\":");
        opt_int(b, r->regs, false);
        sbuf_adds(b, ",\"shared_memory\":");
        opt_int(b, r->smem, false);
    }
    sbuf_printf(b, ",\"tensor_cores\":%s,\"calls\":%" PRId64 ",\"total_us\":",
                r->tensor_core ? "true" : "false", r->calls);
    sbuf_json_us(b, r->total_ns);
    sbuf_adds(b, ",\"mean_us\":");
    us_of(b, mean);
    sbuf_adds(b, ",\"max_us\":");
    sbuf_json_us(b, r->max_ns);
    sbuf_adds(b, ",\"min_us\":");
    sbuf_json_us(b, r->min_ns);
    sbuf_adds(b, ",\"blocks_per_sm\":");
    if (t->has_blocks_per_sm)
        sbuf_printf(b, "%.6g", r->blocks_per_sm);
    else
        sbuf_adds(b, "null");
    sbuf_adds(b, ",\"occupancy_pct\":");
    if (t->has_occupancy)
        sbuf_printf(b, "%.6g", r->occupancy_pct);
    else
        sbuf_adds(b, "null");
    sbuf_addc(b, '}');
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
        sbuf_printf(b, ",%" PRId64 ",%" PRId64 ",%.3f,", r->calls, r->bytes,
                    (double)r->bytes / calls);
        sbuf_json_us(b, r->latency_ns);
        sbuf_addc(b, ',');
        us_of(b, (double)r->latency_ns / calls);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->transfer_ns);
        sbuf_addc(b, ',');
        us_of(b, (double)r->transfer_ns / calls);
        sbuf_addc(b, ',');
        sbuf_json_us(b, wait);
        sbuf_printf(b, ",%" PRId64 "\n", r->unmatched);
        return;
    }
    sbuf_printf(b, "%s{\"rank\":%" PRId64 ",\"name\":", first ? "" : ",", r->rank);
    sbuf_json_strz(b, r->name);
    sbuf_printf(b, ",\"calls\":%" PRId64 ",\"total_bytes\":%" PRId64 ",\"avg_bytes\":%.3f,"
                   "\"latency_us\":",
                r->calls, r->bytes, (double)r->bytes / calls);
    sbuf_json_us(b, r->latency_ns);
    sbuf_adds(b, ",\"avg_latency_us\":");
    us_of(b, (double)r->latency_ns / calls);
    sbuf_adds(b, ",\"transfer_us\":");
    sbuf_json_us(b, r->transfer_ns);
    sbuf_adds(b, ",\"avg_transfer_us\":");
    us_of(b, (double)r->transfer_ns / calls);
    sbuf_adds(b, ",\"wait_us\":");
    sbuf_json_us(b, wait);
    sbuf_printf(b, ",\"unmatched\":%" PRId64 "}", r->unmatched);
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
