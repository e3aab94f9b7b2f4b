/* SPDX-License-Identifier: MIT */
/*
 * sbuf: a growable byte buffer with a hard cap, for building JSON answers and protocol lines.
 * Once an append would pass the cap (or memory runs out) the buffer is marked failed and every
 * later append is a no-op, so a caller builds a whole document and checks once at the end.
 * sbuf_json_str() writes a JSON string literal from arbitrary bytes: control characters escaped,
 * '<' '>' '&' escaped as \u003c.. so a name can never become markup, invalid UTF-8 replaced by
 * U+FFFD so the output is always valid JSON.
 */
#ifndef STEPSCOPE_SBUF_H
#define STEPSCOPE_SBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

struct sbuf {
    char *data;     /* NUL-terminated while !failed; owned */
    size_t len;     /* bytes used, NUL excluded */
    size_t alloc;   /* bytes allocated */
    size_t max;     /* cap on len */
    int error;      /* 0, -ENOMEM or -EMSGSIZE: the first failure */
};

void sbuf_init(struct sbuf *b, size_t max);
void sbuf_done(struct sbuf *b);
/* Hands the bytes to the caller (free() them); b is reset. NULL if b failed or is empty-and-unset. */
char *sbuf_steal(struct sbuf *b, size_t *ret_len);
void sbuf_reset(struct sbuf *b);

void sbuf_add(struct sbuf *b, const void *p, size_t n);
void sbuf_adds(struct sbuf *b, const char *s);
void sbuf_addc(struct sbuf *b, char c);
void sbuf_printf(struct sbuf *b, const char *fmt, ...) SS_PRINTF(2, 3);
/* A JSON string literal, quotes included, of n bytes at s (see above). */
void sbuf_json_str(struct sbuf *b, const char *s, size_t n);
void sbuf_json_strz(struct sbuf *b, const char *s);
/* Length of the valid UTF-8 sequence at p (1-4 bytes, n > 0 available), or 0 when it is not
 * valid: a bad lead or continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut
 * short by n. */
size_t sbuf_utf8_len(const void *p, size_t n);
#define SBUF_ESCAPE_MAX 8 /* room an sbuf_escape_cb may write into */

/* For an ASCII byte c: its escape as a string (static, or written into buf, SBUF_ESCAPE_MAX
 * bytes), or NULL to copy c as it is. */
typedef const char *(*sbuf_escape_cb)(unsigned char c, char *buf);

/* Appends s[0, n) with every ASCII byte replaced as esc_of says, valid UTF-8 sequences copied,
 * and every byte of invalid UTF-8 replaced by bad_utf8. */
void sbuf_add_escaped(struct sbuf *b, const char *s, size_t n, sbuf_escape_cb esc_of,
                      const char *bad_utf8);
/* A JSON number for nanoseconds given in microseconds: "1234.567", exact, no trailing zeros. */
void sbuf_json_us(struct sbuf *b, int64_t ns);

#endif
