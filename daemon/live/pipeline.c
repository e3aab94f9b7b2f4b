/* SPDX-License-Identifier: MIT */
/*
 * pipeline: reads a {"type":"pipeline"} record (docs/PROTOCOL.md, "Pipeline records") into the
 * operator list daemon/live keeps per rank. Ingest has validated the line as JSON already and
 * live may not use its decoder (live depends on core and analyse only), so this is a small
 * recursive-descent reader of just this shape: it takes "ops" and, in each op, "id", "name" or
 * "type", "num_workers", "children", "queue_usage", "queue_size", "queue_sizes",
 * "queue_capacity", "sample_interval_ms", "cpu_user" and "cpu_sys", and the "cpu" object's
 * series (live_cpu_series_names), "sampling_interval_ms" and "processors"; it skips every other
 * value. The series' numbers go to one array per record, the first LIVE_PIPE_VALUES_MAX of them. Pipeline records are rare (one per topology),
 * so nothing here is on the hot path. Anything it does not expect makes the record unusable
 * (-EINVAL), never a crash: depth, ops and children are capped (live.h).
 */
#include "live_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 64

struct jp {
    const char *p;
    const char *end;
};

static void ws(struct jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool eat(struct jp *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

/* A string into out (cap bytes, NUL-terminated, cut to fit); \u escapes outside ASCII become
 * '?'. out may be NULL to skip. Returns 0 or -EINVAL. */
static int string(struct jp *j, char *out, size_t cap)
{
    size_t n = 0;
    if (!eat(j, '"'))
        return -EINVAL;
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if (c == '\\') {
            if (j->p >= j->end)
                return -EINVAL;
            c = *j->p++;
            switch (c) {
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'u': {
                if (j->end - j->p < 4)
                    return -EINVAL;
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                    char h = *j->p++;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                   : 0);
                }
                c = v >= 0x20 && v < 0x80 ? (char)v : '?';
                break;
            }
            default: /* '"', '\\', '/' */
                break;
            }
        }
        if (out && n + 1 < cap)
            out[n++] = c;
    }
    if (out && cap)
        out[n] = '\0';
    return eat(j, '"') ? 0 : -EINVAL;
}

static int number(struct jp *j, double *ret)
{
    ws(j);
    char buf[64];
    size_t n = 0;
    while (j->p < j->end && n + 1 < sizeof buf && strchr("+-0123456789.eE", *j->p) && *j->p)
        buf[n++] = *j->p++;
    buf[n] = '\0';
    char *e;
    double v = strtod(buf, &e);
    if (n == 0 || *e != '\0' || !isfinite(v))
        return -EINVAL;
    *ret = v;
    return 0;
}

static int skip(struct jp *j, int depth)
{
    if (depth > DEPTH_MAX)
        return -EINVAL;
    ws(j);
    if (j->p >= j->end)
        return -EINVAL;
    char c = *j->p;
    if (c == '"')
        return string(j, NULL, 0);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        j->p++;
        if (eat(j, close))
            return 0;
        do {
            if (c == '{' && (string(j, NULL, 0) < 0 || !eat(j, ':')))
                return -EINVAL;
            if (skip(j, depth + 1) < 0)
                return -EINVAL;
        } while (eat(j, ','));
        return eat(j, close) ? 0 : -EINVAL;
    }
    for (const char *const *w = (const char *const[]){"true", "false", "null", NULL}; *w; w++) {
        size_t l = strlen(*w);
        if ((size_t)(j->end - j->p) >= l && memcmp(j->p, *w, l) == 0) {
            j->p += l;
            return 0;
        }
    }
    double v;
    return number(j, &v);
}

static int integer(struct jp *j, int64_t *ret)
{
    double v;
    if (number(j, &v) < 0 || v != floor(v) || fabs(v) > 9007199254740992.0)
        return -EINVAL;
    *ret = (int64_t)v;
    return 0;
}

const char *const live_cpu_series_names[LIVE_CPU_SERIES] = {
    "user", "sys", "io", "idle", "runnable", "context_switch", "process_user", "process_sys"};

