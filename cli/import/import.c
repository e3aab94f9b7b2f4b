/* SPDX-License-Identifier: MIT */
/*
 * import: `stepscope import PATH... [--socket S] [--job NAME] [--rank R]` (contract in import.h).
 *
 * Pass 1 reads every file to the end through tfile/tscan in constant memory: it validates the
 * JSON and every event, counts the events, collects the top-level facts (distributedInfo,
 * schemaVersion, ...), guesses the framework from the first events, and writes the protocol
 * lines it converts to an unlinked temporary file (spool.h), noting whether each thread's spans
 * come in torch's order (order.h). A large plain file is read in two halves at once, one thread
 * each, cut at what looks like an event boundary; the halves' results are put together only when
 * the first half's scanner reaches the cut exactly as the second assumed (tscan_same_position()),
 * else the first goes on alone, so the outcome is always that of one scan. Only when every file passed does pass 2 send each file's
 * lines from there with sendfile(2), in that order where the file has them otherwise (or, when no temporary file could
 * hold them, read and scan the file again), one session per file, as the stream
 * "import:<abs path>:<size>:<mtime>". Because that stream key is the file's identity, a second
 * import of the same file (same job and rank) gets a welcome whose next_seq covers what the
 * daemon already holds, and only the rest is sent: imports are idempotent, and an import whose
 * connection broke resumes where the daemon's durable state ends, on the next attempt or the
 * next run.
 */
#include "import.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../http_client.h"
#include "../locate.h"
#include "line_spool.h"
#include "log.h"
#include "mindspore_dir.h"
#include "paddle_proto.h"
#include "paddle_times.h"
#include "proto_client.h"
#include "sbuf.h"
#include "span_order.h"
#include "trace_file.h"
#include "trace_scan.h"

extern char **environ;

#define IMPORT_JOB_MAX 256        /* the protocol's longest job name */
#define IMPORT_STREAM_MAX 256     /* the protocol's longest stream key */
#define IMPORT_DETECT_EVENTS 10000 /* events looked at to guess the framework */
#define IMPORT_ERRORS_SHOWN 10    /* daemon errors printed per file; the rest are counted */
#define IMPORT_ATTEMPTS 6         /* sessions tried per file when connections break */
#define IMPORT_SPLIT_MIN_BYTES (64ull << 20) /* plain files from this size: pass 1 in two halves */
#define IMPORT_SPLIT_PROBE 65536  /* bytes looked at from the middle for where to cut */

enum framework { FW_UNKNOWN, FW_TORCH, FW_PADDLE, FW_MINDSPORE };

static const char *const fw_names[] = {"unknown", "torch", "paddle", "mindspore"};

struct detect {
    unsigned torch, paddle, mindspore; /* events that look like each */
};

struct input {
    const char *arg;          /* as given; borrowed from argv */
    char *abs;                /* realpath(), owned */
    uint64_t size;            /* st_size at pass 1 */
    struct timespec mtime;    /* st_mtim at pass 1 */
    uint64_t n_events;        /* counted in pass 1 */
    uint64_t n_bytes;         /* uncompressed bytes */
    struct tscan_meta meta;   /* top-level facts from pass 1 */
    bool gzip;
    enum framework fw;
    const char *format;       /* "kineto", "torch-legacy", "paddle", "mindspore-timeline", "chrome" */
    int64_t rank;
    int64_t world_size;
    uint64_t n_rejected;      /* error replies from the daemon, all sessions */
    int64_t fixed_rank;       /* from a MindSpore folder's file names; -1: none */
    const struct msdir_rank *ms; /* converted MindSpore files (lines in memory), or NULL */
    char *dir;                /* the folder's realpath for ms inputs and timelines; owned */
    struct spool *spool;      /* pass 1's converted lines, or NULL: pass 2 reads the file again */
    struct spool *spool2;     /* the second half's, when pass 1 ran in two (they follow spool's) */
    struct order *order;      /* the spool's lines in torch's order (order.h), or NULL: as they are */
    uint64_t n_reordered;     /* threads whose spans are sent in start order instead of the file's */
    struct pdtrace pd;        /* Paddle: how times are rebuilt to the ns (pass 1) */
    char *mem;                /* a Paddle protobuf export's converted lines, owned, or NULL */
    size_t mem_len;
};

struct opts {
    const char *socket;
    const char *http;
    const char *job;
    int64_t rank;             /* -1: not given */
    bool quiet;
};

void import_usage(FILE *f)
{
    fputs("usage: stepscope import [--socket PATH | --http ADDR:PORT] [--job NAME] [--rank R]\n"
          "                        [--quiet] PATH...\n"
          "\n"
          "Imports Chrome-trace files (.json or .json.gz; Kineto, legacy torch, Paddle\n"
          "export_chrome_tracing, MindSpore timelines) and Paddle protobuf exports (.pb) into\n"
          "stepscoped, one file per rank, and MindSpore profiler folders (MindInsight-era\n"
          "profiler/ intermediate files, MindSpore 2.x *_ascend_ms/), one rank per <r> in\n"
          "their file names.\n"
          "Every file is validated completely before anything is sent; the command exits 0 only\n"
          "when the daemon has acknowledged every event. Importing the same file again adds\n"
          "nothing.\n"
          "\n"
          "  --socket PATH  the daemon's socket (default $STEPSCOPE_SOCKET, else\n"
          "                 $XDG_RUNTIME_DIR/stepscope.sock, else /tmp/stepscope-$UID.sock)\n"
          "  --http ADDR:PORT  or the daemon by its HTTP address (env STEPSCOPE_HTTP), which\n"
          "                 names its socket; given both, they must be the same daemon\n"
          "  --job NAME     job name (default: the file name without .gz/.json/.pt.trace,\n"
          "                 .pb/.paddle_trace;\n"
          "                 required with several files)\n"
          "  --rank R       rank of a single file (default: its distributedInfo.rank, else 0);\n"
          "                 with several files ranks come from distributedInfo when every file\n"
          "                 has a distinct one, else from the order of the files\n"
          "  --quiet        print nothing on success\n"
          "\n"
          "exit status: 0 all acknowledged, 1 daemon unreachable or refused, 2 usage,\n"
          "             3 invalid input file (nothing sent), 4 the daemon rejected events\n",
          f);
}

static void usage_error(const char *fmt, ...) SS_PRINTF(1, 2);

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stepscope import: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\ntry 'stepscope import --help'\n", stderr);
    va_end(ap);
}

/* Parses a decimal int64 in [0, INT32_MAX]. */
static bool parse_rank(const char *s, int64_t *ret)
{
    if (!*s)
        return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return false;
    }
    *ret = v;
    return true;
}

static bool job_ok(const char *job)
{
    size_t n = strlen(job);
    if (n == 0 || n > IMPORT_JOB_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)job[i] < 0x20 || job[i] == 0x7f)
            return false;
    return true;
}

