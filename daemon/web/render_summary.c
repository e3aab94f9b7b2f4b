/* SPDX-License-Identifier: MIT */
/*
 * render_summary: the documents of /summary/{kind} and /benchmark in JSON, CSV and text. The
 * text form lays the tables out as paddle.profiler prints them (profiler_statistic.py
 * _build_table(), timer.py TimerHook._print_summary()): the same titles, column widths,
 * two-blank column gaps, "%.2f" times in the chosen unit and percentages, so a user who knows
 * Paddle's output reads ours the same way. No MHD here.
 */
#include "summary.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const web__summary_kind_names[WEB_SUMMARY_KIND_COUNT] = {
    "overview", "model", "distributed", "operator", "kernel", "memory-manipulation", "user-defined",
    "device", "aicpu", "memory",
};

int web__summary_kind_parse(const char *s, enum web_summary_kind *ret)
{
    for (int k = 0; k < WEB_SUMMARY_KIND_COUNT; k++)
        if (strcmp(s, web__summary_kind_names[k]) == 0) {
            *ret = (enum web_summary_kind)k;
            return 0;
        }
    return -1;
}

/* ---- JSON and CSV ---- */

static void us_d(struct sbuf *b, double ns)
{
    sbuf_printf(b, "%.3f", ns / 1000);
}

static void pct(struct sbuf *b, double ratio)
{
    sbuf_printf(b, "%.4f", ratio * 100);
}

void web__csv_name(struct sbuf *b, const char *s, size_t n)
{
    char tmp[1024];
    size_t l = n < sizeof tmp - 1 ? n : sizeof tmp - 1;
    memcpy(tmp, s, l);
    tmp[l] = '\0';
    web__csv_str(b, tmp);
}

/* One table row: name, [parent,] calls, total, avg, max, min, percent. */
static void stat_row(struct sbuf *b, const struct analyse_sum_row *r, const char *parent,
                     size_t parent_len, bool with_parent, bool csv, bool first)
{
    if (csv) {
        web__csv_name(b, r->name, r->name_len);
        sbuf_addc(b, ',');
        if (with_parent) {
            if (parent)
                web__csv_name(b, parent, parent_len);
            sbuf_addc(b, ',');
        }
        sbuf_printf(b, "%" PRId64 ",", r->calls);
        sbuf_json_us(b, r->total_ns);
        sbuf_addc(b, ',');
        us_d(b, r->avg_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->max_ns);
        sbuf_addc(b, ',');
        sbuf_json_us(b, r->min_ns);
        sbuf_addc(b, ',');
        pct(b, r->ratio);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_adds(b, first ? "{\"name\":" : ",{\"name\":");
    sbuf_json_str(b, r->name, r->name_len);
    if (with_parent) {
        sbuf_adds(b, ",\"parent\":");
        if (parent)
            sbuf_json_str(b, parent, parent_len);
        else
            sbuf_adds(b, "null");
    }
    sbuf_printf(b, ",\"calls\":%" PRId64 ",\"total_us\":", r->calls);
    sbuf_json_us(b, r->total_ns);
    sbuf_adds(b, ",\"avg_us\":");
    us_d(b, r->avg_ns);
    sbuf_adds(b, ",\"max_us\":");
    sbuf_json_us(b, r->max_ns);
    sbuf_adds(b, ",\"min_us\":");
    sbuf_json_us(b, r->min_ns);
    sbuf_adds(b, ",\"percent\":");
    pct(b, r->ratio);
    sbuf_addc(b, '}');
}

static void stat_rows(struct sbuf *b, const struct analyse_sum_row *rows, size_t n,
                      bool with_parent, bool csv)
{
    if (csv)
        sbuf_adds(b, with_parent ? "name,parent,calls,total_us,avg_us,max_us,min_us,percent\n"
                                 : "name,calls,total_us,avg_us,max_us,min_us,percent\n");
    for (size_t i = 0; i < n; i++) {
        const struct analyse_sum_row *p =
            with_parent && rows[i].parent != ANALYSE_SUM_TOP ? &rows[rows[i].parent] : NULL;
        stat_row(b, &rows[i], p ? p->name : NULL, p ? p->name_len : 0, with_parent, csv, i == 0);
    }
}

static void model_rows(struct sbuf *b, const struct analyse_summary *s, bool csv)
{
    if (csv)
        sbuf_adds(b, "name,calls,total_us,avg_us,max_us,min_us,percent\n");
    bool first = true;
    for (int m = 0; m < ANALYSE_SUM_MODEL_OTHERS; m++) {
        if (s->model[m].calls == 0)
            continue;
        stat_row(b, &s->model[m], NULL, 0, false, csv, first);
        first = false;
    }
    const struct analyse_sum_row *o = &s->model[ANALYSE_SUM_MODEL_OTHERS];
    if (csv) {
        sbuf_adds(b, "Others,,");
        sbuf_json_us(b, o->total_ns);
        sbuf_adds(b, ",,,,");
        pct(b, o->ratio);
        sbuf_addc(b, '\n');
        return;
    }
    sbuf_adds(b, first ? "{" : ",{");
    sbuf_adds(b, "\"name\":\"Others\",\"calls\":null,\"total_us\":");
    sbuf_json_us(b, o->total_ns);
    sbuf_adds(b, ",\"avg_us\":null,\"max_us\":null,\"min_us\":null,\"percent\":");
    pct(b, o->ratio);
    sbuf_addc(b, '}');
}

static void overview_rows(struct sbuf *b, const struct analyse_summary *s, bool csv)
{
    if (csv)
        sbuf_adds(b, "type,side,calls,time_us,percent\n");
    for (size_t i = 0; i < s->n_types; i++) {
        const struct analyse_sum_type_row *t = &s->types[i];
        const char *side = t->device ? "gpu" : "cpu";
        if (csv)
            sbuf_printf(b, "%s,%s,%" PRId64 ",", analyse_sum_type_names[t->type], side, t->calls);
        else
            sbuf_printf(b, "%s{\"type\":\"%s\",\"side\":\"%s\",\"calls\":%" PRId64 ",\"time_us\":",
                        i ? "," : "", analyse_sum_type_names[t->type], side, t->calls);
        sbuf_json_us(b, t->time_ns);
        sbuf_adds(b, csv ? "," : ",\"percent\":");
        pct(b, t->ratio);
        sbuf_adds(b, csv ? "\n" : "}");
    }
}

static void distributed_rows(struct sbuf *b, const struct analyse_summary *s, bool csv)
{
    const char *names[4] = {"ProfileStep", "Communication", "Computation", "Overlap"};
    int64_t v[4] = {s->total_ns, s->comm_ns, s->comp_ns, s->overlap_ns};
    if (csv)
        sbuf_adds(b, "name,total_us,percent\n");
    for (int i = 0; i < 4; i++) {
        double r = s->total_ns > 0 ? (double)v[i] / (double)s->total_ns : 0;
        if (csv)
            sbuf_printf(b, "%s,", names[i]);
        else
            sbuf_printf(b, "%s{\"name\":\"%s\",\"total_us\":", i ? "," : "", names[i]);
        sbuf_json_us(b, v[i]);
        sbuf_adds(b, csv ? "," : ",\"percent\":");
        pct(b, r);
        sbuf_adds(b, csv ? "\n" : "}");
    }
}

static void opt_num(struct sbuf *b, double v, bool csv)
{
    if (isnan(v))
        sbuf_adds(b, csv ? "" : "null");
    else
        sbuf_printf(b, "%.4f", v);
}

/* Paddle's Memory Summary rows, place by place. */
static void mem_rows(struct sbuf *b, const struct analyse_memsum *m, bool csv)
{
    if (csv)
        sbuf_adds(b, "place,name,type,allocation_count,free_count,allocation_size,free_size,"
                     "increased_size\n");
    for (size_t i = 0; i < m->n_rows; i++) {
        const struct analyse_mem_row *r = &m->rows[i];
        const struct analyse_mem_place *p = &m->places[r->place];
        if (csv) {
            web__csv_name(b, p->place, p->place_len);
            sbuf_addc(b, ',');
            web__csv_name(b, r->name, r->name_len);
        } else {
            sbuf_adds(b, i ? ",{\"place\":" : "{\"place\":");
            sbuf_json_str(b, p->place, p->place_len);
            sbuf_adds(b, ",\"name\":");
            sbuf_json_str(b, r->name, r->name_len);
        }
        sbuf_printf(b, csv ? ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n"
                           : ",\"type\":\"%s\",\"allocation_count\":%" PRId64
                             ",\"free_count\":%" PRId64 ",\"allocation_size\":%" PRId64
                             ",\"free_size\":%" PRId64 ",\"increased_size\":%" PRId64 "}",
                    r->reserved ? "Reserved" : "Allocated", r->alloc_count, r->free_count,
                    r->alloc_size, r->free_size, r->increase);
    }
}

static void device_rows(struct sbuf *b, const struct web_summary_doc *d, bool csv)
{
    const struct analyse_summary *s = d->sum;
    if (csv)
        sbuf_adds(b, "device,utilization_pct,busy_us\n");
    sbuf_adds(b, csv ? "CPU(Process)," : "{\"device\":\"CPU(Process)\",\"utilization_pct\":");
    opt_num(b, d->cpu_pct, csv);
    sbuf_adds(b, csv ? ",\nCPU(System)," : ",\"busy_us\":null},{\"device\":\"CPU(System)\","
                                            "\"utilization_pct\":");
    opt_num(b, d->sys_cpu_pct, csv);
    sbuf_adds(b, csv ? ",\n" : ",\"busy_us\":null}");
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (csv)
            sbuf_printf(b, "GPU%" PRId64 ",", s->gpus[i].pid);
        else
            sbuf_printf(b, ",{\"device\":\"GPU%" PRId64 "\",\"utilization_pct\":", s->gpus[i].pid);
        opt_num(b, s->gpus[i].utilization * 100, csv);
        sbuf_adds(b, csv ? "," : ",\"busy_us\":");
        sbuf_json_us(b, s->gpus[i].busy_ns);
        sbuf_adds(b, csv ? "\n" : "}");
    }
}

