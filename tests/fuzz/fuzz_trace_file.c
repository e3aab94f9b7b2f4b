/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the importer's file reader (cli/import/trace_file.c): plain JSON and the
 * .json.gz path. The first input byte chooses how the rest reaches the file: as it is (so bytes
 * starting with the gzip magic fuzz zlib's damaged-stream handling), or gzip-compressed first
 * (whole, or cut short by the first byte's high bits: a truncated download). Invariants:
 *   - tfile_next() answers 1, 0, -EINVAL or -EIO, errors are final, and an error message names
 *     the file;
 *   - a file that is not damaged gzip gives exactly the events a single tscan pass over the
 *     uncompressed text gives (same bytes, same count, same accept or refuse), whatever the
 *     compression: the gzip path changes nothing;
 *   - a truncated gzip file is refused, never taken as a shorter trace.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../cli/import/trace_file.h"
#include "../../cli/import/trace_scan.h"
#include "fuzz_scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static void remove_file(void)
{
    (void)unlink(path);
}

static void write_file(const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert(f);
    assert(n == 0 || fwrite(p, 1, n, f) == n);
    assert(fclose(f) == 0);
}

/* gzip-compresses text[0, n) into a malloc'ed buffer; *ret_len its size. */
static unsigned char *gzip(const char *text, size_t n, size_t *ret_len)
{
    z_stream z = {0};
    assert(deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 32;
    unsigned char *out = malloc(cap);
    assert(out);
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    assert(deflate(&z, Z_FINISH) == Z_STREAM_END);
    *ret_len = z.total_out;
    deflateEnd(&z);
    return out;
}

/* Events of text[0, n) by one tscan pass: their count, or -1 if refused. */
static int64_t tscan_events(const char *text, size_t n)
{
    static struct tscan s;
    tscan_init(&s);
    size_t off = 0;
    int64_t count = 0;
    while (off < n) {
        size_t used;
        int r = tscan_feed(&s, text + off, n - off, &used);
        if (r < 0)
            return -1;
        count += r == TSCAN_EVENT;
        off += used;
    }
    return tscan_finish(&s) == 0 ? count : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) {
        fuzz_scratch_path(path, sizeof path, "fuzz_trace_file", ".json");
        atexit(remove_file);
    }
    if (size < 1 || size > (1u << 18))
        return 0;
    unsigned mode = data[0] & 3;          /* 0, 1: as is; 2: gzip; 3: gzip, truncated */
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    unsigned char *gz = NULL;
    size_t gz_len = 0;
    bool damaged_gzip = false, truncated = false;
    const unsigned char *file;
    size_t file_len;
    if (mode >= 2) {
        gz = gzip(text, n, &gz_len);
        if (mode == 3) {
            size_t cut = 1 + (size_t)(data[0] >> 2) % 32; /* bytes dropped from the end */
            truncated = cut < gz_len;
            gz_len = truncated ? gz_len - cut : gz_len;
        }
        file = gz;
        file_len = gz_len;
    } else {
        file = data + 1;
        file_len = n;
        damaged_gzip = n >= 2 && (unsigned char)text[0] == 0x1f && (unsigned char)text[1] == 0x8b;
    }
    write_file(file, file_len);
    struct tfile *f;
    char err[TFILE_ERR_MAX];
    int r = tfile_open(path, &f, err);
    assert(r == 0);
    assert(tfile_is_gzip(f) == (file_len >= 2 && file[0] == 0x1f && file[1] == 0x8b));
    const char *ev;
    size_t len;
    const struct tscan_event *info;
    int64_t got = 0;
    uint64_t prev_end = 0;
    while ((r = tfile_next(f, &ev, &len, &info)) == 1) {
        assert(len >= 2 && ev[0] == '{' && ev[len - 1] == '}');
        assert(info->index == (uint64_t)got && info->end - info->start == len);
        assert(info->start >= prev_end);
        prev_end = info->end;
        if (!damaged_gzip && !truncated)
            assert(info->end <= n && memcmp(ev, text + info->start, len) == 0);
        got++;
    }
    assert(r == 0 || r == -EINVAL || r == -EIO);
    if (r < 0) {
        const char *e = tfile_error(f);
        assert(e && strstr(e, path) == e);
        assert(tfile_next(f, &ev, &len, &info) == r); /* final */
    } else {
        assert(tfile_meta(f)->n_events == (uint64_t)got);
    }
    if (!damaged_gzip) {
        int64_t want = tscan_events(text, n);
        if (truncated)
            assert(r < 0); /* never a shorter trace */
        else
            assert((r == 0 ? got : -1) == want);
    }
    tfile_free(f);
    free(gz);
    return 0;
}