static bool has_suffix(const char *s, size_t n, const char *suf)
{
    size_t m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* The default job name: the base name without .gz, .json and .pt.trace (Kineto's
 * "<worker>.<ts>.pt.trace.json"), or .pb and .paddle_trace (Paddle's protobuf export). Caller
 * frees. */
static char *job_from_path(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (has_suffix(b, n, ".gz"))
        n -= 3;
    if (has_suffix(b, n, ".json"))
        n -= 5;
    if (has_suffix(b, n, ".pt.trace"))
        n -= 9;
    if (has_suffix(b, n, ".pb"))
        n -= 3;
    if (has_suffix(b, n, ".paddle_trace"))
        n -= 13;
    if (n == 0)
        n = strlen(b);
    if (n > IMPORT_JOB_MAX)
        n = IMPORT_JOB_MAX;
    char *j = malloc(n + 1);
    if (j) {
        memcpy(j, b, n);
        j[n] = '\0';
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)j[i] < 0x20 || j[i] == 0x7f)
                j[i] = '_';
    }
    return j;
}

/* True when the raw JSON string text q (quotes included) starts with the characters of lit. */
static bool str_starts(const char *q, const char *lit)
{
    return q[0] == '"' && strncmp(q + 1, lit, strlen(lit)) == 0;
}

static bool str_is(const char *q, const char *lit)
{
    size_t n = strlen(lit);
    return q[0] == '"' && strncmp(q + 1, lit, n) == 0 && q[n + 1] == '"' && q[n + 2] == '\0';
}

/* MindSpore operator names end in "-op<digits>" ("AssignAdd-op142", "Default/.../Conv2D-op1"). */
static bool has_ms_op_suffix(const char *q)
{
    const char *p = strstr(q, "-op");
    while (p) {
        const char *d = p + 3;
        if (*d >= '0' && *d <= '9') {
            while (*d >= '0' && *d <= '9')
                d++;
            if (*d == '"' || *d == '\0')
                return true;
        }
        p = strstr(p + 1, "-op");
    }
    return false;
}

enum kind { KIND_NONE, KIND_TORCH, KIND_PADDLE, KIND_MINDSPORE };

/* Which framework an event looks like it came from. */
static enum kind event_kind(const struct tscan_event *ev)
{
    static const char *const torch_cats[] = {"cpu_op", "python_function", "user_annotation",
                                              "gpu_user_annotation", "cuda_runtime", "cuda_driver",
                                              "kernel", "gpu_memcpy", "gpu_memset", "ac2g",
                                              "fwdbwd", "Runtime", "Trace", "cpu_instant_event"};
    static const char *const paddle_cats[] = {"OperatorInner", "PythonOp", "PythonUserDefined",
                                               "Dataloader", "ProfileStep", "CudaRuntime",
                                               "UserDefined", "Forward", "Backward", "Optimization",
                                               "Communication", "MluRuntime"};
    for (size_t i = 0; i < sizeof torch_cats / sizeof torch_cats[0]; i++)
        if (str_is(ev->cat, torch_cats[i]))
            return KIND_TORCH;
    for (size_t i = 0; i < sizeof paddle_cats / sizeof paddle_cats[0]; i++)
        if (str_is(ev->cat, paddle_cats[i]))
            return KIND_PADDLE;
    if (str_starts(ev->name, "aten::") || str_starts(ev->name, "ProfilerStep#") ||
        str_is(ev->pid, "CPU functions"))
        return KIND_TORCH;
    if (str_starts(ev->name, "ProfileStep#"))
        return KIND_PADDLE;
    if (str_starts(ev->name, "Default/") || str_starts(ev->name, "Gradients/") ||
        has_ms_op_suffix(ev->name))
        return KIND_MINDSPORE;
    return KIND_NONE;
}

static void detect_add(struct detect *d, enum kind k)
{
    if (k == KIND_TORCH)
        d->torch++;
    else if (k == KIND_PADDLE)
        d->paddle++;
    else if (k == KIND_MINDSPORE)
        d->mindspore++;
}

static void classify(struct input *in, const struct detect *d)
{
    const struct tscan_meta *m = &in->meta;
    if (m->has_paddle_marker || (d->paddle > 0 && d->paddle >= d->torch))
        in->fw = FW_PADDLE;
    else if (d->torch > 0 || (!m->root_is_array && (m->has_distributed_info || m->schema_version[0] ||
                                                    m->has_device_properties)))
        in->fw = FW_TORCH;
    else if (d->mindspore > 0)
        in->fw = FW_MINDSPORE;
    else
        in->fw = FW_UNKNOWN;
    switch (in->fw) {
    case FW_TORCH:
        in->format = m->root_is_array ? "torch-legacy" : "kineto";
        break;
    case FW_PADDLE:
        in->format = "paddle";
        break;
    case FW_MINDSPORE:
        in->format = "mindspore-timeline";
        break;
    default:
        in->format = "chrome";
        break;
    }
}

/* Pass 1 could not keep the converted lines (a full temporary directory): pass 2 reads the file
 * again instead. */
static void drop_spool(struct input *in, const char *why)
{
    fprintf(stderr, "stepscope import: %s: cannot keep the converted events in a temporary file "
            "(%s); the file will be read a second time to send it\n", in->arg, why);
    spool_free(in->spool);
    in->spool = NULL;
    spool_free(in->spool2);
    in->spool2 = NULL;
    order_free(in->order);
    in->order = NULL;
}

/* Pass 1 could not index the spool (out of memory): its lines go as the file has them. */
static void drop_order(struct input *in)
{
    fprintf(stderr, "stepscope import: %s: out of memory to sort each thread's spans by start; "
            "they are sent in the file's order\n", in->arg);
    order_free(in->order);
    in->order = NULL;
}

/* Pass 1 on a Paddle protobuf export (a name ending in .pb): read whole and converted now; pass
 * 2 sends the lines from memory. Returns 0, or -1 after printing why. */
static int validate_protobuf(struct input *in)
{
    char *buf = NULL;
    size_t len = 0;
    int r = msdir_slurp(in->arg, &buf, &len);
    if (r < 0) {
        fprintf(stderr, "stepscope import: %s: %s\n", in->arg,
                r == -EFBIG ? "larger than 1 GiB" : strerror(-r));
        return -1;
    }
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    sbuf_init(&out, PDPROTO_BYTES_MAX);
    r = pdproto_convert((const uint8_t *)buf, len, &out, &info, err);
    free(buf);
    if (r < 0) {
        fprintf(stderr, "stepscope import: %s: %s\n", in->arg, err);
        fprintf(stderr, "stepscope import: nothing was imported\n");
        sbuf_done(&out);
        return -1;
    }
    /* The sbuf's buffer, now the input's (non-NULL even without events: it marks the input as
     * converted in memory). */
    in->mem = out.data ? out.data : calloc(1, 1);
    in->mem_len = out.len;
    if (!in->mem) {
        fprintf(stderr, "stepscope import: out of memory\n");
        return -1;
    }
    in->n_events = info.n_events;
    in->n_bytes = len;
    in->fw = FW_PADDLE;
    in->format = "paddle-protobuf";
    memset(&in->meta, 0, sizeof in->meta);
    in->meta.dist_rank = in->meta.dist_world_size = -1;
    if (!strpbrk(info.version, "\"\\"))
        snprintf(in->meta.schema_version, sizeof in->meta.schema_version, "\"%s\"", info.version);
    return 0;
}