/* A mean in µs of sum_ns over n, or null (CSV: empty) when n is 0. */
static void mean_us(struct sbuf *b, int64_t sum_ns, int64_t n, bool csv)
{
    if (n > 0)
        us_d(b, (double)sum_ns / (double)n);
    else if (!csv)
        sbuf_adds(b, "null");
}

/* MindInsight's AICPU detail table, one row per op. */
static void aicpu_rows(struct sbuf *b, const struct analyse_aicpu *a, bool csv)
{
    if (csv)
        sbuf_adds(b, "kernel_name,kernel_type,calls,total_us,avg_us,dispatch_avg_us,exec_avg_us\n");
    for (size_t i = 0; i < a->n_ops; i++) {
        const struct analyse_aicpu_op *o = &a->ops[i];
        if (csv) {
            web__csv_str(b, o->name);
            sbuf_addc(b, ',');
            web__csv_name(b, o->name, o->type_len);
            sbuf_printf(b, ",%" PRId64 ",", o->calls);
            sbuf_json_us(b, o->total_ns);
            sbuf_addc(b, ',');
            mean_us(b, o->total_ns, o->calls, true);
            sbuf_addc(b, ',');
            mean_us(b, o->dispatch_ns, o->calls, true);
            sbuf_addc(b, ',');
            mean_us(b, o->exec_ns, o->exec_calls, true);
            sbuf_addc(b, '\n');
            continue;
        }
        sbuf_adds(b, i ? ",{\"kernel_name\":" : "{\"kernel_name\":");
        sbuf_json_str(b, o->name, strlen(o->name));
        sbuf_adds(b, ",\"kernel_type\":");
        sbuf_json_str(b, o->name, o->type_len);
        sbuf_printf(b, ",\"calls\":%" PRId64 ",\"total_us\":", o->calls);
        sbuf_json_us(b, o->total_ns);
        sbuf_adds(b, ",\"avg_us\":");
        mean_us(b, o->total_ns, o->calls, false);
        sbuf_adds(b, ",\"dispatch_avg_us\":");
        mean_us(b, o->dispatch_ns, o->calls, false);
        sbuf_adds(b, ",\"exec_avg_us\":");
        mean_us(b, o->exec_ns, o->exec_calls, false);
        sbuf_addc(b, '}');
    }
}

static void render_aicpu_json(struct sbuf *b, const struct web_summary_doc *d)
{
    const struct analyse_aicpu *a = d->aicpu;
    sbuf_printf(b, "{\"kind\":\"aicpu\",\"rank\":%" PRId64 ",\"tasks\":%" PRId64 ",\"total_us\":",
                d->rank, a->tasks);
    sbuf_json_us(b, a->total_ns);
    sbuf_printf(b, ",\"spans_read\":%zu,\"spans_cut\":%" PRId64 ",\"lines_bad\":%" PRId64
                   ",\"max_spans\":%zu,\"types\":[",
                d->n_read, d->spans_cut, d->lines_bad, d->max_spans);
    for (size_t i = 0; i < a->n_types; i++) {
        const struct analyse_aicpu_type *t = &a->types[i];
        sbuf_adds(b, i ? ",{\"kernel_type\":" : "{\"kernel_type\":");
        sbuf_json_str(b, t->type, t->type_len);
        sbuf_printf(b, ",\"calls\":%" PRId64 ",\"total_us\":", t->calls);
        sbuf_json_us(b, t->total_ns);
        sbuf_adds(b, ",\"percent\":");
        pct(b, t->percent / 100);
        sbuf_addc(b, '}');
    }
    sbuf_adds(b, "],\"rows\":[");
    aicpu_rows(b, a, false);
    sbuf_adds(b, "]}");
}

static void rows_of(struct sbuf *b, const struct web_summary_doc *d, bool csv)
{
    const struct analyse_summary *s = d->sum;
    if (d->kind == WEB_SUMMARY_AICPU) {
        aicpu_rows(b, d->aicpu, csv);
        return;
    }
    switch (d->kind) {
    case WEB_SUMMARY_OVERVIEW:
        overview_rows(b, s, csv);
        break;
    case WEB_SUMMARY_MODEL:
        model_rows(b, s, csv);
        break;
    case WEB_SUMMARY_DISTRIBUTED:
        distributed_rows(b, s, csv);
        break;
    case WEB_SUMMARY_OPERATOR:
        stat_rows(b, s->ops, s->n_ops, true, csv);
        break;
    case WEB_SUMMARY_KERNEL:
        stat_rows(b, s->kernels, s->n_kernels, false, csv);
        break;
    case WEB_SUMMARY_MEMORY_MANIPULATION:
        stat_rows(b, s->memory, s->n_memory, false, csv);
        break;
    case WEB_SUMMARY_MEMORY:
        mem_rows(b, d->mem, csv);
        break;
    case WEB_SUMMARY_USER_DEFINED:
        stat_rows(b, s->user, s->n_user, false, csv);
        break;
    default:
        device_rows(b, d, csv);
        break;
    }
}

