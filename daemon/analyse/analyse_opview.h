/* SPDX-License-Identifier: MIT */
/*
 * analyse_opview.h: torch-tb-profiler's operator view (opview.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_OPVIEW_H
#define STEPSCOPE_ANALYSE_OPVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

/* --- Operator view (opview.c) ----------------------------------------------------------------
 * torch-tb-profiler's operator view (profiler/event_parser.py, op_tree.py, node.py, op_agg.py;
 * docs/ANALYSIS.md, "tb-profiler's operator view"): per thread (tid), the host events are nested
 * by containment into a tree; a runtime call belongs to the first operator (in the events'
 * order) with its External id, a device event (kernel, memcpy, memset) to the runtime call with
 * its correlation id. An operator's host self time is its duration less its children's and its
 * runtime calls'; its device self time is the duration of the device events its runtime calls
 * launched, its device total that plus its children's device totals. Operators are the tree's
 * nodes of Kineto cat cpu_op / Operator, aggregated by name, by name and input shape (args
 * "Input Dims"), and by call stack (args "Call stack"). */

/* The plugin's event types (its EventTypes), from a span's cat (analyse_opv_type_of()). */
enum analyse_opv_type {
    ANALYSE_OPV_NONE,      /* not an event to the plugin */
    ANALYSE_OPV_OPERATOR,  /* cat cpu_op / Operator (the tree's operators) */
    ANALYSE_OPV_STEP,      /* ProfilerStep#N (cat cpu_op or user_annotation) */
    ANALYSE_OPV_PYTHON,    /* cat python: a node of the tree, never an operator */
    ANALYSE_OPV_MODULE,    /* cat python_function with args "Python module id": likewise */
    ANALYSE_OPV_ANNOTATION, /* user_annotation named a collective (nccl:/gloo:): likewise */
    ANALYSE_OPV_RUNTIME,   /* cat cuda_runtime, Runtime, and the other runtimes */
    ANALYSE_OPV_DEVICE,    /* cat kernel, gpu_memcpy, gpu_memset (and the 2021 names) */
};

/* The type of span (its cat and name) to the plugin: kineto main-branch tb_plugin's category map
 * (0.4.3's, plus the current runtime categories); module: the span has args "Python module id".
 * Pure. */
enum analyse_opv_type analyse_opv_type_of(const struct analyse_span *span, bool module);

/* One event in the order of the trace (the order decides which operator a runtime call and
 * which runtime call a device event belongs to, as in the plugin). span's ts, dur, name, tid,
 * correlation and external_id are read; texts are borrowed. */
struct analyse_opv_event {
    const struct analyse_span *span;
    enum analyse_opv_type type;
    bool kernel;           /* DEVICE: a kernel (not a memcpy or memset) */
    const char *shape;     /* OPERATOR: args "Input Dims" as compact JSON text; NULL or len 0:
                              none (the plugin's []) */
    size_t shape_len;
    const char *stack;     /* OPERATOR: args "Call stack"; len 0: none */
    size_t stack_len;
};

enum analyse_opv_group {
    ANALYSE_OPV_BY_NAME,
    ANALYSE_OPV_BY_SHAPE,        /* name and input shape */
    ANALYSE_OPV_BY_STACK,        /* name and call stack: operators with a stack only */
    ANALYSE_OPV_BY_SHAPE_STACK,  /* name, input shape and call stack: likewise */
};

struct analyse_opv_row {
    const char *name, *shape, *stack; /* borrowed from the events; shape "[]" when none */
    size_t name_len, shape_len, stack_len;
    int64_t calls;
    int64_t host_total_ns, host_self_ns, device_total_ns, device_self_ns;
    bool has_stack;        /* some call of the group has a call stack (the plugin's
                              has_call_stack: the drill-down has rows) */
};

struct analyse_opview {
    bool device;           /* a device event was seen (the plugin's show_gpu) */
    size_t n_calls;        /* operator calls counted */
    size_t n_dropped;      /* host events that cross an earlier one's end on their thread (the
                              plugin logs and leaves them out of the tree) */
    size_t n_device;       /* device events */
    size_t n_device_linked; /* those whose runtime call belongs to an operator */
    size_t n_rows;         /* by self device time (device) or self host time, descending; ties
                              by name, shape, stack */
    struct analyse_opv_row *rows;
};

/* The operator view of ev[0..n) grouped by group. Returns 0 and sets *ret (free with
 * analyse_opview_free()), -EINVAL on NULL arguments, -ENOMEM, -ECANCELED once *stop reads true
 * (read between steps; stop NULL: never). Pure. */
int analyse_opview_compute(const struct analyse_opv_event *ev, size_t n,
                           enum analyse_opv_group group, const _Atomic bool *stop,
                           struct analyse_opview **ret);

/* What analyse_opview_compute() of n events holds at its largest beyond the events, in bytes:
 * an estimate for the HTTP analyses' memory budget. Pure. */
size_t analyse_opview_bytes(size_t n);

void analyse_opview_free(struct analyse_opview *v);

#endif
