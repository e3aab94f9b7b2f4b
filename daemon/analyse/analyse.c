/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the analyse module (interval arithmetic and the like) live here; the areas
 * live in their own files. Kept non-empty so the library always has a translation unit.
 */
#include "analyse.h"

const char *const analyse_role_names[ANALYSE_ROLE_COUNT] = {
    "other",   "step",   "dataloader", "forward", "backward", "optimizer",      "communication",
    "host_op", "kernel", "memcpy",     "memset",  "runtime",  "user_annotation", "python",
    "gpu_annotation", "scope",
};