static void render_json(struct sbuf *b, const struct web_summary_doc *d)
{
    const struct analyse_summary *s = d->sum;
    if (d->kind == WEB_SUMMARY_AICPU) {
        render_aicpu_json(b, d);
        return;
    }
    sbuf_printf(b, "{\"kind\":\"%s\",\"rank\":%" PRId64 ",\"n_steps\":%zu,\"first_step\":",
                web__summary_kind_names[d->kind], d->rank, s->n_steps);
    if (s->first_step >= 0)
        sbuf_printf(b, "%" PRId64 ",\"last_step\":%" PRId64, s->first_step, s->last_step);
    else
        sbuf_adds(b, "null,\"last_step\":null");
    sbuf_adds(b, ",\"total_us\":");
    sbuf_json_us(b, s->total_ns);
    sbuf_printf(b, ",\"spans\":%zu,\"spans_read\":%zu,\"spans_cut\":%" PRId64
                   ",\"lines_bad\":%" PRId64 ",\"max_spans\":%zu",
                s->n_spans, d->n_read, d->spans_cut, d->lines_bad, d->max_spans);
    if (d->kind == WEB_SUMMARY_DISTRIBUTED)
        sbuf_printf(b, ",\"communication_calls_cpu\":%" PRId64 ",\"communication_calls_gpu\":%" PRId64,
                    s->comm_cpu_calls, s->comm_gpu_calls);
    if (d->kind == WEB_SUMMARY_DEVICE) {
        sbuf_printf(b, ",\"cpu_source\":%s%s%s,\"windows\":%" PRId64 ",\"host_samples\":%" PRId64,
                    d->cpu_source ? "\"" : "", d->cpu_source ? d->cpu_source : "null",
                    d->cpu_source ? "\"" : "", d->n_windows, d->n_host_samples);
    }
    if (d->kind == WEB_SUMMARY_MEMORY) {
        const struct analyse_memsum *m = d->mem;
        sbuf_printf(b, ",\"memory_events\":%zu,\"memory_events_counted\":%zu,"
                       "\"memory_events_unowned\":%zu,\"places\":[",
                    m->n_events, m->n_counted, m->n_unowned);
        for (size_t i = 0; i < m->n_places; i++) {
            sbuf_adds(b, i ? ",{\"place\":" : "{\"place\":");
            sbuf_json_str(b, m->places[i].place, m->places[i].place_len);
            sbuf_printf(b, ",\"peak_allocated\":%" PRId64 ",\"peak_reserved\":%" PRId64 "}",
                        m->places[i].peak_allocated, m->places[i].peak_reserved);
        }
        sbuf_addc(b, ']');
    }
    sbuf_adds(b, ",\"rows\":[");
    rows_of(b, d, false);
    sbuf_adds(b, "]}");
}

/* ---- text, as Paddle prints it ---- */

#define TCOLS 7
#define CELL 256

struct tfmt {
    size_t w[TCOLS];
    size_t n;
};

static size_t tlen(const struct tfmt *f)
{
    size_t l = 0;
    for (size_t i = 0; i < f->n; i++)
        l += f->w[i] + 2;
    return l - 2;
}

static void tpad(struct sbuf *b, const char *s, size_t width)
{
    size_t l = strlen(s);
    sbuf_add(b, s, l);
    for (; l < width; l++)
        sbuf_addc(b, ' ');
}

static void trow(struct sbuf *b, const struct tfmt *f, const char *const *cells)
{
    for (size_t i = 0; i < f->n; i++) {
        tpad(b, cells[i], f->w[i]);
        sbuf_adds(b, "  ");
    }
    sbuf_addc(b, '\n');
}

static void tsep(struct sbuf *b, const struct tfmt *f)
{
    for (size_t i = 0; i < f->n; i++) {
        for (size_t k = 0; k < f->w[i]; k++)
            sbuf_addc(b, '-');
        sbuf_adds(b, "  ");
    }
    sbuf_addc(b, '\n');
}

static void dashes(struct sbuf *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        sbuf_addc(b, '-');
}

/* Paddle's add_title(): the text centred in dashes (Python's floor division of the rest). */
static void ttitle(struct sbuf *b, size_t len, const char *text)
{
    size_t tl = strlen(text);
    size_t left = len > tl ? len - tl : 0;
    dashes(b, left / 2);
    sbuf_adds(b, text);
    dashes(b, left - left / 2);
    sbuf_addc(b, '\n');
}

static double unit_div(const char *unit)
{
    return strcmp(unit, "s") == 0 ? 1e9 : strcmp(unit, "us") == 0 ? 1e3 : strcmp(unit, "ns") == 0 ? 1 : 1e6;
}

static void fmt_time(char *out, size_t size, double ns, double div)
{
    snprintf(out, size, "%.2f", ns / div);
}

/* "total / avg / max / min / ratio" of a row. */
static void five(char *out, const struct analyse_sum_row *r, double div)
{
    char t[4][40];
    fmt_time(t[0], sizeof t[0], (double)r->total_ns, div);
    fmt_time(t[1], sizeof t[1], r->avg_ns, div);
    fmt_time(t[2], sizeof t[2], (double)r->max_ns, div);
    fmt_time(t[3], sizeof t[3], (double)r->min_ns, div);
    snprintf(out, CELL, "%s / %s / %s / %s / %.2f", t[0], t[1], t[2], t[3], r->ratio * 100);
}

/* The GPU column of host tables: Paddle links device work to host events by correlation,
 * which stored records do not carry; zero is right only when the run had no device at all. */
static const char *gpu_cell(const struct analyse_summary *s)
{
    bool device = s->n_gpus > 0;
    for (size_t i = 0; i < s->n_types; i++)
        device |= s->types[i].device;
    return device ? "- / - / - / - / -" : "0.00 / 0.00 / 0.00 / 0.00 / 0.00";
}

static void name_cell(char *out, const char *name, size_t len, size_t max, size_t indent)
{
    size_t l = len < CELL - 8 ? len : CELL - 8;
    if (max > 0 && l + indent > max) {
        l = max - indent - 3 < l ? max - indent - 3 : l;
        snprintf(out, CELL, "%*s%.*s...", (int)indent, "", (int)l, name);
    } else {
        snprintf(out, CELL, "%*s%.*s", (int)indent, "", (int)l, name);
    }
}

