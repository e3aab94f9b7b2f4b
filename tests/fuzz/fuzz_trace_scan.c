/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the importer's Chrome-trace scanner (cli/import/trace_scan.c). The input is
 * scanned twice: whole, and in chunks whose sizes come from its first byte (a resumable scanner
 * must not care where a read ends). Invariants:
 *   - both scans agree: same result, same events at the same offsets with the same phase, cat,
 *     name, pid, tid, ts and dur (in ns), the same error at the same offset (the whole scan
 *     takes tscan's fast path for every event that lies whole in its chunk, the chunked one its
 *     state machine);
 *   - a feed takes 1..len bytes, and an event's bytes lie inside what was fed, start with '{' and
 *     end with '}', with increasing offsets and indexes 0, 1, 2, ...;
 *   - an error is final (the next feed fails at the same offset) and its message is terminated;
 *   - a file tscan_finish() accepts is one the daemon takes whole: every event, made one line by
 *     spool_line_copy() as the importer sends it, is a trace record the daemon's own
 *     decoder (daemon/ingest/decode.c) answers OK for, with the same phase letter;
 *   - a scan in two halves, the second started by tscan_init_split() at the first '{' after the
 *     middle, where tscan_same_position() says it fits, gives the one-piece scan's events and
 *     result (pass 1 in two halves);
 *   - both scans give the same positions of an event's "ts" and "name" values (inside the event)
 *     and the same args.start_time, and every event as pdtrace rewrites it for Paddle (ts from
 *     start_time, name without its duration suffix) is taken by the decoder too.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/import/paddle_times.h"
#include "../../cli/import/line_spool.h"
#include "../../cli/import/trace_scan.h"
#include "../../lib/lbuf.h"
#include "../../lib/util.h"
#include "../../daemon/core/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define EV_MAX 4096 /* events remembered per input for the comparison */

struct scan_out {
    int result;        /* 0 accepted, -EINVAL refused */
    uint64_t err_off;
    size_t n;          /* events seen */
    uint64_t start[EV_MAX], end[EV_MAX];
    char ph[EV_MAX];
    uint64_t text[EV_MAX]; /* hash of the event's cat, name, pid, tid and start_time */
    int64_t ts_ns[EV_MAX], dur_ns[EV_MAX];
    uint64_t ts_at[EV_MAX], name_at[EV_MAX];
    uint32_t ts_len[EV_MAX], name_len[EV_MAX];
    char err[TSCAN_ERR_MAX];
};

/* FNV-1a of s, then a 0xff byte that no UTF-8 text holds, so that fields cannot run together. */
static uint64_t fnv(uint64_t h, const char *s)
{
    return util_hash(util_hash(h, s, strlen(s)), "\xff", 1);
}

static struct decoder *dec;
static char arena_buf[TSCAN_EVENT_BYTES_MAX + 64];

static void check_daemon_takes(const char *ev, size_t len, char ph);

enum pd_mode { PD_NONE, PD_NOTE, PD_REWRITE };
static struct pdtrace pd;
static struct pdtrace_walk pd_walk;
static struct sbuf pd_line, pd_walked;

/* Scans data[from, size) in chunks of `chunk` bytes (0: whole) with a copy of *init (NULL: a
 * fresh scanner from 0); passes each event to pdtrace as mode says. */
static void scan_from(const char *data, size_t size, size_t from, const struct tscan *init,
                      size_t chunk, struct scan_out *o, enum pd_mode mode)
{
    static struct tscan s;
    if (init)
        s = *init;
    else
        tscan_init(&s);
    o->n = 0;
    o->result = 0;
    size_t off = from;
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
            assert(ev->end == off + used && ev->start < ev->end && ev->start >= from);
            assert(data[ev->start] == '{' && data[ev->end - 1] == '}');
            assert(o->n == 0 || ev->start >= o->end[o->n - 1]);
            assert(memchr(ev->name, '\0', sizeof ev->name) && memchr(ev->cat, '\0', sizeof ev->cat));
            assert(memchr(ev->pid, '\0', sizeof ev->pid) && memchr(ev->tid, '\0', sizeof ev->tid));
            assert(ev->ph != 'X' || ev->dur_ns >= 0);
            assert(memchr(ev->start_time, '\0', sizeof ev->start_time));
            assert(!ev->ts_len || (ev->ts_at > ev->start && ev->ts_at + ev->ts_len < ev->end));
            assert(!ev->name_len || (ev->name_at > ev->start && ev->name_at + ev->name_len < ev->end &&
                                     data[ev->name_at] == '"' &&
                                     data[ev->name_at + ev->name_len - 1] == '"'));
            if (o->n < EV_MAX) {
                o->start[o->n] = ev->start;
                o->end[o->n] = ev->end;
                o->ph[o->n] = ev->ph;
                o->text[o->n] = fnv(fnv(fnv(fnv(fnv(UTIL_HASH_SEED, ev->cat), ev->name), ev->pid),
                                        ev->tid),
                                    ev->start_time);
                o->ts_ns[o->n] = ev->ts_ns;
                o->dur_ns[o->n] = ev->dur_ns;
                o->ts_at[o->n] = ev->ts_at;
                o->ts_len[o->n] = ev->ts_len;
                o->name_at[o->n] = ev->name_at;
                o->name_len[o->n] = ev->name_len;
            }
            const char *evb = data + ev->start;
            size_t evlen = (size_t)(ev->end - ev->start);
            if (mode == PD_NOTE) {
                pdtrace_note(&pd, evb, evlen, ev);
            } else if (mode == PD_REWRITE) {
                sbuf_reset(&pd_line);
                int64_t ts = pdtrace_rewrite(&pd, evb, evlen, ev, &pd_line);
                assert(!pd_line.error && pd_line.len <= TSCAN_EVENT_BYTES_MAX);
                check_daemon_takes(pd_line.data, pd_line.len, ev->ph);
                /* ... and as sent: a memory event naming its host event */
                sbuf_reset(&pd_walked);
                assert(pdtrace_walk_event(&pd_walk, evb, evlen, pd_line.data, pd_line.len, ts, ev,
                                          &pd_walked) == 0);
                assert(pd_walked.len <= TSCAN_EVENT_BYTES_MAX);
                check_daemon_takes(pd_walked.data, pd_walked.len, ev->ph);
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

static void scan(const char *data, size_t size, size_t chunk, struct scan_out *o, enum pd_mode mode)
{
    scan_from(data, size, 0, NULL, chunk, o, mode);
}

/* Pass 1 in two halves (cli/import/import.c): a second scanner from the first '{' at or
 * after the middle, set up by tscan_init_split() from a scanner that has seen the first event.
 * Where tscan_same_position() says the first half's scanner stands just so, the second half's
 * scan must be the one-piece scan's rest: the same result, the same error offset, the same events
 * (indexes counted from the cut). */
static void check_split(const char *text, size_t n, const struct scan_out *whole)
{
    static struct tscan ref, a, guess;
    static struct scan_out rest;
    const char *brace = n > 1 ? memchr(text + n / 2, '{', n - n / 2) : NULL;
    if (!brace || whole->n == 0 || whole->n > EV_MAX || whole->end[0] > (uint64_t)(brace - text))
        return;
    size_t cut = (size_t)(brace - text), used;
    tscan_init(&ref);
    if (tscan_feed(&ref, text, n, &used) != TSCAN_EVENT)
        abort(); /* the whole scan found a first event */
    tscan_init(&a);
    for (size_t off = 0; off < cut; off += used)
        if (tscan_feed(&a, text + off, cut - off, &used) < 0)
            return; /* failed before the cut: the importer reports the first half's error */
    tscan_init_split(&guess, &ref, cut);
    if (!tscan_same_position(&a, &guess))
        return;
    size_t before = 0;
    while (before < whole->n && whole->start[before] < cut)
        before++;
    scan_from(text, n, cut, &guess, 0, &rest, PD_NONE);
    assert(rest.result == whole->result);
    if (rest.result < 0) {
        assert(rest.err_off == whole->err_off);
        return;
    }
    assert(a.meta.n_events == before && before + rest.n == whole->n);
    for (size_t i = 0; i < rest.n && before + i < EV_MAX && i < EV_MAX; i++) {
        assert(rest.start[i] == whole->start[before + i] && rest.end[i] == whole->end[before + i]);
        assert(rest.text[i] == whole->text[before + i] && rest.ts_ns[i] == whole->ts_ns[before + i]);
    }
}

/* The event as the importer sends it, through the daemon's decoder. */
static void check_daemon_takes(const char *ev, size_t len, char ph)
{
    char *line = malloc(len + 1 + LBUF_PADDING);
    assert(line);
    len = spool_line_copy(line, ev, len); /* exactly what the importer sends */
    assert(!memchr(line, '\n', len));
    memset(line + len, 0, 1 + LBUF_PADDING);
    struct json_arena a = {arena_buf, 0, sizeof arena_buf};
    struct record r;
    char msg[DECODE_MSG_MAX];
    int res = decode_record(dec, line, len, &a, &r, msg);
    if (res != DECODE_OK || r.kind != RECORD_TRACE || r.ph != ph) {
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
        dec = decoder_new(TSCAN_EVENT_BYTES_MAX + 1);
        assert(dec);
        sbuf_init(&pd_line, TSCAN_EVENT_BYTES_MAX + 1);
        sbuf_init(&pd_walked, 2 * TSCAN_EVENT_BYTES_MAX + 64);
    }
    if (size < 1 || size > (1u << 20))
        return 0;
    size_t chunk = (size_t)data[0] % 17 + 1;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    pdtrace_init(&pd);
    scan(text, n, 0, &whole, PD_NOTE);
    scan(text, n, chunk, &parts, PD_NONE);
    assert(whole.result == parts.result && whole.n == parts.n);
    check_split(text, n, &whole);
    if (whole.result < 0) {
        assert(whole.err_off == parts.err_off && strcmp(whole.err, parts.err) == 0);
        return 0;
    }
    for (size_t i = 0; i < whole.n && i < EV_MAX; i++) {
        assert(whole.start[i] == parts.start[i] && whole.end[i] == parts.end[i]);
        assert(whole.ph[i] == parts.ph[i] && whole.text[i] == parts.text[i]);
        assert(whole.ts_at[i] == parts.ts_at[i] && whole.ts_len[i] == parts.ts_len[i]);
        assert(whole.ts_ns[i] == parts.ts_ns[i] && whole.dur_ns[i] == parts.dur_ns[i]);
        assert(whole.name_at[i] == parts.name_at[i] && whole.name_len[i] == parts.name_len[i]);
        check_daemon_takes(text + whole.start[i], (size_t)(whole.end[i] - whole.start[i]),
                           whole.ph[i]);
    }
    /* Every event as the importer sends a Paddle file, the times rebuilt when consistent. */
    pdtrace_finish(&pd);
    pdtrace_walk_free(&pd_walk);
    pdtrace_walk_init(&pd_walk);
    scan(text, n, 0, &parts, PD_REWRITE);
    assert(parts.result == 0);
    return 0;
}
