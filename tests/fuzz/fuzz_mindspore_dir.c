/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the MindSpore folder importer (cli/import/mindspore_dir.c): the layout detection
 * by file and folder names, then every file through msparse. The input is a list of files
 * separated by NUL bytes; each starts with three bytes: the folder it goes in (the root, the
 * sub-folders MindSpore writes, one nested too deep, one that must be ignored), the name pattern
 * (every kind msdir knows, plus look-alikes), and its rank text (digits, none, too many, a sign);
 * the rest is the file's content. The tree is written per input under one scratch directory
 * (fuzz_scratch.h: a tmpfs when there is one) and removed after it.
 * Invariants: msdir_scan() answers 0 or -1; on 0, ranks are distinct and increasing, each rank's
 * text is exactly n_lines '\n'-terminated lines whose hash is FNV-1a of the text, every line is
 * one the daemon's decoder (daemon/ingest/decode.c) takes, the point names come in pairs, and
 * every timeline listed is a file that was written, under the root.
 * Set STEPSCOPE_FUZZ_QUIET=1 to send msdir's complaints (stderr) to /dev/null while fuzzing.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cli/import/mindspore_dir.h"
#include "../../lib/util.h"
#include "fuzz_lines.h"
#include "fuzz_scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILES_MAX 24
#define FUZZ_RANK_BYTES_MAX (1u << 20) /* a rank's converted lines, as in fuzz_mindspore_files */

static const char *const dirs[] = {
    "",          "profiler/",     "FRAMEWORK/",      "ASCEND_PROFILER_OUTPUT/",
    "r_ascend_ms/", "r_ascend_ms/profiler/", "r_ascend_ms/profiler/FRAMEWORK/",
    "profiler/profiler/profiler/profiler/", /* deeper than MSDIR_DEPTH */
    "other/",    /* not a MindSpore folder: never looked into */
};
static const char *const names[][2] = {
    {"step_trace_raw_", "_detail_time.csv"},
    {"step_trace_point_info_", ".json"},
    {"step_trace_point_info", ".json"},
    {"aicore_intermediate_", "_detail.csv"},
    {"aicore_intermediate_", "_type.csv"},
    {"aicpu_intermediate_", ".csv"},
    {"framework_raw_", ".csv"},
    {"flops_", ".txt"},
    {"minddata_pipeline_raw_", ".csv"},
    {"device_queue_profiling_", ".txt"},
    {"dataset_iterator_profiling_", ".txt"},
    {"minddata_aicpu_", ".txt"},
    {"minddata_getnext_profiling_", ".txt"},
    {"minddata_cpu_utilization_", ".json"},
    {"cpu_op_execute_timestamp_", ".txt"},
    {"ascend_timeline_display_", ".json"},
    {"gpu_timeline_display_", ".json"},
    {"cpu_timeline_display_", ".json"},
    {"framework_raw_", ".csv.bak"},
    {".step_trace_raw_", "_detail_time.csv"},
    {"ascend_cluster_analyse_model-parallel_1_2_", ".csv"},
    {"ascend_cluster_analyse_pipeline-parallel_2_4_", ".csv"},
    {"ascend_cluster_analyse_data-parallel_1_", ".csv"},        /* a number short */
    {"ascend_cluster_analyse_tensor-parallel_1_1_", ".csv"},    /* no such mode */
    {"flops_summary_", ".json"},
    {"memory_usage_summary_", ".json"},
    {"hccl_raw_", ".csv"},
};
static const char *const ranks[] = {"0", "1", "7", "", "0000000001", "999999999", "-1", "1a"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static struct decoder *dec;
static char root[64];
static char written[FILES_MAX][512];
static size_t n_written;

/* Folders made for this input, in the order made (parents first), so clean() removes exactly
 * those, deepest first, and mkdirs() makes each one once. */
static char made[2 * COUNT(dirs)][512];
static size_t n_made;

static void mkdirs(const char *rel)
{
    char p[512];
    for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
        snprintf(p, sizeof p, "%s/%.*s", root, (int)(s - rel), rel);
        bool known = false;
        for (size_t i = 0; i < n_made && !known; i++)
            known = strcmp(made[i], p) == 0;
        if (known)
            continue;
        assert(mkdir(p, 0700) == 0);
        assert(n_made < COUNT(made));
        memcpy(made[n_made++], p, sizeof p);
    }
}

static void clean(void)
{
    for (size_t i = 0; i < n_written; i++)
        (void)unlink(written[i]); /* a name written twice is removed once */
    n_written = 0;
    while (n_made > 0)
        assert(rmdir(made[--n_made]) == 0);
}

static void remove_root(void)
{
    clean();
    (void)rmdir(root);
}

static void put(const uint8_t *p, size_t n)
{
    if (n < 3 || n_written == FILES_MAX)
        return;
    const char *dir = dirs[p[0] % COUNT(dirs)];
    const char *const *nm = names[p[1] % COUNT(names)];
    const char *rank = strcmp(nm[0], "step_trace_point_info") == 0 ? "" : ranks[p[2] % COUNT(ranks)];
    mkdirs(dir);
    char *path = written[n_written];
    snprintf(path, sizeof written[0], "%s/%s%s%s%s", root, dir, nm[0], rank, nm[1]);
    FILE *f = fopen(path, "wb");
    assert(f);
    assert(n == 3 || fwrite(p + 3, 1, n - 3, f) == n - 3);
    assert(fclose(f) == 0);
    n_written++;
}

static void check(const struct msdir *d)
{
    for (size_t i = 0; i < d->n_ranks; i++) {
        const struct msdir_rank *r = &d->ranks[i];
        assert(r->rank >= 0 && (i == 0 || r->rank > d->ranks[i - 1].rank));
        assert(r->hash == util_hash(UTIL_HASH_SEED, r->lines, r->len));
        fuzz_check_lines(dec, r->lines, r->len, r->n_lines);
        assert(!r->fp == !r->bp);
        assert(r->files && r->files[0]);
    }
    for (size_t i = 0; i < d->n_timelines; i++) {
        const char *p = d->timelines[i].path;
        assert(d->timelines[i].rank >= 0);
        assert(strncmp(p, root, strlen(root)) == 0 && !strstr(p, "/other/"));
        bool found = false;
        for (size_t k = 0; k < n_written && !found; k++)
            found = strcmp(written[k], p) == 0;
        assert(found);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dec) {
        dec = decoder_new(FUZZ_LINE_MAX_BYTES);
        assert(dec);
        fuzz_scratch_path(root, sizeof root, "fuzz_mindspore_dir", "");
        (void)mkdir(root, 0700);
        atexit(remove_root);
    }
    if (size > (1u << 16))
        return 0;
    size_t start = 0;
    for (size_t i = 0; i <= size; i++)
        if (i == size || data[i] == '\0') {
            put(data + start, i - start);
            start = i + 1;
        }
    int saved = -1;
    if (getenv("STEPSCOPE_FUZZ_QUIET")) {
        fflush(stderr);
        saved = dup(2);
        int null = open("/dev/null", O_WRONLY);
        assert(saved >= 0 && null >= 0);
        dup2(null, 2);
        close(null);
    }
    struct msdir *d = NULL;
    int r = msdir_scan_max(root, FUZZ_RANK_BYTES_MAX, &d);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
    }
    assert(r == 0 || r == -1);
    if (r == 0) {
        assert(d);
        check(d);
        msdir_free(d);
    }
    clean();
    return 0;
}
