/* SPDX-License-Identifier: MIT */
/*
 * analyse_aicpu.h: MindSpore's AI CPU tables (aicpu.c), MindInsight's AicpuDetailAnalyser and
 * AicpuTypeAnalyser.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_AICPU_H
#define STEPSCOPE_ANALYSE_AICPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One AI CPU task: a span the MindSpore importer sends per row of aicpu_intermediate_<r>.csv (or
 * output_data_preprocess_aicpu_<r>.txt): name = the op's name ("GetNext-op6"), total = its
 * total_time (the span's dur), dispatch and exec = args.dispatch_time_us and
 * args.execution_time_us. name is borrowed. */
struct analyse_aicpu_task {
    const char *name;
    size_t name_len;
    int64_t total_ns;
    int64_t dispatch_ns;
    int64_t exec_ns;     /* -1 when the span has none (then the op's exec mean is of those that do) */
};

/* MindInsight's AICPU detail table (AicpuDetailAnalyser), one row per op name. */
struct analyse_aicpu_op {
    const char *name;    /* NUL-terminated, owned by the table */
    size_t type_len;     /* its kernel_type: name up to the first '-' (MindInsight's split('-')[0]) */
    int64_t calls;       /* execution_frequency */
    int64_t total_ns;    /* sum of total_time */
    int64_t dispatch_ns; /* sum of dispatch_time */
    int64_t exec_ns;     /* sum of execution_time over the exec_calls tasks that have one */
    int64_t exec_calls;
};

/* MindInsight's AICPU type table (AicpuTypeAnalyser), one row per kernel_type. */
struct analyse_aicpu_type {
    const char *type;    /* not NUL-terminated: type_len bytes of an op's name */
    size_t type_len;
    int64_t calls;       /* execution_frequency */
    int64_t total_ns;    /* total_time */
    double percent;      /* total_ns / the table's total * 100 */
};

struct analyse_aicpu {
    size_t n_ops;
    struct analyse_aicpu_op *ops;     /* by mean total_time desc, then name (MindInsight's
                                         detail order, avg_execution_time desc) */
    size_t n_types;
    struct analyse_aicpu_type *types; /* by total desc, then type (MindInsight's type order) */
    int64_t tasks;
    int64_t total_ns;                 /* sum of every task's total_time */
    char *names;                      /* owned text of the ops' names */
};

/* Groups tasks[0, n) by name and by type. O(n log n). Returns 0 and sets *ret (free with
 * analyse_aicpu_free()), -ENOMEM, or -EINVAL on NULL arguments. Pure. */
int analyse_aicpu_compute(const struct analyse_aicpu_task *tasks, size_t n,
                          struct analyse_aicpu **ret);

void analyse_aicpu_free(struct analyse_aicpu *a); /* NULL-safe */

#endif
