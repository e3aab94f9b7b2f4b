/* SPDX-License-Identifier: MIT */
/*
 * The MindSpore converters' CSV reader (contract in mindspore_csv.h).
 */
#include "mindspore_csv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mindspore_decimal.h"
#include "mindspore_int.h"
#include "num.h"

bool csv_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* The next non-blank row: its fields in f (at most MSF_FIELDS_MAX), *nf, its line. Returns 1,
 * 0 at the end, or -EINVAL. Quoted fields are unescaped in place ("" -> "). */
static int csv_row(struct csv *c, struct fld *f, size_t *nf, uint64_t *ret_line,
                   struct msf_err *e)
{
    for (;;) {
        if (c->p >= c->end)
            return 0;
        char *q = c->p;
        while (q < c->end && (csv_is_blank(*q) || *q == '\r'))
            q++;
        if (q < c->end && *q != '\n')
            break;
        c->p = q < c->end ? q + 1 : q;
        c->line++;
    }
    *ret_line = c->line;
    char *ls = c->p;
    size_t n = 0;
    for (;;) {
        char *p = c->p;
        while (p < c->end && csv_is_blank(*p))
            p++;
        if (n == MSF_FIELDS_MAX)
            return msf_fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL, "more than %d fields",
                            MSF_FIELDS_MAX);
        struct fld *fd = &f[n++];
        fd->col = (uint64_t)(p - ls) + 1;
        if (p < c->end && *p == '"') {
            uint64_t qline = c->line, qcol = fd->col;
            char *w = p, *r = p + 1;
            fd->s = w;
            for (;;) {
                if (r >= c->end)
                    return msf_fail(e, qline, qcol, -EINVAL, "quoted field never closed");
                if (*r == '\0')
                    return msf_fail(e, c->line, (uint64_t)(r - ls) + 1, -EINVAL, "NUL byte");
                if (*r == '"') {
                    if (r + 1 < c->end && r[1] == '"') {
                        *w++ = '"';
                        r += 2;
                        continue;
                    }
                    r++;
                    break;
                }
                if (*r == '\n') {
                    c->line++;
                    ls = r + 1;
                }
                *w++ = *r++;
            }
            fd->n = (size_t)(w - fd->s);
            while (r < c->end && csv_is_blank(*r))
                r++;
            p = r;
            if (p < c->end && *p == '\r' && p + 1 < c->end && p[1] == '\n')
                p++;
            if (p < c->end && *p != ',' && *p != '\n')
                return msf_fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL,
                                "text after a closing quote");
        } else {
            fd->s = p;
            while (p < c->end && *p != ',' && *p != '\n') {
                if (*p == '\0')
                    return msf_fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL, "NUL byte");
                p++;
            }
            char *fe = p;
            while (fe > fd->s && (csv_is_blank(fe[-1]) || fe[-1] == '\r'))
                fe--;
            fd->n = (size_t)(fe - fd->s);
        }
        if (p >= c->end || *p == '\n') {
            c->p = p < c->end ? p + 1 : p;
            c->line++;
            *nf = n;
            return 1;
        }
        c->p = p + 1; /* past ',' */
    }
}

bool fld_is(const struct fld *f, const char *lit)
{
    size_t n = strlen(lit);
    return f->n == n && memcmp(f->s, lit, n) == 0;
}

int csv_col_find(const struct fld *h, size_t nh, const char *name)
{
    for (size_t i = 0; i < nh; i++)
        if (fld_is(&h[i], name))
            return (int)i;
    return -1;
}

char *fld_dup(const struct fld *f)
{
    char *s = malloc(f->n + 1);
    if (s) {
        memcpy(s, f->s, f->n);
        s[f->n] = '\0';
    }
    return s;
}

int fld_num(const struct fld *f, uint64_t line, int shift, const char *what, int64_t *ret,
            struct msf_err *e)
{
    int r = dec_scaled(f->s, f->n, shift, ret);
    if (r == -ERANGE)
        return msf_fail(e, line, f->col, -EINVAL, "%s: %.*s is out of range", what,
                        (int)(f->n > 40 ? 40 : f->n), f->s);
    if (r < 0)
        return msf_fail(e, line, f->col, -EINVAL, "%s: expected a number, got \"%.*s\"", what,
                        (int)(f->n > 40 ? 40 : f->n), f->s);
    return 0;
}

int fld_count(const struct fld *f, uint64_t line, const char *what, int64_t *ret,
              struct msf_err *e)
{
    if (num_parse_i64(f->s, f->n, ret) < 0 || *ret < 0)
        return msf_fail(e, line, f->col, -EINVAL, "%s: expected an integer >= 0, got \"%.*s\"",
                        what, (int)(f->n > 40 ? 40 : f->n), f->s);
    return 0;
}

/* The header row, which must exist and hold every column in need. */
static int csv_header(struct csv *c, struct fld *h, size_t *nh, const char *const *need,
                      struct msf_err *e)
{
    uint64_t line;
    int r = csv_row(c, h, nh, &line, e);
    if (r < 0)
        return r;
    if (r == 0)
        return msf_fail(e, 0, 0, -EINVAL, "empty file: no header row");
    for (; need && *need; need++)
        if (csv_col_find(h, *nh, *need) < 0)
            return msf_fail(e, line, 1, -EINVAL, "the header has no column \"%s\"", *need);
    return 0;
}

static int row_width(const struct fld *f, size_t nf, size_t want, uint64_t line, bool extra_ok,
                     struct msf_err *e)
{
    (void)f;
    if (nf < want || (nf > want && !extra_ok))
        return msf_fail(e, line, 1, -EINVAL, "%zu fields where the header has %zu", nf, want);
    return 0;
}

int csv_table_open(struct csv *c, struct fld **h, struct fld **f, char *data, size_t len,
                   const char *const *need, size_t *nh, struct msf_err *e)
{
    *c = (struct csv){data, data, data + len, 1};
    *nh = 0;
    *h = malloc(2 * MSF_FIELDS_MAX * sizeof **h);
    *f = *h ? *h + MSF_FIELDS_MAX : NULL;
    if (!*h)
        return msf_fail(e, 0, 0, -ENOMEM, "out of memory");
    return csv_header(c, *h, nh, need, e);
}

int csv_table_row(struct csv *c, const struct fld *h, size_t nh, struct fld *f, size_t *nf,
                  uint64_t *line, bool extra_ok, struct msf_err *e)
{
    int r = csv_row(c, f, nf, line, e);
    if (r == 1 && row_width(h, *nf, nh, *line, extra_ok, e) < 0)
        return -EINVAL;
    return r;
}