/* An array of numbers into a series: the first LIVE_PIPE_VALUES_MAX numbers of the record are
 * kept in pl->values, every one counts in the sum. */
static int series(struct jp *j, struct live_pipe *pl, struct live_series *s)
{
    *s = (struct live_series){.first = pl->n_values};
    if (!eat(j, '['))
        return -EINVAL;
    if (eat(j, ']'))
        return 0;
    do {
        double v;
        if (number(j, &v) < 0)
            return -EINVAL;
        s->sum += v;
        s->count++;
        if (pl->n_values >= LIVE_PIPE_VALUES_MAX)
            continue;
        if (pl->n_values == pl->cap_values) {
            size_t nc = pl->cap_values ? pl->cap_values * 2 : 256;
            double *nv = realloc(pl->values, nc * sizeof *nv);
            if (!nv)
                return -ENOMEM;
            pl->values = nv;
            pl->cap_values = nc;
        }
        pl->values[pl->n_values++] = v;
        s->n++;
    } while (eat(j, ','));
    return eat(j, ']') ? 0 : -EINVAL;
}

/* The record's "cpu" object (PROTOCOL.md section 8). */
static int parse_cpu(struct jp *j, struct live_pipe *pl)
{
    pl->has_cpu = true;
    if (!eat(j, '{'))
        return -EINVAL;
    if (eat(j, '}'))
        return 0;
    do {
        char k[32];
        if (string(j, k, sizeof k) < 0 || !eat(j, ':'))
            return -EINVAL;
        int r = -1;
        for (size_t i = 0; i < LIVE_CPU_SERIES; i++)
            if (strcmp(k, live_cpu_series_names[i]) == 0)
                r = series(j, pl, &pl->cpu[i]);
        if (r == -1) {
            ws(j);
            bool null = j->end - j->p >= 4 && memcmp(j->p, "null", 4) == 0;
            if (strcmp(k, "sampling_interval_ms") == 0 && !null)
                r = number(j, &pl->cpu_interval_ms);
            else if (strcmp(k, "processors") == 0 && !null)
                r = integer(j, &pl->processors);
            else
                r = skip(j, 1);
        }
        if (r < 0)
            return r;
    } while (eat(j, ','));
    return eat(j, '}') ? 0 : -EINVAL;
}

/* The op's queue figures while it is read: usage given directly, or sizes and a capacity. */
struct opq {
    double usage; /* < 0: not given */
    double sum;
    size_t n;
    int64_t capacity; /* -1: not given */
};

static int parse_op(struct jp *j, struct live_pipe *pl, struct live_pipe_op *op)
{
    struct opq q = {.usage = -1, .capacity = -1};
    memset(op, 0, sizeof *op);
    op->id = -1;
    op->num_workers = -1;
    op->sample_interval_ms = -1;
    op->first_child = pl->n_children;
    if (!eat(j, '{'))
        return -EINVAL;
    if (eat(j, '}'))
        goto done;
    do {
        char k[32];
        if (string(j, k, sizeof k) < 0 || !eat(j, ':'))
            return -EINVAL;
        int r = 0;
        double v;
        if (strcmp(k, "id") == 0) {
            r = integer(j, &op->id);
        } else if (strcmp(k, "name") == 0 || strcmp(k, "type") == 0) {
            ws(j);
            r = j->p < j->end && *j->p == '"' ? string(j, op->type, sizeof op->type) : skip(j, 1);
        } else if (strcmp(k, "num_workers") == 0) {
            r = integer(j, &op->num_workers);
        } else if (strcmp(k, "queue_usage") == 0) {
            r = number(j, &q.usage);
        } else if (strcmp(k, "queue_size") == 0) {
            r = number(j, &v);
            if (r == 0) {
                q.sum += v;
                q.n++;
            }
        } else if (strcmp(k, "queue_capacity") == 0) {
            r = integer(j, &q.capacity);
        } else if (strcmp(k, "queue_sizes") == 0) {
            r = series(j, pl, &op->sizes);
            q.sum += op->sizes.sum;
            q.n += op->sizes.count;
        } else if (strcmp(k, "cpu_user") == 0 || strcmp(k, "cpu_sys") == 0) {
            r = series(j, pl, k[4] == 'u' ? &op->cpu_user : &op->cpu_sys);
        } else if (strcmp(k, "sample_interval_ms") == 0) {
            r = number(j, &op->sample_interval_ms);
        } else if (strcmp(k, "children") == 0) {
            if (!eat(j, '['))
                return -EINVAL;
            if (!eat(j, ']')) {
                do {
                    if (number(j, &v) < 0)
                        return -EINVAL;
                    if (pl->n_children < LIVE_PIPE_CHILDREN_MAX) {
                        pl->children[pl->n_children++] = (int64_t)v;
                    } else {
                        return -EINVAL;
                    }
                } while (eat(j, ','));
                if (!eat(j, ']'))
                    return -EINVAL;
            }
        } else {
            r = skip(j, 1);
        }
        if (r < 0)
            return r == -ENOMEM ? r : -EINVAL;
    } while (eat(j, ','));
    if (!eat(j, '}'))
        return -EINVAL;
done:
    op->n_children = pl->n_children - op->first_child;
    op->capacity = q.capacity;
    op->queue_avg = q.n > 0 ? q.sum / (double)q.n : -1;
    /* mean(sizes) / capacity, MindSpore's usage rate (analyse_pipe_usage()), unless given. */
    if (q.usage >= 0)
        op->usage = q.usage;
    else if (q.n > 0 && q.capacity > 0)
        op->usage = q.sum / (double)q.n / (double)q.capacity;
    else
        op->usage = -1;
    return 0;
}

