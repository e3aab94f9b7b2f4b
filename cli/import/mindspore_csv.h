/* SPDX-License-Identifier: MIT */
/*
 * The MindSpore converters' CSV reader: RFC 4180 quoting (quoted fields unescaped in place,
 * "" -> "), blanks around unquoted fields trimmed (flops_<r>.txt pads its columns), blank lines
 * skipped, at most MSF_FIELDS_MAX fields a row. A table is a header row, which must exist, and
 * rows as wide as it. Every error names its line and column (struct msf_err).
 */
#ifndef STEPSCOPE_IMPORT_MINDSPORE_CSV_H
#define STEPSCOPE_IMPORT_MINDSPORE_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mindspore_files.h"

struct csv {
    char *base, *p, *end;
    uint64_t line;
};

struct fld {
    char *s;
    size_t n;
    uint64_t col;
};

/* A blank between fields: ' ' or '\t'. */
bool csv_is_blank(char c);

/* Whether the field is the text lit. */
bool fld_is(const struct fld *f, const char *lit);

/* The index of the header column named name, or -1. */
int csv_col_find(const struct fld *h, size_t nh, const char *name);

/* A NUL-terminated copy of the field (malloc), or NULL. */
char *fld_dup(const struct fld *f);

/* Reads a number field scaled by 10^shift into *ret (dec_scaled()); fails with the field's
 * position, naming it what. */
int fld_num(const struct fld *f, uint64_t line, int shift, const char *what, int64_t *ret,
            struct msf_err *e);

/* Reads an integer >= 0 into *ret; fails with the field's position, naming it what. */
int fld_count(const struct fld *f, uint64_t line, const char *what, int64_t *ret,
              struct msf_err *e);

/* Allocates the header and row arrays (*h, and *f right after it; free *h) and reads the header
 * of data[0, len) into *h, *nh; it must hold every column of need (NULL-terminated, or NULL). */
int csv_table_open(struct csv *c, struct fld **h, struct fld **f, char *data, size_t len,
                   const char *const *need, size_t *nh, struct msf_err *e);

/* The next row, as wide as the header (or wider, with extra_ok). Returns 1, 0 at the end, or
 * -EINVAL. */
int csv_table_row(struct csv *c, const struct fld *h, size_t nh, struct fld *f, size_t *nf,
                  uint64_t *line, bool extra_ok, struct msf_err *e);

#endif