static void text_device(struct sbuf *b, const struct web_summary_doc *d)
{
    struct tfmt f = {{30, 20}, 2};
    ttitle(b, tlen(&f), "Device Summary");
    tsep(b, &f);
    trow(b, &f, (const char *[]){"Device", "Utilization (%)"});
    tsep(b, &f);
    char v[64];
    if (isnan(d->cpu_pct))
        snprintf(v, sizeof v, "-");
    else
        snprintf(v, sizeof v, "%.2f", d->cpu_pct);
    trow(b, &f, (const char *[]){"CPU(Process)", v});
    if (isnan(d->sys_cpu_pct))
        snprintf(v, sizeof v, "-");
    else
        snprintf(v, sizeof v, "%.2f", d->sys_cpu_pct);
    trow(b, &f, (const char *[]){"CPU(System)", v});
    for (size_t i = 0; i < d->sum->n_gpus; i++) {
        char name[40];
        snprintf(name, sizeof name, "GPU%" PRId64, d->sum->gpus[i].pid);
        snprintf(v, sizeof v, "%.2f", d->sum->gpus[i].utilization * 100);
        trow(b, &f, (const char *[]){name, v});
    }
    tsep(b, &f);
    sbuf_adds(b, "Note:\nCPU(Process) Utilization = Current process CPU time over all cpu cores / "
                 "elapsed time, so max utilization can be reached 100% * number of cpu cores.\n"
                 "CPU(System) Utilization = All processes CPU time over all cpu cores(busy time) / "
                 "(busy time + idle time).\n"
                 "GPU Utilization = Current process GPU time / elapsed time.\n");
    dashes(b, tlen(&f));
    sbuf_adds(b, "\n\n\n");
}

static void text_overview(struct sbuf *b, const struct analyse_summary *s, const char *unit)
{
    double div = unit_div(unit);
    struct tfmt f = {{25, 25, 25, 25}, 4};
    ttitle(b, tlen(&f), "Overview Summary");
    sbuf_printf(b, "Time unit: %s\n", unit);
    tsep(b, &f);
    trow(b, &f, (const char *[]){"Event Type", "Calls", "CPU Time", "Ratio (%)"});
    tsep(b, &f);
    bool first = true, gpu_head = false;
    for (size_t i = 0; i <= s->n_types; i++) {
        if (!gpu_head && (i == s->n_types || s->types[i].device)) {
            tsep(b, &f);
            trow(b, &f, (const char *[]){"", "Calls", "GPU Time", "Ratio (%)"});
            tsep(b, &f);
            gpu_head = true;
        }
        if (i == s->n_types)
            break;
        const struct analyse_sum_type_row *t = &s->types[i];
        char name[64], calls[32], time[48], ratio[32];
        snprintf(name, sizeof name, "%s%s", first && !t->device ? "" : "  ",
                 analyse_sum_type_names[t->type]);
        snprintf(calls, sizeof calls, "%" PRId64, t->calls);
        fmt_time(time, sizeof time, (double)t->time_ns, div);
        snprintf(ratio, sizeof ratio, "%.2f", t->ratio * 100);
        trow(b, &f, (const char *[]){name, calls, time, ratio});
        first = false;
    }
    tsep(b, &f);
    sbuf_adds(b, "Note:\nIn this table, We sum up all collected events in terms of event type.\n"
                 "The time of events collected on host are presented as CPU Time, and as GPU Time "
                 "if on device.\n"
                 "Events with different types may overlap or inclusion, e.g. Operator includes "
                 "OperatorInner, so the sum of ratios is not 100%.\n"
                 "The time of events in the same type with overlap will not calculate twice, and "
                 "all time is summed after merged.\n"
                 "Example:\nThread 1:\n  Operator: |___________|     |__________|\n"
                 "Thread 2:\n  Operator:   |____________|     |___|\n"
                 "After merged:\n  Result:   |______________|  |__________|\n\n");
    dashes(b, tlen(&f));
    sbuf_adds(b, "\n\n\n");
}

/* A table of five-figure rows: name, calls, CPU cell, GPU cell [, flops]. */
struct ttable {
    const char *title;
    size_t name_w;          /* 0: the longest name */
    bool flops;
    const char *thread;     /* a "Thread: ..." title row, or NULL */
    bool closing_sep;       /* UserDefined has none */
};

static void text_rows(struct sbuf *b, const struct analyse_summary *s,
                      const struct analyse_sum_row *rows, size_t n, bool gpu_only,
                      const struct ttable *tt, const char *unit)
{
    double div = unit_div(unit);
    struct tfmt f = {{tt->name_w ? tt->name_w : 4, 6, 40, 40, 10}, tt->flops ? 5 : gpu_only ? 3 : 4};
    const char *gcell = gpu_cell(s);
    char cell[CELL];
    for (size_t i = 0; i < n; i++) {
        size_t indent = rows[i].parent != ANALYSE_SUM_TOP ? 2 : 0;
        size_t l = rows[i].name_len + indent;
        if (tt->name_w == 0 && l > f.w[0])
            f.w[0] = l < CELL - 8 ? l : CELL - 8;
        int cl = snprintf(cell, sizeof cell, "%" PRId64, rows[i].calls);
        if ((size_t)cl > f.w[1])
            f.w[1] = (size_t)cl;
        five(cell, &rows[i], div);
        if (strlen(cell) > f.w[2])
            f.w[2] = strlen(cell);
    }
    if (gpu_only)
        f.w[2] = f.w[2] > 40 ? f.w[2] : 40;
    if (f.n >= 4 && strlen(gcell) > f.w[3])
        f.w[3] = strlen(gcell);
    size_t len = tlen(&f);
    ttitle(b, len, tt->title);
    sbuf_printf(b, "Time unit: %s\n", unit);
    tsep(b, &f);
    if (gpu_only)
        trow(b, &f, (const char *[]){"Name", "Calls", "GPU Total / Avg / Max / Min / Ratio(%)"});
    else
        trow(b, &f, (const char *[]){"Name", "Calls", "CPU Total / Avg / Max / Min / Ratio(%)",
                                     "GPU Total / Avg / Max / Min / Ratio(%)", "FLOPs"});
    tsep(b, &f);
    if (tt->thread)
        ttitle(b, len, tt->thread);
    for (size_t i = 0; i < n; i++) {
        char name[CELL], calls[32], cpu[CELL];
        bool inner = rows[i].parent != ANALYSE_SUM_TOP;
        /* Paddle cuts inner operator names and kernel names only. */
        name_cell(name, rows[i].name, rows[i].name_len, inner || gpu_only ? tt->name_w : 0,
                  inner ? 2 : 0);
        snprintf(calls, sizeof calls, "%" PRId64, rows[i].calls);
        five(cpu, &rows[i], div);
        trow(b, &f, (const char *[]){name, calls, cpu, gcell, "-"});
    }
    if (tt->closing_sep)
        tsep(b, &f);
    sbuf_adds(b, "\n\n");
}

/* Kernel names lose their argument list as Paddle's (.+?)(<.*>)(\(.*\)) match does: cut after
 * the last "><" ... ">(" that a ')' follows. One pass over the name: the last ')' is found first
 * (a search for a ')' after every ">(" cost the square of the name's length: a 1 MB name of
 * ">(" took seconds, issue 18). */
static void kernel_rows_short(struct analyse_sum_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *s = rows[i].name;
        size_t len = rows[i].name_len;
        const char *lt = len > 1 ? memchr(s + 1, '<', len - 1) : NULL;
        if (!lt)
            continue;
        size_t close = len; /* the last ')'; len: none */
        for (size_t j = len; j-- > 0;)
            if (s[j] == ')') {
                close = j;
                break;
            }
        if (close == len)
            continue;
        for (size_t j = len; j-- > (size_t)(lt - s);) {
            if (s[j] == '>' && j + 1 < len && s[j + 1] == '(' && close >= j + 2) {
                rows[i].name_len = j + 1;
                break;
            }
        }
    }
}

