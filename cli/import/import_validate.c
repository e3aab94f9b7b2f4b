/* SPDX-License-Identifier: MIT */
/*
 * import, pass 1 (import_int.h): every input read to the end through trace_file/trace_scan in
 * constant memory (or, for a Paddle protobuf export, whole), validated, its framework guessed and
 * its protocol lines written to an unlinked temporary file (line_spool.h), noting whether each
 * thread's spans come in torch's order (span_order.h). A large plain file is read in two halves
 * at once, one thread each, cut at what looks like an event boundary; the halves' results are
 * put together only when the first half's scanner reaches the cut exactly as the second assumed
 * (tscan_same_position()), else the first goes on alone, so the outcome is always that of one
 * scan.
 */
#include "import_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "line_spool.h"
#include "paddle_proto.h"
#include "sbuf.h"
#include "span_order.h"
#include "trace_file.h"

#define IMPORT_SPLIT_MIN_BYTES (64ull << 20) /* plain files from this size: pass 1 in two halves */
#define IMPORT_SPLIT_PROBE 65536  /* bytes looked at from the middle for where to cut */

/* Pass 2 will read the file again: the spooled lines and their order index go. */
static void free_spooled(struct input *in)
{
    spool_free(in->spool);
    in->spool = NULL;
    spool_free(in->spool2);
    in->spool2 = NULL;
    order_free(in->order);
    in->order = NULL;
}

/* Pass 1 could not keep the converted lines (a full temporary directory): pass 2 reads the file
 * again instead. */
static void drop_spool(struct input *in, const char *why)
{
    fprintf(stderr, "stepscope import: %s: cannot keep the converted events in a temporary file "
            "(%s); the file will be read a second time to send it\n", in->arg, why);
    free_spooled(in);
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
            enum kind k = detect_event_kind(info);
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

/* Pass 1 on one file (import_int.h). A large plain file is scanned in two halves at once, one
 * thread each, when it can be cut between two events; when the halves do not fit together (the
 * cut was not between events, or the second half failed), the first half's scan goes on alone to
 * the end, so that results and errors are those of one scan. */
int import_validate(struct input *in)
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
    if (import_has_suffix(in->arg, strlen(in->arg), ".pb"))
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
    detect_classify(in, &a->d);
    part_free(a);
    if (in->fw == FW_PADDLE) {
        /* Paddle's events are rewritten (paddle_times.h) with what only the whole file tells:
         * pass 2 reads the file again instead of sending the lines as they were spooled. */
        pdtrace_finish(&in->pd);
        free_spooled(in);
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
