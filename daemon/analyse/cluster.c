/* SPDX-License-Identifier: MIT */
/* analyse_cluster: the cluster step trace's figures by parallel mode (analyse_cluster.h). */
#include "analyse_cluster.h"

#include <math.h>
#include <string.h>

static const char *const mode_names[] = {"data-parallel", "model-parallel", "pipeline-parallel"};

static const char *const fig_names[ANALYSE_CL_N_FIGS] = {
    "interval",  "fp_bp",         "tail",          "total",
    "computation", "communication_alone", "stage", "receive_alone",
    "collective_communication_alone", "communication", "overlap",
};

/* The importer's phase names (cli/import/mindspore_cluster.c, msf_cl_phase). */
static const char *const fig_phases[ANALYSE_CL_N_FIGS] = {
    NULL, NULL, NULL, NULL, "computation", "communication_alone", "stage_time", "receive_alone",
    "collective_communication_alone", NULL, NULL,
};

const char *analyse_cl_mode_name(enum analyse_cl_mode mode)
{
    return (unsigned)mode < 3 ? mode_names[mode] : "?";
}

int analyse_cl_mode_parse(const char *name, size_t n)
{
    for (int i = 0; i < 3; i++)
        if (strlen(mode_names[i]) == n && memcmp(mode_names[i], name, n) == 0)
            return i;
    return -1;
}

bool analyse_cl_mode_has(enum analyse_cl_mode mode, enum analyse_cl_fig fig)
{
    switch (mode) {
    case ANALYSE_CL_DATA:
        return fig <= ANALYSE_CL_TOTAL;
    case ANALYSE_CL_MODEL:
        return fig == ANALYSE_CL_INTERVAL || fig == ANALYSE_CL_COMPUTATION ||
               fig == ANALYSE_CL_COMM_ALONE;
    case ANALYSE_CL_PIPELINE:
        return fig == ANALYSE_CL_INTERVAL ||
               (fig >= ANALYSE_CL_COMPUTATION && fig <= ANALYSE_CL_COLLECTIVE_ALONE);
    }
    return false;
}

bool analyse_cl_device_fig(enum analyse_cl_fig fig)
{
    return fig == ANALYSE_CL_COMPUTATION || fig == ANALYSE_CL_COMM_ALONE ||
           fig == ANALYSE_CL_COMMUNICATION || fig == ANALYSE_CL_OVERLAP;
}

const char *analyse_cl_fig_name(enum analyse_cl_fig fig)
{
    return (unsigned)fig < ANALYSE_CL_N_FIGS ? fig_names[fig] : "?";
}

const char *analyse_cl_fig_phase(enum analyse_cl_fig fig)
{
    return (unsigned)fig < ANALYSE_CL_N_FIGS ? fig_phases[fig] : NULL;
}

int64_t analyse_cl_stage(int64_t rank, int64_t stages, int64_t rank_size)
{
    if (stages < 1)
        stages = 1;
    if (rank_size < stages)
        rank_size = stages;
    int64_t per = rank_size / stages, s = (rank < 0 ? 0 : rank) / per + 1;
    return s > stages ? stages : s;
}

int64_t analyse_cl_gb_bytes(double gb)
{
    double b = gb * 1073741824.0;
    if (!(b >= 0) || b > 4611686018427387904.0)
        return -1;
    return (int64_t)llround(b);
}

double analyse_cl_ratio(double v, double max)
{
    return max > 0 ? v / max : -1;
}
