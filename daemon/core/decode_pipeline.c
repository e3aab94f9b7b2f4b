/* SPDX-License-Identifier: MIT */
/*
 * decode_pipeline (contract in decode.h): a {"type":"pipeline"} record (docs/PROTOCOL.md,
 * "Pipeline records") into struct record_pipeline, over lib/json's reader. It takes "ops" and, in
 * each op, "id", "name" or "type", "num_workers", "children", "queue_usage", "queue_size",
 * "queue_sizes", "queue_capacity", "sample_interval_ms", "cpu_user" and "cpu_sys", and the "cpu"
 * object's series (record_cpu_series_names), "sampling_interval_ms" and "processors"; every other
 * value is skipped. The series' numbers go to one array per record, the first
 * RECORD_PIPE_VALUES_MAX of them. Pipeline records are rare (one per topology), so nothing here is
 * on the hot path. Anything it does not expect makes the record unusable (-EINVAL), never a
 * crash: ops and children are capped (record.h), nesting by the reader.
 */
#include "decode.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/json.h"

const char *const record_cpu_series_names[RECORD_CPU_SERIES] = {
    "user", "sys", "io", "idle", "runnable", "context_switch", "process_user", "process_sys"};

/* A number that is an integer of at most 2^53 in magnitude. */
static int integer(struct json_reader *r, int64_t *ret)
{
    double v;
    if (!json_read_double(r, &v) || v != floor(v) || fabs(v) > 9007199254740992.0)
        return -EINVAL;
    *ret = (int64_t)v;
    return 0;
}

static int number(struct json_reader *r, double *ret)
{
    return json_read_double(r, ret) ? 0 : -EINVAL;
}

/* An array of numbers into a series: the first RECORD_PIPE_VALUES_MAX numbers of the record are
 * kept in pl->values, every one counts in the sum. */
static int series(struct json_reader *r, struct record_pipeline *pl, struct record_series *s)
{
    *s = (struct record_series){.first = pl->n_values};
    if (!json_array_begin(r))
        return -EINVAL;
    while (json_element(r)) {
        double v;
        if (!json_read_double(r, &v))
            return -EINVAL;
        s->sum += v;
        s->count++;
        if (pl->n_values >= RECORD_PIPE_VALUES_MAX)
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
    }
    return r->bad ? -EINVAL : 0;
}

/* The record's "cpu" object (PROTOCOL.md section 8). */
static int read_cpu(struct json_reader *r, struct record_pipeline *pl)
{
    pl->has_cpu = true;
    if (!json_object_begin(r))
        return -EINVAL;
    char k[32];
    while (json_member(r, k, sizeof k)) {
        int e = -1;
        for (size_t i = 0; i < RECORD_CPU_SERIES; i++)
            if (strcmp(k, record_cpu_series_names[i]) == 0)
                e = series(r, pl, &pl->cpu[i]);
        if (e == -1) {
            bool null = json_peek(r) == JSON_NULL;
            if (strcmp(k, "sampling_interval_ms") == 0 && !null)
                e = number(r, &pl->cpu_interval_ms);
            else if (strcmp(k, "processors") == 0 && !null)
                e = integer(r, &pl->processors);
            else
                e = json_skip(r) ? 0 : -EINVAL;
        }
        if (e < 0)
            return e;
    }
    return r->bad ? -EINVAL : 0;
}

/* The op's queue figures while it is read: usage given directly, or sizes and a capacity. */
struct opq {
    double usage; /* < 0: not given */
    double sum;
    size_t n;
    int64_t capacity; /* -1: not given */
};

static int read_children(struct json_reader *r, struct record_pipeline *pl)
{
    if (!json_array_begin(r))
        return -EINVAL;
    while (json_element(r)) {
        double v;
        if (!json_read_double(r, &v) || pl->n_children >= RECORD_PIPE_CHILDREN_MAX)
            return -EINVAL;
        pl->children[pl->n_children++] = (int64_t)v;
    }
    return r->bad ? -EINVAL : 0;
}

