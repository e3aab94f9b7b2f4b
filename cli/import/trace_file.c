/* SPDX-License-Identifier: MIT */
/*
 * tfile: a trace file read through tscan (contract in trace_file.h). zlib's gzread() reads gzip and
 * plain files alike. The buffer holds [base, base + len) of the uncompressed text; pos is where
 * scanning stands. Before a refill, everything before the open event (or before pos when no
 * event is open) is dropped, counting its newlines first, so that an error's line and column
 * come out without a second pass.
 */
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct tfile {
    char *path;              /* owned copy */
    gzFile gz;
    bool gzip;               /* the file starts with the gzip magic */
    bool eof;                /* gzread() reported the end */
    bool failed;             /* an error was reported; err holds it */
    char *buf;               /* TFILE_BUF_BYTES, owned */
    size_t len;              /* bytes in buf */
    size_t pos;              /* buf[0, pos) has been scanned */
    uint64_t base;           /* uncompressed offset of buf[0] */
    uint64_t lines;          /* newlines in [0, base) */
    uint64_t line_start;     /* offset just past the last newline in [0, base) */
    uint64_t pause;          /* tfile_pause_at()'s offset, UINT64_MAX: none */
    struct tscan scan;
    char err[TFILE_ERR_MAX];
};

int tfile_open(const char *path, struct tfile **ret_f, char *ret_err)
{
    return tfile_open_at(path, 0, NULL, ret_f, ret_err);
}

int tfile_open_at(const char *path, uint64_t off, const struct tscan *scan, struct tfile **ret_f,
                  char *ret_err)
{
    struct tfile *f = calloc(1, sizeof *f);
    int r = -ENOMEM;
    if (!f || !(f->path = strdup(path)) || !(f->buf = malloc(TFILE_BUF_BYTES)))
        goto fail;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        r = -errno;
        snprintf(ret_err, TFILE_ERR_MAX, "%s: %s", path, strerror(errno));
        goto fail_quiet;
    }
    unsigned char magic[2];
    ssize_t n = pread(fd, magic, 2, 0);
    f->gzip = n == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (off > 0 && (f->gzip || lseek(fd, (off_t)off, SEEK_SET) < 0)) {
        r = f->gzip ? -EINVAL : -errno;
        snprintf(ret_err, TFILE_ERR_MAX, "%s: cannot read from byte %llu%s", path,
                 (unsigned long long)off, f->gzip ? " of a gzip file" : "");
        close(fd);
        goto fail_quiet;
    }
    f->gz = gzdopen(fd, "rb");
    if (!f->gz) {
        close(fd);
        goto fail;
    }
    (void)gzbuffer(f->gz, 1u << 20);
    if (scan)
        f->scan = *scan;
    else
        tscan_init(&f->scan);
    f->base = off;
    f->line_start = off;
    f->pause = UINT64_MAX;
    *ret_f = f;
    return 0;
fail:
    snprintf(ret_err, TFILE_ERR_MAX, "%s: out of memory", path);
fail_quiet:
    tfile_free(f);
    return r;
}

void tfile_free(struct tfile *f)
{
    if (!f)
        return;
    if (f->gz)
        (void)gzclose_r(f->gz);
    free(f->buf);
    free(f->path);
    free(f);
}

/* Line (1-based) and column (1-based, in bytes) of absolute offset at, which is in the buffer. */
static void locate(const struct tfile *f, uint64_t at, uint64_t *ret_line, uint64_t *ret_col)
{
    uint64_t line = f->lines, start = f->line_start;
    size_t upto = at > f->base ? (size_t)(at - f->base) : 0;
    if (upto > f->len)
        upto = f->len;
    const char *p = f->buf, *e = f->buf + upto;
    while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
        line++;
        p++;
        start = f->base + (uint64_t)(p - f->buf);
    }
    *ret_line = line + 1;
    *ret_col = at - start + 1;
}

static int scan_error(struct tfile *f)
{
    uint64_t line, col;
    locate(f, f->scan.err_off, &line, &col);
    snprintf(f->err, sizeof f->err, "%s: byte %llu (line %llu, column %llu): %s", f->path,
             (unsigned long long)f->scan.err_off, (unsigned long long)line,
             (unsigned long long)col, f->scan.err);
    f->failed = true;
    return -EINVAL;
}

/* Newlines in p[0, n), a word at a time (a pretty-printed trace has one every 40 bytes or so,
 * where a memchr() per newline costs a call each). */
