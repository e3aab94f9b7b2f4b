/* SPDX-License-Identifier: MIT */
/*
 * Table tests of torch-tb-profiler's operator view (opview.c): the plugin's reading of each
 * category, runtime calls to operators by External id, device events to runtime calls by
 * correlation (before and after the call), the tree's self times, remove_dup_nodes, a crossing
 * node left out, which nodes are operators, and the groups by input shape and call stack. The
 * figures on real traces are checked against the plugin itself by
 * tests/integ/test_operator_view.py.
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_opview.h"

#define MAXEV 32

struct trace {
    struct analyse_span sp[MAXEV];
    struct analyse_opv_event ev[MAXEV];
    size_t n;
};

/* Appends an event; its type is the plugin's reading of cat (module: args "Python module id"). */
static struct analyse_opv_event *add(struct trace *t, const char *cat, const char *name,
                                     int64_t tid, int64_t ts, int64_t dur, int64_t ext,
                                     int64_t corr, bool module)
{
    ck_assert_uint_lt(t->n, MAXEV);
    struct analyse_span *s = &t->sp[t->n];
    *s = (struct analyse_span){.ts_ns = ts, .dur_ns = dur, .name = name, .name_len = strlen(name),
                               .cat = cat, .cat_len = strlen(cat), .pid = 1, .tid = tid,
                               .correlation = corr, .external_id = ext};
    struct analyse_opv_event *e = &t->ev[t->n++];
    *e = (struct analyse_opv_event){.span = s, .type = analyse_opv_type_of(s, module)};
    return e;
}

static const struct analyse_opv_row *row(const struct analyse_opview *v, const char *name,
                                         const char *shape)
{
    for (size_t i = 0; i < v->n_rows; i++)
        if (v->rows[i].name_len == strlen(name) && memcmp(v->rows[i].name, name, strlen(name)) == 0 &&
            (!shape || (v->rows[i].shape_len == strlen(shape) &&
                        memcmp(v->rows[i].shape, shape, strlen(shape)) == 0)))
            return &v->rows[i];
    return NULL;
}

