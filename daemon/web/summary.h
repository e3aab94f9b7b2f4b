/* SPDX-License-Identifier: MIT */
/*
 * summary: /api/v1/jobs/{job}/summary/{kind}, /benchmark and /operator-view, their documents (render_summary.c,
 * no libmicrohttpd) and their analyses, each run on a thread of its own (routes_summary.c).
 */
#ifndef STEPSCOPE_WEB_SUMMARY_H
#define STEPSCOPE_WEB_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../analyse/analyse_aicpu.h"
#include "../analyse/analyse_benchmark.h"
#include "../analyse/analyse_memsum.h"
#include "../analyse/analyse_memview.h"
#include "../analyse/analyse_opview.h"
#include "../analyse/analyse_summary.h"
#include "../analyse/analyse_tree.h"
#include "../analyse/analyse_tbprof.h"
#include "render.h"

#define WEB_SUMMARY_SPANS_DEFAULT 1000000 /* spans read from the store per answer, unless
                                             ?max_spans= says; the rest are counted as cut */
#define WEB_SUMMARY_SPANS_MAX 4000000     /* largest ?max_spans= accepted */

enum web_summary_kind {
    WEB_SUMMARY_OVERVIEW,
    WEB_SUMMARY_MODEL,
    WEB_SUMMARY_DISTRIBUTED,
    WEB_SUMMARY_OPERATOR,
    WEB_SUMMARY_KERNEL,
    WEB_SUMMARY_MEMORY_MANIPULATION,
    WEB_SUMMARY_USER_DEFINED,
    WEB_SUMMARY_DEVICE,
    WEB_SUMMARY_AICPU,   /* MindInsight's AI CPU tables (analyse_aicpu.h), not Paddle's */
    WEB_SUMMARY_MEMORY,  /* Paddle's Memory Summary (analyse_memsum.h) */
    WEB_SUMMARY_KIND_COUNT,
};

/* "overview", "model", "distributed", "operator", "kernel", "memory-manipulation",
 * "user-defined", "device", "aicpu", "memory". */
extern const char *const web__summary_kind_names[WEB_SUMMARY_KIND_COUNT];

/* Returns 0 and sets *ret, or -1 for an unknown kind. */
int web__summary_kind_parse(const char *s, enum web_summary_kind *ret);

/* One summary answer. */
struct web_summary_doc {
    enum web_summary_kind kind;
    int64_t rank;
    struct analyse_summary *sum;   /* every kind but aicpu */
    struct analyse_aicpu *aicpu;   /* aicpu */
    struct analyse_memsum *mem;    /* memory */
    size_t n_read;         /* X spans read from the store */
    int64_t spans_cut;     /* X spans past max_spans, counted and not read */
    int64_t lines_bad;     /* stored lines the decoder refused */
    size_t max_spans;
    double cpu_pct;        /* device: process CPU (percent of one core); NaN = none */
    double sys_cpu_pct;    /* device: system CPU percent; NaN = none */
    const char *cpu_source; /* device: "paddle" (the windows' ExtraInfo), "host" (the means of
                               the host records) or NULL (neither) */
    int64_t n_windows;     /* device: ExtraInfo records of the windows in range */
    int64_t n_host_samples;
    const char *time_unit; /* text: "s", "ms", "us" or "ns" */
};

void web__render_summary(struct sbuf *b, const struct web_summary_doc *d, enum web_format fmt);

struct web_bench_doc {
    int64_t rank;
    const char *source;    /* "records" (step records) or "spans" (ProfileStep spans) */
    struct analyse_benchmark bench;
};

void web__render_benchmark(struct sbuf *b, const struct web_bench_doc *d, enum web_format fmt);

/* /memory (render_memory.c): the memory view. */
#define WEB_MEMORY_POINTS_DEFAULT 2000 /* curve points per series unless ?points= says */
#define WEB_MEMORY_POINTS_MAX 100000

/* The table format=csv|records gives. */
enum web_memory_table {
    WEB_MEMORY_OPERATORS,
    WEB_MEMORY_CURVE,
    WEB_MEMORY_DEVICES,
};

