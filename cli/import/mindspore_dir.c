/* SPDX-License-Identifier: MIT */
/*
 * msdir: MindSpore profiler folders (contract in mindspore_dir.h).
 */
#include "mindspore_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sbuf.h"
#include "util.h"

#define KIND_TIMELINE MSF_KIND_COUNT

#define RANK_OF_RUN (-2) /* trace_view.json: the rank of the other files of its *_ascend_ms */

struct found {
    char *path;
    int kind;                  /* enum msf_kind, or KIND_TIMELINE */
    int64_t rank;              /* -1: every rank (step_trace_point_info.json) */
    bool fallback;             /* used only when the rank has no other file of its kind:
                                  dataset_iterator_profiling (device_queue_profiling),
                                  output_data_preprocess_aicpu (aicpu_intermediate) */
};

struct scan {
    struct found *f;
    size_t n, cap;
    bool bad;
    size_t rank_bytes_max; /* converted lines of one rank */
};

struct pattern {
    const char *prefix, *suffix;
    int kind;
    bool fallback;
};

static const struct pattern patterns[] = {
    {"step_trace_raw_", "_detail_time.csv", MSF_STEP_TRACE, false},
    {"step_trace_point_info_", ".json", MSF_POINT_INFO, false},
    {"aicore_intermediate_", "_detail.csv", MSF_AICORE_DETAIL, false},
    {"aicore_intermediate_", "_type.csv", MSF_AICORE_TYPE, false},
    {"aicpu_intermediate_", ".csv", MSF_AICPU, false},
    {"output_data_preprocess_aicpu_", ".txt", MSF_AICPU, true},
    {"framework_raw_", ".csv", MSF_FRAMEWORK, false},
    {"flops_", ".txt", MSF_FLOPS, false},
    {"flops_summary_", ".json", MSF_FLOPS_SUMMARY, false},
    {"memory_usage_summary_", ".json", MSF_MEMORY_SUMMARY, false},
    {"minddata_pipeline_raw_", ".csv", MSF_PIPELINE, false},
    {"device_queue_profiling_", ".txt", MSF_DEVICE_QUEUE, false},
    {"dataset_iterator_profiling_", ".txt", MSF_DEVICE_QUEUE, true},
    {"minddata_aicpu_", ".txt", MSF_GETNEXT_US, false},
    {"minddata_getnext_profiling_", ".txt", MSF_GETNEXT_NS, false},
    {"minddata_cpu_utilization_", ".json", MSF_CPU_UTIL, false},
    {"cpu_framework_", ".txt", MSF_CPU_FRAMEWORK, false},
    {"cpu_op_execute_timestamp_", ".txt", MSF_CPU_OP_TS, false},
    {"hccl_raw_", ".csv", MSF_HCCL, false},
    {"ascend_timeline_display_", ".json", KIND_TIMELINE, false},
    {"gpu_timeline_display_", ".json", KIND_TIMELINE, false},
    {"cpu_timeline_display_", ".json", KIND_TIMELINE, false},
};

/* name == prefix + digits + suffix: sets *rank. */
static bool match(const char *name, const struct pattern *p, int64_t *rank)
{
    size_t n = strlen(name), lp = strlen(p->prefix), ls = strlen(p->suffix);
    if (n <= lp + ls || strncmp(name, p->prefix, lp) != 0 || strcmp(name + n - ls, p->suffix) != 0)
        return false;
    int64_t v = 0;
    size_t nd = n - lp - ls;
    if (nd > 9)
        return false;
    for (size_t i = lp; i < n - ls; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        v = v * 10 + (name[i] - '0');
    }
    *rank = v;
    return true;
}

static bool subdir_wanted(const char *name)
{
    size_t n = strlen(name);
    return strcmp(name, "profiler") == 0 || strcmp(name, "FRAMEWORK") == 0 ||
           strcmp(name, "ASCEND_PROFILER_OUTPUT") == 0 ||
           (n > 10 && strcmp(name + n - 10, "_ascend_ms") == 0);
}