static void text_model(struct sbuf *b, const struct analyse_summary *s, const char *unit)
{
    double div = unit_div(unit);
    char cells[ANALYSE_SUM_MODEL_COUNT][CELL];
    struct tfmt f = {{15, 6, 40, 40}, 4};
    const char *gcell = gpu_cell(s);
    for (int m = 0; m < ANALYSE_SUM_MODEL_COUNT; m++) {
        if (m == ANALYSE_SUM_MODEL_OTHERS) {
            char t[48];
            fmt_time(t, sizeof t, (double)s->model[m].total_ns, div);
            snprintf(cells[m], CELL, "%s / - / - / - / %.2f", t, s->model[m].ratio * 100);
        } else {
            five(cells[m], &s->model[m], div);
        }
        if (strlen(cells[m]) > f.w[2])
            f.w[2] = strlen(cells[m]);
    }
    if (strlen(gcell) > f.w[3])
        f.w[3] = strlen(gcell);
    ttitle(b, tlen(&f), "Model Summary");
    sbuf_printf(b, "Time unit: %s\n", unit);
    tsep(b, &f);
    trow(b, &f, (const char *[]){"Name", "Calls", "CPU Total / Avg / Max / Min / Ratio(%)",
                                 "GPU Total / Avg / Max / Min / Ratio(%)"});
    tsep(b, &f);
    for (int m = 0; m < ANALYSE_SUM_MODEL_COUNT; m++) {
        bool others = m == ANALYSE_SUM_MODEL_OTHERS;
        if (!others && s->model[m].calls == 0)
            continue;
        char name[32], calls[32];
        snprintf(name, sizeof name, "%s%s", m ? "  " : "", analyse_sum_model_names[m]);
        if (others)
            snprintf(calls, sizeof calls, "-");
        else
            snprintf(calls, sizeof calls, "%" PRId64, s->model[m].calls);
        /* Others: Paddle prints its GPU cell as "total / - / - / - / ratio". */
        const char *g = !others ? gcell : strcmp(gcell, "- / - / - / - / -") == 0
                                              ? gcell
                                              : "0.00 / - / - / - / 0.00";
        trow(b, &f, (const char *[]){name, calls, cells[m], g});
    }
    tsep(b, &f);
    sbuf_adds(b, "Note:\nIn this table, GPU time is the sum of all device(GPU) events called in "
                 "the phase.\nUnlike overview summary, if two device(GPU) events execute on "
                 "different streams with overlap time, we sum them directly here.\n\n");
    dashes(b, tlen(&f));
    sbuf_adds(b, "\n\n\n");
}

static void text_distributed(struct sbuf *b, const struct analyse_summary *s, const char *unit)
{
    double div = unit_div(unit);
    struct tfmt f = {{25, 25, 25}, 3};
    ttitle(b, tlen(&f), "Distribution Summary");
    sbuf_printf(b, "Time unit: %s\n", unit);
    tsep(b, &f);
    trow(b, &f, (const char *[]){"Name", "Total Time", "Ratio (%)"});
    tsep(b, &f);
    const char *names[4] = {"ProfileStep", "  Communication", "  Computation", "  Overlap"};
    int64_t v[4] = {s->total_ns, s->comm_ns, s->comp_ns, s->overlap_ns};
    for (int i = 0; i < 4; i++) {
        char t[48], r[32];
        fmt_time(t, sizeof t, (double)v[i], div);
        snprintf(r, sizeof r, "%.2f", s->total_ns > 0 ? 100.0 * (double)v[i] / (double)s->total_ns : 0);
        trow(b, &f, (const char *[]){names[i], t, r});
    }
    tsep(b, &f);
    sbuf_adds(b, "Note:\nCommunication time: Communication Event time, Communication Op time and "
                 "its kernel time on gpu.\nComputation time: Kernel time, except kernels belong to "
                 "communication(nccl kernels).\nOverlap time: Communication time intersects with "
                 "computation time.\n");
    dashes(b, tlen(&f));
    sbuf_adds(b, "\n\n\n");
}

/* Paddle's Memory Summary, one table per place (names are never cut, as Paddle's format does
 * not cut them). */
static void text_memory(struct sbuf *b, const struct analyse_memsum *m)
{
    struct tfmt f = {{50, 12, 15, 15, 15, 15, 15}, 7};
    for (size_t p = 0; p < m->n_places; p++) {
        const struct analyse_mem_place *pl = &m->places[p];
        char title[CELL];
        snprintf(title, sizeof title, "Memory Summary - %.*s",
                 (int)(pl->place_len < 200 ? pl->place_len : 200), pl->place);
        ttitle(b, tlen(&f), title);
        sbuf_printf(b, "Peak Allocated Memory: %" PRId64 "\nPeak Reserved Memory: %" PRId64 "\n",
                    pl->peak_allocated, pl->peak_reserved);
        tsep(b, &f);
        trow(b, &f, (const char *[]){"Name", "Type", "Allocation Count", "Free Count",
                                     "Allocation Size", "Free Size", "Increased Size"});
        tsep(b, &f);
        for (size_t i = pl->first_row; i < pl->first_row + pl->n_rows; i++) {
            const struct analyse_mem_row *r = &m->rows[i];
            sbuf_add(b, r->name, r->name_len);
            for (size_t k = r->name_len; k < 50; k++)
                sbuf_addc(b, ' ');
            sbuf_adds(b, "  ");
            char c[5][32];
            snprintf(c[0], sizeof c[0], "%" PRId64, r->alloc_count);
            snprintf(c[1], sizeof c[1], "%" PRId64, r->free_count);
            snprintf(c[2], sizeof c[2], "%" PRId64, r->alloc_size);
            snprintf(c[3], sizeof c[3], "%" PRId64, r->free_size);
            snprintf(c[4], sizeof c[4], "%" PRId64, r->increase);
            struct tfmt g = {{12, 15, 15, 15, 15, 15}, 6};
            trow(b, &g, (const char *[]){r->reserved ? "Reserved" : "Allocated", c[0], c[1], c[2],
                                         c[3], c[4]});
        }
        sbuf_adds(b, "\n\n");
    }
}

/* Whether Paddle's summary() leaves the kind's table out (profiler_statistic._build_table):
 * model without a stage besides ProfileStep, distributed without communication, the operator,
 * kernel, memory and user-defined tables without a row. Device and overview always print. */
static bool paddle_omits(const struct web_summary_doc *d)
{
    const struct analyse_summary *s = d->sum;
    switch (d->kind) {
    case WEB_SUMMARY_MODEL:
        return !s->has_model;
    case WEB_SUMMARY_DISTRIBUTED:
        return s->comm_cpu_calls == 0 && s->comm_gpu_calls == 0;
    case WEB_SUMMARY_OPERATOR:
        return s->n_ops == 0;
    case WEB_SUMMARY_KERNEL:
        return s->n_kernels == 0;
    case WEB_SUMMARY_MEMORY_MANIPULATION:
        return s->n_memory == 0;
    case WEB_SUMMARY_MEMORY:
        return d->mem->n_places == 0;
    case WEB_SUMMARY_USER_DEFINED:
        return s->n_user == 0;
    default:
        return false;
    }
}