START_TEST(test_types_as_the_plugin_reads_cats)
{
    static const struct {
        const char *cat, *name;
        bool module;
        enum analyse_opv_type want;
    } cases[] = {
        {"cpu_op", "aten::mm", false, ANALYSE_OPV_OPERATOR},
        {"Operator", "aten::mm", false, ANALYSE_OPV_OPERATOR}, /* 2021 name, any case */
        {"cpu_op", "ProfilerStep#3", false, ANALYSE_OPV_STEP},
        {"user_annotation", "ProfilerStep#3", false, ANALYSE_OPV_STEP},
        {"user_annotation", "nccl:all_reduce", false, ANALYSE_OPV_ANNOTATION},
        {"user_annotation", "nccl:all_to_all", false, ANALYSE_OPV_NONE}, /* not one of the ten */
        {"user_annotation", "forward", false, ANALYSE_OPV_NONE},
        {"python_function", "nn.Module: Linear_0", true, ANALYSE_OPV_MODULE},
        {"python_function", "train.py(12): step", false, ANALYSE_OPV_NONE},
        {"python", "foo", false, ANALYSE_OPV_PYTHON},
        {"cuda_runtime", "cudaLaunchKernel", false, ANALYSE_OPV_RUNTIME},
        {"Runtime", "cudaLaunchKernel", false, ANALYSE_OPV_RUNTIME},
        {"cuda_driver", "cuLaunchKernel", false, ANALYSE_OPV_NONE}, /* no map has it */
        {"kernel", "gemm", false, ANALYSE_OPV_DEVICE},
        {"gpu_memcpy", "Memcpy HtoD", false, ANALYSE_OPV_DEVICE},
        {"gpu_memset", "Memset", false, ANALYSE_OPV_DEVICE},
        {"", "aten::mm", false, ANALYSE_OPV_NONE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct analyse_span s = {.name = cases[i].name, .name_len = strlen(cases[i].name),
                                 .cat = cases[i].cat, .cat_len = strlen(cases[i].cat)};
        ck_assert_msg(analyse_opv_type_of(&s, cases[i].module) == cases[i].want, "%s %s",
                      cases[i].cat, cases[i].name);
    }
}
END_TEST

/* ProfilerStep#1 [0, 1000) > aten::linear (ext 2) [100, 600) > aten::addmm (ext 3) [200, 500).
 * addmm's launch (ext 3, corr 10) comes after its kernel in the events (pending, taken by the
 * call); linear's own launch (ext 2, corr 11) launches a memcpy that comes after it. */
START_TEST(test_self_and_device_times)
{
    static struct trace t;
    t.n = 0;
    add(&t, "kernel", "gemm", 7, 700, 40, 3, 10, false); /* before its runtime call */
    add(&t, "user_annotation", "ProfilerStep#1", 1, 0, 1000, 1, -1, false);
    add(&t, "cpu_op", "aten::linear", 1, 100, 500, 2, -1, false);
    add(&t, "cpu_op", "aten::addmm", 1, 200, 300, 3, -1, false);
    add(&t, "cuda_runtime", "cudaLaunchKernel", 1, 300, 50, 3, 10, false);
    add(&t, "cuda_runtime", "cudaMemcpyAsync", 1, 550, 20, 2, 11, false);
    add(&t, "gpu_memcpy", "Memcpy DtoD", 7, 800, 30, 2, 11, false);
    add(&t, "kernel", "orphan", 7, 900, 5, 9, 99, false); /* no runtime call: stale */
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    ck_assert(v->device);
    ck_assert_uint_eq(v->n_calls, 2); /* the step is no operator */
    ck_assert_uint_eq(v->n_device, 3);
    ck_assert_uint_eq(v->n_device_linked, 2);
    const struct analyse_opv_row *addmm = row(v, "aten::addmm", NULL);
    const struct analyse_opv_row *linear = row(v, "aten::linear", NULL);
    ck_assert_ptr_nonnull(addmm);
    ck_assert_ptr_nonnull(linear);
    ck_assert_int_eq(addmm->host_total_ns, 300);
    ck_assert_int_eq(addmm->host_self_ns, 250); /* less its runtime call */
    ck_assert_int_eq(addmm->device_self_ns, 40);
    ck_assert_int_eq(addmm->device_total_ns, 40);
    ck_assert_int_eq(linear->host_self_ns, 500 - 300 - 20);
    ck_assert_int_eq(linear->device_self_ns, 30);
    ck_assert_int_eq(linear->device_total_ns, 70);
    /* By self device time, descending. */
    ck_assert_ptr_eq(&v->rows[0], addmm);
    analyse_opview_free(v);
}
END_TEST

/* A device event goes to the latest runtime call with its correlation before it, else the first
 * after it; a runtime call to the first host node with its External id (threads in order of
 * first appearance). */
START_TEST(test_links_in_the_plugins_order)
{
    static struct trace t;
    t.n = 0;
    add(&t, "cpu_op", "b_op", 2, 0, 100, 5, -1, false);   /* thread 2 appears first */
    add(&t, "cpu_op", "a_op", 1, 0, 100, 5, -1, false);   /* same External id, later thread */
    add(&t, "cuda_runtime", "launch", 1, 10, 10, 5, 20, false);
    add(&t, "kernel", "k1", 7, 200, 3, 5, 20, false);
    add(&t, "cuda_runtime", "launch", 1, 30, 10, 5, 20, false); /* same correlation again */
    add(&t, "kernel", "k2", 7, 300, 7, 5, 20, false);
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    const struct analyse_opv_row *b = row(v, "b_op", NULL), *a = row(v, "a_op", NULL);
    ck_assert_int_eq(b->device_self_ns, 10); /* both calls, both kernels */
    ck_assert_int_eq(b->host_self_ns, 100 - 20); /* its runtime calls ran on another thread */
    ck_assert_int_eq(a->device_self_ns, 0);
    ck_assert_int_eq(a->host_self_ns, 100);
    analyse_opview_free(v);
}
END_TEST

/* remove_dup_nodes: an operator whose only child is an operator of its name takes the child's
 * children and runtime calls (its own are lost) and the child is gone; a node that crosses the
 * end of the open one is left out. */
START_TEST(test_duplicates_and_crossings)
{
    static struct trace t;
    t.n = 0;
    add(&t, "cpu_op", "aten::add", 1, 0, 100, 1, -1, false);
    add(&t, "cpu_op", "aten::add", 1, 10, 80, 2, -1, false);
    add(&t, "cpu_op", "aten::empty", 1, 20, 10, 3, -1, false);
    add(&t, "cuda_runtime", "launch", 1, 95, 2, 1, 30, false); /* the outer's own: lost */
    add(&t, "kernel", "k_outer", 7, 300, 9, 1, 30, false);
    add(&t, "cuda_runtime", "launch", 1, 40, 5, 2, 31, false); /* the inner's: taken */
    add(&t, "kernel", "k_inner", 7, 400, 4, 2, 31, false);
    add(&t, "cpu_op", "aten::cross", 1, 95, 50, 4, -1, false); /* crosses aten::add's end */
    add(&t, "cpu_op", "aten::after", 1, 100, 50, 5, -1, false); /* starts at its end: a sibling */
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    ck_assert_uint_eq(v->n_dropped, 1);
    ck_assert_ptr_null(row(v, "aten::cross", NULL));
    const struct analyse_opv_row *add_row = row(v, "aten::add", NULL);
    ck_assert_int_eq(add_row->calls, 1);
    ck_assert_int_eq(add_row->host_total_ns, 100);
    ck_assert_int_eq(add_row->host_self_ns, 100 - 10 - 5); /* its children: empty; its call */
    ck_assert_int_eq(add_row->device_self_ns, 4);
    ck_assert_int_eq(row(v, "aten::empty", NULL)->calls, 1);
    ck_assert_int_eq(row(v, "aten::after", NULL)->host_self_ns, 50);
    ck_assert_uint_eq(v->n_device_linked, 1);
    analyse_opview_free(v);
}
END_TEST

/* Which nodes count: not steps, modules, DataLoader or Optimizer nodes, DataParallel.forward;
 * without a device event the rows go by self host time. */
START_TEST(test_operators_and_host_order)
{
    static struct trace t;
    t.n = 0;
    add(&t, "python_function", "nn.Module: Net_0", 1, 0, 1000, -1, -1, true);
    add(&t, "cpu_op", "DataParallel.forward", 1, 10, 100, 1, -1, false);
    add(&t, "cpu_op", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1, 200, 50,
        2, -1, false);
    add(&t, "cpu_op", "Optimizer.step#SGD.step", 1, 300, 50, 3, -1, false);
    add(&t, "cpu_op", "aten::small", 1, 400, 10, 4, -1, false);
    add(&t, "cpu_op", "aten::big", 1, 500, 90, 5, -1, false);
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    ck_assert(!v->device);
    ck_assert_uint_eq(v->n_rows, 2);
    ck_assert_str_eq(v->rows[0].name, "aten::big"); /* name_len bytes: a whole literal here */
    ck_assert_int_eq(v->rows[1].host_self_ns, 10);
    analyse_opview_free(v);
}
END_TEST

START_TEST(test_groups_by_shape_and_stack)
{
    static struct trace t;
    t.n = 0;
    struct analyse_opv_event *e;
    e = add(&t, "cpu_op", "aten::mm", 1, 0, 10, 1, -1, false);
    e->shape = "[[2,3],[3,4]]", e->shape_len = 13, e->stack = "a.py(1): f", e->stack_len = 10;
    e = add(&t, "cpu_op", "aten::mm", 1, 20, 20, 2, -1, false);
    e->shape = "[[2,3],[3,4]]", e->shape_len = 13, e->stack = "a.py(2): g", e->stack_len = 10;
    e = add(&t, "cpu_op", "aten::mm", 1, 50, 40, 3, -1, false);
    e->shape = "[[5,3],[3,4]]", e->shape_len = 13;
    add(&t, "cpu_op", "aten::zero_", 1, 100, 5, 4, -1, false); /* no shape: the plugin's [] */
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    ck_assert_uint_eq(v->n_rows, 2);
    ck_assert_int_eq(row(v, "aten::mm", NULL)->calls, 3);
    ck_assert(row(v, "aten::mm", NULL)->has_stack);
    ck_assert(!row(v, "aten::zero_", NULL)->has_stack);
    analyse_opview_free(v);
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_SHAPE, NULL, &v), 0);
    ck_assert_uint_eq(v->n_rows, 3);
    ck_assert_int_eq(row(v, "aten::mm", "[[2,3],[3,4]]")->calls, 2);
    ck_assert(row(v, "aten::mm", "[[2,3],[3,4]]")->has_stack);
    ck_assert(!row(v, "aten::mm", "[[5,3],[3,4]]")->has_stack);
    ck_assert_int_eq(row(v, "aten::zero_", "[]")->calls, 1);
    analyse_opview_free(v);
    /* By stack: only calls with one, one row per (name, stack). */
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_STACK, NULL, &v), 0);
    ck_assert_uint_eq(v->n_rows, 2);
    ck_assert_int_eq(v->rows[0].calls + v->rows[1].calls, 2);
    ck_assert_uint_eq(v->rows[0].stack_len, 10);
    analyse_opview_free(v);
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_SHAPE_STACK, NULL, &v), 0);
    ck_assert_uint_eq(v->n_rows, 2);
    analyse_opview_free(v);
}
END_TEST

