/* SPDX-License-Identifier: MIT */
/*
 * msparse: MindSpore profiler files to protocol lines (contract in msparse.h, mapping in
 * README.md "MindSpore folders").
 *
 * The files are small CSV/TXT/JSON tables, so each is parsed whole from memory: a CSV reader
 * (RFC 4180 quoting, blanks around unquoted fields trimmed, as flops_<r>.txt needs), a strict
 * JSON walker for the two JSON kinds, and exact decimal-to-nanosecond conversion for every time
 * (syscnt counts x10, ms x1e6, µs x1e3, ns), so nothing goes through a double.
 */
#include "mindspore_files.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num.h"
#include "sbuf.h"

#define MSF_DEFAULT_FP "fp_point"
#define MSF_DEFAULT_BP "bp_point"
#define MSF_JSON_DEPTH 64

struct kv {                 /* a lookup row: key, then the row's fields */
    const char *key;
    size_t key_len;
    size_t row;             /* index into the owning table's rows */
};

struct fw_row {             /* framework_raw: full kernel name -> short name, type, op_info */
    char *full, *kname, *type, *info;
};

struct pend_op {            /* a pipeline op's JSON text, waiting for msf_end() */
    int64_t id;
    char *json;
};

struct flops_row {
    char *full;
    char *vals;             /* ",\"col\":value..." ready to append to args */
};

/* One op of cpu_framework_<r>.txt: its name ("Conv2D-op0") and input shapes as JSON. */
struct shape_row {
    char *name;
    char *json; /* [[8,1,8,8],[4,1,3,3]]; an input without a shape ("NoShape") is [] */
};

struct msf {
    struct sbuf out;
    uint64_t n_lines;
    bool have_steps;
    char fp[MSF_NAME_MAX + 1];
    char bp[MSF_NAME_MAX + 1];
    struct fw_row *fw;
    size_t n_fw, cap_fw;
    struct flops_row *fl;
    size_t n_fl, cap_fl;
    int64_t kernel_ns;      /* the next synthetic start of an aggregated AI Core kernel */
    int64_t getnext_step;   /* GetNext queue samples so far (their step numbers) */
    struct shape_row *shp;  /* cpu_framework's input shapes by op name, sorted once fed */
    size_t n_shp, cap_shp;
    uint64_t cpu_op_n;      /* executions in cpu_op_execute_timestamp, and their first and */
    int64_t cpu_op_min, cpu_op_max; /* last start (ns): trace_view.json is aligned on them */
    /* The pipeline record waits for msf_end(): minddata_pipeline_raw's ops (each op's JSON
     * object without its closing brace) and minddata_cpu_utilization's series go into it. */
    bool have_pipe;
    struct pend_op *pops;   /* the pipeline's ops */
    size_t n_pops, cap_pops;
    struct pend_op *cops;   /* per-op CPU: ",\"cpu_user\":[...],\"cpu_sys\":[...]" */
    size_t n_cops, cap_cops;
    char *cpu_json;         /* the record's "cpu" object, or NULL */
};

/* ---- errors and positions ---- */

static int fail(struct msf_err *e, uint64_t line, uint64_t col, int code, const char *fmt, ...)
    SS_PRINTF(5, 6);

static int fail(struct msf_err *e, uint64_t line, uint64_t col, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    e->line = line;
    e->col = col;
    vsnprintf(e->reason, sizeof e->reason, fmt, ap);
    va_end(ap);
    return code;
}

/* Line and column (from 1) of byte p in [base, ...). */
static void pos_of(const char *base, const char *p, uint64_t *line, uint64_t *col)
{
    uint64_t l = 1;
    const char *ls = base;
    for (const char *q = base; q < p; q++)
        if (*q == '\n') {
            l++;
            ls = q + 1;
        }
    *line = l;
    *col = (uint64_t)(p - ls) + 1;
}

/* ---- output ---- */

static int line_done(struct msf *m, struct msf_err *e, uint64_t line)
{
    sbuf_addc(&m->out, '\n');
    if (m->out.error == -ENOMEM)
        return fail(e, line, 0, -ENOMEM, "out of memory");
    if (m->out.error == -ERANGE)
        return fail(e, line, 0, -EINVAL, "a time or duration is out of the daemon's range "
                    "(-2^60 to 3 * 2^60 ns)");
    if (m->out.error)
        return fail(e, line, 0, -EMSGSIZE, "the converted records pass the %zu-byte limit",
                    m->out.max);
    if (++m->n_lines > MSF_EVENTS_MAX)
        return fail(e, line, 0, -EMSGSIZE, "more than %llu records",
                    (unsigned long long)MSF_EVENTS_MAX);
    return 0;
}

/* ---- numbers ---- */

/* The decimal s[0, n) (sign, digits, fraction, exponent) times 10^shift, rounded half away from
 * zero, into *ret. -EINVAL if it is not a number, -ERANGE if the result does not fit int64.
 * Up to 19 significant digits are kept (every int64, so a start in ns is exact); the first digit
 * dropped decides the rounding. */
static int dec_scaled(const char *s, size_t n, int shift, int64_t *ret)
{
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t mant = 0;
    long exp10 = 0;
    int ndig = 0, sig = 0, round_digit = -1;
    for (int frac = 0; frac < 2; frac++) {
        if (frac) {
            if (i < n && s[i] == '.')
                i++;
            else
                break;
        }
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++, ndig++) {
            int d = s[i] - '0';
            if (sig < 19) {
                if (mant || d)
                    sig++;
                mant = mant * 10 + (uint64_t)d;
                exp10 -= frac;
            } else {
                if (round_digit < 0)
                    round_digit = d;
                exp10 += !frac;
            }
        }
    }
    if (ndig == 0)
        return -EINVAL;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        size_t st = i;
        long e = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        if (i == st)
            return -EINVAL;
        exp10 += eneg ? -e : e;
    }
    if (i != n)
        return -EINVAL;
    exp10 += shift;
    if (mant == 0) {
        *ret = 0;
        return 0;
    }
    if (round_digit < 0)
        round_digit = 0;
    if (exp10 > 0 && round_digit >= 5)
        mant++; /* round at the last digit kept, before scaling it up */
    if (exp10 > 0)
        round_digit = 0;
    for (; exp10 > 0; exp10--) {
        if (mant > UINT64_MAX / 10)
            return -ERANGE;
        mant *= 10;
    }
    for (; exp10 < 0 && mant; exp10++) {
        round_digit = (int)(mant % 10);
        mant /= 10;
    }
    if (exp10 < 0)
        round_digit = 0; /* far below one unit */
    if (round_digit >= 5)
        mant++;
    if (mant > (uint64_t)INT64_MAX)
        return -ERANGE;
    *ret = neg ? -(int64_t)mant : (int64_t)mant;
    return 0;
}

/* v / 10^6 as a JSON number, exact. */
static void put_e6(struct sbuf *b, int64_t v)
{
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    char frac[8];
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(a % 1000000));
    size_t fl = 6;
    while (fl > 0 && frac[fl - 1] == '0')
        fl--;
    frac[fl] = '\0';
    sbuf_printf(b, "%s%llu%s%s", v < 0 ? "-" : "", (unsigned long long)(a / 1000000),
                fl ? "." : "", frac);
}

/* Every time and duration written must be one the daemon takes (core/num.h): both lie in
 * (NUM_TIME_MIN_NS, NUM_DUR_MAX_NS); line_done() reports one outside. */
static void put_us(struct sbuf *b, int64_t ns)
{
    if (ns <= NUM_TIME_MIN_NS || ns >= NUM_DUR_MAX_NS) {
        if (!b->error)
            b->error = -ERANGE;
        return;
    }
    sbuf_json_us(b, ns);
}

/* ---- CSV ---- */

struct csv {
    char *base, *p, *end;
    uint64_t line;
};

struct fld {
    char *s;
    size_t n;
    uint64_t col;
};

static bool is_blank(char c)
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
        while (q < c->end && (is_blank(*q) || *q == '\r'))
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
        while (p < c->end && is_blank(*p))
            p++;
        if (n == MSF_FIELDS_MAX)
            return fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL, "more than %d fields",
                        MSF_FIELDS_MAX);
        struct fld *fd = &f[n++];
        fd->col = (uint64_t)(p - ls) + 1;
        if (p < c->end && *p == '"') {
            uint64_t qline = c->line, qcol = fd->col;
            char *w = p, *r = p + 1;
            fd->s = w;
            for (;;) {
                if (r >= c->end)
                    return fail(e, qline, qcol, -EINVAL, "quoted field never closed");
                if (*r == '\0')
                    return fail(e, c->line, (uint64_t)(r - ls) + 1, -EINVAL, "NUL byte");
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
            while (r < c->end && is_blank(*r))
                r++;
            p = r;
            if (p < c->end && *p == '\r' && p + 1 < c->end && p[1] == '\n')
                p++;
            if (p < c->end && *p != ',' && *p != '\n')
                return fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL,
                            "text after a closing quote");
        } else {
            fd->s = p;
            while (p < c->end && *p != ',' && *p != '\n') {
                if (*p == '\0')
                    return fail(e, c->line, (uint64_t)(p - ls) + 1, -EINVAL, "NUL byte");
                p++;
            }
            char *fe = p;
            while (fe > fd->s && (is_blank(fe[-1]) || fe[-1] == '\r'))
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

static bool fld_is(const struct fld *f, const char *lit)
{
    size_t n = strlen(lit);
    return f->n == n && memcmp(f->s, lit, n) == 0;
}

static int col_find(const struct fld *h, size_t nh, const char *name)
{
    for (size_t i = 0; i < nh; i++)
        if (fld_is(&h[i], name))
            return (int)i;
    return -1;
}

static char *fld_dup(const struct fld *f)
{
    char *s = malloc(f->n + 1);
    if (s) {
        memcpy(s, f->s, f->n);
        s[f->n] = '\0';
    }
    return s;
}

/* Reads a number field scaled by 10^shift into *ret; fails with the field's position. */
static int fld_num(const struct fld *f, uint64_t line, int shift, const char *what, int64_t *ret,
                   struct msf_err *e)
{
    int r = dec_scaled(f->s, f->n, shift, ret);
    if (r == -ERANGE)
        return fail(e, line, f->col, -EINVAL, "%s: %.*s is out of range", what,
                    (int)(f->n > 40 ? 40 : f->n), f->s);
    if (r < 0)
        return fail(e, line, f->col, -EINVAL, "%s: expected a number, got \"%.*s\"", what,
                    (int)(f->n > 40 ? 40 : f->n), f->s);
    return 0;
}

static int fld_count(const struct fld *f, uint64_t line, const char *what, int64_t *ret,
                     struct msf_err *e)
{
    if (num_parse_i64(f->s, f->n, ret) < 0 || *ret < 0)
        return fail(e, line, f->col, -EINVAL, "%s: expected an integer >= 0, got \"%.*s\"", what,
                    (int)(f->n > 40 ? 40 : f->n), f->s);
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
        return fail(e, 0, 0, -EINVAL, "empty file: no header row");
    for (; need && *need; need++)
        if (col_find(h, *nh, *need) < 0)
            return fail(e, line, 1, -EINVAL, "the header has no column \"%s\"", *need);
    return 0;
}

static int row_width(const struct fld *f, size_t nf, size_t want, uint64_t line, bool extra_ok,
                     struct msf_err *e)
{
    (void)f;
    if (nf < want || (nf > want && !extra_ok))
        return fail(e, line, 1, -EINVAL, "%zu fields where the header has %zu", nf, want);
    return 0;
}

/* Allocates the header and row arrays (*h, and *f right after it; free *h) and reads the header
 * of data[0, len) into *h, *nh. */
static int table_open(struct csv *c, struct fld **h, struct fld **f, char *data, size_t len,
                      const char *const *need, size_t *nh, struct msf_err *e)
{
    *c = (struct csv){data, data, data + len, 1};
    *nh = 0;
    *h = malloc(2 * MSF_FIELDS_MAX * sizeof **h);
    *f = *h ? *h + MSF_FIELDS_MAX : NULL;
    if (!*h)
        return fail(e, 0, 0, -ENOMEM, "out of memory");
    return csv_header(c, *h, nh, need, e);
}

/* The next row, as wide as the header (or wider, with extra_ok). Returns 1, 0 or -EINVAL. */
static int table_row(struct csv *c, const struct fld *h, size_t nh, struct fld *f, size_t *nf,
                     uint64_t *line, bool extra_ok, struct msf_err *e)
{
    int r = csv_row(c, f, nf, line, e);
    if (r == 1 && row_width(h, *nf, nh, *line, extra_ok, e) < 0)
        return -EINVAL;
    return r;
}

/* ---- JSON (strict, for the JSON kinds) ---- */

struct mj {
    const char *base, *p, *end;
    int depth;
};

static int mj_fail(struct mj *j, struct msf_err *e, const char *why)
{
    uint64_t l, c;
    pos_of(j->base, j->p, &l, &c);
    return fail(e, l, c, -EINVAL, "%s", why);
}

static void mj_ws(struct mj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool mj_eat(struct mj *j, char c)
{
    mj_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* Length of the valid UTF-8 sequence at p (no overlongs or surrogates), 0 if invalid. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) {
        n = 2;
        min = 0x80;
        c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        n = 3;
        min = 0x800;
        c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        n = 4;
        min = 0x10000;
        c &= 0x07;
    } else {
        return 0;
    }
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    return n;
}

/* A string literal: *s and *n give its raw text between the quotes; *plain when it has no escapes. */
static int mj_string(struct mj *j, const char **s, size_t *n, bool *plain, struct msf_err *e)
{
    mj_ws(j);
    if (j->p >= j->end || *j->p != '"')
        return mj_fail(j, e, "expected a string");
    const char *st = ++j->p;
    bool pl = true;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20)
            return mj_fail(j, e, "control character in a string");
        if (c == '\\') {
            pl = false;
            j->p++;
            if (j->p >= j->end)
                break;
            if (*j->p == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (j->p + k >= j->end ||
                        !strchr("0123456789abcdefABCDEF", j->p[k]) || j->p[k] == '\0')
                        return mj_fail(j, e, "bad \\u escape");
                j->p += 5;
            } else if (strchr("\"\\/bfnrt", *j->p) && *j->p) {
                j->p++;
            } else {
                return mj_fail(j, e, "bad escape");
            }
            continue;
        }
        size_t u = utf8_len((const unsigned char *)j->p, (const unsigned char *)j->end);
        if (!u)
            return mj_fail(j, e, "invalid UTF-8");
        j->p += u;
    }
    if (j->p >= j->end)
        return mj_fail(j, e, "unterminated string");
    *s = st;
    *n = (size_t)(j->p - st);
    *plain = pl;
    j->p++;
    return 0;
}