struct web_memory_doc {
    int64_t rank;
    struct analyse_memview *mv;
    size_t max_points;
    enum web_memory_table table;
    const char *device;    /* ?device= ("" all) */
    size_t n_read;         /* X spans read */
    int64_t spans_cut;     /* spans and memory events past max_spans */
    int64_t lines_bad;
};

void web__render_memory(struct sbuf *b, const struct web_memory_doc *d, enum web_format fmt);
/* A CSV cell of the text s[0, n) (its first 1023 bytes). */
void web__csv_name(struct sbuf *b, const char *s, size_t n);

/* /tree?kind=: which hierarchy (render_tree.c). */
enum web_tree_kind {
    WEB_TREE_OPERATOR, /* Paddle's operator tree (analyse_tree_operators()) */
    WEB_TREE_MODULE,   /* torch-tb-profiler's module view (analyse_tree_modules()) */
    WEB_TREE_KIND_COUNT,
};

/* "operator", "module". */
extern const char *const web__tree_kind_names[WEB_TREE_KIND_COUNT];

/* Returns 0 and sets *ret, or -1 for an unknown kind. */
int web__tree_kind_parse(const char *s, enum web_tree_kind *ret);

/* One /tree answer. */
struct web_tree_doc {
    enum web_tree_kind kind;
    int64_t rank;
    struct analyse_tree *tree;
    size_t n_read;
    int64_t spans_cut;
    int64_t lines_bad;
    size_t max_spans;
};

/* JSON: the nodes nested (each with its "children"); CSV and records: one row per node in
 * pre-order with its parent's id and its depth. */
void web__render_tree(struct sbuf *b, const struct web_tree_doc *d, enum web_format fmt);
/* "name", "input_shape", "stack", "input_shape_stack", by enum analyse_opv_group. */
extern const char *const web__opview_group_names[4];

/* One /operator-view answer: the rows of v that match the filters (name, shape: NULL for
 * none), paged (limit 0: every row). */
struct web_opview_doc {
    int64_t rank;
    enum analyse_opv_group group;
    const struct analyse_opview *v;
    const char *name, *shape;
    int64_t offset, limit;
    size_t n_read;
    int64_t spans_cut, lines_bad;
    size_t max_spans;
};

void web__render_opview(struct sbuf *b, const struct web_opview_doc *d, enum web_format fmt);

/* /api/v1/diff with step ranges (routes_diff.c reads the request, routes_summary.c runs it): per
 * side (0 base, 1 exp) the job, the rank asked (-1: every rank), the ranks whose stored spans
 * its tables are made of, and its steps [first, last]. */
struct web_diff_steps {
    struct store_job job[2];
    int64_t rank[2];
    int64_t *ranks[2]; /* malloc'd, [n_ranks] */
    size_t n_ranks[2];
    int64_t first[2], last[2];
    int64_t events;    /* the most stored events of one rank read: the reservation's spans */
    size_t max_spans;  /* spans read per rank at most */
    enum web_format fmt;
};

/* /kernels/details: torch-tb-profiler's kernel view of one rank (render_tbprof.c). */
struct web_tbk_doc {
    int64_t rank;
    enum analyse_tbk_group group;
    const struct analyse_tbk *t;
    size_t n_read;
    int64_t spans_cut;
    int64_t lines_bad;
};

void web__render_tbk(struct sbuf *b, const struct web_tbk_doc *d, enum web_format fmt);

/* /comm-ops: its communication-operator table, every rank's rows (or rank's, rank >= 0). */
struct web_tbc_doc {
    enum analyse_tbc_link link;
    int64_t rank;
    const int64_t *ranks;  /* the ranks read */
    size_t n_ranks;
    const struct analyse_tbc *t;
    size_t n_read;
    int64_t spans_cut;
    int64_t lines_bad;
};

void web__render_tbc(struct sbuf *b, const struct web_tbc_doc *d, enum web_format fmt);

#endif