START_TEST(test_arguments_stop_and_empty)
{
    struct analyse_opview *v = NULL;
    ck_assert_int_eq(analyse_opview_compute(NULL, 1, ANALYSE_OPV_BY_NAME, NULL, &v), -EINVAL);
    ck_assert_int_eq(analyse_opview_compute(NULL, 0, ANALYSE_OPV_BY_NAME, NULL, NULL), -EINVAL);
    ck_assert_int_eq(analyse_opview_compute(NULL, 0, ANALYSE_OPV_BY_NAME, NULL, &v), 0);
    ck_assert_uint_eq(v->n_rows, 0);
    ck_assert(!v->device);
    analyse_opview_free(v);
    static struct trace t;
    t.n = 0;
    add(&t, "cpu_op", "aten::mm", 1, 0, 10, 1, -1, false);
    _Atomic bool stop = true;
    v = (struct analyse_opview *)&t; /* must be reset */
    ck_assert_int_eq(analyse_opview_compute(t.ev, t.n, ANALYSE_OPV_BY_NAME, &stop, &v),
                     -ECANCELED);
    ck_assert_ptr_null(v);
    analyse_opview_free(NULL);
    ck_assert_uint_gt(analyse_opview_bytes(1000), analyse_opview_bytes(10));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_opview");
    TCase *tc = tcase_create("opview");
    tcase_add_test(tc, test_types_as_the_plugin_reads_cats);
    tcase_add_test(tc, test_self_and_device_times);
    tcase_add_test(tc, test_links_in_the_plugins_order);
    tcase_add_test(tc, test_duplicates_and_crossings);
    tcase_add_test(tc, test_operators_and_host_order);
    tcase_add_test(tc, test_groups_by_shape_and_stack);
    tcase_add_test(tc, test_arguments_stop_and_empty);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