static int mj_number(struct mj *j, const char **s, size_t *n, struct msf_err *e)
{
    mj_ws(j);
    const char *st = j->p;
    while (j->p < j->end && strchr("+-0123456789.eE", *j->p) && *j->p)
        j->p++;
    int64_t ns;
    if (j->p == st || num_us_to_ns(st, (size_t)(j->p - st), &ns) == -EINVAL) {
        j->p = st;
        return mj_fail(j, e, "expected a number");
    }
    *s = st;
    *n = (size_t)(j->p - st);
    return 0;
}

static int mj_skip(struct mj *j, struct msf_err *e);

static int mj_skip_container(struct mj *j, char close, bool obj, struct msf_err *e)
{
    if (++j->depth > MSF_JSON_DEPTH)
        return mj_fail(j, e, "nested too deeply");
    if (mj_eat(j, close)) {
        j->depth--;
        return 0;
    }
    for (;;) {
        int r;
        if (obj) {
            const char *s;
            size_t n;
            bool pl;
            if ((r = mj_string(j, &s, &n, &pl, e)) < 0)
                return r;
            if (!mj_eat(j, ':'))
                return mj_fail(j, e, "expected ':'");
        }
        if ((r = mj_skip(j, e)) < 0)
            return r;
        if (mj_eat(j, close))
            break;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    j->depth--;
    return 0;
}

static int mj_skip(struct mj *j, struct msf_err *e)
{
    mj_ws(j);
    if (j->p >= j->end)
        return mj_fail(j, e, "unexpected end of file");
    const char *s;
    size_t n;
    bool pl;
    switch (*j->p) {
    case '{':
        j->p++;
        return mj_skip_container(j, '}', true, e);
    case '[':
        j->p++;
        return mj_skip_container(j, ']', false, e);
    case '"':
        return mj_string(j, &s, &n, &pl, e);
    default:
        for (size_t k = 0; k < 3; k++) {
            const char *lit = (const char *[]){"true", "false", "null"}[k];
            size_t ln = strlen(lit);
            if ((size_t)(j->end - j->p) >= ln && memcmp(j->p, lit, ln) == 0) {
                j->p += ln;
                return 0;
            }
        }
        return mj_number(j, &s, &n, e);
    }
}

static int mj_end(struct mj *j, struct msf_err *e)
{
    mj_ws(j);
    if (j->p != j->end)
        return mj_fail(j, e, "text after the JSON value");
    return 0;
}

/* An array of numbers: appends each raw number text's (ptr, len) to *v (grown). */
struct numv {
    const char **s;
    size_t *n;
    size_t len, cap;
};

static void numv_free(struct numv *v)
{
    free(v->s);
    free(v->n);
    memset(v, 0, sizeof *v);
}

static int mj_numbers(struct mj *j, struct numv *v, struct msf_err *e)
{
    if (!mj_eat(j, '['))
        return mj_fail(j, e, "expected an array of numbers");
    v->len = 0;
    if (mj_eat(j, ']'))
        return 0;
    for (;;) {
        const char *s;
        size_t n;
        int r = mj_number(j, &s, &n, e);
        if (r < 0)
            return r;
        if (v->len == v->cap) {
            size_t nc = v->cap ? v->cap * 2 : 64;
            const char **ns = realloc(v->s, nc * sizeof *ns);
            if (ns)
                v->s = ns;
            size_t *nn = realloc(v->n, nc * sizeof *nn);
            if (nn)
                v->n = nn;
            if (!ns || !nn)
                return fail(e, 0, 0, -ENOMEM, "out of memory");
            v->cap = nc;
        }
        v->s[v->len] = s;
        v->n[v->len++] = n;
        if (mj_eat(j, ']'))
            return 0;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, "expected ',' or ']'");
    }
}

/* ---- point info ---- */

static void set_name(char *dst, const char *s, size_t n, bool plain)
{
    if (plain && n > 0 && n <= MSF_NAME_MAX) {
        memcpy(dst, s, n);
        dst[n] = '\0';
    }
}

/* {"fp_start":"name","bp_end":"name"}, or lists of names per step (GPU): the first is used. */
static int feed_point_info(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct mj j = {data, data, data + len, 0};
    if (!mj_eat(&j, '{'))
        return mj_fail(&j, e, "expected a JSON object");
    if (!mj_eat(&j, '}')) {
        for (;;) {
            const char *k, *s;
            size_t kn, n;
            bool pl;
            int r = mj_string(&j, &k, &kn, &pl, e);
            if (r < 0)
                return r;
            if (!mj_eat(&j, ':'))
                return mj_fail(&j, e, "expected ':'");
            char *dst = kn == 8 && memcmp(k, "fp_start", 8) == 0 ? m->fp
                        : kn == 6 && memcmp(k, "bp_end", 6) == 0 ? m->bp
                                                                  : NULL;
            mj_ws(&j);
            if (dst && j.p < j.end && *j.p == '"') {
                if ((r = mj_string(&j, &s, &n, &pl, e)) < 0)
                    return r;
                set_name(dst, s, n, pl);
            } else if (dst && j.p < j.end && *j.p == '[') {
                j.p++;
                mj_ws(&j);
                if (j.p < j.end && *j.p == '"') {
                    if ((r = mj_string(&j, &s, &n, &pl, e)) < 0)
                        return r;
                    set_name(dst, s, n, pl);
                    if (mj_eat(&j, ',')) { /* the other names: skipped */
                        if ((r = mj_skip_container(&j, ']', false, e)) < 0)
                            return r;
                    } else if (!mj_eat(&j, ']')) {
                        return mj_fail(&j, e, "expected ',' or ']'");
                    }
                } else if ((r = mj_skip_container(&j, ']', false, e)) < 0) {
                    return r;
                }
            } else if ((r = mj_skip(&j, e)) < 0) {
                return r;
            }
            if (mj_eat(&j, '}'))
                break;
            if (!mj_eat(&j, ','))
                return mj_fail(&j, e, "expected ',' or '}'");
        }
    }
    return mj_end(&j, e);
}

/* ---- lookup tables: framework_raw, flops ---- */

static int cmp_fw(const void *a, const void *b)
{
    return strcmp(((const struct fw_row *)a)->full, ((const struct fw_row *)b)->full);
}

static int cmp_fl(const void *a, const void *b)
{
    return strcmp(((const struct flops_row *)a)->full, ((const struct flops_row *)b)->full);
}

static const struct fw_row *fw_find(const struct msf *m, const char *full)
{
    struct fw_row key = {.full = (char *)full};
    return m->n_fw ? bsearch(&key, m->fw, m->n_fw, sizeof key, cmp_fw) : NULL;
}

static const struct flops_row *fl_find(const struct msf *m, const char *full)
{
    struct flops_row key = {.full = (char *)full};
    return m->n_fl ? bsearch(&key, m->fl, m->n_fl, sizeof key, cmp_fl) : NULL;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    while (nc < need)
        nc *= 2;
    void *np = realloc(*p, nc * size);
    if (!np)
        return -ENOMEM;
    *p = np;
    *cap = nc;
    return 0;
}