/* One part of a file's pass 1, scanned by one thread: the whole file, or one of its two halves.
 * A part's troubles with its spool or order index are kept to be told once the parts are put
 * together (a second half may yet be thrown away). */
struct part {
    struct tfile *f;
    int r;                      /* tfile_next()'s last result: 0 (end or pause), or < 0 */
    struct spool *spool;        /* its converted lines, or NULL */
    char spool_why[256];        /* why there is no spool, "" while there is */
    struct order *order;        /* its lines' order index, or NULL */
    bool order_oom;             /* the index ran out of memory */
    struct pdtrace pd;
    struct detect d;            /* kinds of its first IMPORT_DETECT_EVENTS events */
    uint8_t kind[IMPORT_DETECT_EVENTS]; /* those kinds, by the part's own event index */
    atomic_bool *stop;          /* when set, a second half stops early (it will be thrown away) */
};

/* Opens a part at byte off, with a copy of scan (NULL: from the file's start). Returns 0, or -1
 * with err (TFILE_ERR_MAX bytes) saying why. */
static int part_open(struct part *pt, const char *path, uint64_t off, const struct tscan *scan,
                     char *err)
{
    if (tfile_open_at(path, off, scan, &pt->f, err) < 0)
        return -1;
    if (spool_new(&pt->spool, pt->spool_why) < 0)
        pt->spool = NULL;
    else if (!(pt->order = order_new()))
        pt->order_oom = true;
    pdtrace_init(&pt->pd);
    return 0;
}

static void part_free(struct part *pt)
{
    if (!pt)
        return;
    tfile_free(pt->f);
    spool_free(pt->spool);
    order_free(pt->order);
    free(pt);
}

static void part_drop_spool(struct part *pt, int err)
{
    snprintf(pt->spool_why, sizeof pt->spool_why, "%s", strerror(-err));
    spool_free(pt->spool);
    pt->spool = NULL;
    order_free(pt->order);
    pt->order = NULL;
}

/* Scans the part up to its end or pause (pt->r says how it ended): validates it, and notes and
 * spools each event. */
static void part_scan(struct part *pt)
{
    const char *ev;
    size_t len;
    const struct tscan_event *info;
    int r, sr;
    while ((r = tfile_next(pt->f, &ev, &len, &info)) == 1) {
        if (info->index < IMPORT_DETECT_EVENTS) {
            enum kind k = event_kind(info);
            pt->kind[info->index] = (uint8_t)k;
            detect_add(&pt->d, k);
        }
        pdtrace_note(&pt->pd, ev, len, info);
        uint64_t at = pt->spool ? spool_bytes(pt->spool) : 0;
        if (pt->spool && (sr = spool_add(pt->spool, ev, len)) < 0)
            part_drop_spool(pt, sr);
        if (pt->order &&
            order_note(pt->order, info, at, (uint32_t)(spool_bytes(pt->spool) - at - 1)) < 0) {
            order_free(pt->order);
            pt->order = NULL;
            pt->order_oom = true;
        }
        if (pt->stop && atomic_load_explicit(pt->stop, memory_order_relaxed))
            break;
    }
    pt->r = r;
    if (r == 0 && pt->spool && (sr = spool_flush(pt->spool)) < 0)
        part_drop_spool(pt, sr);
}

static void *part_thread(void *arg)
{
    part_scan(arg);
    return NULL;
}

/* Where a plain file of size bytes may be cut in two for pass 1: the offset of a '{' that
 * follows "}," (blanks allowed around the comma) at or after the middle, most likely the start
 * of an event in the events array (tscan_same_position() later tells whether it was); 0 if there
 * is none, or the file is gzip (no seeking), smaller than IMPORT_SPLIT_MIN_BYTES, or the machine
 * has one CPU. $STEPSCOPE_IMPORT_SPLIT_BYTES (a knob for tests) sets the smallest size instead
 * and ignores the CPU count; 0 turns splitting off. */
