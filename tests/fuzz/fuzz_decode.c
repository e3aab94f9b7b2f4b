/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the record decoder (daemon/core/decode.h). The input is framed by lib/lbuf (in reads whose sizes
 * come from the input's first byte, so framing splits are fuzzed too) exactly as a connection
 * would; the first line goes through the hello decoder, every line through the record decoder.
 * Each line is also decoded from its own exact-size copy with exactly LBUF_PADDING + 1 bytes after
 * it, so ASan catches any read past the padding the decoder is allowed, and through the readers
 * of stored text (decode_pipeline(), decode_phases() on lib/json's reader) from a copy with
 * nothing after it.
 *
 * Invariants checked: a decode returns a known result and leaves the arena as it was on failure;
 * a record's kind is valid, its raw text is the line, its borrowed strings lie inside the line or
 * the arena, ph is set for traces only, X events have dur >= 0, steps end >= begin; a hello has a
 * job of 1..256 bytes (a probe: none) and world_size > rank >= 0; and decoding the same line twice gives the same
 * answer (the parser keeps no state between lines).
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/lbuf.h"
#include "../../daemon/capture/capture.h"
#include "../../daemon/core/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 4096

static struct decoder *dec;
static char arena_buf[MAX_LINE + 64];

static bool inside(const char *p, size_t n, const char *lo, size_t lo_n)
{
    return n == 0 || (p >= lo && p + n <= lo + lo_n);
}

static void check_text(struct record_text t, const char *line, size_t len,
                       const struct json_arena *a)
{
    if (t.len == 0)
        return;
    assert(t.ptr);
    assert(inside(t.ptr, t.len, line, len) || inside(t.ptr, t.len, a->data, a->used));
}

static void check_record(const struct record *r, const char *line, size_t len,
                         const struct json_arena *a)
{
    assert((unsigned)r->kind < RECORD_KIND_COUNT);
    assert(r->raw == line && r->raw_len == len);
    check_text(r->name, line, len, a);
    check_text(r->cat, line, len, a);
    check_text(r->pid, line, len, a);
    check_text(r->tid, line, len, a);
    check_text(r->phases, line, len, a);
    switch (r->kind) {
    case RECORD_TRACE:
        assert(r->ph != 0);
        if (r->ph == 'X') {
            assert(r->dur_ns >= 0);
            assert(r->ts_ns != INT64_MIN);
            assert(r->name.ptr != NULL);
        }
        assert(r->dur_ns >= 0);
        assert(r->ts_ns <= 0 || r->dur_ns <= INT64_MAX - r->ts_ns); /* ts + dur never overflows */
        break;
    case RECORD_STEP:
        assert(r->ph == 0);
        assert(r->step >= 0 && r->dur_ns >= 0);
        if (r->phases.len > 0)
            assert(r->phases.ptr[0] == '{' && r->phases.ptr[r->phases.len - 1] == '}');
        break;
    case RECORD_QUEUE:
        assert(r->size >= 0 && r->capacity >= -1 && r->step >= -1);
        break;
    case RECORD_HOST:
        assert(r->rss_bytes >= -1);
        break;
    default:
        assert(r->ph == 0);
        break;
    }
}

static void check_line(const char *line, size_t len, bool first)
{
    struct json_arena a = {arena_buf, 0, sizeof arena_buf};
    char msg[DECODE_MSG_MAX];
    struct record r, r2;
    int res = decode_record(dec, line, len, &a, &r, msg);
    assert((res >= DECODE_OK && res <= DECODE_INVALID) ||
           res == DECODE_CAPTURE);
    if (res == DECODE_CAPTURE) {
        /* A capture report: its id, its state, and its reason if any, in the line or arena. */
        assert(r.step >= 0 && r.name.len > 0);
        check_text(r.name, line, len, &a);
        check_text(r.cat, line, len, &a);
    } else if (res == DECODE_OK) {
        check_record(&r, line, len, &a);
        size_t used = a.used;
        int res2 = decode_record(dec, line, len, &a, &r2, msg);
        assert(res2 == res && r2.kind == r.kind && r2.ts_ns == r.ts_ns && r2.dur_ns == r.dur_ns &&
               r2.name.len == r.name.len);
        assert(a.used == 2 * used);
    } else {
        assert(a.used == 0);
        assert(memchr(msg, '\0', sizeof msg));
        int res2 = decode_record(dec, line, len, &a, &r2, msg);
        assert(res2 == res);
    }
    /* Too small an arena: either it fits or NOSPACE, never anything else, and nothing is kept. */
    char tiny[4];
    struct json_arena t = {tiny, 0, sizeof tiny};
    int rt = decode_record(dec, line, len, &t, &r2, msg);
    assert(rt == res || (rt == DECODE_NOSPACE && t.used == 0));

    if (first) {
        struct record_hello h;
        a.used = 0;
        int rh = decode_hello(dec, line, len, &a, &h, msg);
        assert(rh == DECODE_OK || rh == DECODE_BAD_HELLO);
        if (rh == DECODE_OK) {
            size_t jl = strlen(h.job);
            assert(h.probe ? jl == 0 : jl >= 1 && jl <= RECORD_NAME_MAX);
            assert(h.rank >= 0 && h.world_size > h.rank);
            assert(strlen(h.stream) <= RECORD_NAME_MAX);
            assert(h.raw == line && h.raw_len == len);
        } else {
            assert(a.used == 0);
        }
    }
}

/* The readers of stored text (no padding, any bytes), on an exact-size copy: a pipeline record
 * is read or refused with nothing kept, and phases likewise. */
static void decode_stored(const char *line, size_t len)
{
    char *copy = malloc(len ? len : 1);
    assert(copy);
    memcpy(copy, line, len);
    struct record_pipeline *pl = malloc(sizeof *pl);
    assert(pl);
    int r = decode_pipeline(copy, len, pl);
    assert(r == 0 || r == -EINVAL || r == -ENOMEM);
    if (r == 0) {
        assert(pl->n_ops <= RECORD_PIPE_OPS_MAX && pl->n_values <= RECORD_PIPE_VALUES_MAX);
        free(pl->values);
    } else {
        assert(pl->values == NULL);
    }
    free(pl);
    struct record_phases ph;
    decode_phases(copy, len, &ph);
    assert(ph.dataloader_ns >= -1 && ph.forward_ns >= -1 && ph.backward_ns >= -1);
    free(copy);
}

/* The same line from an exact-size copy: nothing readable past line + len + 1 + LBUF_PADDING. */
static void decode_exact(const char *line, size_t len, bool first)
{
    char *copy = malloc(len + 1 + LBUF_PADDING);
    assert(copy);
    memcpy(copy, line, len);
    memset(copy + len, 0, 1 + LBUF_PADDING);
    check_line(copy, len, first);
    free(copy);
    decode_stored(line, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dec) {
        dec = decoder_new(MAX_LINE);
        assert(dec);
    }
    if (size == 0)
        return 0;
    /* The whole input is also a capture POST body (web's only request body). */
    static struct capture_spec spec;
    char err[CAPTURE_ERR_MAX] = "";
    int cr = capture_parse((const char *)data, size, &spec, err);
    assert(cr == 0 || cr == -EINVAL || cr == -EMSGSIZE || cr == -ENOMEM);
    if (cr == 0) {
        assert(spec.steps >= 1 && spec.steps <= CAPTURE_STEPS_MAX && spec.start_step >= -1);
        assert(spec.all_ranks || (spec.n_ranks >= 1 && spec.n_ranks <= CAPTURE_RANKS_MAX));
        assert(spec.what[0] && strlen(spec.what) < sizeof spec.what);
    } else if (cr != -ENOMEM) {
        assert(memchr(err, '\0', sizeof err) && strchr(err, ':'));
    }
    size_t chunk = (size_t)data[0] % 64 + 1;
    data++;
    size--;

    struct lbuf b;
    if (lbuf_init(&b, MAX_LINE) < 0)
        return 0;
    bool first = true;
    size_t off = 0;
    while (off < size) {
        size_t room;
        char *space = lbuf_space(&b, &room);
        size_t n = size - off < chunk ? size - off : chunk;
        if (n > room)
            n = room;
        memcpy(space, data + off, n);
        lbuf_commit(&b, n);
        off += n;
        char *line;
        size_t len;
        int r;
        while ((r = lbuf_next(&b, &line, &len)) != 0) {
            if (r < 0)
                continue;
            assert(line[len] == '\0');
            decode_exact(line, len, first);
            check_line(line, len, first); /* in place, as ingest does */
            first = false;
        }
    }
    lbuf_done(&b);
    return 0;
}
