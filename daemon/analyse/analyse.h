/* SPDX-License-Identifier: MIT */
/*
 * analyse: the numbers. Pure computation over arrays: records in, tables out. No I/O, no libuv,
 * no SQLite, no globals, no logging; every result is owned by the caller and freed with the
 * matching *_free(). The same functions serve live jobs (fed from the store's snapshots) and
 * imported traces, so a view shows the same numbers whichever way the data came.
 *
 * Times are int64 nanoseconds throughout; callers convert to microseconds at the API edge.
 * The formulas follow the peers exactly (../shared/reference/peers.md, mindinsight.md); where
 * a peer has a known bug, the correct value is computed and the difference documented.
 *
 * The header has one section per area; each area's implementation lives in its own file
 * (roles.c, ops.c, breakdown.c; steptrace.c, queues.c).
 */
#ifndef STEPSCOPE_ANALYSE_H
#define STEPSCOPE_ANALYSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ===== Shared types ===================================================================== */

/* What a span is, for every analysis. Classified once by analyse_classify(). */
enum analyse_role {
    ANALYSE_ROLE_OTHER,
    ANALYSE_ROLE_STEP,            /* ProfilerStep#N and the like: one training step */
    ANALYSE_ROLE_DATALOADER,
    ANALYSE_ROLE_FORWARD,
    ANALYSE_ROLE_BACKWARD,
    ANALYSE_ROLE_OPTIMIZER,
    ANALYSE_ROLE_COMMUNICATION,
    ANALYSE_ROLE_HOST_OP,         /* a framework operator on the host (aten::conv2d, ...) */
    ANALYSE_ROLE_KERNEL,          /* device kernel */
    ANALYSE_ROLE_MEMCPY,
    ANALYSE_ROLE_MEMSET,
    ANALYSE_ROLE_RUNTIME,         /* cudaLaunchKernel and other runtime/driver calls */
    ANALYSE_ROLE_USER_ANNOTATION, /* record_function / RecordEvent ranges */
    ANALYSE_ROLE_PYTHON,          /* python_function events */
    ANALYSE_ROLE_COUNT,
};

/* A complete span (Chrome "X", or a B/E pair already matched by the caller). Strings are
 * borrowed, not NUL-terminated. */
struct analyse_span {
    int64_t ts_ns;
    int64_t dur_ns;
    const char *name;
    size_t name_len;
    const char *cat;      /* Chrome "cat"; len 0 when absent (legacy torch traces) */
    size_t cat_len;
    int64_t pid;          /* numeric pid/tid; a string pid/tid is mapped to a stable id by the caller */
    int64_t tid;
    int64_t correlation;  /* args.correlation / args["External id"] links, -1 when absent */
    int64_t external_id;  /* args["External id"], -1 when absent */
    enum analyse_role role;
};

/* Lower-case names of the roles, indexed by enum analyse_role ("host_op", "kernel", ...). */
extern const char *const analyse_role_names[ANALYSE_ROLE_COUNT];

/* ===== Section A: roles, operators, kernels, step-time breakdown (roles.c ops.c breakdown.c) ===== */

/* ===== Section B: step trace, data queues and pipeline (steptrace.c queues.c) ===== */

#endif