static uint64_t split_point(const char *path, uint64_t size)
{
    uint64_t min = IMPORT_SPLIT_MIN_BYTES;
    const char *knob = getenv("STEPSCOPE_IMPORT_SPLIT_BYTES");
    if (knob && *knob)
        min = strtoull(knob, NULL, 10);
    else if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
        return 0;
    if (min == 0 || size < min || size < 4)
        return 0;
    char *buf = malloc(IMPORT_SPLIT_PROBE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char magic[2] = {0, 0};
    uint64_t at = size / 2, found = 0;
    ssize_t n = -1;
    if (buf && fd >= 0 && pread(fd, magic, 2, 0) == 2 && !(magic[0] == 0x1f && magic[1] == 0x8b))
        n = pread(fd, buf, IMPORT_SPLIT_PROBE, (off_t)at);
    if (fd >= 0)
        close(fd);
    for (ssize_t i = 0; i < n && !found; i++) {
        if (buf[i] != '}')
            continue;
        ssize_t j = i + 1;
        while (j < n && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\r' || buf[j] == '\n'))
            j++;
        if (j == n || buf[j] != ',')
            continue;
        for (j++; j < n && (buf[j] == ' ' || buf[j] == '\t' || buf[j] == '\r' || buf[j] == '\n');
             j++) {
        }
        if (j < n && buf[j] == '{')
            found = at + (uint64_t)j;
    }
    free(buf);
    return found;
}

/* Starts the second half of a split pass 1 at byte split, in its own thread, guessing that the
 * first half's scanner will stand there between two events. Returns the part (its thread
 * running), or NULL when it cannot (the file is then scanned in one piece). */
static struct part *start_second_half(const char *path, uint64_t split, atomic_bool *stop,
                                      struct tscan *guess, pthread_t *th)
{
    /* A scanner that has seen an event knows the file's layout (the events array's depth). */
    struct tfile *f;
    char err[TFILE_ERR_MAX];
    const char *ev;
    size_t len;
    const struct tscan_event *info;
    if (tfile_open(path, &f, err) < 0)
        return NULL;
    if (tfile_next(f, &ev, &len, &info) != 1 || info->end > split) {
        tfile_free(f);
        return NULL;
    }
    tscan_init_split(guess, tfile_scan(f), split);
    tfile_free(f);
    struct part *b = calloc(1, sizeof *b);
    if (!b || part_open(b, path, split, guess, err) < 0) {
        part_free(b);
        return NULL;
    }
    b->stop = stop;
    if (pthread_create(th, NULL, part_thread, b) != 0) {
        part_free(b);
        return NULL;
    }
    return b;
}

/* Puts the second half b after the first, a (in whose name the results are kept): both scanned
 * cleanly and fit together. The events, facts, detection and Paddle times add up; the spools
 * and order index become one (in->spool2 follows in->spool). */
static void join_halves(struct input *in, struct part *a, struct part *b)
{
    in->meta = *tfile_meta(a->f);
    tscan_meta_merge(&in->meta, tfile_meta(b->f));
    uint64_t n_a = tfile_meta(a->f)->n_events, n_b = tfile_meta(b->f)->n_events;
    for (uint64_t i = 0; n_a + i < IMPORT_DETECT_EVENTS && i < n_b; i++)
        detect_add(&a->d, (enum kind)b->kind[i]);
    pdtrace_merge(&a->pd, &b->pd);
    in->n_bytes = tfile_bytes(b->f);
    if (a->spool && !b->spool) {
        part_drop_spool(a, -EIO);
        snprintf(a->spool_why, sizeof a->spool_why, "%s", b->spool_why);
    }
    if (a->spool && b->spool) {
        in->spool2 = b->spool;
        b->spool = NULL;
        if (a->order &&
            (!b->order || order_append(a->order, b->order, spool_bytes(a->spool)) < 0)) {
            order_free(a->order); /* the second half's index ran out of memory, or the join */
            a->order = NULL;
            a->order_oom = true;
        }
    }
}

/* Pass 1 on one file: validates it and, when a temporary file can hold them, keeps the protocol
 * lines it converts for pass 2. A large plain file is scanned in two halves at once, one thread
 * each, when it can be cut between two events; when the halves do not fit together (the cut was
 * not between events, or the second half failed), the first half's scan goes on alone to the end,
 * so that results and errors are those of one scan. Returns 0, or -1 after printing why the file
 * is unusable. */
static int validate(struct input *in)
{
    if (in->ms) {
        in->n_events = in->ms->n_lines;
        in->fw = FW_MINDSPORE;
        in->format = "mindspore-profiler";
        return 0;
    }
    struct stat st;
    char err[TFILE_ERR_MAX];
    if (stat(in->arg, &st) < 0) {
        fprintf(stderr, "stepscope import: %s: %s\n", in->arg, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "stepscope import: %s: not a regular file\n", in->arg);
        return -1;
    }
    in->abs = realpath(in->arg, NULL);
    if (!in->abs) {
        fprintf(stderr, "stepscope import: %s: %s\n", in->arg, strerror(errno));
        return -1;
    }
    in->size = (uint64_t)st.st_size;
    in->mtime = st.st_mtim;
    if (has_suffix(in->arg, strlen(in->arg), ".pb"))
        return validate_protobuf(in);
    struct part *a = calloc(1, sizeof *a);
    if (!a) {
        fprintf(stderr, "stepscope import: out of memory\n");
        return -1;
    }
    if (part_open(a, in->arg, 0, NULL, err) < 0) {
        fprintf(stderr, "stepscope import: %s\n", err);
        part_free(a);
        return -1;
    }
    uint64_t split = split_point(in->arg, in->size);
    atomic_bool stop = false;
    struct tscan *guess = split ? malloc(sizeof *guess) : NULL;
    pthread_t th;
    struct part *b = guess ? start_second_half(in->arg, split, &stop, guess, &th) : NULL;
    if (b)
        tfile_pause_at(a->f, split);
    part_scan(a);
    bool joined = false;
    if (b) {
        bool fits = a->r == 0 && tscan_same_position(tfile_scan(a->f), guess);
        if (!fits)
            atomic_store(&stop, true);
        pthread_join(th, NULL);
        if (fits && b->r == 0) {
            join_halves(in, a, b);
            joined = true;
            if (getenv("STEPSCOPE_IMPORT_SPLIT_BYTES"))
                fprintf(stderr, "stepscope import: %s: validated in two parts, cut at byte %llu\n",
                        in->arg, (unsigned long long)split);
        } else if (a->r == 0) {
            tfile_pause_at(a->f, UINT64_MAX); /* one piece after all: go on to the end */
            part_scan(a);
        }
        part_free(b);
    }
    free(guess);
    if (a->r < 0) {
        fprintf(stderr, "stepscope import: %s\n", tfile_error(a->f));
        fprintf(stderr, "stepscope import: nothing was imported\n");
        part_free(a);
        return -1;
    }
    if (!joined) {
        in->meta = *tfile_meta(a->f);
        in->n_bytes = tfile_bytes(a->f);
        in->gzip = tfile_is_gzip(a->f);
    }
    in->n_events = in->meta.n_events;
    in->spool = a->spool;
    in->order = a->order;
    in->pd = a->pd;
    a->spool = NULL;
    a->order = NULL;
    if (!in->spool)
        drop_spool(in, a->spool_why);
    else if (a->order_oom)
        drop_order(in);
    classify(in, &a->d);
    part_free(a);
    if (in->fw == FW_PADDLE) {
        /* Paddle's events are rewritten (pdtrace.h) with what only the whole file tells: pass 2
         * reads the file again instead of sending the lines as they were spooled. */
        pdtrace_finish(&in->pd);
        spool_free(in->spool);
        in->spool = NULL;
        spool_free(in->spool2);
        in->spool2 = NULL;
        order_free(in->order);
        in->order = NULL;
    }
    int r;
    if (in->order && (r = order_finish(in->order, &in->n_reordered)) <= 0) {
        if (r < 0)
            drop_order(in);
        order_free(in->order); /* every thread in order: the spool goes as it is */
        in->order = NULL;
        in->n_reordered = 0;
    }
    return 0;
}

/* Ranks and world sizes for all files (see usage). */
static void assign_ranks(struct input *ins, size_t n, const struct opts *o)
{
    bool folder = false;
    for (size_t i = 0; i < n; i++)
        folder = folder || ins[i].fixed_rank >= 0;
    if (folder) {
        /* Ranks from the folders' file names (--rank: one path with one rank); files named
         * next to them take 0, 1, ... in order, or their distributedInfo rank. */
        int64_t ws = 1;
        for (size_t i = 0, k = 0; i < n; i++) {
            struct input *in = &ins[i];
            if (in->fixed_rank >= 0)
                in->rank = o->rank >= 0 ? o->rank : in->fixed_rank;
            else
                in->rank = in->meta.dist_rank >= 0 ? in->meta.dist_rank : (int64_t)k++;
            if (in->rank + 1 > ws)
                ws = in->rank + 1;
            if (!in->ms && in->meta.dist_world_size > ws)
                ws = in->meta.dist_world_size;
        }
        for (size_t i = 0; i < n; i++)
            ins[i].world_size = ws;
        return;
    }
    if (n == 1) {
        struct input *in = &ins[0];
        in->rank = o->rank >= 0 ? o->rank : in->meta.dist_rank >= 0 ? in->meta.dist_rank : 0;
        in->world_size = in->meta.dist_world_size > in->rank ? in->meta.dist_world_size
                                                              : in->rank + 1;
        return;
    }
    bool from_dist = true;
    for (size_t i = 0; i < n && from_dist; i++) {
        if (ins[i].meta.dist_rank < 0)
            from_dist = false;
        for (size_t j = 0; j < i && from_dist; j++)
            if (ins[j].meta.dist_rank == ins[i].meta.dist_rank)
                from_dist = false;
    }
    int64_t ws = (int64_t)n;
    for (size_t i = 0; i < n; i++) {
        ins[i].rank = from_dist ? ins[i].meta.dist_rank : (int64_t)i;
        if (ins[i].rank + 1 > ws)
            ws = ins[i].rank + 1;
        if (from_dist && ins[i].meta.dist_world_size > ws)
            ws = ins[i].meta.dist_world_size;
    }
    for (size_t i = 0; i < n; i++)
        ins[i].world_size = ws;
}

/* FNV-1a, for stream keys of paths too long to spell out. */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* The hello's members every input has: job, rank, framework, stream, source, format, file. */
static void hello_head(struct sbuf *b, const struct input *in, const char *job, const char *key,
                       const char *file)
{
    sbuf_adds(b, "{\"hello\":\"stepscope/1\",\"job\":");
    sbuf_json_strz(b, job);
    sbuf_printf(b, ",\"rank\":%lld,\"world_size\":%lld,\"framework\":\"%s\",\"stream\":",
                (long long)in->rank, (long long)in->world_size, fw_names[in->fw]);
    sbuf_json_strz(b, key);
    sbuf_adds(b, ",\"source\":\"import\",\"format\":\"");
    sbuf_adds(b, in->format);
    sbuf_adds(b, "\",\"file\":");
    sbuf_json_strz(b, file);
    sbuf_printf(b, ",\"file_events\":%llu", (unsigned long long)in->n_events);
}

/* The hello of a converted MindSpore folder rank: its stream is the folder, the rank and a hash
 * of the converted lines, so the same files import once and changed files import again. */
static void build_ms_hello(struct sbuf *b, const struct input *in, const char *job)
{
    const struct msdir_rank *r = in->ms;
    char key[IMPORT_STREAM_MAX + 64];
    snprintf(key, sizeof key, "import:%s:rank%lld:fnv1a64=%016llx", in->dir, (long long)r->rank,
             (unsigned long long)r->hash);
    if (strlen(key) > IMPORT_STREAM_MAX)
        snprintf(key, sizeof key, "import:fnv1a64=%016llx:rank%lld:fnv1a64=%016llx",
                 (unsigned long long)fnv1a(in->dir), (long long)r->rank,
                 (unsigned long long)r->hash);
    hello_head(b, in, job, key, in->dir);
    sbuf_adds(b, ",\"files\":");
    sbuf_json_strz(b, r->files);
    if (r->pid >= 0) { /* the training's, from its run folder's name */
        sbuf_adds(b, ",\"host\":");
        sbuf_json_strz(b, r->host);
        sbuf_printf(b, ",\"pid\":%lld", (long long)r->pid);
    }
    if (r->fp && r->bp) {
        /* The step-trace markers carry these names: the daemon's FP/BP override finds them. */
        sbuf_adds(b, ",\"env\":{\"STEPSCOPE_FP_POINT\":");
        sbuf_json_strz(b, r->fp);
        sbuf_adds(b, ",\"STEPSCOPE_BP_POINT\":");
        sbuf_json_strz(b, r->bp);
        sbuf_addc(b, '}');
    }
    sbuf_addc(b, '}');
}

static void build_hello(struct sbuf *b, const struct input *in, const char *job)
{
    if (in->ms) {
        build_ms_hello(b, in, job);
        return;
    }
    char key[IMPORT_STREAM_MAX + 64];
    snprintf(key, sizeof key, "import:%s:%llu:%lld.%09ld", in->abs, (unsigned long long)in->size,
             (long long)in->mtime.tv_sec, (long)in->mtime.tv_nsec);
    if (strlen(key) > IMPORT_STREAM_MAX)
        snprintf(key, sizeof key, "import:fnv1a64=%016llx:%llu:%lld.%09ld",
                 (unsigned long long)fnv1a(in->abs), (unsigned long long)in->size,
                 (long long)in->mtime.tv_sec, (long)in->mtime.tv_nsec);
    const struct tscan_meta *m = &in->meta;
    /* No "seq": the daemon then numbers the first line by its next_seq, which is where this
     * session starts sending (lines below it are already held). */
    hello_head(b, in, job, key, in->abs);
    /* Top-level facts of the trace, as the raw JSON values they were (already validated). */
    sbuf_adds(b, ",\"trace\":{");
    const char *sep = "";
    const struct {
        const char *key;
        const char *val;
    } facts[] = {{"schemaVersion", m->schema_version},
                 {"displayTimeUnit", m->display_time_unit},
                 {"baseTimeNanoseconds", m->base_time_ns},
                 {"traceName", m->trace_name},
                 {"backend", m->dist_backend}};
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        /* A value cut at TSCAN_CAP_MAX would not be valid JSON any more: leave it out. */
        if (!facts[i].val[0] || strlen(facts[i].val) >= TSCAN_CAP_MAX)
            continue;
        sbuf_printf(b, "%s\"%s\":%s", sep, facts[i].key, facts[i].val);
        sep = ",";
    }
    if (m->dist_rank >= 0) {
        sbuf_printf(b, "%s\"rank\":%lld", sep, (long long)m->dist_rank);
        sep = ",";
    }
    if (m->dist_world_size >= 0)
        sbuf_printf(b, "%s\"world_size\":%lld", sep, (long long)m->dist_world_size);
    sbuf_adds(b, "}}");
}

struct session_ctx {
    struct input *in;
    uint64_t shown;
};

static void on_daemon_error(void *ud, int64_t seq, int64_t line, const char *code,
                            const char *message)
{
    struct session_ctx *ctx = ud;
    ctx->in->n_rejected++;
    if (ctx->shown++ < IMPORT_ERRORS_SHOWN)
        fprintf(stderr, "stepscope import: %s: the daemon rejected event #%lld (line %lld): %s: %s\n",
                ctx->in->arg, (long long)seq, (long long)line, code, message);
}

enum outcome {
    OUT_DONE,         /* every line acked */
    OUT_UNREACHABLE,  /* could not connect */
    OUT_REFUSED,      /* hello refused */
    OUT_BROKEN,       /* the session broke after its welcome: worth another attempt */
    OUT_INPUT,        /* the file changed or failed on the second read */
};

#define RUN_FILE_MIN (64u << 10) /* runs this long go by sendfile(); shorter ones are copied */
#define RUN_WINDOW RUN_FILE_MIN  /* bytes of the spool read at a time for the short runs */
#define RUN_WINDOWS 16           /* windows kept, one per spool region being sent from */

/* The spooled lines are in->spool's bytes, then in->spool2's (pass 1 in two halves): one byte
 * range, [0, spooled_bytes()), of which spooled_piece() tells the file and offset. */
static uint64_t spooled_bytes(const struct input *in)
{
    return spool_bytes(in->spool) + (in->spool2 ? spool_bytes(in->spool2) : 0);
}

/* Byte off of the spooled lines: *ret_fd, the offset there, and how many bytes follow in that
 * file. */
static void spooled_piece(const struct input *in, uint64_t off, int *ret_fd, uint64_t *ret_off,
                          uint64_t *ret_avail)
{
    uint64_t first = spool_bytes(in->spool);
    if (off < first || !in->spool2) {
        *ret_fd = spool_fd(in->spool);
        *ret_off = off;
        *ret_avail = off < first ? first - off : 0;
    } else {
        *ret_fd = spool_fd(in->spool2);
        *ret_off = off - first;
        *ret_avail = off - first < spool_bytes(in->spool2) ? spool_bytes(in->spool2) - (off - first)
                                                           : 0;
    }
}

/* Where line (0-based) of the spooled lines starts. Returns 0 or as spool_line_offset(). */
static int spooled_line_offset(const struct input *in, uint64_t line, uint64_t *ret_off)
{
    uint64_t n1 = spool_lines(in->spool);
    if (!in->spool2 || line <= n1)
        return spool_line_offset(in->spool, line, ret_off);
    int r = spool_line_offset(in->spool2, line - n1, ret_off);
    *ret_off += spool_bytes(in->spool);
    return r;
}

/* Sends the spooled bytes [off, off + len) with sendfile(). Returns 0 or as client_send_file(). */
static int send_spooled(struct client *c, const struct input *in, uint64_t off, uint64_t len,
                        char *err)
{
    while (len > 0) {
        int fd;
        uint64_t at, avail;
        spooled_piece(in, off, &fd, &at, &avail);
        uint64_t n = len < avail ? len : avail;
        if (n == 0) {
            snprintf(err, CLIENT_ERR_MAX, "temporary file: it ended early");
            return -EIO;
        }
        int r = client_send_file(c, fd, at, n, err);
        if (r < 0)
            return r;
        off += n;
        len -= n;
    }
    return 0;
}

/* Reads up to n spooled bytes from off into buf. Returns the bytes read (fewer only at the
 * end), or a negative errno with err set. */
static ssize_t read_spooled(const struct input *in, char *buf, size_t n, uint64_t off, char *err)
{
    size_t got = 0;
    while (got < n) {
        int fd;
        uint64_t at, avail;
        spooled_piece(in, off + got, &fd, &at, &avail);
        if (avail == 0)
            break;
        size_t want = n - got < avail ? n - got : (size_t)avail;
        ssize_t r = pread(fd, buf + got, want, (off_t)at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, CLIENT_ERR_MAX, "temporary file: %s", strerror(errno));
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* A window: RUN_WINDOW bytes of the spooled lines from off (len of them read). */
struct run_window {
    uint64_t off, used; /* used: when it last served a run (0: never) */
    size_t len;
    char *buf;
};

struct run_ctx {
    struct client *c;
    const struct input *in;
    char *err;
    struct run_window win[RUN_WINDOWS];
    uint64_t tick;
};

/* order_runs() callback: one run of spooled lines. A reordered thread makes many runs of a line
 * or two, and a sendfile() call each would cost more than the copy: those are read a window at
 * a time and queued like any line, in order with the long runs, which client_send_file() sends
 * only once the queue is out. Each thread's lines lie together in the spool, so a trace whose
 * threads interleave in time jumps between as many regions as it has threads: a window is kept
 * per region (the least recently used one is read anew), and a window is no larger than a run
 * that is copied, so a jump reads what the next runs use rather than a whole MiB (issue 14.5:
 * 73,536 reads of 1 MiB to send the 22 MB of gpu_5steps_rank0). */
static int send_run(void *ud, uint64_t off, uint64_t len)
{
    struct run_ctx *rc = ud;
    if (len >= RUN_FILE_MIN)
        return send_spooled(rc->c, rc->in, off, len, rc->err);
    struct run_window *w = NULL, *lru = &rc->win[0];
    for (struct run_window *x = rc->win; x < rc->win + RUN_WINDOWS && !w; x++) {
        if (x->used && off >= x->off && off + len <= x->off + x->len)
            w = x;
        else if (x->used < lru->used)
            lru = x;
    }
    if (!w) {
        w = lru;
        w->used = 0; /* unusable until it is read whole */
        ssize_t got = read_spooled(rc->in, w->buf, RUN_WINDOW, off, rc->err);
        if (got < 0)
            return (int)got;
        if ((uint64_t)got < len) {
            snprintf(rc->err, CLIENT_ERR_MAX, "temporary file: it ended early");
            return -EIO;
        }
        w->off = off;
        w->len = (size_t)got;
    }
    w->used = ++rc->tick;
    const char *p = w->buf + (off - w->off), *end = p + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        int r = client_send(rc->c, p, (size_t)(le - p), rc->err);
        if (r < 0)
            return r;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* One session: connect, hello, send from next_seq, bye, wait for the final ack. */
static enum outcome import_once(struct input *in, const char *job, const char *sock,
                                bool *ret_welcomed, uint64_t *ret_skipped, char *err)
{
    struct session_ctx ctx = {.in = in};
    struct client *c = NULL;
    struct tfile *f = NULL;
    struct sbuf hello, line;
    enum outcome out = OUT_BROKEN;
    sbuf_init(&hello, 1u << 20);
    sbuf_init(&line, TSCAN_EVENT_BYTES_MAX + 1);
    if (client_open(sock, on_daemon_error, &ctx, &c, err) < 0) {
        out = OUT_UNREACHABLE;
        goto done;
    }
    build_hello(&hello, in, job);
    if (hello.error) {
        snprintf(err, CLIENT_ERR_MAX, "out of memory");
        out = OUT_REFUSED;
        goto done;
    }
    uint64_t next_seq;
    int r = client_hello(c, hello.data, hello.len, &next_seq, err);
    if (r == -EPROTO) {
        out = OUT_REFUSED;
        goto done;
    }
    if (r < 0)
        goto done;
    *ret_welcomed = true;
    *ret_skipped = next_seq < in->n_events ? next_seq : in->n_events;
    if (in->ms || in->mem) {
        /* Converted lines, in memory: send those past next_seq. */
        const char *p = in->ms ? in->ms->lines : in->mem;
        const char *end = p + (in->ms ? in->ms->len : in->mem_len);
        for (uint64_t i = 0; p < end; i++) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;
            if (i >= next_seq && client_send(c, p, (size_t)(le - p), err) < 0)
                goto done;
            p = nl ? nl + 1 : end;
        }
        uint64_t bye = next_seq > in->n_events ? next_seq : in->n_events;
        if (client_finish(c, bye + 1, err) < 0)
            goto done;
        out = OUT_DONE;
        goto done;
    }
    if (in->spool) {
        /* Pass 1's lines: stream those past next_seq straight from the temporary file. */
        uint64_t off, total = spooled_bytes(in);
        r = spooled_line_offset(in, next_seq < in->n_events ? next_seq : in->n_events, &off);
        if (r < 0) {
            snprintf(err, CLIENT_ERR_MAX, "temporary file: %s", strerror(-r));
            out = OUT_INPUT;
            goto done;
        }
        if (in->order) {
            /* Each thread's spans in torch's order: the spool's lines in order_runs()' order. */
            struct run_ctx rc = {.c = c, .in = in, .err = err};
            char *wins = malloc((size_t)RUN_WINDOWS * RUN_WINDOW);
            for (size_t i = 0; wins && i < RUN_WINDOWS; i++)
                rc.win[i].buf = wins + i * RUN_WINDOW;
            r = wins ? order_runs(in->order, next_seq < in->n_events ? next_seq : in->n_events,
                                  send_run, &rc)
                     : -ENOMEM;
            free(wins);
            if (r == -ENOMEM)
                snprintf(err, CLIENT_ERR_MAX, "out of memory");
            if (r < 0)
                goto done;
        } else if (off < total && send_spooled(c, in, off, total - off, err) < 0) {
            goto done;
        }
        uint64_t bye = next_seq > in->n_events ? next_seq : in->n_events;
        if (client_finish(c, bye + 1, err) < 0)
            goto done;
        out = OUT_DONE;
        goto done;
    }
    char ferr[TFILE_ERR_MAX];
    if (tfile_open(in->arg, &f, ferr) < 0) {
        snprintf(err, CLIENT_ERR_MAX, "%s", ferr);
        out = OUT_INPUT;
        goto done;
    }
    const char *ev;
    size_t len;
    const struct tscan_event *info;
    while ((r = tfile_next(f, &ev, &len, &info)) == 1) {
        if (info->index < next_seq)
            continue; /* the daemon holds it already */
        if (in->fw == FW_PADDLE) {
            /* Times to the ns and names without the duration suffix, as the live collector. */
            sbuf_reset(&line);
            pdtrace_rewrite(&in->pd, ev, len, info, &line);
            if (line.error) {
                snprintf(err, CLIENT_ERR_MAX, "out of memory");
                goto done;
            }
            ev = line.data;
            len = line.len;
        }
        if (client_send(c, ev, len, err) < 0)
            goto done;
    }
    if (r < 0 || tfile_meta(f)->n_events != in->n_events) {
        snprintf(err, CLIENT_ERR_MAX, "%s changed since it was validated: %s", in->arg,
                 r < 0 ? tfile_error(f) : "different number of events");
        out = OUT_INPUT;
        goto done;
    }
    /* Every event took a sequence number (or was below next_seq); the bye takes the next. */
    uint64_t bye_seq = next_seq > in->n_events ? next_seq : in->n_events;
    if (client_finish(c, bye_seq + 1, err) < 0)
        goto done;
    out = OUT_DONE;
done:
    tfile_free(f);
    client_free(c);
    sbuf_done(&hello);
    sbuf_done(&line);
    return out;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/* Pass 2 on one file, with retries when an established session breaks. */
static int import_file(struct input *in, const char *job, const struct opts *o)
{
    char err[CLIENT_ERR_MAX];
    bool welcomed = false;
    uint64_t skipped = 0, first_skipped = 0;
    long backoff = 100;
    for (int attempt = 1;; attempt++) {
        bool w = false;
        enum outcome out = import_once(in, job, o->socket, &w, &skipped, err);
        if (w && !welcomed)
            first_skipped = skipped;
        welcomed = welcomed || w;
        char sorted[96] = "";
        if (in->order)
            snprintf(sorted, sizeof sorted, "; %llu threads' spans sent in start order",
                     (unsigned long long)in->n_reordered);
        if (in->fw == FW_PADDLE && in->pd.n && !in->pd.exact)
            snprintf(sorted, sizeof sorted, "; ts kept as written (whole us): the args.start_time "
                     "offsets contradict them");
        switch (out) {
        case OUT_DONE:
            if (!o->quiet && in->ms)
                printf("%s (%s): %llu records, job \"%s\" rank %lld of %lld, mindspore "
                       "(mindspore-profiler): %llu sent, %llu already held, %llu rejected\n",
                       in->arg, in->ms->files, (unsigned long long)in->n_events, job,
                       (long long)in->rank, (long long)in->world_size,
                       (unsigned long long)(in->n_events - first_skipped),
                       (unsigned long long)first_skipped, (unsigned long long)in->n_rejected);
            else if (!o->quiet)
                printf("%s: %llu events, job \"%s\" rank %lld of %lld, %s (%s): %llu sent, "
                       "%llu already held, %llu rejected%s\n",
                       in->arg, (unsigned long long)in->n_events, job, (long long)in->rank,
                       (long long)in->world_size, fw_names[in->fw], in->format,
                       (unsigned long long)(in->n_events - first_skipped),
                       (unsigned long long)first_skipped, (unsigned long long)in->n_rejected,
                       sorted);
            return in->n_rejected ? IMPORT_EXIT_REJECTED : IMPORT_EXIT_OK;
        case OUT_INPUT:
            fprintf(stderr, "stepscope import: %s\n", err);
            return IMPORT_EXIT_INPUT;
        case OUT_REFUSED:
            fprintf(stderr, "stepscope import: %s: %s\n", in->arg, err);
            return IMPORT_EXIT_DAEMON;
        case OUT_UNREACHABLE:
            /* Only a daemon that was there before is worth waiting for (it may be restarting). */
            if (!welcomed) {
                fprintf(stderr, "stepscope import: %s\n", err);
                return IMPORT_EXIT_DAEMON;
            }
            break;
        case OUT_BROKEN:
            break;
        }
        if (attempt == IMPORT_ATTEMPTS) {
            fprintf(stderr, "stepscope import: %s: giving up after %d attempts: %s\n", in->arg,
                    attempt, err);
            return IMPORT_EXIT_DAEMON;
        }
        fprintf(stderr, "stepscope import: %s: %s; retrying in %ld ms\n", in->arg, err, backoff);
        sleep_ms(backoff);
        backoff *= 3;
    }
}

/* One input per file argument; a folder argument becomes one input per rank of its MindSpore
 * files plus one per timeline it holds. Returns 0, or -1 after printing why. */
static int expand(const char **paths, size_t n, struct msdir **dirs, struct input **ret_ins,
                  size_t *ret_n)
{
    size_t cap = n, k = 0;
    int ret = 0;
    struct input *ins = calloc(cap, sizeof *ins);
    if (!ins) {
        fputs("stepscope import: out of memory\n", stderr);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        size_t need = 1;
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (msdir_scan(paths[i], &dirs[i]) < 0) {
                ret = -1;
                continue;
            }
            need = dirs[i]->n_ranks + dirs[i]->n_timelines;
        }
        if (k + need > cap) {
            size_t nc = (k + need) * 2;
            struct input *ni = realloc(ins, nc * sizeof *ni);
            if (!ni) {
                fputs("stepscope import: out of memory\n", stderr);
                ret = -1;
                break;
            }
            memset(ni + cap, 0, (nc - cap) * sizeof *ni);
            ins = ni;
            cap = nc;
        }
        if (!dirs[i]) {
            ins[k].arg = paths[i];
            ins[k++].fixed_rank = -1;
            continue;
        }
        char *abs = realpath(paths[i], NULL);
        for (size_t r = 0; abs && r < dirs[i]->n_ranks; r++) {
            ins[k].arg = paths[i];
            ins[k].ms = &dirs[i]->ranks[r];
            ins[k].fixed_rank = dirs[i]->ranks[r].rank;
            ins[k++].dir = strdup(abs);
        }
        for (size_t r = 0; abs && r < dirs[i]->n_timelines; r++) {
            ins[k].arg = dirs[i]->timelines[r].path;
            ins[k].fixed_rank = dirs[i]->timelines[r].rank;
            ins[k++].dir = strdup(abs);
        }
        if (!abs) {
            fprintf(stderr, "stepscope import: %s: %s\n", paths[i], strerror(errno));
            ret = -1;
        }
        free(abs);
    }
    for (size_t i = 0; i < k; i++)
        if (ins[i].fixed_rank >= 0 && !ins[i].dir) {
            fputs("stepscope import: out of memory\n", stderr);
            ret = -1;
            break;
        }
    *ret_ins = ins;
    *ret_n = k;
    return ret;
}

int import_command(int argc, char **argv)
{
    struct opts o = {.rank = -1};
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t n = 0;
    int ret = IMPORT_EXIT_USAGE;
    struct hclient_target target;
    char *job_owned = NULL;
    struct input *ins = NULL;
    size_t n_in = 0;
    struct msdir **dirs = NULL;
    if (!paths) {
        fputs("stepscope import: out of memory\n", stderr);
        return IMPORT_EXIT_USAGE;
    }
    bool opts_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (opts_done || a[0] != '-' || strcmp(a, "-") == 0) {
            paths[n++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            opts_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            import_usage(stdout);
            ret = IMPORT_EXIT_OK;
            goto out;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o.quiet = true;
            continue;
        }
        const char *names[] = {"--socket", "--job", "--rank", "--http"};
        size_t k;
        for (k = 0; k < 4; k++) {
            size_t nl = strlen(names[k]);
            if (strncmp(a, names[k], nl) == 0 && (a[nl] == '\0' || a[nl] == '=')) {
                if (a[nl] == '=')
                    val = a + nl + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                break;
            }
        }
        if (k == 4) {
            usage_error("unknown option %s", a);
            goto out;
        }
        if (!val) {
            usage_error("%s needs a value", a);
            goto out;
        }
        if (k == 0) {
            o.socket = val;
        } else if (k == 3) {
            o.http = val;
        } else if (k == 1) {
            if (!job_ok(val)) {
                usage_error("--job must be 1 to 256 bytes without control characters: %s", val);
                goto out;
            }
            o.job = val;
        } else if (!parse_rank(val, &o.rank)) {
            usage_error("--rank must be an integer from 0 to 2147483647: %s", val);
            goto out;
        }
    }
    if (n == 0) {
        usage_error("%s", "no file to import");
        goto out;
    }
    if (n > 1 && o.rank >= 0) {
        usage_error("%s", "--rank applies to a single file; with several files ranks come from "
                          "distributedInfo or the order of the files");
        goto out;
    }
    if (n > 1 && !o.job) {
        usage_error("%s", "several files go into one job: name it with --job NAME");
        goto out;
    }
    /* The daemon's socket: given, or asked from the daemon --http names (locate.h). */
    struct hclient_options lo = {.http = o.http, .socket = o.socket};
    char lerr[HCLIENT_ERR_MAX];
    int lr = locate_daemon(&target, environ, &lo, LOCATE_SOCKET, lerr);
    explicit_bzero(target.token, sizeof target.token);
    if (lr < 0) {
        fprintf(stderr, "stepscope import: %s\n", lerr);
        ret = lr == -EINVAL ? IMPORT_EXIT_USAGE : IMPORT_EXIT_DAEMON;
        goto out;
    }
    o.socket = target.socket;

    /* Pass 1: every file, completely, before anything is sent. */
    dirs = calloc(n, sizeof *dirs);
    if (!dirs) {
        fputs("stepscope import: out of memory\n", stderr);
        goto out;
    }
    bool bad = false;
    if (expand(paths, n, dirs, &ins, &n_in) < 0) {
        ret = IMPORT_EXIT_INPUT;
        goto out;
    }
    if (o.rank >= 0) {
        for (size_t i = 0; i < n_in; i++)
            if (ins[i].fixed_rank >= 0 && ins[i].fixed_rank != ins[0].fixed_rank) {
                usage_error("--rank applies to a folder of one rank; %s holds several", paths[0]);
                goto out;
            }
    }
    for (size_t i = 0; i < n_in; i++)
        if (validate(&ins[i]) < 0)
            bad = true;
    if (bad) {
        ret = IMPORT_EXIT_INPUT;
        goto out;
    }
    assign_ranks(ins, n_in, &o);
    const char *job = o.job;
    if (!job) {
        job = job_owned = job_from_path(ins[0].dir ? ins[0].dir : ins[0].arg);
        if (!job) {
            fputs("stepscope import: out of memory\n", stderr);
            goto out;
        }
    }

    /* Pass 2: send, one session per file. sendfile(2) has no MSG_NOSIGNAL: a daemon that goes
     * away must give EPIPE, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    ret = IMPORT_EXIT_OK;
    for (size_t i = 0; i < n_in; i++) {
        int r = import_file(&ins[i], job, &o);
        if (r == IMPORT_EXIT_REJECTED)
            ret = r;
        else if (r != IMPORT_EXIT_OK) {
            ret = r;
            break;
        }
    }
out:
    for (size_t i = 0; i < n_in; i++) {
        free(ins[i].abs);
        free(ins[i].dir);
        free(ins[i].mem);
        spool_free(ins[i].spool);
        spool_free(ins[i].spool2);
        order_free(ins[i].order);
    }
    free(ins);
    for (size_t i = 0; dirs && i < n; i++)
        msdir_free(dirs[i]);
    free(dirs);
    free(job_owned);
    free(paths);
    return ret;
}