static int read_op(struct json_reader *r, struct record_pipeline *pl, struct record_pipe_op *op)
{
    struct opq q = {.usage = -1, .capacity = -1};
    memset(op, 0, sizeof *op);
    op->id = -1;
    op->num_workers = -1;
    op->sample_interval_ms = -1;
    op->first_child = pl->n_children;
    if (!json_object_begin(r))
        return -EINVAL;
    char k[32];
    while (json_member(r, k, sizeof k)) {
        int e = 0;
        double v;
        if (strcmp(k, "id") == 0) {
            e = integer(r, &op->id);
        } else if (strcmp(k, "name") == 0 || strcmp(k, "type") == 0) {
            e = json_peek(r) == JSON_STRING
                    ? (json_read_string(r, op->type, sizeof op->type, NULL) ? 0 : -EINVAL)
                    : (json_skip(r) ? 0 : -EINVAL);
        } else if (strcmp(k, "num_workers") == 0) {
            e = integer(r, &op->num_workers);
        } else if (strcmp(k, "queue_usage") == 0) {
            e = number(r, &q.usage);
        } else if (strcmp(k, "queue_size") == 0) {
            e = number(r, &v);
            if (e == 0) {
                q.sum += v;
                q.n++;
            }
        } else if (strcmp(k, "queue_capacity") == 0) {
            e = integer(r, &q.capacity);
        } else if (strcmp(k, "queue_sizes") == 0) {
            e = series(r, pl, &op->sizes);
            q.sum += op->sizes.sum;
            q.n += op->sizes.count;
        } else if (strcmp(k, "cpu_user") == 0 || strcmp(k, "cpu_sys") == 0) {
            e = series(r, pl, k[4] == 'u' ? &op->cpu_user : &op->cpu_sys);
        } else if (strcmp(k, "sample_interval_ms") == 0) {
            e = number(r, &op->sample_interval_ms);
        } else if (strcmp(k, "children") == 0) {
            e = read_children(r, pl);
        } else {
            e = json_skip(r) ? 0 : -EINVAL;
        }
        if (e < 0)
            return e == -ENOMEM ? e : -EINVAL;
    }
    if (r->bad)
        return -EINVAL;
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

static int read_pipeline(struct json_reader *r, struct record_pipeline *pl)
{
    if (!json_object_begin(r))
        return -EINVAL;
    bool have_ops = false;
    char k[32];
    while (json_member(r, k, sizeof k)) {
        int e = 0;
        if (strcmp(k, "cpu") == 0) {
            e = read_cpu(r, pl);
        } else if (strcmp(k, "ops") == 0) {
            have_ops = true;
            if (!json_array_begin(r))
                return -EINVAL;
            while (e == 0 && json_element(r)) {
                if (pl->n_ops >= RECORD_PIPE_OPS_MAX)
                    return -EINVAL;
                e = read_op(r, pl, &pl->ops[pl->n_ops]);
                if (e == 0)
                    pl->n_ops++;
            }
        } else {
            e = json_skip(r) ? 0 : -EINVAL;
        }
        if (e < 0)
            return e == -ENOMEM ? e : -EINVAL;
    }
    return r->bad || !have_ops ? -EINVAL : 0;
}

int decode_pipeline(const char *text, size_t len, struct record_pipeline *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->cpu_interval_ms = -1;
    ret->processors = -1;
    struct json_reader r;
    json_reader_init(&r, text, len);
    int e = read_pipeline(&r, ret);
    if (e < 0) {
        free(ret->values);
        ret->values = NULL;
        return e;
    }
    /* An op's parent is the op that lists it among its children; the others are roots. */
    for (size_t i = 0; i < ret->n_ops; i++)
        ret->ops[i].parent_id = -1;
    for (size_t i = 0; i < ret->n_ops; i++)
        for (size_t c = 0; c < ret->ops[i].n_children; c++)
            for (size_t k = 0; k < ret->n_ops; k++)
                if (ret->ops[k].id == ret->children[ret->ops[i].first_child + c])
                    ret->ops[k].parent_id = ret->ops[i].id;
    return 0;
}