int live__pipe_parse(const char *json, size_t len, struct live_pipe **ret_pipe)
{
    struct jp j = {json, json + len};
    struct live_pipe *pl = calloc(1, sizeof *pl);
    if (!pl)
        return -ENOMEM;
    atomic_init(&pl->refs, 1);
    pl->cpu_interval_ms = -1;
    pl->processors = -1;
    int r = -EINVAL;
    if (!eat(&j, '{'))
        goto fail;
    bool have_ops = false;
    if (!eat(&j, '}')) {
        do {
            char k[16];
            if (string(&j, k, sizeof k) < 0 || !eat(&j, ':'))
                goto fail;
            if (strcmp(k, "cpu") == 0) {
                int pr = parse_cpu(&j, pl);
                if (pr < 0) {
                    r = pr == -ENOMEM ? pr : -EINVAL;
                    goto fail;
                }
                continue;
            }
            if (strcmp(k, "ops") != 0) {
                if (skip(&j, 1) < 0)
                    goto fail;
                continue;
            }
            have_ops = true;
            if (!eat(&j, '['))
                goto fail;
            if (eat(&j, ']'))
                continue;
            do {
                if (pl->n_ops >= LIVE_PIPE_OPS_MAX)
                    goto fail;
                int pr = parse_op(&j, pl, &pl->ops[pl->n_ops]);
                if (pr < 0) {
                    r = pr == -ENOMEM ? pr : -EINVAL;
                    goto fail;
                }
                pl->n_ops++;
            } while (eat(&j, ','));
            if (!eat(&j, ']'))
                goto fail;
        } while (eat(&j, ','));
        if (!eat(&j, '}'))
            goto fail;
    }
    if (!have_ops)
        goto fail;
    /* An op's parent is the op that lists it among its children; the others are roots. */
    for (size_t i = 0; i < pl->n_ops; i++)
        pl->ops[i].parent_id = -1;
    for (size_t i = 0; i < pl->n_ops; i++)
        for (size_t c = 0; c < pl->ops[i].n_children; c++)
            for (size_t k = 0; k < pl->n_ops; k++)
                if (pl->ops[k].id == pl->children[pl->ops[i].first_child + c])
                    pl->ops[k].parent_id = pl->ops[i].id;
    *ret_pipe = pl;
    return 0;
fail:
    free(pl->values);
    free(pl);
    return r;
}

void live__pipe_put(struct live_pipe *pl)
{
    if (pl && atomic_fetch_sub_explicit(&pl->refs, 1, memory_order_acq_rel) == 1) {
        free(pl->values);
        free(pl);
    }
}