static int feed_framework(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = table_open(&c, &h, &f, data, len, NULL, &nh, e);
    int cf = col_find(h, nh, "full_kernel_name");
    if (cf < 0)
        cf = col_find(h, nh, "full_op_name");
    int ck = col_find(h, nh, "kernel_name");
    if (ck < 0)
        ck = col_find(h, nh, "op_name");
    int ct = col_find(h, nh, "kernel_type");
    if (ct < 0)
        ct = col_find(h, nh, "op_type");
    int ci = col_find(h, nh, "op_info");
    if (r == 0 && (cf < 0 || ct < 0))
        r = fail(e, 1, 1, -EINVAL, "the header has no full_kernel_name/full_op_name or "
                                   "kernel_type/op_type column");
    /* MindSpore appends a graph_id its header does not name: extra fields are fine. */
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, true, e)) == 1) {
        if (m->n_fw >= MSF_TABLE_MAX) {
            r = fail(e, line, 1, -EMSGSIZE, "more than %d rows", MSF_TABLE_MAX);
            break;
        }
        if (grow((void **)&m->fw, &m->cap_fw, m->n_fw + 1, sizeof *m->fw) < 0) {
            r = fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        struct fw_row *w = &m->fw[m->n_fw];
        struct fld none = {"", 0, 0};
        w->full = fld_dup(&f[cf]);
        w->kname = fld_dup(ck >= 0 ? &f[ck] : &none);
        w->type = fld_dup(&f[ct]);
        w->info = fld_dup(ci >= 0 ? &f[ci] : &none);
        m->n_fw++;
        if (!w->full || !w->kname || !w->type || !w->info) {
            r = fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        r = 0;
    }
    free(h);
    if (r < 0)
        return r;
    if (m->n_fw)
        qsort(m->fw, m->n_fw, sizeof *m->fw, cmp_fw);
    return 0;
}

static int feed_flops(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = table_open(&c, &h, &f, data, len, NULL, &nh, e);
    struct sbuf b;
    sbuf_init(&b, 1u << 20);
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        sbuf_reset(&b);
        for (size_t i = 1; i < nf; i++) {
            int64_t v;
            if ((r = fld_num(&f[i], line, 6, "flops", &v, e)) < 0)
                break;
            sbuf_addc(&b, ',');
            sbuf_json_str(&b, h[i].s, h[i].n);
            sbuf_addc(&b, ':');
            put_e6(&b, v);
        }
        if (r < 0)
            break;
        if (m->n_fl >= MSF_TABLE_MAX || b.error ||
            grow((void **)&m->fl, &m->cap_fl, m->n_fl + 1, sizeof *m->fl) < 0) {
            r = fail(e, line, 1, -ENOMEM, "out of memory or too many rows");
            break;
        }
        struct flops_row *w = &m->fl[m->n_fl++];
        w->full = fld_dup(&f[0]);
        w->vals = strdup(b.len ? b.data : "");
        if (!w->full || !w->vals) {
            r = fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        r = 0;
    }
    sbuf_done(&b);
    free(h);
    if (r < 0)
        return r;
    if (m->n_fl)
        qsort(m->fl, m->n_fl, sizeof *m->fl, cmp_fl);
    return 0;
}

/* ---- step trace ---- */

static int comm_tid(struct sbuf *b, const char *s, size_t n)
{
    /* "stream_<id>_<k>_<op>" -> "stream_<id>"; anything else -> "communication". */
    if (n > 7 && memcmp(s, "stream_", 7) == 0) {
        size_t i = 7;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i > 7) {
            sbuf_json_str(b, s, i);
            return 0;
        }
    }
    sbuf_adds(b, "\"communication\"");
    return 0;
}

struct comm_col {
    size_t start, end;      /* column indexes */
    const char *name;
    size_t name_len;
};

static int feed_step_trace(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct comm_col *cc = malloc(MSF_FIELDS_MAX * sizeof *cc);
    if (!cc)
        return fail(e, 0, 0, -ENOMEM, "out of memory");
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf, ncc = 0;
    uint64_t line = 1;
    static const char *const need[] = {"step_num", "start_point", "end_point", "fp_point", NULL};
    int r = table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_step = col_find(h, nh, "step_num"), c_start = col_find(h, nh, "start_point");
    int c_end = col_find(h, nh, "end_point"), c_fp = col_find(h, nh, "fp_point");
    int c_bp = col_find(h, nh, "bp_point");
    if (r == 0 && c_bp < 0 && col_find(h, nh, "fp") < 0)
        r = fail(e, 1, 1, -EINVAL, "the header has neither bp_point (training) nor fp (inference)");
    /* Communication ops: "<name>_start_point" with a matching "<name>_end_point". */
    for (size_t i = 0; r == 0 && i < nh; i++) {
        static const char sp[] = "_start_point", ep[] = "_end_point";
        size_t ls = sizeof sp - 1;
        if ((int)i == c_start || h[i].n <= ls || memcmp(h[i].s + h[i].n - ls, sp, ls) != 0)
            continue;
        size_t bn = h[i].n - ls;
        for (size_t k = 0; k < nh; k++)
            if (h[k].n == bn + sizeof ep - 1 && memcmp(h[k].s, h[i].s, bn) == 0 &&
                memcmp(h[k].s + bn, ep, sizeof ep - 1) == 0) {
                cc[ncc++] = (struct comm_col){i, k, h[i].s, bn};
                break;
            }
    }
    /* The markers must have different names to be told apart. */
    if (!m->fp[0] || !m->bp[0] || strcmp(m->fp, m->bp) == 0) {
        memcpy(m->fp, MSF_DEFAULT_FP, sizeof MSF_DEFAULT_FP);
        memcpy(m->bp, MSF_DEFAULT_BP, sizeof MSF_DEFAULT_BP);
    }
    struct sbuf *o = &m->out;
    int64_t prev_step = 0;
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        const struct fld *sf = &f[c_step];
        /* MindSpore's precomputed average row ("-", or 0 in some versions): we average ourselves. */
        if (fld_is(sf, "-") || fld_is(sf, "0"))
            continue;
        int64_t step, start, end, fpv, bpv;
        if (num_parse_i64(sf->s, sf->n, &step) < 0 || step < 1) {
            r = fail(e, line, sf->col, -EINVAL, "step_num: expected an integer >= 1, got \"%.*s\"",
                     (int)(sf->n > 40 ? 40 : sf->n), sf->s);
            break;
        }
        if (step <= prev_step) {
            r = fail(e, line, sf->col, -EINVAL, "step_num %lld does not follow step %lld",
                     (long long)step, (long long)prev_step);
            break;
        }
        prev_step = step;
        /* Points are Ascend system counts: 1 count = 10 ns. */
        if ((r = fld_num(&f[c_fp], line, 1, "fp_point", &fpv, e)) < 0)
            break;
        if (fld_is(&f[c_start], "-"))
            start = fpv;
        else if ((r = fld_num(&f[c_start], line, 1, "start_point", &start, e)) < 0)
            break;
        if ((r = fld_num(&f[c_end], line, 1, "end_point", &end, e)) < 0)
            break;
        if (c_bp >= 0) {
            if ((r = fld_num(&f[c_bp], line, 1, "bp_point", &bpv, e)) < 0)
                break;
        } else {
            bpv = end; /* inference: fp runs to the end */
        }
        if (!(start <= fpv && fpv <= bpv && bpv <= end)) {
            r = fail(e, line, f[c_start].col, -EINVAL,
                     "points out of order: need start_point <= fp_point <= %s <= end_point",
                     c_bp >= 0 ? "bp_point" : "fp_point");
            break;
        }
        sbuf_printf(o, "{\"type\":\"step\",\"step\":%lld,\"begin_us\":", (long long)step);
        put_us(o, start);
        sbuf_adds(o, ",\"end_us\":");
        put_us(o, end);
        sbuf_adds(o, ",\"phases\":{\"dataloader\":");
        put_us(o, fpv - start);
        sbuf_adds(o, ",\"forward\":");
        put_us(o, bpv - fpv);
        sbuf_adds(o, ",\"tail\":");
        put_us(o, end - bpv);
        sbuf_adds(o, "},\"source\":\"mindspore step_trace\"}");
        if ((r = line_done(m, e, line)) < 0)
            break;
        for (int k = 0; k < 2; k++) {
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_strz(o, k == 0 ? m->fp : m->bp);
            sbuf_adds(o, ",\"cat\":\"step_trace\",\"ts\":");
            put_us(o, fpv);
            sbuf_adds(o, ",\"dur\":");
            put_us(o, k == 0 ? 0 : bpv - fpv);
            sbuf_printf(o, ",\"pid\":\"Step Trace\",\"tid\":\"FP/BP\",\"args\":{\"step\":%lld,"
                           "\"point\":\"%s\"}}",
                        (long long)step, k == 0 ? "fp_point" : "bp_point");
            if ((r = line_done(m, e, line)) < 0)
                break;
        }
        for (size_t k = 0; r == 0 && k < ncc; k++) {
            const struct fld *a = &f[cc[k].start], *b = &f[cc[k].end];
            if (a->n == 0 || b->n == 0 || fld_is(a, "-") || fld_is(b, "-"))
                continue; /* no such op in this step */
            int64_t cs, ce;
            if ((r = fld_num(a, line, 1, "communication start", &cs, e)) < 0 ||
                (r = fld_num(b, line, 1, "communication end", &ce, e)) < 0)
                break;
            if (ce < cs) {
                r = fail(e, line, b->col, -EINVAL, "%.*s ends before it starts",
                         (int)cc[k].name_len, cc[k].name);
                break;
            }
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, cc[k].name, cc[k].name_len);
            sbuf_adds(o, ",\"cat\":\"step_trace\",\"ts\":");
            put_us(o, cs);
            sbuf_adds(o, ",\"dur\":");
            put_us(o, ce - cs);
            sbuf_adds(o, ",\"pid\":\"Step Trace\",\"tid\":");
            comm_tid(o, cc[k].name, cc[k].name_len);
            sbuf_printf(o, ",\"args\":{\"step\":%lld}}", (long long)step);
            r = line_done(m, e, line);
        }
    }
    free(h);
    free(cc);
    if (r < 0)
        return r;
    m->have_steps = true;
    return 0;
}

/* ---- AI Core / AI CPU operator tables ---- */

/* The shortest kernel record feed_aicore_detail() writes: an empty name and type, times 0. */
#define MSF_KERNEL_LINE_MIN                                                                     \
    (sizeof "{\"ph\":\"X\",\"name\":\"\",\"cat\":\"kernel\",\"ts\":0,\"dur\":0,\"pid\":\"AI Core "     \
            "(aggregated)\",\"tid\":\"\",\"args\":{\"aggregated\":true}}\n" - 1)

static int feed_aicore_detail(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    static const char *const need[] = {"execution_time", "execution_frequency", NULL};
    int r = table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_time = col_find(h, nh, "execution_time");
    int c_freq = col_find(h, nh, "execution_frequency");
    /* The name is the first column (full_kernel_name, full_op_name; "full_kernel_time" in
     * some MindSpore versions). */
    struct sbuf *o = &m->out;
    char *name = NULL;
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        int64_t avg, freq;
        if ((r = fld_num(&f[c_time], line, 6, "execution_time (ms)", &avg, e)) < 0 ||
            (r = fld_count(&f[c_freq], line, "execution_frequency", &freq, e)) < 0)
            break;
        if (avg < 0) {
            r = fail(e, line, f[c_time].col, -EINVAL, "execution_time is negative");
            break;
        }
        free(name);
        name = fld_dup(&f[0]);
        if (!name) {
            r = fail(e, line, 1, -ENOMEM, "out of memory");
            break;
        }
        /* One span per call, each at least MSF_KERNEL_LINE_MIN bytes: a count that cannot fit
         * is refused before anything is expanded (a 541-byte file claiming 333 M calls once
         * took 1.2 GB and 3 s to reach the output limit). */
        if ((uint64_t)freq > MSF_EVENTS_MAX - m->n_lines ||
            (uint64_t)freq > (m->out.max - m->out.len) / MSF_KERNEL_LINE_MIN) {
            r = fail(e, line, f[c_freq].col, -EMSGSIZE,
                     "execution_frequency %lld: one record per call would pass the limit of %llu "
                     "records or %zu bytes", (long long)freq, (unsigned long long)MSF_EVENTS_MAX,
                     m->out.max);
            break;
        }
        const struct fw_row *w = fw_find(m, name);
        const struct flops_row *fl = fl_find(m, name);
        for (int64_t i = 0; i < freq; i++) {
            if (avg > 0 && m->kernel_ns > INT64_MAX - avg) {
                r = fail(e, line, f[c_time].col, -EINVAL, "the kernel times add up past int64");
                break;
            }
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, f[0].s, f[0].n);
            sbuf_adds(o, ",\"cat\":\"kernel\",\"ts\":");
            put_us(o, m->kernel_ns);
            sbuf_adds(o, ",\"dur\":");
            put_us(o, avg);
            sbuf_adds(o, ",\"pid\":\"AI Core (aggregated)\",\"tid\":");
            sbuf_json_strz(o, w ? w->type : "AI Core");
            sbuf_adds(o, ",\"args\":{\"aggregated\":true");
            if (w) {
                sbuf_adds(o, ",\"kernel_name\":");
                sbuf_json_strz(o, w->kname);
                sbuf_adds(o, ",\"kernel_type\":");
                sbuf_json_strz(o, w->type);
                if (w->info[0]) {
                    sbuf_adds(o, ",\"op_info\":");
                    sbuf_json_strz(o, w->info);
                }
            }
            if (fl)
                sbuf_adds(o, fl->vals);
            sbuf_adds(o, "}}");
            m->kernel_ns += avg;
            if ((r = line_done(m, e, line)) < 0)
                break;
        }
        r = r < 0 ? r : 0;
    }
    free(name);
    free(h);
    return r < 0 ? r : 0;
}