static int add(struct scan *s, const char *path, int kind, int64_t rank, bool fallback)
{
    if (s->n >= MSDIR_FILES_MAX) {
        fprintf(stderr, "stepscope import: %s: more than %d profiler files\n", path,
                MSDIR_FILES_MAX);
        s->bad = true;
        return -1;
    }
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 32;
        struct found *nf = realloc(s->f, nc * sizeof *nf);
        if (!nf)
            return -1;
        s->f = nf;
        s->cap = nc;
    }
    char *p = strdup(path);
    if (!p)
        return -1;
    s->f[s->n++] = (struct found){p, kind, rank, fallback};
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *base_name(const char *p)
{
    const char *b = strrchr(p, '/');
    return b ? b + 1 : p;
}

static int walk(struct scan *s, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "stepscope import: %s: %s\n", dir, strerror(errno));
        s->bad = true;
        return -1;
    }
    /* Sorted, so the order (and the messages) do not depend on the file system. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    int r = 0;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            char **nn = realloc(names, nc * sizeof *nn);
            if (!nn) {
                r = -1;
                break;
            }
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(de->d_name))) {
            r = -1;
            break;
        }
        n++;
        if (n > 4 * MSDIR_FILES_MAX)
            break;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; r == 0 && i < n; i++) {
        size_t pl = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(pl);
        if (!path) {
            r = -1;
            break;
        }
        snprintf(path, pl, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < MSDIR_DEPTH && subdir_wanted(names[i]))
                r = walk(s, path, depth + 1) < 0 && !s->bad ? -1 : 0;
        } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            int64_t rank;
            struct msf_cluster_name cn;
            const char *why = "";
            int cm;
            if (strcmp(names[i], "step_trace_point_info.json") == 0) {
                r = add(s, path, MSF_POINT_INFO, -1, false);
            } else if (strcmp(names[i], "trace_view.json") == 0 &&
                       strcmp(base_name(dir), "ASCEND_PROFILER_OUTPUT") == 0) {
                r = add(s, path, MSF_TRACE_VIEW, RANK_OF_RUN, false);
            } else if ((cm = msf_cluster_name(names[i], &cn, &why)) != 0) {
                if (cm < 0) {
                    fprintf(stderr, "stepscope import: %s: a cluster file's name: %s\n", path,
                            why);
                    s->bad = true;
                } else {
                    r = add(s, path, MSF_CLUSTER, cn.rank, false);
                }
            } else {
                for (size_t k = 0; k < sizeof patterns / sizeof patterns[0]; k++)
                    if (match(names[i], &patterns[k], &rank)) {
                        r = add(s, path, patterns[k].kind, rank, patterns[k].fallback);
                        break;
                    }
            }
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (r < 0 && !s->bad)
        fprintf(stderr, "stepscope import: %s: out of memory\n", dir);
    return r;
}

int msdir_slurp(const char *path, char **ret, size_t *ret_len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > MSDIR_FILE_BYTES_MAX) {
        int e = errno;
        close(fd);
        return (uint64_t)st.st_size > MSDIR_FILE_BYTES_MAX ? -EFBIG : -e;
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *b = malloc(cap);
    if (!b) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (len == cap) {
            if (cap > MSDIR_FILE_BYTES_MAX) {
                free(b);
                close(fd);
                return -EFBIG;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                close(fd);
                return -ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t k = read(fd, b + len, cap - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            free(b);
            close(fd);
            return -e;
        }
        if (k == 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    *ret = b;
    *ret_len = len;
    return 0;
}


/* If a folder of path is a MindSpore 2.x run, <host>_<pid>_<time>_ascend_ms (its profiler names
 * it so: the training's host name, process id and start time), sets out->host and out->pid. */
