/* SPDX-License-Identifier: MIT */
/*
 * aicpu: MindInsight's two AI CPU tables from the tasks' spans (contract in analyse_aicpu.h).
 */
#include "analyse_aicpu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Byte order of two texts, a prefix first. */
static int cmp_text(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c)
        return c;
    return (an > bn) - (an < bn);
}

static int cmp_task(const void *a, const void *b)
{
    const struct analyse_aicpu_task *x = *(const struct analyse_aicpu_task *const *)a;
    const struct analyse_aicpu_task *y = *(const struct analyse_aicpu_task *const *)b;
    return cmp_text(x->name, x->name_len, y->name, y->name_len);
}

static int cmp_op(const void *a, const void *b)
{
    const struct analyse_aicpu_op *x = a, *y = b;
    /* mean total desc */
    double l = (double)x->total_ns / (double)x->calls, r = (double)y->total_ns / (double)y->calls;
    if (l != r)
        return l > r ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_type_name(const void *a, const void *b)
{
    const struct analyse_aicpu_op *x = a, *y = b;
    return cmp_text(x->name, x->type_len, y->name, y->type_len);
}

static int cmp_type(const void *a, const void *b)
{
    const struct analyse_aicpu_type *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    return cmp_text(x->type, x->type_len, y->type, y->type_len);
}

void analyse_aicpu_free(struct analyse_aicpu *a)
{
    if (!a)
        return;
    free(a->ops);
    free(a->types);
    free(a->names);
    free(a);
}

int analyse_aicpu_compute(const struct analyse_aicpu_task *tasks, size_t n,
                          struct analyse_aicpu **ret)
{
    if (!ret || (n && !tasks))
        return -EINVAL;
    struct analyse_aicpu *a = calloc(1, sizeof *a);
    const struct analyse_aicpu_task **v = calloc(n + 1, sizeof *v);
    size_t text = 0;
    for (size_t i = 0; i < n; i++)
        text += tasks[i].name_len + 1;
    if (a) {
        a->ops = calloc(n + 1, sizeof *a->ops);
        a->types = calloc(n + 1, sizeof *a->types);
        a->names = malloc(text + 1);
    }
    if (!a || !v || !a->ops || !a->types || !a->names) {
        free(v);
        analyse_aicpu_free(a);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = &tasks[i];
    qsort(v, n, sizeof *v, cmp_task);
    char *out = a->names;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        struct analyse_aicpu_op *o = &a->ops[a->n_ops++];
        memcpy(out, v[i]->name, v[i]->name_len);
        out[v[i]->name_len] = '\0';
        o->name = out;
        out += v[i]->name_len + 1;
        const char *dash = memchr(o->name, '-', v[i]->name_len);
        o->type_len = dash ? (size_t)(dash - o->name) : v[i]->name_len;
        for (; j < n && cmp_task(&v[i], &v[j]) == 0; j++) {
            o->calls++;
            o->total_ns += v[j]->total_ns;
            o->dispatch_ns += v[j]->dispatch_ns;
            if (v[j]->exec_ns >= 0) {
                o->exec_ns += v[j]->exec_ns;
                o->exec_calls++;
            }
            a->total_ns += v[j]->total_ns;
        }
        i = j;
    }
    a->tasks = (int64_t)n;
    free(v);
    /* types: the ops sorted by type, grouped */
    qsort(a->ops, a->n_ops, sizeof *a->ops, cmp_type_name);
    for (size_t i = 0; i < a->n_ops;) {
        size_t j = i;
        struct analyse_aicpu_type *t = &a->types[a->n_types++];
        t->type = a->ops[i].name;
        t->type_len = a->ops[i].type_len;
        for (; j < a->n_ops && cmp_type_name(&a->ops[i], &a->ops[j]) == 0; j++) {
            t->calls += a->ops[j].calls;
            t->total_ns += a->ops[j].total_ns;
        }
        t->percent = a->total_ns > 0 ? (double)t->total_ns / (double)a->total_ns * 100.0 : 0.0;
        i = j;
    }
    qsort(a->types, a->n_types, sizeof *a->types, cmp_type);
    /* types point into ops' names, which sorting ops moves only as pointers: names stay put */
    qsort(a->ops, a->n_ops, sizeof *a->ops, cmp_op);
    *ret = a;
    return 0;
}
