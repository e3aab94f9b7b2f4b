/* SPDX-License-Identifier: MIT */
/*
 * msdir: a MindSpore profiler folder (MindInsight-era `profiler/` with its intermediate files,
 * or MindSpore 2.x's `*_ascend_ms/`) found by file names, read and converted through msf_feed(),
 * rank by rank, with every file checked before the caller sends anything.
 *
 * Looks at the folder itself and, below it, only at the sub-folders MindSpore writes
 * (`profiler`, `FRAMEWORK`, `ASCEND_PROFILER_OUTPUT`, `*_ascend_ms`), at most MSDIR_DEPTH deep,
 * so two runs side by side in one folder are never merged. Timelines
 * (`*_timeline_display_<r>.json`) are left to the Chrome-trace importer: msdir only lists them.
 */
#ifndef STEPSCOPE_IMPORT_MSDIR_H
#define STEPSCOPE_IMPORT_MSDIR_H

#include <stddef.h>
#include <stdint.h>

#include "mindspore_files.h"

#define MSDIR_DEPTH 3               /* sub-folder levels looked into */
#define MSDIR_FILES_MAX 4096        /* files looked at in one folder tree */
#define MSDIR_FILE_BYTES_MAX (1ull << 30) /* one intermediate file, read whole */
#define MSDIR_RANK_BYTES_MAX (1ull << 30) /* converted lines of one rank */

struct msdir_rank {
    int64_t rank;
    char *lines;                /* '\n'-terminated protocol lines, owned */
    size_t len;
    uint64_t n_lines;
    uint64_t hash;              /* FNV-1a of the lines: the import's identity */
    char *fp, *bp;              /* step-trace point names, or NULL; owned */
    char *files;                /* the file names used, ", "-separated; owned */
    char *parallel;             /* the hello's "parallel" object (msf_parallel_json()), or NULL;
                                   owned */
    char *summary;              /* the hello's "summary" object (msf_summary_json()), or NULL;
                                   owned */
    char *communication;        /* the hello's "communication" object (msf_communication_json()),
                                   or NULL; owned */
    char host[256];             /* the training's host and pid from the MindSpore 2.x run folder
                                   <host>_<pid>_<time>_ascend_ms holding the rank's files; "" */
    int64_t pid;                /* and -1 when none does */
};

struct msdir_timeline {
    int64_t rank;
    char *path;                 /* owned */
};

struct msdir {
    struct msdir_rank *ranks;   /* by rank */
    size_t n_ranks;
    struct msdir_timeline *timelines;
    size_t n_timelines;
};

/* Scans the folder at path. Returns 0 and sets *ret (free with msdir_free()), or -1 after
 * printing every problem to stderr as "stepscope import: FILE: line L, column C: reason". */
int msdir_scan(const char *path, struct msdir **ret);

/* msdir_scan() with another cap than MSDIR_RANK_BYTES_MAX on a rank's converted lines (the fuzz
 * target's 1 MiB, as fuzz_mindspore_files has, so that a small file expanding to the cap costs
 * milliseconds, not seconds). */
int msdir_scan_max(const char *path, size_t rank_bytes_max, struct msdir **ret);

void msdir_free(struct msdir *d);

/* Reads a whole file (at most MSDIR_FILE_BYTES_MAX) into a malloc'd buffer with one spare byte.
 * Returns 0, -EFBIG, -ENOMEM or a negative errno from open(2)/read(2). */
int msdir_slurp(const char *path, char **ret, size_t *ret_len);

#endif