static void run_of(const char *path, struct msdir_rank *out)
{
    static const char sfx[] = "_ascend_ms";
    const size_t ns = sizeof sfx - 1;
    for (const char *c = path; *c;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (e && n > ns && memcmp(c + n - ns, sfx, ns) == 0) {
            /* c[0, m) = host_pid_time: the time and the pid are the last two fields */
            size_t m = n - ns, t = m, p;
            while (t > 0 && c[t - 1] >= '0' && c[t - 1] <= '9')
                t--;
            p = t > 0 && t < m && c[t - 1] == '_' ? t - 1 : 0;
            size_t q = p;
            while (q > 0 && c[q - 1] >= '0' && c[q - 1] <= '9')
                q--;
            bool named = q >= 2 && q - 1 < sizeof out->host;
            for (size_t i = 0; named && i < q - 1; i++) /* a host name's characters */
                named = (c[i] >= 'a' && c[i] <= 'z') || (c[i] >= 'A' && c[i] <= 'Z') ||
                        (c[i] >= '0' && c[i] <= '9') || c[i] == '-' || c[i] == '.' || c[i] == '_';
            if (named && q < p && c[q - 1] == '_' && p - q <= 9) {
                int64_t pid = 0;
                for (size_t i = q; i < p; i++)
                    pid = pid * 10 + (c[i] - '0');
                memcpy(out->host, c, q - 1);
                out->host[q - 1] = '\0';
                out->pid = pid;
                return;
            }
        }
        c += n + (e != NULL);
    }
}

