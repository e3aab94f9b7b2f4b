/* SPDX-License-Identifier: MIT */
/*
 * analyse_tbprof.h: torch-tb-profiler's kernel view (kernels by name and by the operator that
 * launched them, tensor-core use, blocks per SM and occupancy) and its distributed view's
 * communication-operator table (tbprof.c). Definitions in docs/ANALYSIS.md, "Kernel details"
 * and "Communication operators".
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_TBPROF_H
#define STEPSCOPE_ANALYSE_TBPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

/* What Kineto writes in a span's args that these tables read, beside analyse_span's links:
 * a kernel's launch figures and an operator's input sizes. Absent figures are negative
 * (grid and block: 0 dimensions). */
struct analyse_tbk_args {
    double blocks_per_sm;   /* "blocks per SM" */
    double occupancy_pct;   /* "est. achieved occupancy %" */
    int64_t regs;           /* "registers per thread" */
    int64_t smem;           /* "shared memory" (bytes) */
    int32_t grid[3];        /* "grid", its first n_grid numbers */
    int32_t block[3];       /* "block" */
    uint8_t n_grid, n_block;
    int64_t input_bytes;    /* an operator's "Input Dims" x "Input type" (analyse_tbk_type_bytes()
                               per element), summed; -1 without Input Dims */
};

/* Whether a kernel name uses tensor cores by torch-tb-profiler's rule: it contains one of the
 * kernel-name patterns NVIDIA's PyProf lists for tensor-core kernels (tbprof.c has the list). */
bool analyse_tbk_tensor_core(const char *name, size_t len);

/* The bytes of one element of a Kineto "Input type" (its C++ type name), 0 when unknown. */
int64_t analyse_tbk_type_bytes(const char *type, size_t len);

enum analyse_tbk_group {
    ANALYSE_TBK_BY_NAME,     /* tb-profiler's kernel table: per kernel name */
    ANALYSE_TBK_BY_OPERATOR, /* its "kernel properties + operator" table: per (name, launching
                                operator, grid, block, registers, shared memory) */
};

/* One row. Texts are borrowed from the spans. */
struct analyse_tbk_row {
    const char *name;
    size_t name_len;
    const char *op;          /* BY_OPERATOR: the launching operator; NULL: none found */
    size_t op_len;
    int32_t grid[3], block[3];
    uint8_t n_grid, n_block;
    int64_t regs, smem;      /* -1: absent */
    bool tensor_core;
    int64_t calls;
    int64_t total_ns, min_ns, max_ns;
    double blocks_per_sm;    /* duration-weighted mean (absent counted as 0); 0 when total is 0 */
    double occupancy_pct;    /* likewise */
};

struct analyse_tbk {
    struct analyse_tbk_row *rows; /* by total desc, then name */
    size_t n_rows;
    int64_t kernels;         /* kernel spans */
    int64_t total_ns;        /* their time */
    int64_t tc_ns;           /* of which in tensor-core kernels */
    int64_t launched;        /* kernels whose launching operator was found */
    bool has_blocks_per_sm;  /* some kernel has blocks per SM > 0 (tb-profiler's test) */
    bool has_occupancy;      /* some kernel has an occupancy >= 0 */
};

/* The kernel table of spans v[0, n) (one rank), args[i] being v[i]'s. A kernel (role KERNEL)
 * is launched by the runtime span (role RUNTIME) with its correlation; that call's operator is
 * the innermost host span (analyse_ops.h's ANALYSE_ROLES_HOST but runtime calls) of the same
 * pid and tid that contains it, by torch's nesting rule. Returns 0 or -ENOMEM. */
int analyse_tbk_compute(const struct analyse_span *v, const struct analyse_tbk_args *args,
                        size_t n, enum analyse_tbk_group group, struct analyse_tbk **ret);
void analyse_tbk_free(struct analyse_tbk *t);

/* --- Communication operators ------------------------------------------------------------- */

enum analyse_tbc_link {
    ANALYSE_TBC_LAUNCH,      /* a communication op's kernels: those launched inside it (as the
                                kernel table links them, to it or to an operator within it) */
    ANALYSE_TBC_EXTERNAL_ID, /* those whose args["External id"] is the op's (torch-tb-profiler
                                0.4.3's rule; Kineto of torch >= 2 gives kernels their correlation
                                there, so none are linked) */
};

/* One call of a communication operator on one rank: its host span and its kernels' intervals
 * (ranges[first, first + n) of its rank). name is owned by the rank. */
struct analyse_tbc_call {
    char *name;
    int64_t ts_ns;
    int64_t bytes;           /* its inputs' bytes; 0 without Input Dims */
    size_t first, n;
};

struct analyse_tbc_rank {
    int64_t rank;
    struct analyse_tbc_call *calls; /* by start */
    size_t n_calls;
    int64_t (*ranges)[2];    /* [start, end), each call's sorted by (start, -end) */
    size_t n_ranges;
};

/* The communication calls of one rank's spans (role COMMUNICATION on the host: nccl:*, gloo:*
 * and the like). Returns 0 or -ENOMEM; free with analyse_tbc_rank_done(). */
int analyse_tbc_calls(const struct analyse_span *v, const struct analyse_tbk_args *args, size_t n,
                      enum analyse_tbc_link link, int64_t rank, struct analyse_tbc_rank *ret);
void analyse_tbc_rank_done(struct analyse_tbc_rank *r);

struct analyse_tbc_row {
    int64_t rank;
    const char *name;        /* borrowed from the ranks */
    int64_t calls;
    int64_t bytes;
    int64_t latency_ns;      /* union of the calls' intervals */
    int64_t transfer_ns;     /* union of their transfer intervals */
    int64_t unmatched;       /* calls without a partner on every rank (their transfer is their
                                own interval) */
};

struct analyse_tbc {
    struct analyse_tbc_row *rows; /* by rank, then first call */
    size_t n_rows;
};

/* torch-tb-profiler's Communication Operations Stats of ranks[0, n): the k-th call of a name on
 * each rank are one collective; its j-th interval's transfer time is the shortest j-th interval
 * over the ranks, ending where each rank's ends (the rest was waiting for the slowest rank).
 * Returns 0 or -ENOMEM. */
int analyse_tbc_table(const struct analyse_tbc_rank *ranks, size_t n, struct analyse_tbc **ret);
void analyse_tbc_free(struct analyse_tbc *t);

#endif