/* MindInsight's two AI CPU tables, laid out as the Paddle tables are. */
static void text_aicpu(struct sbuf *b, const struct analyse_aicpu *a, const char *u)
{
    double div = unit_div(u);
    char h[3][48], c[5][CELL];
    struct tfmt f = {{30, 10, 18, 12}, 4};
    ttitle(b, tlen(&f), "AI CPU Type Summary");
    tsep(b, &f);
    snprintf(h[0], sizeof h[0], "Total Time (%s)", u);
    trow(b, &f, (const char *[]){"Kernel Type", "Calls", h[0], "Percent (%)"});
    tsep(b, &f);
    for (size_t i = 0; i < a->n_types; i++) {
        const struct analyse_aicpu_type *t = &a->types[i];
        name_cell(c[0], t->type, t->type_len, 30, 0);
        snprintf(c[1], CELL, "%" PRId64, t->calls);
        fmt_time(c[2], CELL, (double)t->total_ns, div);
        snprintf(c[3], CELL, "%.2f", t->percent);
        trow(b, &f, (const char *[]){c[0], c[1], c[2], c[3]});
    }
    tsep(b, &f);
    sbuf_addc(b, '\n');
    struct tfmt g = {{40, 10, 20, 22, 22}, 5};
    ttitle(b, tlen(&g), "AI CPU Detail");
    tsep(b, &g);
    snprintf(h[0], sizeof h[0], "Avg Time (%s)", u);
    snprintf(h[1], sizeof h[1], "Avg Dispatch (%s)", u);
    snprintf(h[2], sizeof h[2], "Avg Execution (%s)", u);
    trow(b, &g, (const char *[]){"Kernel Name", "Calls", h[0], h[1], h[2]});
    tsep(b, &g);
    for (size_t i = 0; i < a->n_ops; i++) {
        const struct analyse_aicpu_op *o = &a->ops[i];
        name_cell(c[0], o->name, strlen(o->name), 40, 0);
        snprintf(c[1], CELL, "%" PRId64, o->calls);
        fmt_time(c[2], CELL, (double)o->total_ns / (double)o->calls, div);
        fmt_time(c[3], CELL, (double)o->dispatch_ns / (double)o->calls, div);
        if (o->exec_calls > 0)
            fmt_time(c[4], CELL, (double)o->exec_ns / (double)o->exec_calls, div);
        else
            snprintf(c[4], CELL, "-");
        trow(b, &g, (const char *[]){c[0], c[1], c[2], c[3], c[4]});
    }
    tsep(b, &g);
}

static void render_text(struct sbuf *b, const struct web_summary_doc *d)
{
    const struct analyse_summary *s = d->sum;
    const char *u = d->time_unit;
    static const char thread[] = "Thread: All threads merged";
    if (d->kind == WEB_SUMMARY_AICPU) {
        text_aicpu(b, d->aicpu, u);
        return;
    }
    if (paddle_omits(d))
        return;
    switch (d->kind) {
    case WEB_SUMMARY_DEVICE:
        text_device(b, d);
        break;
    case WEB_SUMMARY_OVERVIEW:
        text_overview(b, s, u);
        break;
    case WEB_SUMMARY_MODEL:
        text_model(b, s, u);
        break;
    case WEB_SUMMARY_DISTRIBUTED:
        text_distributed(b, s, u);
        break;
    case WEB_SUMMARY_OPERATOR:
        text_rows(b, s, s->ops, s->n_ops, false,
                  &(struct ttable){"Operator Summary", 52, true, thread, true}, u);
        break;
    case WEB_SUMMARY_KERNEL:
        kernel_rows_short(s->kernels, s->n_kernels);
        text_rows(b, s, s->kernels, s->n_kernels, true,
                  &(struct ttable){"Kernel Summary", 90, false, NULL, true}, u);
        break;
    case WEB_SUMMARY_MEMORY:
        text_memory(b, d->mem);
        break;
    case WEB_SUMMARY_MEMORY_MANIPULATION:
        text_rows(b, s, s->memory, s->n_memory, false,
                  &(struct ttable){"Memory Manipulation Summary", 0, false, NULL, true}, u);
        break;
    default:
        text_rows(b, s, s->user, s->n_user, false,
                  &(struct ttable){"UserDefined Summary", 0, false, thread, false}, u);
        break;
    }
}

void web__render_summary(struct sbuf *b, const struct web_summary_doc *d, enum web_format fmt)
{
    if (fmt == WEB_FORMAT_TEXT)
        render_text(b, d);
    else if (fmt == WEB_FORMAT_CSV)
        rows_of(b, d, true);
    else if (fmt == WEB_FORMAT_RECORDS) {
        sbuf_addc(b, '[');
        rows_of(b, d, false);
        sbuf_addc(b, ']');
    } else
        render_json(b, d);
}

/* ---- benchmark ---- */

/* Python's str.center(width): the odd blank goes left when width is odd (CPython's pad()). */
static void center(struct sbuf *b, const char *s, size_t width, char fill)
{
    size_t l = strlen(s);
    size_t marg = width > l ? width - l : 0;
    size_t left = marg / 2 + (marg & width & 1);
    for (size_t i = 0; i < left; i++)
        sbuf_addc(b, fill);
    sbuf_adds(b, s);
    for (size_t i = left; i < marg; i++)
        sbuf_addc(b, fill);
}

static void bench_line(struct sbuf *b, const char *item, const struct analyse_bench_stat *st)
{
    char v[3][48];
    snprintf(v[0], sizeof v[0], "%.5f", st->avg);
    snprintf(v[1], sizeof v[1], "%.5f", st->max);
    snprintf(v[2], sizeof v[2], "%.5f", st->min);
    sbuf_adds(b, "| ");
    center(b, item, 15, ' ');
    for (int i = 0; i < 3; i++) {
        sbuf_adds(b, " | ");
        center(b, v[i], 15, ' ');
    }
    sbuf_adds(b, " |\n");
}

static void bench_member(struct sbuf *b, const char *name, const struct analyse_bench_stat *st,
                         bool csv, bool first)
{
    if (csv)
        sbuf_printf(b, "%s,%.12g,%.12g,%.12g\n", name, st->avg, st->max, st->min);
    else
        sbuf_printf(b, "%s{\"name\":\"%s\",\"avg\":%.12g,\"max\":%.12g,\"min\":%.12g}",
                    first ? "" : ",", name, st->avg, st->max, st->min);
}

void web__render_benchmark(struct sbuf *b, const struct web_bench_doc *d, enum web_format fmt)
{
    const struct analyse_benchmark *k = &d->bench;
    const char *unit = k->samples_mode ? "samples/s" : "steps/s";
    if (fmt == WEB_FORMAT_TEXT) {
        if (k->n_counted == 0) {
            sbuf_printf(b, "No Perf Summary: %zu steps, %zu of them warm-up\n", k->n_steps,
                        k->n_skipped);
            return;
        }
        center(b, "Perf Summary", 100, '=');
        sbuf_addc(b, '\n');
        if (k->reader_ratio_pct != 0)
            sbuf_printf(b, "Reader Ratio: %.3f%%\n", k->reader_ratio_pct);
        sbuf_printf(b, "Time Unit: s, IPS Unit: %s\n", unit);
        sbuf_adds(b, "| ");
        center(b, "", 15, ' ');
        const char *heads[3] = {"avg", "max", "min"};
        for (int i = 0; i < 3; i++) {
            sbuf_adds(b, " | ");
            center(b, heads[i], 15, ' ');
        }
        sbuf_adds(b, " |\n");
        if (k->has_reader && k->reader_cost.avg != 0)
            bench_line(b, "reader_cost", &k->reader_cost);
        bench_line(b, "batch_cost", &k->batch_cost);
        bench_line(b, "ips", &k->ips);
        return;
    }
    bool csv = fmt == WEB_FORMAT_CSV;
    if (csv) {
        sbuf_adds(b, "name,avg,max,min\n");
    } else if (fmt == WEB_FORMAT_RECORDS) {
        sbuf_addc(b, '[');
    } else {
        sbuf_printf(b, "{\"rank\":%" PRId64 ",\"source\":\"%s\",\"n_steps\":%zu,\"skipped\":%zu,"
                       "\"counted\":%zu,\"ips_unit\":\"%s\",\"time_unit\":\"s\","
                       "\"reader_ratio_pct\":%.12g,\"rows\":[",
                    d->rank, d->source, k->n_steps, k->n_skipped, k->n_counted, unit,
                    k->reader_ratio_pct);
    }
    bool first = true;
    if (k->n_counted > 0 && k->has_reader) {
        bench_member(b, "reader_cost", &k->reader_cost, csv, first);
        first = false;
    }
    if (k->n_counted > 0) {
        bench_member(b, "batch_cost", &k->batch_cost, csv, first);
        bench_member(b, "ips", &k->ips, csv, false);
    }
    if (fmt == WEB_FORMAT_RECORDS)
        sbuf_addc(b, ']');
    else if (!csv)
        sbuf_adds(b, "]}");
}

