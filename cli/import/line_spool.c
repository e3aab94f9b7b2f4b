/* SPDX-License-Identifier: MIT */
/*
 * spool: converted lines in an unlinked temporary file (contract in line_spool.h).
 */
#include "line_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "trace_scan.h"

_Static_assert(SPOOL_BUF_BYTES > TSCAN_EVENT_BYTES_MAX, "an event's line must fit the spool buffer");

struct spool {
    int fd;
    char *buf;          /* SPOOL_BUF_BYTES, owned */
    size_t len;         /* bytes in buf, not yet written */
    uint64_t written;   /* bytes in the file */
    uint64_t lines;     /* lines added */
    uint64_t *index;    /* index[k]: offset of line k * SPOOL_INDEX_EVERY; owned */
    size_t n_index, cap_index;
    bool failed;        /* a write failed: the spool is unusable */
    uint64_t checked;   /* file size at the last free-space check */
};

/* Whether the temporary directory's file system keeps SPOOL_RESERVE_BYTES, or SPOOL_RESERVE_PCT
 * of its size if that is more, free for others after we add n bytes: a spool must not fill it
 * (other programs would fail meanwhile); the caller reads the trace twice instead. */
static bool room_for(int fd, uint64_t n)
{
    struct statvfs v;
    if (fstatvfs(fd, &v) < 0)
        return true; /* cannot tell: writing will say */
    uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize, size = (uint64_t)v.f_blocks * v.f_frsize;
    uint64_t reserve = size / 100 * SPOOL_RESERVE_PCT;
    if (reserve < SPOOL_RESERVE_BYTES)
        reserve = SPOOL_RESERVE_BYTES;
    return avail >= n && avail - n >= reserve;
}

/* An unlinked file in dir: O_TMPFILE where the file system has it, else a named one removed at
 * once. Returns the descriptor or -errno. */
static int tmp_open(const char *dir)
{
#ifdef O_TMPFILE
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
        return -errno;
#endif
    char path[4096];
    if (snprintf(path, sizeof path, "%s/stepscope-import.XXXXXX", dir) >= (int)sizeof path)
        return -ENAMETOOLONG;
    int r = mkstemp(path);
    if (r < 0)
        return -errno;
    (void)unlink(path);
    (void)fcntl(r, F_SETFD, FD_CLOEXEC);
    return r;
}

int spool_new(struct spool **ret_s, char *ret_err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    struct spool *s = calloc(1, sizeof *s);
    if (!s || !(s->buf = malloc(SPOOL_BUF_BYTES))) {
        snprintf(ret_err, 256, "out of memory");
        spool_free(s);
        return -ENOMEM;
    }
    s->fd = tmp_open(dir);
    if (s->fd < 0) {
        int r = s->fd;
        snprintf(ret_err, 256, "temporary file in %.200s: %s", dir, strerror(-r));
        spool_free(s);
        return r;
    }
    *ret_s = s;
    return 0;
}

void spool_free(struct spool *s)
{
    if (!s)
        return;
    if (s->fd >= 0)
        close(s->fd);
    free(s->buf);
    free(s->index);
    free(s);
}

int spool_flush(struct spool *s)
{
    if (s->failed)
        return -EIO;
    if (s->written + s->len - s->checked >= SPOOL_CHECK_EVERY || s->checked == 0) {
        if (!room_for(s->fd, SPOOL_CHECK_EVERY)) {
            s->failed = true;
            return -ENOSPC;
        }
        s->checked = s->written + s->len;
    }
    size_t done = 0;
    while (done < s->len) {
        ssize_t n = write(s->fd, s->buf + done, s->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->failed = true;
            return n < 0 ? -errno : -ENOSPC;
        }
        done += (size_t)n;
    }
    s->written += done;
    s->len = 0;
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

size_t spool_line_copy(char *dst, const char *src, size_t n)
{
    /* A raw newline can only be a blank between tokens (never inside a string), and so are the
     * blanks that follow it: a pretty-printed event's line breaks and indentation, about an
     * eighth of its bytes, which the daemon would otherwise read, frame and scan. Word-wise up to
     * the next newline; the newline and the blanks after it are dropped. */
    const uint64_t ones = 0x0101010101010101ull, low7 = 0x7f7f7f7f7f7f7f7full;
    size_t i = 0, o = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t x, y;
            memcpy(&x, src + i, 8);
            y = x ^ (ones * '\n');
            /* Exactly the zero bytes of y get their top bit set (no borrow across bytes). */
            uint64_t z = ~(((y & low7) + low7) | y | low7);
            memcpy(dst + o, &x, 8); /* o <= i: inside dst's n bytes */
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            size_t k = z ? (size_t)__builtin_ctzll(z) >> 3 : 8;
#else
            size_t k = 0;
            while (k < 8 && src[i + k] != '\n')
                k++;
#endif
            i += k;
            o += k;
            if (k == 8)
                continue;
        } else {
            while (i < n && src[i] != '\n')
                dst[o++] = src[i++];
            if (i == n)
                break;
        }
        while (i < n && is_blank(src[i]))
            i++;
    }
    return o;
}

int spool_add(struct spool *s, const char *ev, size_t n)
{
    if (s->failed)
        return -EIO;
    if (s->lines % SPOOL_INDEX_EVERY == 0) {
        if (s->n_index == s->cap_index) {
            size_t nc = s->cap_index ? s->cap_index * 2 : 256;
            uint64_t *ni = realloc(s->index, nc * sizeof *ni);
            if (!ni) {
                s->failed = true;
                return -ENOMEM;
            }
            s->index = ni;
            s->cap_index = nc;
        }
        s->index[s->n_index++] = s->written + s->len;
    }
    if (n + 1 > SPOOL_BUF_BYTES)
        return -EMSGSIZE; /* tscan never passes such an event */
    if (n + 1 > SPOOL_BUF_BYTES - s->len) {
        int r = spool_flush(s);
        if (r < 0)
            return r;
    }
    size_t m = spool_line_copy(s->buf + s->len, ev, n);
    s->buf[s->len + m] = '\n';
    s->len += m + 1;
    s->lines++;
    return 0;
}

uint64_t spool_lines(const struct spool *s)
{
    return s->lines;
}

uint64_t spool_bytes(const struct spool *s)
{
    return s->written + s->len;
}

int spool_fd(const struct spool *s)
{
    return s->fd;
}

int spool_line_offset(const struct spool *s, uint64_t line, uint64_t *ret_off)
{
    if (line > s->lines)
        return -ERANGE;
    if (line == s->lines) {
        *ret_off = spool_bytes(s);
        return 0;
    }
    uint64_t k = line / SPOOL_INDEX_EVERY;
    uint64_t off = s->index[k], skip = line - k * SPOOL_INDEX_EVERY;
    char buf[1u << 16];
    while (skip > 0) {
        ssize_t n = pread(s->fd, buf, sizeof buf, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO; /* shorter than its lines: cannot be */
        const char *p = buf, *e = buf + n;
        while (skip > 0 && (p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
            p++;
            skip--;
        }
        off += skip == 0 ? (uint64_t)(p - buf) : (uint64_t)n;
    }
    *ret_off = off;
    return 0;
}
