/* SPDX-License-Identifier: MIT */
/*
 * import: ranks, stream keys and hellos (import_int.h). A file's stream is
 * "import:<abs path>:<size>:<mtime>", a MindSpore folder rank's "import:<folder>:rank<r>:
 * fnv1a64=<hash of its lines>": the stream key is the input's identity, so a second import of
 * the same input (same job and rank) gets a welcome whose next_seq covers what the daemon
 * already holds, and only the rest is sent.
 */
#include "import_int.h"

#include <stdio.h>
#include <string.h>

#include "sbuf.h"
#include "util.h"

#define IMPORT_STREAM_MAX 256     /* the protocol's longest stream key */

void import_assign_ranks(struct input *ins, size_t n, const struct opts *o)
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

/* The hello's members every input has: job, rank, framework, stream, source, format, file. */
static void hello_head(struct sbuf *b, const struct input *in, const char *job, const char *key,
                       const char *file)
{
    sbuf_adds(b, "{\"hello\":\"stepscope/1\",\"job\":");
    sbuf_json_strz(b, job);
    sbuf_printf(b, ",\"rank\":%lld,\"world_size\":%lld,\"framework\":\"%s\",\"stream\":",
                (long long)in->rank, (long long)in->world_size, import_fw_names[in->fw]);
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
                 (unsigned long long)util_hash(UTIL_HASH_SEED, in->dir, strlen(in->dir)),
                 (long long)r->rank,
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
    if (r->parallel) { /* the cluster file's layout (API.md "cluster/step-trace") */
        sbuf_adds(b, ",\"parallel\":");
        sbuf_adds(b, r->parallel);
    }
    if (r->summary) { /* FLOPs and memory totals (API.md "cluster/flops", "cluster/memory") */
        sbuf_adds(b, ",\"summary\":");
        sbuf_adds(b, r->summary);
    }
    if (r->communication) { /* hccl_raw's figures (API.md "cluster/communication") */
        sbuf_adds(b, ",\"communication\":");
        sbuf_adds(b, r->communication);
    }
    sbuf_addc(b, '}');
}

void import_build_hello(struct sbuf *b, const struct input *in, const char *job)
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
                 (unsigned long long)util_hash(UTIL_HASH_SEED, in->abs, strlen(in->abs)),
                 (unsigned long long)in->size,
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
