/* SPDX-License-Identifier: MIT */
/*
 * analyse_cluster: MindInsight's cluster step trace (docs/ANALYSIS.md "Cluster step trace"): the
 * figures of each parallel mode, a rank's pipeline stage, and the table of ranks the route
 * renders. Pure.
 */
#ifndef STEPSCOPE_ANALYSE_CLUSTER_H
#define STEPSCOPE_ANALYSE_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum analyse_cl_mode { ANALYSE_CL_DATA, ANALYSE_CL_MODEL, ANALYSE_CL_PIPELINE };

/* The figures, in the order the route writes them. Data-parallel shows INTERVAL..TOTAL;
 * model-parallel INTERVAL, COMPUTATION, COMM_ALONE; pipeline-parallel those and STAGE_TIME,
 * RECEIVE_ALONE, COLLECTIVE_ALONE. */
enum analyse_cl_fig {
    ANALYSE_CL_INTERVAL,
    ANALYSE_CL_FP_BP,
    ANALYSE_CL_TAIL,
    ANALYSE_CL_TOTAL,
    ANALYSE_CL_COMPUTATION,
    ANALYSE_CL_COMM_ALONE,
    ANALYSE_CL_STAGE_TIME,
    ANALYSE_CL_RECEIVE_ALONE,
    ANALYSE_CL_COLLECTIVE_ALONE,
    ANALYSE_CL_COMMUNICATION, /* a torch job's device communication (with COMPUTATION, */
    ANALYSE_CL_OVERLAP,       /* COMM_ALONE): see analyse_cl_device_fig() */
    ANALYSE_CL_N_FIGS,
};

/* "data-parallel", "model-parallel", "pipeline-parallel". */
const char *analyse_cl_mode_name(enum analyse_cl_mode mode);

/* The mode named name[0, n), or -1. */
int analyse_cl_mode_parse(const char *name, size_t n);

/* Whether mode shows figure fig. */
bool analyse_cl_mode_has(enum analyse_cl_mode mode, enum analyse_cl_fig fig);

/* Whether fig is one of the device communication figures a job without a parallel layout
 * (torch) shows beside the data-parallel ones when its ranks have kernels (docs/ANALYSIS.md
 * "Cluster step trace"): COMPUTATION, COMM_ALONE, COMMUNICATION, OVERLAP. */
bool analyse_cl_device_fig(enum analyse_cl_fig fig);

/* The figure's name in answers without its "_us" ("interval", "fp_bp", ..., "stage"), and the
 * name of the step record's phase that carries it ("computation", ...; NULL for the four
 * step-trace figures, which come from the step trace, and the two device-only figures). */
const char *analyse_cl_fig_name(enum analyse_cl_fig fig);
const char *analyse_cl_fig_phase(enum analyse_cl_fig fig);

/* MindInsight's stage of a rank, rank / (rank_size / stages) + 1, kept within 1..stages (a rank
 * id past rank_size, which MindInsight would put in a stage that does not exist, is in the
 * last). stages and rank_size below 1 count as 1. */
int64_t analyse_cl_stage(int64_t rank, int64_t stages, int64_t rank_size);

/* One rank's row: fig_ns[f] is meaningful where has[f]. */
struct analyse_cl_rank {
    int64_t rank;
    int64_t stage;
    int64_t fig_ns[ANALYSE_CL_N_FIGS];
    bool has[ANALYSE_CL_N_FIGS];
};

/* ---- cluster FLOPs and memory (docs/ANALYSIS.md "Cluster FLOPs and memory") ---- */

/* MindSpore's GB (2^30 bytes, its GIGABYTES) as bytes, rounded to the nearest; -1 for a value
 * that is negative, not a number or past 2^62 bytes. */
int64_t analyse_cl_gb_bytes(double gb);

/* v / max (FLOPs normalised to the largest rank's, peak memory over capacity); -1 when max is
 * not > 0. */
double analyse_cl_ratio(double v, double max);

#endif
