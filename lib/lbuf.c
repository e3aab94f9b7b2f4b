/* SPDX-License-Identifier: MIT */
/*
 * Newline framing: see lbuf.h. The buffer holds at most one line plus whatever followed it in the
 * same read. The unread tail is moved to the front only in lbuf_space(), when the free tail has
 * shrunk below a quarter of the buffer: never in lbuf_next(), whose earlier lines the caller may
 * still hold. In steady state a read is copied once, by the kernel.
 */
#include "lbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lbuf_init(struct lbuf *b, size_t max_line)
{
    memset(b, 0, sizeof *b);
    b->max_line = max_line;
    b->capacity = max_line + 1;
    b->data = malloc(b->capacity + LBUF_PADDING);
    if (!b->data)
        return -ENOMEM;
    return 0;
}

void lbuf_done(struct lbuf *b)
{
    free(b->data);
    b->data = NULL;
}

static void compact(struct lbuf *b)
{
    if (b->start == 0)
        return;
    size_t n = b->end - b->start;
    memmove(b->data, b->data + b->start, n);
    b->scanned -= b->start;
    b->end = n;
    b->start = 0;
}

char *lbuf_space(struct lbuf *b, size_t *ret_len)
{
    if (b->start == b->end) {
        /* Nothing unread: restart at the front, which also gives a discarding reader full room. */
        b->start = b->end = b->scanned = 0;
    } else if (b->end == b->capacity || b->capacity - b->end < b->capacity / 4) {
        /* Compacting is only safe here: the lines handed out before this call are dead now.
         * The first test matters for tiny buffers, where capacity / 4 is 0. */
        compact(b);
    }
    *ret_len = b->capacity - b->end;
    return b->data + b->end;
}

void lbuf_commit(struct lbuf *b, size_t n)
{
    b->end += n;
}

int lbuf_next(struct lbuf *b, char **ret_line, size_t *ret_len)
{
    for (;;) {
        char *nl = memchr(b->data + b->scanned, '\n', b->end - b->scanned);
        if (b->discarding) {
            if (!nl) {
                b->start = b->scanned = b->end; /* drop everything seen so far */
                return 0;
            }
            b->discarding = false;
            b->start = b->scanned = (size_t)(nl - b->data) + 1;
            continue;
        }
        if (!nl) {
            b->scanned = b->end;
            if (b->end - b->start > b->max_line) {
                /* The line cannot fit: say so now rather than when its '\n' arrives. */
                b->discarding = true;
                b->start = b->scanned = b->end;
                b->n_lines++;
                return -EMSGSIZE;
            }
            return 0;
        }
        size_t pos = (size_t)(nl - b->data);
        size_t len = pos - b->start;
        char *line = b->data + b->start;
        b->start = b->scanned = pos + 1;
        b->n_lines++;
        if (len > b->max_line)
            return -EMSGSIZE;
        if (len > 0 && line[len - 1] == '\r')
            len--;
        line[len] = '\0';
        /* The padding after data[capacity] covers reads past the line's end: the line ends at or
         * before capacity - 1, so LBUF_PADDING bytes follow its NUL inside the allocation. */
        *ret_line = line;
        *ret_len = len;
        return 1;
    }
}

size_t lbuf_pending(const struct lbuf *b)
{
    return b->discarding ? 1 : b->end - b->start;
}
