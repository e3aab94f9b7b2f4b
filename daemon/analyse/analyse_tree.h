/* SPDX-License-Identifier: MIT */
/*
 * analyse_tree.h: hierarchies of classified spans (tree.c): Paddle's operator tree
 * (operator -> its inner calls -> the device events they launched) and torch-tb-profiler's module
 * view (nn.Module -> the modules it called).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md ("Hierarchies").
 */
#ifndef STEPSCOPE_ANALYSE_TREE_H
#define STEPSCOPE_ANALYSE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"
#include "analyse_summary.h" /* event types, the step window */

/* What a node groups. */
enum analyse_tree_kind {
    ANALYSE_TREE_OPERATOR, /* Operator host spans of one name */
    ANALYSE_TREE_INNER,    /* an operator's direct children of another type (not runtime) */
    ANALYSE_TREE_DEVICE,   /* device events (kernel, memcpy, memset) launched from its parent */
    ANALYSE_TREE_MODULE,   /* nn.Module calls of one name under one parent module */
    ANALYSE_TREE_KIND_COUNT,
};

/* "operator", "inner", "device", "module". */
extern const char *const analyse_tree_kind_names[ANALYSE_TREE_KIND_COUNT];

#define ANALYSE_TREE_ROOT SIZE_MAX /* the parent of a top-level node */

/* One node: the spans of one name under one parent node. */
struct analyse_tree_node {
    const char *name;        /* borrowed from a span, not NUL-terminated */
    size_t name_len;
    uint64_t id;             /* a hash of the kinds and names on the path from the top: the
                                same node has the same id in any answer */
    size_t parent;           /* index of the parent node; ANALYSE_TREE_ROOT at the top */
    unsigned depth;          /* 0 at the top */
    enum analyse_tree_kind kind;
    int64_t calls;
    int64_t operators;       /* module nodes: operator spans directly under its calls */
    /* host time (0 on device nodes): the spans' durations; self = total minus the durations of
     * their direct children (every host span nested in them, runtime calls too) */
    int64_t total_ns, self_ns, min_ns, max_ns;
    /* device time: of a host node, the device events launched from the span or any span nested
     * in it (Paddle's general GPU time), self: those launched by its own runtime children; min
     * and max per call. Of a device node, the events' durations. */
    int64_t device_ns, self_device_ns, device_min_ns, device_max_ns;
    double ratio;            /* total / the parent's total; top level: of all operators' total */
    double device_ratio;     /* device / the parent's device; top level: of all operators' */
};

/* Read-only outside tree.c. */
struct analyse_tree {
    struct analyse_sum_window window;
    size_t n_spans;          /* spans in the window */
    size_t n_steps;          /* ProfileStep spans among them */
    size_t n_device;         /* device events in the window */
    size_t n_linked;         /* of those, linked to a launching host span by correlation */
    size_t n_module_spans;   /* analyse_tree_modules(): nn.Module spans in the window */
    size_t n;                /* nodes, in pre-order: each followed by its subtree */
    struct analyse_tree_node *nodes;
};

/* Paddle's operator summary as a tree (profiler_statistic.py EventSummary, its op_detail rows):
 * top-level nodes are the Operator spans (nested ones too) by name, by total descending; under
 * each, its inner nodes (direct children neither Operator nor CudaRuntime, by name, in
 * first-appearance order) each followed by the device events launched from it, then the device
 * events launched from the operator itself. A device event is launched from the parent of the
 * host span with its correlation (the runtime call: args.correlation on both). Host spans nest
 * per (pid, tid) as analyse_summary_compute() nests them. Steps and window as there.
 * Returns 0 and sets *ret (free with analyse_tree_free()), -EINVAL, -ENOENT (no step in
 * range), -ENOMEM, or -ECANCELED once *stop reads true (read every 65 536 spans; NULL: never).
 * Pure. */
int analyse_tree_operators(const struct analyse_span *spans, size_t n, int64_t first_step,
                           int64_t last_step, const _Atomic bool *stop,
                           struct analyse_tree **ret);

/* torch-tb-profiler 0.4.3's module view (module_op.py, aggegate_module_view()) of Kineto spans
 * recorded with_modules=True: the python_function spans named "nn.Module: NAME" nest in
 * tb-profiler's operator tree per thread (cpu_op, operator and python spans, ProfilerStep#
 * ranges and the module spans; a span goes under the last open one it starts before the end of
 * and ends within, and is left out when it ends past it). A module node groups the calls of one
 * NAME ("nn.Module: " left out) under one parent module node: calls (occurrences), operators
 * (direct cpu_op children that are operators to tb-profiler), host and self host time (less its
 * direct children's), device time (the device events, by correlation, of the runtime calls
 * directly under the operators beneath it) and self device time (that of its direct operator
 * children). Top-level modules by name, children by first call. n_device and n_linked count
 * device events and those linked to a runtime call; module_spans counts module spans. Returns as
 * analyse_tree_operators(). Pure. */
int analyse_tree_modules(const struct analyse_span *spans, size_t n, int64_t first_step,
                         int64_t last_step, const _Atomic bool *stop, struct analyse_tree **ret);

/* What analyse_tree_operators() of n spans may hold at its largest, beyond the spans, in
 * bytes: an estimate for the HTTP analyses' memory budget (docs/RELIABILITY.md). Pure. */
size_t analyse_tree_bytes(size_t n);

/* Frees a tree; NULL is accepted. */
void analyse_tree_free(struct analyse_tree *t);

#endif
