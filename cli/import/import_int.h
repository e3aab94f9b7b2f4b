/* SPDX-License-Identifier: MIT */
/*
 * The `stepscope import` command's shared types, internal to cli/import/import*.c (the contract
 * is import.h). One file per step of the command:
 *   import.c           options, inputs (files and MindSpore folders), the two passes in order
 *   import_detect.c    which framework wrote a Chrome-trace file, from its first events
 *   import_validate.c  pass 1: every file validated, converted and spooled (large plain files in
 *                      two halves at once), before anything is sent
 *   import_hello.c     ranks and world sizes, stream keys and each session's hello
 *   import_send.c      pass 2: one session per file, lines from the spool, memory or the file,
 *                      retried when a connection breaks
 */
#ifndef STEPSCOPE_IMPORT_IMPORT_INT_H
#define STEPSCOPE_IMPORT_IMPORT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mindspore_dir.h"
#include "paddle_times.h"
#include "trace_scan.h"

#define IMPORT_DETECT_EVENTS 10000 /* events looked at to guess the framework */

enum framework { FW_UNKNOWN, FW_TORCH, FW_PADDLE, FW_MINDSPORE };

/* The hello's "framework" of each (import_detect.c). */
extern const char *const import_fw_names[];

/* What an event looks like (import_detect.c). */
enum kind { KIND_NONE, KIND_TORCH, KIND_PADDLE, KIND_MINDSPORE };

struct detect {
    unsigned torch, paddle, mindspore; /* events that look like each */
};

/* One rank to send: a file, or one rank of a MindSpore folder. */
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

static inline bool import_has_suffix(const char *s, size_t n, const char *suf)
{
    size_t m = strlen(suf);
    return n >= m && memcmp(s + n - m, suf, m) == 0;
}

/* Which framework an event looks like it came from. */
enum kind detect_event_kind(const struct tscan_event *ev);

/* Counts an event of kind k. */
void detect_add(struct detect *d, enum kind k);

/* Sets in->fw and in->format from the file's facts and the kinds of its first events. */
void detect_classify(struct input *in, const struct detect *d);

/* Pass 1 on one input: validates it and, when a temporary file can hold them, keeps the protocol
 * lines it converts for pass 2. Returns 0, or -1 after printing why the input is unusable. */
int import_validate(struct input *in);

/* Ranks and world sizes for all inputs (see import_usage()). */
void import_assign_ranks(struct input *ins, size_t n, const struct opts *o);

/* The hello of in's session, as job. */
void import_build_hello(struct sbuf *b, const struct input *in, const char *job);

/* Pass 2 on one input, with retries when an established session breaks. Returns an
 * enum import_exit value. */
int import_send_file(struct input *in, const char *job, const struct opts *o);

#endif