/* ---- /memory ---- */

static const char *mv_source(enum analyse_mv_source s)
{
    return s == ANALYSE_MV_ALLOCATOR ? "allocator" : "trace";
}

static void mv_series_json(struct sbuf *b, const struct analyse_memview *m,
                           const struct analyse_mv_series *s, bool curve)
{
    sbuf_adds(b, "{\"device\":");
    sbuf_json_str(b, s->device, s->device_len);
    sbuf_printf(b, ",\"source\":\"%s\",\"points\":%zu,\"kept\":%zu", mv_source(s->source),
                s->n_points, s->n_kept);
    if (s->n_points == 0) {
        sbuf_adds(b, ",\"peak_allocated\":null,\"peak_ts_ns\":null,\"peak_step\":null,"
                     "\"peak_reserved\":null,\"first_ts_ns\":null,\"last_ts_ns\":null");
    } else {
        sbuf_printf(b, ",\"peak_allocated\":%" PRId64 ",\"peak_ts_ns\":%" PRId64,
                    s->peak_allocated, s->peak_ts_ns);
        if (s->peak_step >= 0)
            sbuf_printf(b, ",\"peak_step\":%" PRId64, s->peak_step);
        else
            sbuf_adds(b, ",\"peak_step\":null");
        if (s->peak_reserved >= 0)
            sbuf_printf(b, ",\"peak_reserved\":%" PRId64, s->peak_reserved);
        else
            sbuf_adds(b, ",\"peak_reserved\":null");
        sbuf_printf(b, ",\"first_ts_ns\":%" PRId64 ",\"last_ts_ns\":%" PRId64, s->first_ts_ns,
                    s->last_ts_ns);
    }
    if (curve) {
        sbuf_adds(b, ",\"curve\":[");
        for (size_t i = 0; i < s->n_kept; i++) {
            const struct analyse_mv_point *p = &m->points[s->first_kept + i];
            sbuf_printf(b, "%s[%" PRId64 ",%" PRId64 ",", i ? "," : "", p->ts_ns, p->allocated);
            if (p->reserved >= 0)
                sbuf_printf(b, "%" PRId64 "]", p->reserved);
            else
                sbuf_adds(b, "null]");
        }
        sbuf_addc(b, ']');
    }
    sbuf_addc(b, '}');
}

static void mv_row(struct sbuf *b, const struct analyse_mv_row *r, bool csv)
{
    if (csv) {
        web__csv_name(b, r->device, r->device_len);
        sbuf_addc(b, ',');
        web__csv_name(b, r->name, r->name_len);
        sbuf_printf(b, ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                       ",%" PRId64 "\n",
                    r->calls, r->increase, r->self_increase, r->alloc_count, r->self_alloc_count,
                    r->alloc_size, r->self_alloc_size);
        return;
    }
    sbuf_adds(b, "{\"device\":");
    sbuf_json_str(b, r->device, r->device_len);
    sbuf_adds(b, ",\"name\":");
    sbuf_json_str(b, r->name, r->name_len);
    sbuf_printf(b, ",\"calls\":%" PRId64 ",\"size_increase\":%" PRId64
                   ",\"self_size_increase\":%" PRId64 ",\"allocation_count\":%" PRId64
                   ",\"self_allocation_count\":%" PRId64 ",\"allocation_size\":%" PRId64
                   ",\"self_allocation_size\":%" PRId64 "}",
                r->calls, r->increase, r->self_increase, r->alloc_count, r->self_alloc_count,
                r->alloc_size, r->self_alloc_size);
}

void web__render_memory(struct sbuf *b, const struct web_memory_doc *d, enum web_format fmt)
{
    const struct analyse_memview *m = d->mv;
    if (fmt == WEB_FORMAT_CSV || fmt == WEB_FORMAT_RECORDS) {
        bool csv = fmt == WEB_FORMAT_CSV;
        if (!csv)
            sbuf_addc(b, '[');
        bool first = true;
        if (d->table == WEB_MEMORY_OPERATORS) {
            if (csv)
                sbuf_adds(b, "device,name,calls,size_increase,self_size_increase,"
                             "allocation_count,self_allocation_count,allocation_size,"
                             "self_allocation_size\n");
            for (size_t i = 0; i < m->n_rows; i++, first = false) {
                if (!csv && !first)
                    sbuf_addc(b, ',');
                mv_row(b, &m->rows[i], csv);
            }
        } else if (d->table == WEB_MEMORY_DEVICES) {
            if (csv)
                sbuf_adds(b, "device,source,points,kept,peak_allocated,peak_ts_ns,peak_step,"
                             "peak_reserved,first_ts_ns,last_ts_ns\n");
            for (size_t i = 0; i < m->n_series; i++, first = false) {
                const struct analyse_mv_series *s = &m->series[i];
                if (!csv) {
                    if (!first)
                        sbuf_addc(b, ',');
                    mv_series_json(b, m, s, false);
                    continue;
                }
                web__csv_name(b, s->device, s->device_len);
                sbuf_printf(b, ",%s,%zu,%zu,", mv_source(s->source), s->n_points, s->n_kept);
                if (s->n_points > 0) {
                    sbuf_printf(b, "%" PRId64 ",%" PRId64 ",", s->peak_allocated, s->peak_ts_ns);
                    if (s->peak_step >= 0)
                        sbuf_printf(b, "%" PRId64, s->peak_step);
                    sbuf_addc(b, ',');
                    if (s->peak_reserved >= 0)
                        sbuf_printf(b, "%" PRId64, s->peak_reserved);
                    sbuf_printf(b, ",%" PRId64 ",%" PRId64 "\n", s->first_ts_ns, s->last_ts_ns);
                } else {
                    sbuf_adds(b, ",,,,,\n");
                }
            }
        } else {
            if (csv)
                sbuf_adds(b, "device,source,ts_ns,allocated,reserved\n");
            for (size_t i = 0; i < m->n_series; i++) {
                const struct analyse_mv_series *s = &m->series[i];
                for (size_t k = 0; k < s->n_kept; k++, first = false) {
                    const struct analyse_mv_point *p = &m->points[s->first_kept + k];
                    if (csv) {
                        web__csv_name(b, s->device, s->device_len);
                        sbuf_printf(b, ",%s,%" PRId64 ",%" PRId64 ",", mv_source(s->source),
                                    p->ts_ns, p->allocated);
                        if (p->reserved >= 0)
                            sbuf_printf(b, "%" PRId64, p->reserved);
                        sbuf_addc(b, '\n');
                        continue;
                    }
                    if (!first)
                        sbuf_addc(b, ',');
                    sbuf_adds(b, "{\"device\":");
                    sbuf_json_str(b, s->device, s->device_len);
                    sbuf_printf(b, ",\"source\":\"%s\",\"ts_ns\":%" PRId64 ",\"allocated\":%" PRId64,
                                mv_source(s->source), p->ts_ns, p->allocated);
                    if (p->reserved >= 0)
                        sbuf_printf(b, ",\"reserved\":%" PRId64 "}", p->reserved);
                    else
                        sbuf_adds(b, ",\"reserved\":null}");
                }
            }
        }
        if (!csv)
            sbuf_addc(b, ']');
        return;
    }
    sbuf_printf(b, "{\"rank\":%" PRId64 ",\"device\":", d->rank);
    if (d->device && d->device[0])
        sbuf_json_strz(b, d->device);
    else
        sbuf_adds(b, "null");
    sbuf_printf(b, ",\"units\":{\"time\":\"ns\",\"bytes\":\"B\"},\"max_points\":%zu,"
                   "\"events\":%zu,\"attributed\":%zu,\"unattributed\":%zu,\"spans_read\":%zu,"
                   "\"spans_cut\":%" PRId64 ",\"lines_bad\":%" PRId64 ",\"devices\":[",
                d->max_points, m->n_events, m->n_attributed, m->n_unattributed, d->n_read,
                d->spans_cut, d->lines_bad);
    for (size_t i = 0; i < m->n_series; i++) {
        if (i)
            sbuf_addc(b, ',');
        mv_series_json(b, m, &m->series[i], true);
    }
    sbuf_adds(b, "],\"operators\":[");
    for (size_t i = 0; i < m->n_rows; i++) {
        if (i)
            sbuf_addc(b, ',');
        mv_row(b, &m->rows[i], false);
    }
    sbuf_adds(b, "]}");
}