/* The type table: checked, nothing sent (the kernel table and its types come from the detail
 * and framework_raw). */
static int feed_aicore_type(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    (void)m;
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    int r = table_open(&c, &h, &f, data, len, NULL, &nh, e);
    int c_time = col_find(h, nh, "total_time");
    if (c_time < 0)
        c_time = col_find(h, nh, "execution_time");
    int c_freq = col_find(h, nh, "execution_frequency");
    if (r == 0 && (c_time < 0 || c_freq < 0))
        r = fail(e, 1, 1, -EINVAL, "the header has no total_time or execution_frequency column");
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        int64_t v;
        if ((r = fld_num(&f[c_time], line, 6, "total_time (ms)", &v, e)) < 0 ||
            (r = fld_count(&f[c_freq], line, "execution_frequency", &v, e)) < 0)
            break;
        r = 0;
    }
    free(h);
    return r < 0 ? r : 0;
}

/* The columns of an AI CPU table (aicpu_intermediate_<r>.csv or its source,
 * output_data_preprocess_aicpu_<r>.txt). */
struct aicpu_cols {
    int type, total, disp, exec, rs, re;
};

static int aicpu_cols(const struct fld *h, size_t nh, struct aicpu_cols *c, struct msf_err *e)
{
    static const char *const need[] = {"total_time", "dispatch_time", "run_start", "run_end"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (col_find(h, nh, need[i]) < 0)
            return fail(e, 1, 1, -EINVAL, "the header has no column \"%s\"", need[i]);
    c->type = col_find(h, nh, "kernel_type");
    if (c->type < 0)
        c->type = col_find(h, nh, "op_type");
    if (c->type < 0)
        c->type = col_find(h, nh, "node_type_name");
    c->total = col_find(h, nh, "total_time");
    c->disp = col_find(h, nh, "dispatch_time");
    c->exec = col_find(h, nh, "execution_time");
    c->rs = col_find(h, nh, "run_start");
    c->re = col_find(h, nh, "run_end");
    if (c->type < 0)
        return fail(e, 1, 1, -EINVAL, "the header has no kernel_type/op_type/node_type_name column");
    return 0;
}

/* One AI CPU task -> one kernel span. Times in ms; run_start and run_end in µs (MindSpore's
 * system counter / 100, the clock of minddata_aicpu_<r>.txt's GetNext records). The span lasts
 * total_time, the time MindInsight's AI CPU tables sum and average; execution_time (else
 * run_end - run_start) and dispatch_time travel in args. */
static int aicpu_row(struct msf *m, const struct aicpu_cols *c, const struct fld *f,
                     uint64_t line, struct msf_err *e)
{
    int64_t tot, disp, rs, re, ex;
    int r;
    if ((r = fld_num(&f[c->total], line, 6, "total_time (ms)", &tot, e)) < 0 ||
        (r = fld_num(&f[c->disp], line, 6, "dispatch_time (ms)", &disp, e)) < 0 ||
        (r = fld_num(&f[c->rs], line, 3, "run_start (us)", &rs, e)) < 0 ||
        (r = fld_num(&f[c->re], line, 3, "run_end (us)", &re, e)) < 0)
        return r;
    if (c->exec >= 0) {
        if ((r = fld_num(&f[c->exec], line, 6, "execution_time (ms)", &ex, e)) < 0)
            return r;
    } else {
        ex = re - rs;
    }
    if (ex < 0 || rs < 0 || tot < 0 || disp < 0)
        return fail(e, line, f[c->rs].col, -EINVAL,
                    "negative run_start, total, dispatch or execution time");
    struct sbuf *o = &m->out;
    sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
    sbuf_json_str(o, f[c->type].s, f[c->type].n);
    sbuf_adds(o, ",\"cat\":\"kernel\",\"ts\":");
    put_us(o, rs);
    sbuf_adds(o, ",\"dur\":");
    put_us(o, tot);
    sbuf_adds(o, ",\"pid\":\"AI CPU\",\"tid\":0,\"args\":{\"execution_time_us\":");
    put_us(o, ex);
    sbuf_adds(o, ",\"dispatch_time_us\":");
    put_us(o, disp);
    sbuf_adds(o, "}}");
    return line_done(m, e, line);
}

/* output_data_preprocess_aicpu_<r>.txt, the table aicpu_intermediate_<r>.csv is copied from
 * (MindSpore's Integrator): blank-separated, a header "serial_number node_type_name
 * total_time(ms) dispatch_time(ms) execution_time(ms) run_start run_end", one row per task, and
 * a last line "AI CPU Total Time(ms): <sum>", which is skipped as MindSpore skips it. */
static int feed_aicpu_txt(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct fld h[16], f[16];
    size_t nh = 0;
    struct aicpu_cols c;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    for (; p < end; p = p < end ? p + 1 : p, line++) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        struct fld *v = nh ? f : h;
        size_t n = 0;
        for (char *q = p; q < le;) {
            while (q < le && (is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            if (n == 16)
                return fail(e, line, (uint64_t)(q - p) + 1, -EINVAL, "more than 16 fields");
            v[n].s = q;
            v[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !is_blank(*q) && *q != '\r')
                q++;
            v[n].n = (size_t)(q - v[n].s);
            n++;
        }
        p = le;
        if (n == 0)
            continue;
        if (!nh) {
            if (!fld_is(&h[0], "serial_number"))
                return fail(e, line, 1, -EINVAL, "expected the header \"serial_number "
                                                 "node_type_name total_time(ms) ...\"");
            for (size_t i = 0; i < n; i++) /* "total_time(ms)" -> "total_time" */
                if (h[i].n > 4 && memcmp(h[i].s + h[i].n - 4, "(ms)", 4) == 0)
                    h[i].n -= 4;
            nh = n;
            if ((r = aicpu_cols(h, nh, &c, e)) < 0) {
                e->line = line;
                return r;
            }
            continue;
        }
        if (f[0].n == 2 && memcmp(f[0].s, "AI", 2) == 0)
            continue; /* "AI CPU Total Time(ms): ..." */
        if (n != nh)
            return fail(e, line, 1, -EINVAL, "%zu fields where the header has %zu", n, nh);
        if ((r = aicpu_row(m, &c, f, line, e)) < 0)
            return r;
    }
    if (!nh)
        return fail(e, 0, 0, -EINVAL, "empty file: no header row");
    return 0;
}

/* aicpu_intermediate_<r>.csv: one row per AI CPU task (MindSpore writes it from
 * output_data_preprocess_aicpu_<r>.txt with csv.writer), or that .txt itself (msdir reads it
 * when the rank has no .csv). */
static int feed_aicpu(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    const char *nl = memchr(data, '\n', len);
    if (!memchr(data, ',', nl ? (size_t)(nl - data) : len) && len > 0)
        return feed_aicpu_txt(m, data, len, e);
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    struct aicpu_cols cols;
    int r = table_open(&c, &h, &f, data, len, NULL, &nh, e);
    if (r == 0)
        r = aicpu_cols(h, nh, &cols, e);
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1)
        r = aicpu_row(m, &cols, f, line, e);
    free(h);
    return r < 0 ? r : 0;
}

/* ---- MindData ---- */

/* A CSV cell holding a JSON list of numbers ("[1, 2]" or "[]"); appended as a JSON array. */
static int put_num_list(struct sbuf *o, const struct fld *fd, uint64_t line, const char *what,
                        struct msf_err *e)
{
    struct mj j = {fd->s, fd->s, fd->s + fd->n, 0};
    struct numv v = {0};
    struct msf_err je;
    int r = mj_numbers(&j, &v, &je);
    if (r == 0)
        r = mj_end(&j, &je);
    if (r < 0) {
        numv_free(&v);
        return fail(e, line, fd->col, r, "%s: character %llu of the cell: %s", what,
                    (unsigned long long)je.col, je.reason);
    }
    sbuf_addc(o, '[');
    for (size_t i = 0; i < v.len; i++) {
        if (i)
            sbuf_addc(o, ',');
        sbuf_add(o, v.s[i], v.n[i]);
    }
    sbuf_addc(o, ']');
    numv_free(&v);
    return 0;
}

/* Appends (id, the text of b) to *v. Returns 0 or -ENOMEM / -EMSGSIZE with *e filled. */
static int pend_add(struct pend_op **v, size_t *n, size_t *cap, int64_t id, struct sbuf *b,
                    uint64_t line, struct msf_err *e)
{
    if (b->error)
        return fail(e, line, 0, b->error == -ENOMEM ? -ENOMEM : -EMSGSIZE,
                    "a pipeline op passes the %zu-byte limit or memory ran out", b->max);
    if (*n >= MSF_PIPE_OPS_MAX)
        return fail(e, line, 0, -EMSGSIZE, "more than %d pipeline ops", MSF_PIPE_OPS_MAX);
    if (grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return fail(e, line, 0, -ENOMEM, "out of memory");
    char *t = strdup(b->len ? b->data : "");
    if (!t)
        return fail(e, line, 0, -ENOMEM, "out of memory");
    (*v)[(*n)++] = (struct pend_op){id, t};
    return 0;
}

/* minddata_pipeline_raw_<r>.csv -> the ops of the pipeline record msf_end() sends
 * (PROTOCOL.md section 8). */
static int feed_pipeline(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct csv c;
    struct fld *h, *f;
    size_t nh, nf;
    uint64_t line = 1;
    static const char *const need[] = {"op_id", "op_type", "num_workers", "children_id", NULL};
    int r = table_open(&c, &h, &f, data, len, need, &nh, e);
    int c_id = col_find(h, nh, "op_id"), c_type = col_find(h, nh, "op_type");
    int c_w = col_find(h, nh, "num_workers"), c_ch = col_find(h, nh, "children_id");
    int c_qs = col_find(h, nh, "output_queue_size"), c_ql = col_find(h, nh, "output_queue_length");
    int c_qu = col_find(h, nh, "output_queue_usage_rate");
    int c_par = col_find(h, nh, "parent_id");
    int c_si = col_find(h, nh, "sample_interval");
    struct sbuf tb, *o = &tb;
    sbuf_init(&tb, m->out.max);
    while (r == 0 && (r = table_row(&c, h, nh, f, &nf, &line, false, e)) == 1) {
        /* MindSpore writes Python's None as an empty cell: a leaf's children_id, the root's
         * parent_id and, for an op without an output queue (an inline op), every queue
         * column. An empty cell is "none" (MindInsight reads it so), never an error. */
        int64_t id, w = 0, v;
        if ((r = fld_count(&f[c_id], line, "op_id", &id, e)) < 0 ||
            (f[c_w].n && (r = fld_count(&f[c_w], line, "num_workers", &w, e)) < 0))
            break;
        sbuf_reset(o);
        sbuf_printf(o, "{\"id\":%lld,\"name\":", (long long)id);
        sbuf_json_str(o, f[c_type].s, f[c_type].n);
        if (f[c_w].n)
            sbuf_printf(o, ",\"num_workers\":%lld", (long long)w);
        sbuf_adds(o, ",\"children\":");
        if (f[c_ch].n == 0)
            sbuf_adds(o, "[]");
        else if ((r = put_num_list(o, &f[c_ch], line, "children_id", e)) < 0)
            break;
        if (c_par >= 0 && f[c_par].n) {
            if ((r = dec_scaled(f[c_par].s, f[c_par].n, 0, &v)) < 0) {
                r = fail(e, line, f[c_par].col, -EINVAL, "parent_id: expected an integer");
                break;
            }
            sbuf_printf(o, ",\"parent\":%lld", (long long)v);
        }
        if (c_qs >= 0 && f[c_qs].n) {
            sbuf_adds(o, ",\"queue_sizes\":");
            if ((r = put_num_list(o, &f[c_qs], line, "output_queue_size", e)) < 0)
                break;
        }
        if (c_ql >= 0 && f[c_ql].n) {
            if ((r = fld_count(&f[c_ql], line, "output_queue_length", &v, e)) < 0)
                break;
            sbuf_printf(o, ",\"queue_capacity\":%lld", (long long)v);
        }
        if (c_qu >= 0 && f[c_qu].n) {
            if ((r = fld_num(&f[c_qu], line, 6, "output_queue_usage_rate", &v, e)) < 0)
                break;
            if (v < 0 || v > 1000000) {
                r = fail(e, line, f[c_qu].col, -EINVAL, "output_queue_usage_rate not in [0, 1]");
                break;
            }
            sbuf_adds(o, ",\"queue_usage\":");
            put_e6(o, v);
        }
        if (c_si >= 0 && f[c_si].n) {
            if ((r = fld_num(&f[c_si], line, 6, "sample_interval (ms)", &v, e)) < 0)
                break;
            if (v < 0) {
                r = fail(e, line, f[c_si].col, -EINVAL, "sample_interval is negative");
                break;
            }
            sbuf_adds(o, ",\"sample_interval_ms\":");
            put_e6(o, v);
        }
        /* the closing brace comes in msf_end(), after the op's CPU series */
        if ((r = pend_add(&m->pops, &m->n_pops, &m->cap_pops, id, o, line, e)) < 0)
            break;
        r = 0;
    }
    sbuf_done(&tb);
    free(h);
    if (r < 0)
        return r;
    m->have_pipe = m->n_pops > 0; /* a header alone: nothing to send */
    return 0;
}

/* device_queue_profiling_<r>.txt: "type extra batch value timestamp" per line. Type 1 is a
 * host-queue sample (extra = capacity, value = size); type 0 a time record (extra 0 get,
 * 1 push, 2 total; value in ms). */
static int feed_device_queue(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct fld f[8];
    struct sbuf *o = &m->out;
    int r = 0;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        size_t n = 0;
        char *q = p;
        while (q < le) {
            while (q < le && (is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            if (n == 8) {
                n++;
                break;
            }
            f[n].s = q;
            f[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !is_blank(*q) && *q != '\r')
                q++;
            f[n].n = (size_t)(q - f[n].s);
            n++;
        }
        if (n != 0 && n != 5)
            return fail(e, line, 1, -EINVAL, "expected 5 fields (type extra batch value "
                                             "timestamp), got %zu", n);
        if (n == 5) {
            int64_t type, extra, batch, val, ts;
            if ((r = fld_count(&f[0], line, "type", &type, e)) < 0 ||
                (r = fld_count(&f[1], line, "extra", &extra, e)) < 0 ||
                (r = fld_count(&f[2], line, "batch", &batch, e)) < 0 ||
                (r = fld_num(&f[4], line, 3, "timestamp", &ts, e)) < 0)
                return r;
            if (type == 1) {
                if ((r = fld_count(&f[3], line, "queue size", &val, e)) < 0)
                    return r;
                sbuf_printf(o, "{\"type\":\"queue\",\"name\":\"device_queue\",\"size\":%lld,"
                               "\"capacity\":%lld,\"step\":%lld}",
                            (long long)val, (long long)extra, (long long)batch);
            } else if (type == 0) {
                static const char *const what[] = {"get_cost", "push_cost", "total_cost"};
                if (extra > 2)
                    return fail(e, line, f[1].col, -EINVAL,
                                "time record kind %lld (expected 0 get, 1 push, 2 total)",
                                (long long)extra);
                if ((r = fld_num(&f[3], line, 6, "time (ms)", &val, e)) < 0)
                    return r;
                sbuf_adds(o, "{\"ph\":\"C\",\"name\":\"device_queue_time_ms\",\"ts\":");
                put_us(o, ts);
                sbuf_printf(o, ",\"pid\":\"MindData\",\"tid\":0,\"args\":{\"%s\":", what[extra]);
                put_e6(o, val);
                sbuf_printf(o, ",\"step\":%lld}}", (long long)batch);
            } else {
                return fail(e, line, f[0].col, -EINVAL, "record type %lld (expected 0 or 1)",
                            (long long)type);
            }
            if ((r = line_done(m, e, line)) < 0)
                return r;
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return 0;
}

/* minddata_aicpu_<r>.txt / minddata_getnext_profiling_<r>.txt:
 * "<name> <start> <end> <queue size>" per GetNext, times in µs (shift 3) or ns (shift 0). */
static int feed_getnext(struct msf *m, char *data, size_t len, int shift, struct msf_err *e)
{
    struct fld f[5];
    struct sbuf *o = &m->out;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        size_t n = 0;
        char *q = p;
        while (q < le && n < 5) { /* a fifth field is an error */
            while (q < le && (is_blank(*q) || *q == '\r'))
                q++;
            if (q >= le)
                break;
            f[n].s = q;
            f[n].col = (uint64_t)(q - p) + 1;
            while (q < le && !is_blank(*q) && *q != '\r')
                q++;
            f[n].n = (size_t)(q - f[n].s);
            n++;
        }
        if (n != 0 && n != 4)
            return fail(e, line, 1, -EINVAL, "expected 4 fields (name start end queue_size), "
                                             "got %zu%s", n, n == 5 ? " or more" : "");
        if (n == 4) {
            int64_t st, en, size;
            if ((r = fld_num(&f[1], line, shift, "start", &st, e)) < 0 ||
                (r = fld_num(&f[2], line, shift, "end", &en, e)) < 0 ||
                (r = fld_count(&f[3], line, "queue size", &size, e)) < 0)
                return r;
            if (en < st)
                return fail(e, line, f[2].col, -EINVAL, "end is before start");
            m->getnext_step++;
            sbuf_printf(o, "{\"type\":\"queue\",\"name\":\"get_next\",\"size\":%lld,\"step\":%lld,"
                           "\"ts_us\":",
                        (long long)size, (long long)m->getnext_step);
            put_us(o, st);
            sbuf_addc(o, '}');
            if ((r = line_done(m, e, line)) < 0)
                return r;
            sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
            sbuf_json_str(o, f[0].s, f[0].n);
            sbuf_adds(o, ",\"cat\":\"minddata\",\"ts\":");
            put_us(o, st);
            sbuf_adds(o, ",\"dur\":");
            put_us(o, en - st);
            sbuf_printf(o, ",\"pid\":\"MindData\",\"tid\":\"GetNext\",\"args\":{\"step\":%lld,"
                           "\"queue_size\":%lld}}",
                        (long long)m->getnext_step, (long long)size);
            if ((r = line_done(m, e, line)) < 0)
                return r;
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    return 0;
}

static int feed_getnext_us(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    return feed_getnext(m, data, len, 3, e);
}

static int feed_getnext_ns(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    return feed_getnext(m, data, len, 0, e);
}

/* ---- CPU utilisation ---- */

/* MindSpore's names of the series and the record's (PROTOCOL.md section 8, "cpu"). */
static const char *const cpu_dev_keys[] = {"user_utilization", "sys_utilization",
                                           "io_utilization", "idle_utilization",
                                           "runable_processes", "context_switch_count"};
static const char *const cpu_dev_names[] = {"user", "sys", "io", "idle", "runnable",
                                            "context_switch"};
enum { CPU_DEV_N = 6, CPU_IDLE = 3 };

static bool key_is(const char *k, size_t kn, const char *lit)
{
    return kn == strlen(lit) && memcmp(k, lit, kn) == 0;
}

/* ,"name":[v...] with every value checked (a number >= 0) and written exactly to 1e-6. */
static int put_series(struct sbuf *b, const char *name, const struct numv *v, struct msf_err *e)
{
    sbuf_printf(b, ",\"%s\":[", name);
    for (size_t i = 0; i < v->len; i++) {
        int64_t x;
        if (dec_scaled(v->s[i], v->n[i], 6, &x) < 0 || x < 0)
            return fail(e, 0, 0, -EINVAL, "%s[%zu] is not a number >= 0", name, i);
        if (i)
            sbuf_addc(b, ',');
        put_e6(b, x);
    }
    sbuf_addc(b, ']');
    return 0;
}

/* An object of arrays of numbers: the arrays whose key is in keys[0, nk) go to v[k], every
 * other value is skipped. */
static int mj_series_object(struct mj *j, const char *const *keys, size_t nk, struct numv *v,
                            struct msf_err *e)
{
    const char *s;
    size_t n;
    bool pl;
    int r;
    if (!mj_eat(j, '{'))
        return mj_fail(j, e, "expected a JSON object");
    if (mj_eat(j, '}'))
        return 0;
    for (;;) {
        if ((r = mj_string(j, &s, &n, &pl, e)) < 0)
            return r;
        if (!mj_eat(j, ':'))
            return mj_fail(j, e, "expected ':'");
        size_t k = 0;
        while (k < nk && !key_is(s, n, keys[k]))
            k++;
        if ((r = k < nk ? mj_numbers(j, &v[k], e) : mj_skip(j, e)) < 0)
            return r;
        if (mj_eat(j, '}'))
            return 0;
        if (!mj_eat(j, ','))
            return mj_fail(j, e, "expected ',' or '}'");
    }
}

/* op_info: [{"op_id": N, "metrics": {"user_utilization": [...], "sys_utilization": [...]}}]:
 * each op's series become a pending ",\"cpu_user\":[...],\"cpu_sys\":[...]" (op_id -1, the
 * threads outside the pipeline, is left out, as MindInsight does). */
static int mj_cpu_ops(struct msf *m, struct mj *j, struct msf_err *e)
{
    static const char *const keys[] = {"user_utilization", "sys_utilization"};
    struct numv v[2] = {{0}, {0}};
    struct sbuf b;
    sbuf_init(&b, m->out.max);
    int r = 0;
    if (!mj_eat(j, '[')) {
        r = mj_fail(j, e, "op_info: expected an array");
        goto out;
    }
    if (mj_eat(j, ']'))
        goto out;
    for (;;) {
        int64_t id = -1;
        bool have_id = false;
        v[0].len = v[1].len = 0;
        if (!mj_eat(j, '{')) {
            r = mj_fail(j, e, "op_info: expected an object");
            goto out;
        }
        if (!mj_eat(j, '}')) {
            for (;;) {
                const char *k, *ns;
                size_t kn, nn;
                bool pl;
                if ((r = mj_string(j, &k, &kn, &pl, e)) < 0)
                    goto out;
                if (!mj_eat(j, ':')) {
                    r = mj_fail(j, e, "expected ':'");
                    goto out;
                }
                if (key_is(k, kn, "op_id")) {
                    if ((r = mj_number(j, &ns, &nn, e)) < 0)
                        goto out;
                    if (num_parse_i64(ns, nn, &id) < 0 || id < -1) {
                        r = mj_fail(j, e, "op_id: expected an integer >= -1");
                        goto out;
                    }
                    have_id = true;
                } else if (key_is(k, kn, "metrics")) {
                    if ((r = mj_series_object(j, keys, 2, v, e)) < 0)
                        goto out;
                } else if ((r = mj_skip(j, e)) < 0) {
                    goto out;
                }
                if (mj_eat(j, '}'))
                    break;
                if (!mj_eat(j, ',')) {
                    r = mj_fail(j, e, "expected ',' or '}'");
                    goto out;
                }
            }
        }
        if (have_id && id >= 0) {
            sbuf_reset(&b);
            if ((r = put_series(&b, "cpu_user", &v[0], e)) < 0 ||
                (r = put_series(&b, "cpu_sys", &v[1], e)) < 0 ||
                (r = pend_add(&m->cops, &m->n_cops, &m->cap_cops, id, &b, 0, e)) < 0)
                goto out;
        }
        if (mj_eat(j, ']'))
            break;
        if (!mj_eat(j, ',')) {
            r = mj_fail(j, e, "expected ',' or ']'");
            goto out;
        }
    }
out:
    sbuf_done(&b);
    numv_free(&v[0]);
    numv_free(&v[1]);
    return r;
}

/* minddata_cpu_utilization_<r>.json -> one host record per sample: sys_cpu_percent = 100 - idle
 * (MindInsight's "active"), cpu_percent = the process's user + sys, which MindSpore gives as a
 * share of the whole machine, times cpu_processor_num (the protocol's "% of one core"); and the
 * series MindInsight's CPU view shows (system user, sys, io, idle, runnable processes, context
 * switches; process user, sys; user and sys per pipeline op) for the pipeline record of
 * msf_end(). */
static int feed_cpu_util(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    static const char *const proc_keys[] = {"user_utilization", "sys_utilization"};
    struct mj j = {data, data, data + len, 0};
    struct numv dev[CPU_DEV_N] = {{0}}, proc[2] = {{0}, {0}};
    int64_t ncpu = 0, interval = -1;
    struct sbuf cj;
    sbuf_init(&cj, m->out.max);
    int r = 0;
    if (!mj_eat(&j, '{')) {
        r = mj_fail(&j, e, "expected a JSON object");
        goto out;
    }
    if (mj_eat(&j, '}'))
        goto end;
    for (;;) {
        const char *k, *s;
        size_t kn, n;
        bool pl;
        if ((r = mj_string(&j, &k, &kn, &pl, e)) < 0)
            goto out;
        if (!mj_eat(&j, ':')) {
            r = mj_fail(&j, e, "expected ':'");
            goto out;
        }
        mj_ws(&j);
        if (key_is(k, kn, "cpu_processor_num")) {
            if ((r = mj_number(&j, &s, &n, e)) < 0)
                goto out;
            if (num_parse_i64(s, n, &ncpu) < 0 || ncpu < 0 || ncpu > 1000000) {
                r = fail(e, 0, 0, -EINVAL, "cpu_processor_num is not a count");
                goto out;
            }
        } else if (key_is(k, kn, "sampling_interval")) {
            if ((r = mj_number(&j, &s, &n, e)) < 0)
                goto out;
            if (dec_scaled(s, n, 6, &interval) < 0 || interval < 0) {
                r = fail(e, 0, 0, -EINVAL, "sampling_interval is not a number >= 0");
                goto out;
            }
        } else if (key_is(k, kn, "device_info")) {
            if ((r = mj_series_object(&j, cpu_dev_keys, CPU_DEV_N, dev, e)) < 0)
                goto out;
        } else if (key_is(k, kn, "process_info")) {
            if ((r = mj_series_object(&j, proc_keys, 2, proc, e)) < 0)
                goto out;
        } else if (key_is(k, kn, "op_info")) {
            if ((r = mj_cpu_ops(m, &j, e)) < 0)
                goto out;
        } else if ((r = mj_skip(&j, e)) < 0) {
            goto out;
        }
        if (mj_eat(&j, '}'))
            break;
        if (!mj_eat(&j, ',')) {
            r = mj_fail(&j, e, "expected ',' or '}'");
            goto out;
        }
    }
end:
    if ((r = mj_end(&j, e)) < 0)
        goto out;
    const struct numv *idle = &dev[CPU_IDLE], *puser = &proc[0], *psys = &proc[1];
    size_t ns = idle->len > puser->len ? idle->len : puser->len;
    for (size_t i = 0; i < ns; i++) {
        struct sbuf *o = &m->out;
        int64_t v, u = 0, sy = 0;
        sbuf_adds(o, "{\"type\":\"host\"");
        if (i < idle->len) {
            if (dec_scaled(idle->s[i], idle->n[i], 6, &v) < 0 || v < 0 || v > 100000000) {
                r = fail(e, 0, 0, -EINVAL, "idle_utilization[%zu] is not a percentage", i);
                goto out;
            }
            sbuf_adds(o, ",\"sys_cpu_percent\":");
            sbuf_json_us(o, (100000000 - v) / 1000);
        }
        if (i < puser->len && i < psys->len && ncpu > 0) {
            if (dec_scaled(puser->s[i], puser->n[i], 6, &u) < 0 ||
                dec_scaled(psys->s[i], psys->n[i], 6, &sy) < 0 || u < 0 || sy < 0 ||
                u > 100000000 || sy > 100000000) {
                r = fail(e, 0, 0, -EINVAL, "process utilization[%zu] is not a percentage", i);
                goto out;
            }
            sbuf_adds(o, ",\"cpu_percent\":");
            sbuf_json_us(o, (u + sy) * ncpu / 1000);
        }
        sbuf_printf(o, ",\"sample\":%zu}", i);
        if ((r = line_done(m, e, 0)) < 0)
            goto out;
    }
    /* The "cpu" object of the pipeline record. */
    sbuf_adds(&cj, "{\"sampling_interval_ms\":");
    if (interval >= 0)
        put_e6(&cj, interval);
    else
        sbuf_adds(&cj, "null");
    sbuf_printf(&cj, ",\"processors\":%lld", (long long)ncpu);
    for (size_t k = 0; k < CPU_DEV_N; k++)
        if ((r = put_series(&cj, cpu_dev_names[k], &dev[k], e)) < 0)
            goto out;
    if ((r = put_series(&cj, "process_user", &proc[0], e)) < 0 ||
        (r = put_series(&cj, "process_sys", &proc[1], e)) < 0)
        goto out;
    sbuf_addc(&cj, '}');
    if (cj.error) {
        r = fail(e, 0, 0, cj.error == -ENOMEM ? -ENOMEM : -EMSGSIZE,
                 "the CPU series pass the %zu-byte limit or memory ran out", cj.max);
        goto out;
    }
    free(m->cpu_json);
    m->cpu_json = sbuf_steal(&cj, NULL);
    if (!m->cpu_json)
        r = fail(e, 0, 0, -ENOMEM, "out of memory");
out:
    sbuf_done(&cj);
    for (size_t k = 0; k < CPU_DEV_N; k++)
        numv_free(&dev[k]);
    numv_free(&proc[0]);
    numv_free(&proc[1]);
    return r;
}

/* ---- MindSpore 2.x CPU op timestamps ---- */

#define MSF_SHAPES_MAX 65536 /* ops of cpu_framework kept */

/* Whether v[0, n) is "[d, d, ...]" (or "[]"): digits separated by commas and blanks. */
static bool is_dims(const char *v, size_t n)
{
    if (n < 2 || v[0] != '[' || v[n - 1] != ']')
        return false;
    bool want_digit = true, any = false;
    for (size_t i = 1; i + 1 < n; i++) {
        char c = v[i];
        if (is_blank(c))
            continue;
        if (c >= '0' && c <= '9') {
            if (!want_digit && !(v[i - 1] >= '0' && v[i - 1] <= '9'))
                return false;
            want_digit = false;
            any = true;
        } else if (c == ',' && !want_digit) {
            want_digit = true;
        } else {
            return false;
        }
    }
    return !any || !want_digit;
}

/* One "input_<k>:[d, d, ...]" field as a JSON array of numbers into o, "input_<k>:NoShape" as []
 * and any other value (TupleShape(NoShape), ...) as the string it is. */
static void shape_json(struct sbuf *o, const char *f, size_t n)
{
    const char *c = memchr(f, ':', n);
    const char *v = c ? c + 1 : f, *end = f + n;
    size_t vn = (size_t)(end - v);
    if (vn == 7 && memcmp(v, "NoShape", 7) == 0) {
        sbuf_adds(o, "[]");
    } else if (is_dims(v, vn)) {
        sbuf_addc(o, '[');
        for (size_t i = 1; i + 1 < vn; i++)
            if (!is_blank(v[i]))
                sbuf_addc(o, v[i]);
        sbuf_addc(o, ']');
    } else {
        sbuf_json_str(o, v, vn);
    }
}

/* cpu_framework_<r>.txt (MindSpore 2.x on the CPU): "type;name;graph;input_1:[d, ...];...;" per
 * execution, in the order they ran; ";;graph;" for one MindSpore did not name. Kept in order for
 * cpu_op_execute_timestamp (feed_cpu_op_ts), whose spans get the shapes. */
static int feed_cpu_framework(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r = 0;
    struct sbuf js;
    sbuf_init(&js, 1u << 20);
    while (p < end && r == 0) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        while (le > p && (le[-1] == '\r' || is_blank(le[-1])))
            le--;
        char *s1 = le > p ? memchr(p, ';', (size_t)(le - p)) : NULL;
        char *s2 = s1 ? memchr(s1 + 1, ';', (size_t)(le - s1 - 1)) : NULL;
        char *s3 = s2 ? memchr(s2 + 1, ';', (size_t)(le - s2 - 1)) : NULL;
        if (le > p && !s3) {
            r = fail(e, line, 1, -EINVAL, "expected \"type;name;graph;input_1:[...];...\"");
            break;
        }
        if (le > p) { /* one execution: an op, or ";;graph;" (an op MindSpore did not name) */
            js.len = 0;
            sbuf_addc(&js, '[');
            char *q = s3 + 1;
            bool first = true;
            while (q < le && r == 0) {
                char *fe = memchr(q, ';', (size_t)(le - q));
                if (!fe)
                    fe = le;
                if (fe > q) {
                    if (!first)
                        sbuf_addc(&js, ',');
                    first = false;
                    shape_json(&js, q, (size_t)(fe - q));
                }
                q = fe + 1;
            }
            sbuf_addc(&js, ']');
            if (r == 0 && js.error)
                r = fail(e, line, 1, -ENOMEM, "out of memory");
            if (r == 0 && m->n_shp >= MSF_SHAPES_MAX)
                r = fail(e, line, 1, -EMSGSIZE, "more than %d ops", MSF_SHAPES_MAX);
            if (r == 0 && grow((void **)&m->shp, &m->cap_shp, m->n_shp + 1, sizeof *m->shp) < 0)
                r = fail(e, line, 1, -ENOMEM, "out of memory");
            if (r == 0) {
                struct shape_row *row = &m->shp[m->n_shp];
                row->name = strndup(s1 + 1, (size_t)(s2 - s1 - 1));
                row->json = strndup(js.data ? js.data : "[]", js.len);
                if (!row->name || !row->json) {
                    free(row->name);
                    free(row->json);
                    r = fail(e, line, 1, -ENOMEM, "out of memory");
                } else {
                    m->n_shp++;
                }
            }
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    sbuf_done(&js);
    return r;
}

/* One execution of cpu_op_execute_timestamp, for matching cpu_framework's lines. */
struct cpu_exec {
    int64_t start;
    size_t order;            /* its place in the file */
    const char *name;        /* the op's full name (into the file's data) */
    size_t name_n;
};

static int cmp_exec(const void *a, const void *b)
{
    const struct cpu_exec *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether row is (or may be) the op full[0, n): its name is the last component of the full
 * name ("Default/Conv2D-op0": "Conv2D-op0"), or it has none. */
static bool shape_row_is(const struct shape_row *row, const char *full, size_t n)
{
    if (row->name[0] == '\0')
        return true;
    size_t b = n;
    while (b > 0 && full[b - 1] != '/')
        b--;
    return strlen(row->name) == n - b && memcmp(row->name, full + b, n - b) == 0;
}

/* cpu_op_execute_timestamp_<r>.txt: "full name;type;start_ns,dur_ms,tid start_ns,dur_ms,tid ..."
 * per op. Each execution becomes a span of that name on pid "CPU OP", tid = its thread.
 * cpu_framework_<r>.txt (fed before) has one line per execution, in the order they ran: when it
 * has as many lines as there are executions and each named line names the op that ran k-th,
 * the k-th execution gets that line's input shapes as args "Input Dims" (Kineto's name);
 * otherwise none does. Pass 0 lists the executions (ex), pass 1 writes them. */
static int cpu_op_pass(struct msf *m, char *data, size_t len, struct msf_err *e, int pass,
                       struct cpu_exec *ex, size_t *n_ex, const size_t *row_of)
{
    struct sbuf *o = &m->out;
    size_t k = 0;
    char *p = data, *end = data + len;
    uint64_t line = 1;
    int r;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *le = nl ? nl : end;
        while (le > p && (le[-1] == '\r' || is_blank(le[-1])))
            le--;
        if (le > p) {
            char *s1 = memchr(p, ';', (size_t)(le - p));
            char *s2 = s1 ? memchr(s1 + 1, ';', (size_t)(le - s1 - 1)) : NULL;
            if (!s2)
                return fail(e, line, 1, -EINVAL, "expected \"name;type;start,dur,tid ...\"");
            if (s1 == p)
                return fail(e, line, 1, -EINVAL, "empty op name");
            char *q = s2 + 1;
            while (q < le) {
                while (q < le && is_blank(*q))
                    q++;
                if (q >= le)
                    break;
                char *te = q;
                while (te < le && !is_blank(*te))
                    te++;
                struct fld t[3];
                size_t n = 0;
                for (char *a = q; n < 3;) {
                    char *c = memchr(a, ',', (size_t)(te - a));
                    char *fe = c ? c : te;
                    t[n].s = a;
                    t[n].n = (size_t)(fe - a);
                    t[n].col = (uint64_t)(a - p) + 1;
                    n++;
                    if (!c)
                        break;
                    a = c + 1;
                }
                if (n != 3 || t[2].s + t[2].n != te)
                    return fail(e, line, (uint64_t)(q - p) + 1, -EINVAL,
                                "expected start_ns,dur_ms,tid");
                int64_t st, du, tid;
                if ((r = fld_num(&t[0], line, 0, "start (ns)", &st, e)) < 0 ||
                    (r = fld_num(&t[1], line, 6, "duration (ms)", &du, e)) < 0 ||
                    (r = fld_count(&t[2], line, "thread id", &tid, e)) < 0)
                    return r;
                if (du < 0 || st < 0)
                    return fail(e, line, t[0].col, -EINVAL, "negative start or duration");
                if (pass == 0) {
                    if (ex)
                        ex[k] = (struct cpu_exec){st, k, p, (size_t)(s1 - p)};
                    k++;
                    q = te;
                    continue;
                }
                const char *dims = row_of ? m->shp[row_of[k]].json : NULL;
                k++;
                if (m->cpu_op_n == 0 || st < m->cpu_op_min)
                    m->cpu_op_min = st;
                if (m->cpu_op_n == 0 || st > m->cpu_op_max)
                    m->cpu_op_max = st;
                m->cpu_op_n++;
                sbuf_adds(o, "{\"ph\":\"X\",\"name\":");
                sbuf_json_str(o, p, (size_t)(s1 - p));
                sbuf_adds(o, ",\"ts\":");
                put_us(o, st);
                sbuf_adds(o, ",\"dur\":");
                put_us(o, du);
                sbuf_printf(o, ",\"pid\":\"CPU OP\",\"tid\":%lld,\"args\":{\"type\":",
                            (long long)tid);
                sbuf_json_str(o, s1 + 1, (size_t)(s2 - s1 - 1));
                if (dims && strcmp(dims, "[]") != 0) {
                    sbuf_adds(o, ",\"Input Dims\":");
                    sbuf_adds(o, dims);
                }
                sbuf_adds(o, "}}");
                if ((r = line_done(m, e, line)) < 0)
                    return r;
                q = te;
            }
        }
        p = nl ? nl + 1 : end;
        line++;
    }
    *n_ex = k;
    return 0;
}

static int feed_cpu_op_ts(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    size_t n = 0;
    int r = cpu_op_pass(m, data, len, e, 0, NULL, &n, NULL);
    if (r < 0 || m->n_shp == 0 || n != m->n_shp)
        return r < 0 ? r : cpu_op_pass(m, data, len, e, 1, NULL, &n, NULL);
    struct cpu_exec *ex = malloc(n * sizeof *ex);
    size_t *row_of = malloc(n * sizeof *row_of);
    if (!ex || !row_of) {
        free(ex);
        free(row_of);
        return fail(e, 0, 0, -ENOMEM, "out of memory");
    }
    r = cpu_op_pass(m, data, len, e, 0, ex, &n, NULL);
    qsort(ex, n, sizeof *ex, cmp_exec);
    bool match = r == 0;
    for (size_t i = 0; match && i < n; i++) {
        match = shape_row_is(&m->shp[i], ex[i].name, ex[i].name_n);
        row_of[ex[i].order] = i;
    }
    if (r == 0)
        r = cpu_op_pass(m, data, len, e, 1, NULL, &n, match ? row_of : NULL);
    free(ex);
    free(row_of);
    return r;
}

/* ---- MindSpore 2.x trace_view.json ---- */

#define TV_PIDS_MAX 16 /* "CPU OP" and "Scope Layer" processes remembered, each */
#define TV_SCOPE_CAT "scope_layer" /* the cat given to the "Scope Layer" process's spans */

/* One member of an event object: its key and its value's raw text. */
struct tv_member {
    const char *k, *v;
    size_t kn, vn;
    bool str; /* the value is a string (v, vn: between the quotes) */
    bool plain;
};

/* Raw pid texts of the processes of one name. */
struct tv_pids {
    const char *pid[TV_PIDS_MAX];
    size_t pid_n[TV_PIDS_MAX], n;
};

struct tv {
    struct tv_pids cpu;               /* the "CPU OP" processes */
    struct tv_pids scope;             /* the "Scope Layer" processes */
    uint64_t n_ops;                   /* their X events, and their first and last ts (ns) */
    int64_t op_min, op_max;
    int64_t shift;                    /* subtracted from every ts sent */
};

static bool mem_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* A time member: a number, or a string holding one (MindSpore 2.x writes "12.345"). */
static int tv_time(const struct tv_member *mb, int64_t *ns)
{
    if (!mb || (mb->str && !mb->plain))
        return -EINVAL;
    return num_us_to_ns(mb->v, mb->vn, ns);
}

static bool tv_has_pid(const struct tv_pids *s, const struct tv_member *pid)
{
    for (size_t i = 0; pid && i < s->n; i++)
        if (s->pid_n[i] == pid->vn && memcmp(s->pid[i], pid->v, pid->vn) == 0)
            return true;
    return false;
}

static void tv_add_pid(struct tv_pids *s, const struct tv_member *pid)
{
    if (s->n < TV_PIDS_MAX && !tv_has_pid(s, pid)) {
        s->pid[s->n] = pid->v;
        s->pid_n[s->n++] = pid->vn;
    }
}

/* Whether the raw args object a[0, n) is {"name":<want>, ...}. */
static bool tv_args_named(const char *a, size_t n, const char *want)
{
    struct mj j = {a, a, a + n, 0};
    struct msf_err e;
    if (!mj_eat(&j, '{') || mj_eat(&j, '}'))
        return false;
    for (;;) {
        const char *k, *v;
        size_t kn, vn;
        bool pl;
        if (mj_string(&j, &k, &kn, &pl, &e) < 0 || !mj_eat(&j, ':'))
            return false;
        mj_ws(&j);
        if (mem_is(k, kn, "name") && j.p < j.end && *j.p == '"')
            return mj_string(&j, &v, &vn, &pl, &e) == 0 && mem_is(v, vn, want);
        if (mj_skip(&j, &e) < 0 || !mj_eat(&j, ','))
            return false;
    }
}

/* A raw value (object, array, number, literal) copied into the output line: a newline in it can
 * only be JSON whitespace (none is allowed raw inside a string), so it becomes a blank and the
 * event stays one line (libFuzzer: {"args": {"name"\n: "CPU OP"}} was cut in two). */
static void tv_add_raw(struct sbuf *o, const char *v, size_t n)
{
    const char *nl;
    while (n > 0 && (nl = memchr(v, '\n', n)) != NULL) {
        size_t k = (size_t)(nl - v);
        sbuf_add(o, v, k);
        sbuf_addc(o, ' ');
        v += k + 1;
        n -= k + 1;
    }
    sbuf_add(o, v, n);
}

/* One event of pass `pass` (1: find the "CPU OP" processes; 2: their executions' first and last
 * start; 3: write the others). */
static int tv_event(struct msf *m, struct tv *t, int pass, const struct tv_member *mb, size_t n,
                    const char *at, const char *base, struct msf_err *e)
{
    const struct tv_member *ph = NULL, *name = NULL, *pid = NULL, *ts = NULL, *dur = NULL,
                           *args = NULL, *cat = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct tv_member *x = &mb[i];
        const struct tv_member **slot = mem_is(x->k, x->kn, "ph")     ? &ph
                                        : mem_is(x->k, x->kn, "name") ? &name
                                        : mem_is(x->k, x->kn, "pid")  ? &pid
                                        : mem_is(x->k, x->kn, "ts")   ? &ts
                                        : mem_is(x->k, x->kn, "dur")  ? &dur
                                        : mem_is(x->k, x->kn, "args") ? &args
                                        : mem_is(x->k, x->kn, "cat")  ? &cat
                                                                      : NULL;
        if (slot && !*slot)
            *slot = x; /* the first occurrence counts, as in the daemon */
    }
    uint64_t line, col;
    if (!ph || !ph->str || ph->vn != 1 || !ph->plain) {
        pos_of(base, at, &line, &col);
        return fail(e, line, col, -EINVAL, "\"ph\" must be a one-letter string");
    }
    char p = ph->v[0];
    if (pass == 1) {
        if (p == 'M' && name && name->str && mem_is(name->v, name->vn, "process_name") && pid &&
            args) {
            if (tv_args_named(args->v, args->vn, "CPU OP"))
                tv_add_pid(&t->cpu, pid);
            else if (tv_args_named(args->v, args->vn, "Scope Layer"))
                tv_add_pid(&t->scope, pid);
        }
        return 0;
    }
    int64_t ts_ns = 0, dur_ns = 0;
    if ((p != 'M' && tv_time(ts, &ts_ns) < 0) ||
        (p == 'X' && (tv_time(dur, &dur_ns) < 0 || dur_ns < 0)) ||
        ((p == 'X' || p == 'M') && (!name || !name->str))) {
        pos_of(base, at, &line, &col);
        return fail(e, line, col, -EINVAL, "event (ph %c) without a %s", p,
                    (p != 'M' && tv_time(ts, &ts_ns) < 0) ? "time (\"ts\", a number or a decimal string)"
                    : (p == 'X' && (tv_time(dur, &dur_ns) < 0 || dur_ns < 0)) ? "duration >= 0 (\"dur\")"
                                                                              : "string \"name\"");
    }
    bool cpu = tv_has_pid(&t->cpu, pid);
    if (pass == 2) {
        if (cpu && p == 'X') {
            if (t->n_ops == 0 || ts_ns < t->op_min)
                t->op_min = ts_ns;
            if (t->n_ops == 0 || ts_ns > t->op_max)
                t->op_max = ts_ns;
            t->n_ops++;
        }
        return 0;
    }
    if (cpu && m->cpu_op_n > 0)
        return 0; /* cpu_op_execute_timestamp gave these executions already */
    /* A span of the "Scope Layer" process is a level of the network's scope hierarchy, not an
     * operator: MindSpore gives it no cat, its process name says what it is; the cat says it to
     * the daemon (role scope). */
    bool scope = p != 'M' && tv_has_pid(&t->scope, pid);
    struct sbuf *o = &m->out;
    sbuf_addc(o, '{');
    if (scope && !cat)
        sbuf_adds(o, "\"cat\":\"" TV_SCOPE_CAT "\"");
    for (size_t i = 0; i < n; i++) {
        const struct tv_member *x = &mb[i];
        if (i || (scope && !cat))
            sbuf_addc(o, ',');
        sbuf_addc(o, '"');
        sbuf_add(o, x->k, x->kn);
        sbuf_adds(o, "\":");
        if (x == cat && scope) {
            sbuf_adds(o, "\"" TV_SCOPE_CAT "\"");
        } else if (x == ts) {
            put_us(o, ts_ns - t->shift);
        } else if (x == dur && p == 'X') {
            put_us(o, dur_ns);
        } else if (x->str) {
            sbuf_addc(o, '"');
            sbuf_add(o, x->v, x->vn);
            sbuf_addc(o, '"');
        } else {
            tv_add_raw(o, x->v, x->vn);
        }
    }
    sbuf_addc(o, '}');
    pos_of(base, at, &line, &col);
    return line_done(m, e, line);
}

/* One pass over the event array. */
static int tv_pass(struct msf *m, struct tv *t, int pass, char *data, size_t len,
                   struct msf_err *e)
{
    struct mj j = {data, data, data + len, 0};
    struct tv_member mb[64];
    int r;
    if (!mj_eat(&j, '['))
        return mj_fail(&j, e, "expected a JSON array of events");
    if (mj_eat(&j, ']'))
        return mj_end(&j, e);
    for (;;) {
        mj_ws(&j);
        const char *at = j.p;
        size_t n = 0;
        if (!mj_eat(&j, '{'))
            return mj_fail(&j, e, "expected an event object");
        if (!mj_eat(&j, '}')) {
            for (;;) {
                struct tv_member *x = &mb[n < 64 ? n : 63];
                if (n >= 64)
                    return mj_fail(&j, e, "an event with more than 64 members");
                if ((r = mj_string(&j, &x->k, &x->kn, &x->plain, e)) < 0)
                    return r;
                if (!mj_eat(&j, ':'))
                    return mj_fail(&j, e, "expected ':'");
                mj_ws(&j);
                x->str = j.p < j.end && *j.p == '"';
                if (x->str) {
                    if ((r = mj_string(&j, &x->v, &x->vn, &x->plain, e)) < 0)
                        return r;
                } else {
                    x->v = j.p;
                    x->plain = true;
                    if ((r = mj_skip(&j, e)) < 0)
                        return r;
                    x->vn = (size_t)(j.p - x->v);
                }
                n++;
                if (mj_eat(&j, '}'))
                    break;
                if (!mj_eat(&j, ','))
                    return mj_fail(&j, e, "expected ',' or '}'");
            }
        }
        if ((r = tv_event(m, t, pass, mb, n, at, data, e)) < 0)
            return r;
        if (mj_eat(&j, ']'))
            break;
        if (!mj_eat(&j, ','))
            return mj_fail(&j, e, "expected ',' or ']'");
    }
    return mj_end(&j, e);
}

/* ASCEND_PROFILER_OUTPUT/trace_view.json: MindSpore 2.x's timeline (a Chrome-trace array whose
 * ts and dur are decimal strings). Its "CPU OP" process holds the executions
 * cpu_op_execute_timestamp_<r>.txt gave (fed before): those are not sent again; every other
 * event (the "Scope Layer" spans and their metadata) is, with ts and dur as numbers. MindSpore
 * writes trace_view's times on a clock a few ns off the timestamp file's: when both hold the same
 * number of executions and the first and last starts differ by the same amount, every ts is
 * moved by it, so the spans line up with the operators. */
static int feed_trace_view(struct msf *m, char *data, size_t len, struct msf_err *e)
{
    struct tv t;
    memset(&t, 0, sizeof t);
    int r;
    for (int pass = 1; pass <= 3; pass++) {
        if ((r = tv_pass(m, &t, pass, data, len, e)) < 0)
            return r;
        if (pass == 2 && m->cpu_op_n > 0 && t.n_ops == m->cpu_op_n &&
            t.op_min - m->cpu_op_min == t.op_max - m->cpu_op_max)
            t.shift = t.op_min - m->cpu_op_min;
    }
    return 0;
}

/* ---- public ---- */

struct msf *msf_new(size_t max_bytes)
{
    struct msf *m = calloc(1, sizeof *m);
    if (m)
        sbuf_init(&m->out, max_bytes);
    return m;
}

void msf_free(struct msf *m)
{
    if (!m)
        return;
    sbuf_done(&m->out);
    for (size_t i = 0; i < m->n_fw; i++) {
        free(m->fw[i].full);
        free(m->fw[i].kname);
        free(m->fw[i].type);
        free(m->fw[i].info);
    }
    free(m->fw);
    for (size_t i = 0; i < m->n_fl; i++) {
        free(m->fl[i].full);
        free(m->fl[i].vals);
    }
    free(m->fl);
    for (size_t i = 0; i < m->n_pops; i++)
        free(m->pops[i].json);
    free(m->pops);
    for (size_t i = 0; i < m->n_cops; i++)
        free(m->cops[i].json);
    free(m->cops);
    for (size_t i = 0; i < m->n_shp; i++) {
        free(m->shp[i].name);
        free(m->shp[i].json);
    }
    free(m->shp);
    free(m->cpu_json);
    free(m);
}

int msf_end(struct msf *m, struct msf_err *err)
{
    memset(err, 0, sizeof *err);
    if (!m->have_pipe && !m->cpu_json)
        return 0;
    struct sbuf *o = &m->out;
    sbuf_printf(o, "{\"type\":\"pipeline\",\"source\":\"mindspore %s\",\"ops\":[",
                m->have_pipe ? "minddata_pipeline_raw" : "minddata_cpu_utilization");
    /* The pipeline's ops, each with its CPU series; without a pipeline file, the ops of the CPU
     * file alone (ids only). */
    size_t n = m->have_pipe ? m->n_pops : m->n_cops;
    for (size_t i = 0; i < n; i++) {
        int64_t id = m->have_pipe ? m->pops[i].id : m->cops[i].id;
        if (i)
            sbuf_addc(o, ',');
        if (m->have_pipe)
            sbuf_adds(o, m->pops[i].json);
        else
            sbuf_printf(o, "{\"id\":%lld,\"children\":[]", (long long)id);
        for (size_t k = 0; k < m->n_cops; k++)
            if (m->cops[k].id == id) {
                sbuf_adds(o, m->cops[k].json);
                break;
            }
        sbuf_addc(o, '}');
    }
    sbuf_addc(o, ']');
    if (m->cpu_json) {
        sbuf_adds(o, ",\"cpu\":");
        sbuf_adds(o, m->cpu_json);
    }
    sbuf_addc(o, '}');
    return line_done(m, err, 0);
}

int msf_feed(struct msf *m, enum msf_kind kind, char *data, size_t len, struct msf_err *err)
{
    memset(err, 0, sizeof *err);
    if (memchr(data, '\0', len)) {
        uint64_t l, c;
        pos_of(data, memchr(data, '\0', len), &l, &c);
        return fail(err, l, c, -EINVAL, "NUL byte (a binary or damaged file)");
    }
    static int (*const feeds[MSF_KIND_COUNT])(struct msf *, char *, size_t, struct msf_err *) = {
        feed_point_info, feed_framework, feed_flops, feed_step_trace, feed_aicore_detail,
        feed_aicore_type, feed_aicpu, feed_pipeline, feed_device_queue, feed_getnext_us,
        feed_getnext_ns, feed_cpu_util, feed_cpu_framework, feed_cpu_op_ts, feed_trace_view,
    };
    if ((unsigned)kind >= MSF_KIND_COUNT)
        return fail(err, 0, 0, -EINVAL, "unknown kind");
    return feeds[kind](m, data, len, err);
}

const char *msf_lines(const struct msf *m, size_t *ret_len, uint64_t *ret_n)
{
    *ret_len = m->out.len;
    *ret_n = m->n_lines;
    return m->out.data ? m->out.data : "";
}

const char *msf_fp_name(const struct msf *m)
{
    return m->have_steps ? m->fp : NULL;
}

const char *msf_bp_name(const struct msf *m)
{
    return m->have_steps ? m->bp : NULL;
}

const char *msf_kind_pattern(enum msf_kind kind)
{
    static const char *const p[MSF_KIND_COUNT] = {
        "step_trace_point_info[_<r>].json", "framework_raw_<r>.csv", "flops_<r>.txt",
        "step_trace_raw_<r>_detail_time.csv", "aicore_intermediate_<r>_detail.csv",
        "aicore_intermediate_<r>_type.csv", "aicpu_intermediate_<r>.csv",
        "minddata_pipeline_raw_<r>.csv", "device_queue_profiling_<r>.txt",
        "minddata_aicpu_<r>.txt", "minddata_getnext_profiling_<r>.txt",
        "minddata_cpu_utilization_<r>.json", "cpu_framework_<r>.txt",
        "cpu_op_execute_timestamp_<r>.txt",
        "ASCEND_PROFILER_OUTPUT/trace_view.json"};
    return (unsigned)kind < MSF_KIND_COUNT ? p[kind] : "?";
}