/* Converts one rank's files. Returns 0 or -1 (printed). */
static int convert_rank(const struct scan *s, int64_t rank, struct msdir_rank *out)
{
    struct msf *m = msf_new(s->rank_bytes_max);
    struct sbuf files;
    sbuf_init(&files, 1u << 20);
    int ret = 0;
    if (!m) {
        fputs("stepscope import: out of memory\n", stderr);
        return -1;
    }
    bool has_primary[MSF_KIND_COUNT] = {false};
    for (size_t i = 0; i < s->n; i++)
        if (s->f[i].rank == rank && s->f[i].kind < MSF_KIND_COUNT && !s->f[i].fallback)
            has_primary[s->f[i].kind] = true;
    /* Enum order, except that the cluster file goes before the step trace that carries its
     * figures. */
    for (int oi = 0; oi < MSF_KIND_COUNT && ret == 0; oi++) {
        int kind = oi < MSF_STEP_TRACE || oi > MSF_CLUSTER ? oi
                   : oi == MSF_STEP_TRACE                 ? MSF_CLUSTER
                                                          : oi - 1;
        /* A rank's own file wins over a folder-wide one (step_trace_point_info.json). */
        const struct found *use = NULL, *wide = NULL;
        for (size_t i = 0; i < s->n; i++) {
            const struct found *f = &s->f[i];
            if (f->kind != kind || (f->fallback && has_primary[kind]))
                continue;
            if (f->rank == -1 && !wide)
                wide = f;
            if (f->rank != rank)
                continue;
            if (use) {
                fprintf(stderr, "stepscope import: %s and %s: two %s files for rank %lld\n",
                        use->path, f->path, msf_kind_pattern((enum msf_kind)kind),
                        (long long)rank);
                ret = -1;
                break;
            }
            use = f;
        }
        if (!use)
            use = wide;
        if (ret < 0 || !use)
            continue;
        char *data = NULL;
        size_t len = 0;
        int r = msdir_slurp(use->path, &data, &len);
        if (r < 0) {
            fprintf(stderr, "stepscope import: %s: %s\n", use->path,
                    r == -EFBIG ? "larger than 1 GiB" : strerror(-r));
            ret = -1;
            break;
        }
        struct msf_err e;
        struct msf_cluster_name cn;
        const char *why;
        if (kind == MSF_CLUSTER && msf_cluster_name(base_name(use->path), &cn, &why) == 1)
            msf_set_cluster_name(m, &cn);
        r = msf_feed(m, (enum msf_kind)kind, data, len, &e);
        free(data);
        if (r < 0) {
            if (e.line)
                fprintf(stderr, "stepscope import: %s: line %llu, column %llu: %s\n", use->path,
                        (unsigned long long)e.line, (unsigned long long)e.col, e.reason);
            else
                fprintf(stderr, "stepscope import: %s: %s\n", use->path, e.reason);
            ret = -1;
            break;
        }
        sbuf_printf(&files, "%s%s", files.len ? ", " : "", base_name(use->path));
    }
    if (ret == 0) {
        struct msf_err e;
        if (msf_end(m, &e) < 0) {
            fprintf(stderr, "stepscope import: rank %lld: %s\n", (long long)rank, e.reason);
            ret = -1;
        }
    }
    if (ret == 0) {
        size_t len;
        uint64_t n;
        const char *lines = msf_lines(m, &len, &n);
        out->rank = rank;
        out->pid = -1;
        out->host[0] = '\0';
        for (size_t i = 0; i < s->n && out->pid < 0; i++)
            if (s->f[i].rank == rank && s->f[i].path)
                run_of(s->f[i].path, out);
        out->lines = malloc(len + 1);
        out->files = sbuf_steal(&files, NULL);
        const char *fp = msf_fp_name(m), *bp = msf_bp_name(m);
        int pr = msf_parallel_json(m, &out->parallel);
        if (pr == 0)
            pr = msf_summary_json(m, &out->summary);
        if (pr == 0)
            pr = msf_communication_json(m, &out->communication);
        out->fp = fp ? strdup(fp) : NULL;
        out->bp = bp ? strdup(bp) : NULL;
        if (!out->lines || !out->files || (fp && !out->fp) || (bp && !out->bp) || pr < 0) {
            fputs("stepscope import: out of memory\n", stderr);
            free(out->parallel);
            free(out->summary);
            free(out->communication);
            free(out->lines);
            free(out->files);
            free(out->fp);
            free(out->bp);
            memset(out, 0, sizeof *out);
            ret = -1;
        } else {
            memcpy(out->lines, lines, len);
            out->lines[len] = '\0';
            out->len = len;
            out->n_lines = n;
            out->hash = util_hash(UTIL_HASH_SEED, lines, len);
            if (out->communication) /* hccl_raw goes in the hello, not the lines */
                out->hash = util_hash(out->hash, out->communication, strlen(out->communication));
        }
    }
    sbuf_done(&files);
    msf_free(m);
    return ret;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void msdir_free(struct msdir *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n_ranks; i++) {
        free(d->ranks[i].lines);
        free(d->ranks[i].fp);
        free(d->ranks[i].bp);
        free(d->ranks[i].files);
        free(d->ranks[i].parallel);
        free(d->ranks[i].summary);
        free(d->ranks[i].communication);
    }
    free(d->ranks);
    for (size_t i = 0; i < d->n_timelines; i++)
        free(d->timelines[i].path);
    free(d->timelines);
    free(d);
}

/* An Ascend timeline (ascend_timeline_display_<r>.json) and a GPU one (gpu_timeline_display_<r>.json)
 * in one folder are two devices' profiles on two clocks (the Ascend one counts from 0, the GPU one
 * from the epoch): one job would span 50 years. MindInsight shows them as separate profiles
 * (device_type=ascend or gpu); the import refuses the mix, naming both files, and says how to
 * import each. Returns 0, or -1 after printing. */
static int mixed_devices(const struct scan *s, const char *path)
{
    const char *ascend = NULL, *gpu = NULL;
    for (size_t i = 0; i < s->n; i++) {
        if (s->f[i].kind != KIND_TIMELINE)
            continue;
        const char *b = base_name(s->f[i].path);
        if (!ascend && strncmp(b, "ascend_timeline_display_", 24) == 0)
            ascend = s->f[i].path;
        if (!gpu && strncmp(b, "gpu_timeline_display_", 21) == 0)
            gpu = s->f[i].path;
    }
    if (!ascend || !gpu)
        return 0;
    fprintf(stderr,
            "stepscope import: %s: %s and %s are two devices' timelines (Ascend and GPU) on "
            "different clocks, which one job cannot hold; import each on its own, as MindInsight "
            "shows them: stepscope import %s --job NAME-ascend; stepscope import %s --job NAME-gpu\n",
            path, ascend, gpu, ascend, gpu);
    return -1;
}