/* ---- tb-profiler's operator view ---- */

const char *const web__opview_group_names[4] = {"name", "input_shape", "stack",
                                                 "input_shape_stack"};

/* A CSV cell of text[0, n) of any length (csv_name() cuts at 1 KiB; a call stack is longer). */
static void csv_text(struct sbuf *b, const char *s, size_t n)
{
    char *tmp = malloc(n + 1);
    if (!tmp) {
        sbuf_adds(b, "\"\"");
        return;
    }
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    web__csv_str(b, tmp);
    free(tmp);
}

static bool opv_match(const struct web_opview_doc *d, const struct analyse_opv_row *r)
{
    if (d->name && (strlen(d->name) != r->name_len || memcmp(d->name, r->name, r->name_len) != 0))
        return false;
    return !d->shape ||
           (strlen(d->shape) == r->shape_len && memcmp(d->shape, r->shape, r->shape_len) == 0);
}

static void opv_row(struct sbuf *b, const struct web_opview_doc *d, const struct analyse_opv_row *r,
                    bool csv, bool first)
{
    bool shape = d->group == ANALYSE_OPV_BY_SHAPE || d->group == ANALYSE_OPV_BY_SHAPE_STACK;
    bool stack = d->group == ANALYSE_OPV_BY_STACK || d->group == ANALYSE_OPV_BY_SHAPE_STACK;
    if (csv) {
        csv_text(b, r->name, r->name_len);
        if (shape) {
            sbuf_addc(b, ',');
            csv_text(b, r->shape, r->shape_len);
        }
        if (stack) {
            sbuf_addc(b, ',');
            csv_text(b, r->stack, r->stack_len);
        }
        sbuf_printf(b, ",%" PRId64 ",", r->calls);
    } else {
        sbuf_adds(b, first ? "{\"name\":" : ",{\"name\":");
        sbuf_json_str(b, r->name, r->name_len);
        if (shape) {
            sbuf_adds(b, ",\"input_shape\":");
            sbuf_json_str(b, r->shape, r->shape_len);
        }
        if (stack) {
            sbuf_adds(b, ",\"call_stack\":");
            sbuf_json_str(b, r->stack, r->stack_len);
        }
        sbuf_printf(b, ",\"calls\":%" PRId64 ",\"device_self_us\":", r->calls);
    }
    sbuf_json_us(b, r->device_self_ns);
    sbuf_adds(b, csv ? "," : ",\"device_total_us\":");
    sbuf_json_us(b, r->device_total_ns);
    sbuf_adds(b, csv ? "," : ",\"host_self_us\":");
    sbuf_json_us(b, r->host_self_ns);
    sbuf_adds(b, csv ? "," : ",\"host_total_us\":");
    sbuf_json_us(b, r->host_total_ns);
    if (!stack)
        sbuf_adds(b, csv ? (r->has_stack ? ",1" : ",0")
                         : (r->has_stack ? ",\"has_call_stack\":true" : ",\"has_call_stack\":false"));
    sbuf_adds(b, csv ? "\n" : "}");
}

void web__render_opview(struct sbuf *b, const struct web_opview_doc *d, enum web_format fmt)
{
    const struct analyse_opview *v = d->v;
    bool csv = fmt == WEB_FORMAT_CSV;
    bool shape = d->group == ANALYSE_OPV_BY_SHAPE || d->group == ANALYSE_OPV_BY_SHAPE_STACK;
    bool stack = d->group == ANALYSE_OPV_BY_STACK || d->group == ANALYSE_OPV_BY_SHAPE_STACK;
    size_t total = 0;
    for (size_t i = 0; i < v->n_rows; i++)
        total += opv_match(d, &v->rows[i]);
    if (csv)
        sbuf_printf(b, "name%s%s,calls,device_self_us,device_total_us,host_self_us,"
                       "host_total_us%s\n",
                    shape ? ",input_shape" : "", stack ? ",call_stack" : "",
                    stack ? "" : ",has_call_stack");
    else if (fmt == WEB_FORMAT_RECORDS)
        sbuf_addc(b, '[');
    else {
        sbuf_printf(b, "{\"rank\":%" PRId64 ",\"group_by\":\"%s\",\"device\":%s,\"calls\":%zu,"
                       "\"device_events\":%zu,\"device_events_linked\":%zu,\"spans_dropped\":%zu,"
                       "\"spans_read\":%zu,\"spans_cut\":%" PRId64 ",\"lines_bad\":%" PRId64
                       ",\"max_spans\":%zu,\"total\":%zu,\"rows\":[",
                    d->rank, web__opview_group_names[d->group], v->device ? "true" : "false",
                    v->n_calls, v->n_device, v->n_device_linked, v->n_dropped, d->n_read,
                    d->spans_cut, d->lines_bad, d->max_spans, total);
    }
    size_t seen = 0, shown = 0;
    for (size_t i = 0; i < v->n_rows; i++) {
        const struct analyse_opv_row *r = &v->rows[i];
        if (!opv_match(d, r))
            continue;
        if (seen++ < (size_t)d->offset)
            continue;
        if (d->limit > 0 && shown >= (size_t)d->limit)
            break;
        opv_row(b, d, r, csv, shown++ == 0);
    }
    if (fmt == WEB_FORMAT_RECORDS)
        sbuf_addc(b, ']');
    else if (!csv)
        sbuf_adds(b, "]}");
}
