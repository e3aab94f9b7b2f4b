/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the importer's Chrome-trace scanner (collectors/import/tscan.c). The input is
 * scanned twice: whole, and in chunks whose sizes come from its first byte (a resumable scanner
 * must not care where a read ends). Invariants:
 *   - both scans agree: same result, same events at the same offsets with the same phase, cat,
 *     name and pid, the same error at the same offset (the whole scan takes tscan's fast path
 *     for every event that lies whole in its chunk, the chunked one its state machine);
 *   - a feed takes 1..len bytes, and an event's bytes lie inside what was fed, start with '{' and
 *     end with '}', with increasing offsets and indexes 0, 1, 2, ...;
 *   - an error is final (the next feed fails at the same offset) and its message is terminated;
 *   - a file tscan_finish() accepts is one the daemon takes whole: every event, its newlines
 *     turned into blanks as the importer's client sends it, is a trace record the daemon's own
 *     decoder (daemon/ingest/decode.c) answers OK for, with the same phase letter.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../collectors/import/tscan.h"
#include "../../daemon/core/lbuf.h"
#include "../../daemon/ingest/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EV_MAX 4096 /* events remembered per input for the comparison */

struct scan_out {
    int result;        /* 0 accepted, -EINVAL refused */
    uint64_t err_off;
    size_t n;          /* events seen */
    uint64_t start[EV_MAX], end[EV_MAX];
    char ph[EV_MAX];
    uint64_t text[EV_MAX]; /* hash of the event's cat, name and pid */
    char err[TSCAN_ERR_MAX];
};

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;
}

static struct ingest_decoder *dec;
static char arena_buf[TSCAN_EVENT_BYTES_MAX + 64];

/* Scans data[0, size) in chunks of `chunk` bytes (0: whole). */
static void scan(const char *data, size_t size, size_t chunk, struct scan_out *o)
{
    static struct tscan s;
    tscan_init(&s);
    o->n = 0;
    o->result = 0;
    size_t off = 0;
    while (off < size) {
        size_t n = chunk && size - off > chunk ? chunk : size - off;
        size_t used = 0;
        int r = tscan_feed(&s, data + off, n, &used);
        if (r < 0) {
            assert(r == -EINVAL);
            assert(memchr(s.err, '\0', sizeof s.err) && s.err[0]);
            assert(s.err_off <= size);
            o->result = r;
            o->err_off = s.err_off;
            memcpy(o->err, s.err, sizeof o->err);
            size_t u2;
            assert(tscan_feed(&s, data + off, n, &u2) == -EINVAL && s.err_off == o->err_off);
            return;
        }
        assert(used <= n);
        if (r == TSCAN_EVENT) {
            assert(used >= 1);
            const struct tscan_event *ev = &s.event;
            assert(ev->index == o->n);
            assert(ev->end == off + used && ev->start < ev->end);
            assert(data[ev->start] == '{' && data[ev->end - 1] == '}');
            assert(o->n == 0 || ev->start >= o->end[o->n - 1]);
            assert(memchr(ev->name, '\0', sizeof ev->name) && memchr(ev->cat, '\0', sizeof ev->cat));
            assert(memchr(ev->pid, '\0', sizeof ev->pid));
            if (o->n < EV_MAX) {
                o->start[o->n] = ev->start;
                o->end[o->n] = ev->end;
                o->ph[o->n] = ev->ph;
                o->text[o->n] = fnv(fnv(fnv(0xcbf29ce484222325ull, ev->cat), ev->name), ev->pid);
            }
            o->n++;
        } else {
            assert(r == TSCAN_MORE && used == n);
        }
        off += used;
    }
    int r = tscan_finish(&s);
    assert(r == 0 || r == -EINVAL);
    if (r < 0) {
        assert(memchr(s.err, '\0', sizeof s.err) && s.err[0]);
        o->result = r;
        o->err_off = s.err_off;
        memcpy(o->err, s.err, sizeof o->err);
        return;
    }
    assert(s.meta.n_events == o->n);
}

/* The event as the importer sends it, through the daemon's decoder. */
static void check_daemon_takes(const char *ev, size_t len, char ph)
{
    char *line = malloc(len + 1 + LBUF_PADDING);
    assert(line);
    memcpy(line, ev, len);
    for (size_t i = 0; i < len; i++)
        if (line[i] == '\n')
            line[i] = ' ';
    memset(line + len, 0, 1 + LBUF_PADDING);
    struct ingest_arena a = {arena_buf, 0, sizeof arena_buf};
    struct record r;
    char msg[INGEST_DECODE_MSG_MAX];
    int res = ingest__decode_record(dec, line, len, &a, &r, msg);
    if (res != INGEST_DECODE_OK || r.kind != RECORD_TRACE || r.ph != ph) {
        fprintf(stderr, "tscan accepted, daemon refused (%s): %.*s\n", msg,
                (int)(len > 300 ? 300 : len), line);
        abort();
    }
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct scan_out whole, parts;
    if (!dec) {
        dec = ingest__decoder_new(TSCAN_EVENT_BYTES_MAX + 1);
        assert(dec);
    }
    if (size < 1 || size > (1u << 20))
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    scan(text, n, 0, &whole);
    scan(text, n, chunk, &parts);
    assert(whole.result == parts.result && whole.n == parts.n);
    if (whole.result < 0) {
        assert(whole.err_off == parts.err_off && strcmp(whole.err, parts.err) == 0);
        return 0;
    }
    for (size_t i = 0; i < whole.n && i < EV_MAX; i++) {
        assert(whole.start[i] == parts.start[i] && whole.end[i] == parts.end[i]);
        assert(whole.ph[i] == parts.ph[i] && whole.text[i] == parts.text[i]);
        check_daemon_takes(text + whole.start[i], (size_t)(whole.end[i] - whole.start[i]),
                           whole.ph[i]);
    }
    return 0;
}