static uint64_t count_newlines(const char *p, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
    uint64_t count = 0;
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t x;
        memcpy(&x, p + i, 8);
        x ^= ones * '\n';
        /* Exactly the zero bytes of x get their top bit set (no borrow across bytes). */
        uint64_t z = ~(((x & low7) + low7) | x | low7) >> 7;
        count += (z * ones) >> 56; /* the sum of its bytes, each 0 or 1 */
    }
    for (; i < n; i++)
        count += p[i] == '\n';
    return count;
}

/* Drops what is no longer needed and reads more. Returns 1 if bytes were added, 0 at the end
 * (f->eof) or at the pause offset, -EIO on a read or gzip error (f->err set). */
static int refill(struct tfile *f)
{
    size_t keep = f->pos;
    if (f->scan.in_event && f->scan.event.start >= f->base &&
        f->scan.event.start - f->base < keep)
        keep = (size_t)(f->scan.event.start - f->base);
    if (keep > 0) {
        f->lines += count_newlines(f->buf, keep);
        size_t last = keep;
        while (last > 0 && f->buf[last - 1] != '\n')
            last--;
        if (last > 0)
            f->line_start = f->base + last;
        memmove(f->buf, f->buf + keep, f->len - keep);
        f->len -= keep;
        f->pos -= keep;
        f->base += keep;
    }
    if (f->eof)
        return 0;
    size_t room = TFILE_BUF_BYTES - f->len;
    if (room > INT_MAX)
        room = INT_MAX;
    if (f->pause != UINT64_MAX) {
        uint64_t upto = f->pause > f->base + f->len ? f->pause - (f->base + f->len) : 0;
        if (room > upto)
            room = (size_t)upto;
        if (room == 0)
            return 0;
    }
    int n = gzread(f->gz, f->buf + f->len, (unsigned)room);
    int zerr = Z_OK;
    const char *msg = n < 0 || (size_t)n < room ? gzerror(f->gz, &zerr) : NULL;
    if (n < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
        uint64_t at = f->base + f->len + (n > 0 ? (uint64_t)n : 0);
        const char *why = zerr == Z_BUF_ERROR ? "truncated gzip stream (unexpected end of file)"
                          : zerr == Z_ERRNO   ? strerror(errno)
                                              : msg;
        if (f->gzip)
            snprintf(f->err, sizeof f->err,
                     "%s: compressed byte %lld (after %llu uncompressed bytes): gzip: %s", f->path,
                     (long long)gzoffset(f->gz), (unsigned long long)at, why);
        else
            snprintf(f->err, sizeof f->err, "%s: byte %llu: read error: %s", f->path,
                     (unsigned long long)at, why);
        f->failed = true;
        return -EIO;
    }
    if (n == 0) {
        f->eof = true;
        return 0;
    }
    f->len += (size_t)n;
    return 1;
}

int tfile_next(struct tfile *f, const char **ret_ev, size_t *ret_len,
               const struct tscan_event **ret_info)
{
    if (f->failed)
        return f->scan.err[0] ? -EINVAL : -EIO;
    for (;;) {
        if (f->pos == f->len) {
            int r = refill(f);
            if (r < 0)
                return r;
            if (r == 0) {
                if (!f->eof)
                    return 0; /* paused */
                if (tscan_finish(&f->scan) < 0)
                    return scan_error(f);
                return 0;
            }
        }
        size_t used;
        int r = tscan_feed(&f->scan, f->buf + f->pos, f->len - f->pos, &used);
        if (r < 0)
            return scan_error(f);
        f->pos += used;
        if (r == TSCAN_EVENT) {
            const struct tscan_event *ev = &f->scan.event;
            *ret_ev = f->buf + (size_t)(ev->start - f->base);
            *ret_len = (size_t)(ev->end - ev->start);
            *ret_info = ev;
            return 1;
        }
    }
}

void tfile_pause_at(struct tfile *f, uint64_t at)
{
    f->pause = at;
}

const struct tscan *tfile_scan(const struct tfile *f)
{
    return &f->scan;
}

const struct tscan_meta *tfile_meta(const struct tfile *f)
{
    return &f->scan.meta;
}

const char *tfile_error(const struct tfile *f)
{
    return f->err;
}

bool tfile_is_gzip(const struct tfile *f)
{
    return f->gzip;
}

uint64_t tfile_bytes(const struct tfile *f)
{
    return f->base + f->len;
}
