/* SPDX-License-Identifier: MIT */
/*
 * The MindSpore converters' JSON walker: a strict pull reader over one JSON text in memory
 * (RFC 8259 grammar, UTF-8 without overlongs or surrogates, \u escapes, at most 64 levels),
 * used by the JSON kinds (step_trace_point_info, minddata_cpu_utilization, trace_view) and for
 * the JSON lists inside CSV cells. Values are returned as their raw text (pointers into the
 * input): strings between their quotes, with *plain when they hold no escape; numbers as
 * written, checked to be numbers the daemon takes (num_us_to_ns()).
 *
 * Every call that reads skips the blanks before it. On an error it fills *e with the line and
 * column of the byte at fault (from the start of the text given to mj_init()) and a reason, and
 * returns -EINVAL (-ENOMEM when out of memory); the walker is then not to be used again.
 * Of the converters it knows only struct msf_err (and their error helpers): the converters reach
 * JSON through these calls alone, so this is the one place to change for another JSON reader.
 */
#ifndef STEPSCOPE_IMPORT_MINDSPORE_JSON_H
#define STEPSCOPE_IMPORT_MINDSPORE_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "mindspore_files.h"

/* A position in a JSON text. Fields private to mindspore_json.c. */
struct mj {
    const char *base, *p, *end;
    int depth;
};

/* The walker at the start of data[0, len). */
void mj_init(struct mj *j, const char *data, size_t len);

/* Fails at the walker's position with reason why; returns -EINVAL. */
int mj_fail(struct mj *j, struct msf_err *e, const char *why);

/* The next byte after blanks, consumed when it is c. */
bool mj_eat(struct mj *j, char c);

/* The next byte after blanks (not consumed), '\0' at the end. */
char mj_peek(struct mj *j);

/* The position of the next byte after blanks, for messages (msf_pos_of()). */
const char *mj_here(struct mj *j);

/* A string: *s and *n give its raw text between the quotes; *plain when it has no escapes. */
int mj_string(struct mj *j, const char **s, size_t *n, bool *plain, struct msf_err *e);

/* A number: its text. */
int mj_number(struct mj *j, const char **s, size_t *n, struct msf_err *e);

/* Any value, checked and skipped. */
int mj_skip(struct mj *j, struct msf_err *e);

/* Any value, checked and skipped; *s and *n give its raw text. */
int mj_value_raw(struct mj *j, const char **s, size_t *n, struct msf_err *e);

/* The rest of an array or object whose opening bracket was read, up to its close (']' or '}'),
 * checked and skipped. */
int mj_skip_rest(struct mj *j, char close, struct msf_err *e);

/* Only blanks may follow. */
int mj_end(struct mj *j, struct msf_err *e);

/* The raw texts (s[i], n[i]) of an array of numbers. */
struct numv {
    const char **s;
    size_t *n;
    size_t len, cap;
};

void numv_free(struct numv *v);

/* An array of numbers into *v (emptied first, grown as needed). */
int mj_numbers(struct mj *j, struct numv *v, struct msf_err *e);

#endif
