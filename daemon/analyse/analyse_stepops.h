/* SPDX-License-Identifier: MIT */
/*
 * analyse_stepops.h: the operator and kernel figures of a range of steps (stepops.c), what
 * /api/v1/diff?base_steps=A-B compares: HTA's trace diff over iterations (TraceDiff with
 * control_iteration / test_iteration), with torch's self time besides.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_STEPOPS_H
#define STEPSCOPE_ANALYSE_STEPOPS_H

#include <stddef.h>
#include <stdint.h>

#include "analyse_ops.h"
#include "analyse_roles.h"

/* --- A range of steps (stepops.c) -------------------------------------------------------
 * The steps are the host STEP spans whose number (the digits after '#', "ProfilerStep#12" ->
 * 12) lies in [first, last]. Membership is HTA's (hta/common/trace.py add_iteration): a host
 * span (ANALYSE_ROLES_HOST) belongs to the range when it starts inside one of those steps
 * (step start <= ts < step end); a kernel (ANALYSE_ROLE_KERNEL) when the runtime span it was
 * launched by (ANALYSE_ROLE_RUNTIME, equal correlation >= 0) does: a kernel that runs after its
 * step ended is still that step's, one without a known launch is in no step. Self time is
 * torch's nesting rule (analyse_self_walk()) over the host spans in range, per (pid, tid). */

/* One span's figures in range: a part analyse_ops_from_parts() groups by name. */
struct analyse_stepops {
    size_t n_steps;                 /* step spans in range */
    int64_t first_step, last_step;  /* the lowest and highest step number found; -1 with none */
    struct analyse_op_part *ops;    /* [n_ops]: host spans in range, one part each, names
                                       borrowed from the spans */
    size_t n_ops;
    struct analyse_op_part *kernels; /* [n_kernels]: kernels in range, one part each */
    size_t n_kernels;
    int64_t self_dropped;            /* spans the self walk's stacks could not keep */
};

/* What analyse_stepops_compute() holds at most for n spans, its result included (bytes). */
size_t analyse_stepops_bytes(size_t n);

/* The spans of spans[0, n) (classified; any order) in steps [first, last] (ANALYSE_ST_ALL_FIRST
 * / _LAST of analyse_steptrace.h: no bound). Returns 0 and sets *ret (free with
 * analyse_stepops_free(); its parts borrow the spans' names), -ENOENT when no step span is in
 * range, -ENOMEM. */
int analyse_stepops_compute(const struct analyse_span *spans, size_t n, int64_t first,
                            int64_t last, struct analyse_stepops **ret);

/* Frees a result; NULL is accepted. */
void analyse_stepops_free(struct analyse_stepops *s);

#endif
