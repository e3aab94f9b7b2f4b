/* SPDX-License-Identifier: MIT */
/*
 * lbuf: newline framing for a byte stream.
 *
 * A connection reads straight into the free tail of its lbuf (lbuf_space()), commits what arrived
 * (lbuf_commit()) and takes out whole lines (lbuf_next()). Bytes are scanned once: the position of
 * the last scan is remembered, so a line that arrives in a thousand reads costs one pass. A line
 * longer than the cap is not buffered: it is reported once and its bytes are discarded up to the
 * next '\n', so a hostile peer can never make the buffer grow past its cap.
 *
 * Every line handed out is NUL-terminated in place and followed by at least LBUF_PADDING readable
 * bytes inside the buffer: SIMD JSON parsers may read past the end of their input.
 */
#ifndef STEPSCOPE_LBUF_H
#define STEPSCOPE_LBUF_H

#include <stdbool.h>
#include <stddef.h>

#define LBUF_PADDING 64 /* readable bytes guaranteed after each line's NUL */

struct lbuf {
    char *data;          /* capacity + LBUF_PADDING bytes; owned */
    size_t capacity;     /* max_line + 1: room for one whole line and its '\n' */
    size_t max_line;     /* longest accepted line, '\n' excluded */
    size_t start;        /* first byte not yet handed out */
    size_t end;          /* data[start, end) holds committed bytes */
    size_t scanned;      /* data[start, scanned) holds no '\n' */
    bool discarding;     /* inside an over-long line: drop bytes up to the next '\n' */
    size_t n_lines;      /* lines handed out or rejected so far (1-based line numbers) */
};

/* Sets up b for lines of at most max_line bytes. Returns 0 or -ENOMEM. */
int lbuf_init(struct lbuf *b, size_t max_line);

/* Frees b's memory. Safe on a zeroed or already-done lbuf. */
void lbuf_done(struct lbuf *b);

/* The free tail where the next read may land: *ret_len is never 0 provided every line was taken
 * out with lbuf_next() since the last commit (the buffer compacts itself here, which ends the life
 * of every line handed out before; while discarding, it reuses its whole room). */
char *lbuf_space(struct lbuf *b, size_t *ret_len);

/* Records that n bytes were written at lbuf_space(). n must not exceed what it offered. */
void lbuf_commit(struct lbuf *b, size_t n);

/* Takes the next complete line out of b.
 * Returns 1 and sets *ret_line (NUL-terminated, '\n' and a trailing '\r' removed, borrowed until
 * the next lbuf_space()/lbuf_commit() on b; LBUF_PADDING bytes readable after the NUL) and *ret_len;
 * 0 if more input is needed; -EMSGSIZE once per line longer than max_line, as soon as it is known
 * to be too long (its remaining bytes are skipped up to the '\n'). Each 1 or -EMSGSIZE bumps
 * b->n_lines, so the caller can name the line. */
int lbuf_next(struct lbuf *b, char **ret_line, size_t *ret_len);

/* Bytes committed but not yet handed out as lines: at EOF, a non-zero value is a partial line. */
size_t lbuf_pending(const struct lbuf *b);

#endif
