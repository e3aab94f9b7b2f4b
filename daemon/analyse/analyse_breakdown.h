/* SPDX-License-Identifier: MIT */
/*
 * analyse_breakdown.h: torch-tb-profiler's step-time breakdown and GPU utilisation
 * (breakdown.c).
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_BREAKDOWN_H
#define STEPSCOPE_ANALYSE_BREAKDOWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyse_roles.h"

/* --- Step-time breakdown (breakdown.c) ----------------------------------------------------
 * torch-tb-profiler's overview breakdown (peers.md §1.3, tb_plugin event_parser.py and
 * overall_parser.py), see docs/ANALYSIS.md. Categories in priority order: */
enum analyse_bd_cat {
    ANALYSE_BD_KERNEL,
    ANALYSE_BD_MEMCPY,
    ANALYSE_BD_MEMSET,
    ANALYSE_BD_COMMUNICATION,
    ANALYSE_BD_RUNTIME,
    ANALYSE_BD_DATALOADER,
    ANALYSE_BD_CPU_EXEC,
    ANALYSE_BD_OTHER,
    ANALYSE_BD_COUNT,
};

/* "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other". */
extern const char *const analyse_bd_cat_names[ANALYSE_BD_COUNT];

struct analyse_bd_step {
    int64_t step;                     /* N of ProfilerStep#N as the framework wrote it; 0 for the
                                         single implicit step of a trace without step spans */
    int64_t host_start_ns, host_end_ns; /* the step span itself */
    int64_t start_ns, end_ns;         /* after device-side stretching */
    int64_t n_device;                 /* device events launched by runtimes inside the step */
    int64_t cost_ns[ANALYSE_BD_COUNT]; /* sums exactly to end_ns - start_ns */
    /* Communication against computation on the device (docs/ANALYSIS.md "Cluster step trace",
     * torch jobs; HTA's comm/comp overlap, per step as torch-tb-profiler's distributed view):
     * |step ∩ union(communication kernels)|, |step ∩ union(the other kernels)| and
     * |step ∩ both unions|. A communication kernel is one the breakdown counts as
     * communication (launched by a host communication span) or one HTA names so (a name that
     * starts with "nccl" or "hccl" or holds "ncclKernel"). */
    int64_t comm_ns, comp_ns, overlap_ns;
};

struct analyse_bd_gpu {
    int64_t pid;             /* the device's pid in the trace (Kineto: the GPU id) */
    int64_t busy_ns;         /* |union(kernels) ∩ window| */
    double utilization;      /* busy_ns / |window|, in [0, 1] */
};

/* Read-only outside breakdown.c. */
struct analyse_breakdown {
    size_t n_steps;                   /* steps kept after tail trimming */
    struct analyse_bd_step *steps;    /* [n_steps], by start time */
    size_t n_dropped;                 /* tail steps dropped (kernels probably truncated) */
    bool device_stretched;            /* some step launched device work: steps are device-side */
    double avg_ns[ANALYSE_BD_COUNT];  /* sum over steps / n_steps */
    double avg_total_ns;
    int64_t window_start_ns, window_end_ns; /* [first step start, last step end] */
    size_t n_gpus;
    struct analyse_bd_gpu *gpus;      /* [n_gpus], by pid: kernel busy time per device */
};

/* Computes the breakdown of classified spans (analyse_classify()). Steps are the STEP spans
 * (not those on a device); device events are linked to runtime spans by equal correlation
 * (>= 0); a kernel whose external_id (>= 0) is that of a host COMMUNICATION span counts as
 * communication. With no step span the single step 0 covers the host operators' extent; with no
 * host span at all the result has no steps. Returns 0 and sets *ret_bd (caller frees with
 * analyse_breakdown_free()), or -ENOMEM. */
int analyse_breakdown_compute(const struct analyse_span *spans, size_t n, struct analyse_breakdown **ret_bd);

/* Frees a breakdown; NULL is accepted. */
void analyse_breakdown_free(struct analyse_breakdown *bd);

#endif
