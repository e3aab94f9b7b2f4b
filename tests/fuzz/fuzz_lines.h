/* SPDX-License-Identifier: MIT */
/*
 * Shared by the importer fuzz targets: checks that converted text is exactly n '\n'-terminated
 * lines of 1..max bytes, each a record the daemon's own decoder (daemon/ingest/decode.c) takes.
 * A refused line is printed before the abort, so a saved crash explains itself.
 */
#ifndef STEPSCOPE_FUZZ_LINES_H
#define STEPSCOPE_FUZZ_LINES_H
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/lbuf.h"
#include "../../daemon/core/decode.h"

#define FUZZ_LINE_MAX_BYTES (1u << 20)

static inline void fuzz_check_lines(struct decoder *dec, const char *p, size_t len,
                                    uint64_t n)
{
    static char arena_buf[FUZZ_LINE_MAX_BYTES + 64];
    uint64_t seen = 0;
    const char *end = p + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        assert(nl); /* every line is terminated */
        size_t ll = (size_t)(nl - p);
        assert(ll > 0 && ll <= FUZZ_LINE_MAX_BYTES);
        char *copy = malloc(ll + 1 + LBUF_PADDING);
        assert(copy);
        memcpy(copy, p, ll);
        memset(copy + ll, 0, 1 + LBUF_PADDING);
        struct json_arena a = {arena_buf, 0, sizeof arena_buf};
        struct record r;
        char msg[DECODE_MSG_MAX];
        if (decode_record(dec, copy, ll, &a, &r, msg) != DECODE_OK) {
            fprintf(stderr, "rejected (%s): %.*s\n", msg, (int)(ll > 300 ? 300 : ll), copy);
            abort();
        }
        free(copy);
        seen++;
        p = nl + 1;
    }
    assert(seen == n);
}
#endif