int msdir_scan(const char *path, struct msdir **ret)
{
    return msdir_scan_max(path, MSDIR_RANK_BYTES_MAX, ret);
}

int msdir_scan_max(const char *path, size_t rank_bytes_max, struct msdir **ret)
{
    struct scan s = {.rank_bytes_max = rank_bytes_max};
    struct msdir *d = calloc(1, sizeof *d);
    int64_t *ranks = NULL;
    int r = d ? walk(&s, path, 0) : -1;
    if (!d)
        fputs("stepscope import: out of memory\n", stderr);
    size_t nr = 0;
    if (r == 0 && !s.bad) {
        ranks = calloc(s.n + 1, sizeof *ranks);
        d->ranks = calloc(s.n + 1, sizeof *d->ranks);
        d->timelines = calloc(s.n + 1, sizeof *d->timelines);
        if (!ranks || !d->ranks || !d->timelines) {
            fputs("stepscope import: out of memory\n", stderr);
            r = -1;
        }
    }
    /* trace_view.json (in <run>/ASCEND_PROFILER_OUTPUT/) takes the rank of the run's other
     * files (<run>/FRAMEWORK/cpu_op_execute_timestamp_<r>.txt), else 0. */
    for (size_t i = 0; r == 0 && !s.bad && i < s.n; i++) {
        struct found *f = &s.f[i];
        if (f->rank != RANK_OF_RUN)
            continue;
        size_t run = strlen(f->path) - strlen("/ASCEND_PROFILER_OUTPUT/trace_view.json");
        f->rank = 0;
        for (size_t k = 0; k < s.n; k++)
            if (s.f[k].rank >= 0 && strncmp(s.f[k].path, f->path, run + 1) == 0) {
                f->rank = s.f[k].rank;
                break;
            }
    }
    if (r == 0 && !s.bad && mixed_devices(&s, path) < 0)
        r = -1;
    for (size_t i = 0; r == 0 && !s.bad && i < s.n; i++) {
        const struct found *f = &s.f[i];
        if (f->kind == KIND_TIMELINE) {
            d->timelines[d->n_timelines].rank = f->rank;
            d->timelines[d->n_timelines++].path = f->path;
            s.f[i].path = NULL;
            continue;
        }
        if (f->rank < 0)
            continue;
        bool seen = false;
        for (size_t k = 0; k < nr; k++)
            seen = seen || ranks[k] == f->rank;
        if (!seen)
            ranks[nr++] = f->rank;
    }
    if (r == 0 && !s.bad && nr == 0 && d->n_timelines == 0) {
        fprintf(stderr,
                "stepscope import: %s: no MindSpore profiler files here (step_trace_raw_<r>_"
                "detail_time.csv, aicore_intermediate_<r>_detail.csv, minddata_*, "
                "cpu_op_execute_timestamp_<r>.txt, *_timeline_display_<r>.json, ...)\n",
                path);
        r = -1;
    }
    if (nr)
        qsort(ranks, nr, sizeof *ranks, cmp_i64);
    /* Every rank is converted (and so every file checked) even after a failure, so one run
     * reports every bad file. */
    for (size_t i = 0; r == 0 && i < nr; i++) {
        if (convert_rank(&s, ranks[i], &d->ranks[d->n_ranks]) < 0)
            s.bad = true;
        else
            d->n_ranks++;
    }
    for (size_t i = 0; i < s.n; i++)
        free(s.f[i].path);
    free(s.f);
    free(ranks);
    if (r < 0 || s.bad) {
        msdir_free(d);
        return -1;
    }
    *ret = d;
    return 0;
}
