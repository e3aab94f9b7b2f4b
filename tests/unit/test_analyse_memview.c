/* SPDX-License-Identifier: MIT */
/*
 * Table tests of the memory view (memview.c): the operator trees as torch-tb-profiler 0.4.3
 * builds them (a same-named only child is one node with its parent, an intersecting span is left
 * out, ProfilerStep# and annotations count nowhere themselves), self and total figures per
 * device, the curve's peak and its step, the allocator samples' peak, and the downsampling that
 * keeps the peak. The figures on real traces are checked against the plugin itself by
 * tests/integ/test_memory.py.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_memview.h"

static struct analyse_span sp(const char *cat, const char *name, int64_t ts, int64_t dur,
                              int64_t tid)
{
    return (struct analyse_span){.ts_ns = ts, .dur_ns = dur, .name = name,
                                 .name_len = strlen(name), .cat = cat, .cat_len = strlen(cat),
                                 .pid = 1, .tid = tid, .correlation = -1, .external_id = -1,
                                 .role = strncmp(name, "ProfilerStep#", 13) == 0
                                             ? ANALYSE_ROLE_STEP
                                             : ANALYSE_ROLE_HOST_OP};
}

static struct analyse_mv_event ev(const char *dev, int64_t ts, int64_t bytes, int64_t alloc,
                                  int64_t tid)
{
    return (struct analyse_mv_event){.pid = 1, .tid = tid, .ts_ns = ts, .device = dev,
                                     .device_len = strlen(dev), .source = ANALYSE_MV_TRACE,
                                     .bytes = bytes, .allocated = alloc, .reserved = 1000,
                                     .peak_allocated = -1, .peak_reserved = -1, .step = -1};
}

static const struct analyse_mv_row *row(const struct analyse_memview *m, const char *dev,
                                        const char *name)
{
    for (size_t i = 0; i < m->n_rows; i++)
        if (m->rows[i].device_len == strlen(dev) && !memcmp(m->rows[i].device, dev, strlen(dev)) &&
            m->rows[i].name_len == strlen(name) && !memcmp(m->rows[i].name, name, strlen(name)))
            return &m->rows[i];
    return NULL;
}

START_TEST(test_tree_self_and_total)
{
    struct analyse_span s[] = {
        sp("user_annotation", "ProfilerStep#7", 0, 1000, 1),
        sp("cpu_op", "aten::linear", 100, 400, 1),
        sp("cpu_op", "aten::addmm", 150, 300, 1),
        sp("cpu_op", "aten::empty", 160, 10, 1),
        sp("cpu_op", "aten::copy_", 600, 100, 1),  /* only child aten::copy_: one node */
        sp("cpu_op", "aten::copy_", 610, 50, 1),
        sp("cpu_op", "aten::bad", 650, 200, 1),    /* starts inside copy_, ends after: out */
        sp("python", "py", 800, 100, 1),
        sp("cpu_op", "aten::mul", 820, 20, 1),
        sp("cpu_op", "Optimizer.step#SGD.step", 900, 50, 1),
    };
    struct analyse_mv_event e[] = {
        ev("GPU0", 165, 512, 512, 1),   /* aten::empty: self; addmm, linear: total */
        ev("GPU0", 200, 256, 768, 1),   /* aten::addmm self */
        ev("CPU", 300, 64, 64, 1),      /* aten::addmm self, on the CPU */
        ev("GPU0", 620, -256, 512, 1),  /* inside both copy_ spans: the one node */
        ev("GPU0", 680, 128, 640, 1),   /* in copy_'s outer span, in aten::bad's: copy_ */
        ev("GPU0", 50, 1, 641, 1),      /* in ProfilerStep# only: nowhere */
        ev("GPU0", 810, 2, 643, 1),     /* in the python node: nowhere */
        ev("GPU0", 830, 4, 647, 1),     /* aten::mul, under python: self */
        ev("GPU0", 910, 8, 655, 1),     /* Optimizer.*: no operator */
        ev("GPU0", 200, 16, 800, 2),    /* another thread, no node */
    };
    struct analyse_memview *m = NULL;
    ck_assert_int_eq(analyse_memview_compute(s, 10, e, 10, 100, &m), 0);
    ck_assert_uint_eq(m->n_attributed, 6);
    ck_assert_uint_eq(m->n_unattributed, 4);
    const struct analyse_mv_row *r = row(m, "GPU0", "aten::linear");
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->calls, 1);
    ck_assert_int_eq(r->increase, 768);
    ck_assert_int_eq(r->self_increase, 0);
    ck_assert_int_eq(r->alloc_count, 2);
    r = row(m, "GPU0", "aten::addmm");
    ck_assert_int_eq(r->self_increase, 256);
    ck_assert_int_eq(r->increase, 768);
    ck_assert_int_eq(r->self_alloc_size, 256);
    r = row(m, "CPU", "aten::addmm");
    ck_assert_int_eq(r->self_alloc_count, 1);
    ck_assert_int_eq(row(m, "CPU", "aten::linear")->increase, 64);
    r = row(m, "GPU0", "aten::copy_");
    ck_assert_int_eq(r->calls, 1); /* the two spans are one call */
    ck_assert_int_eq(r->self_increase, -128);
    ck_assert_int_eq(r->self_alloc_count, 1);
    ck_assert_int_eq(r->alloc_size, 128);
    ck_assert_ptr_null(row(m, "GPU0", "aten::bad"));
    ck_assert_ptr_null(row(m, "GPU0", "py"));
    ck_assert_ptr_null(row(m, "GPU0", "ProfilerStep#7"));
    ck_assert_ptr_null(row(m, "GPU0", "Optimizer.step#SGD.step"));
    ck_assert_int_eq(row(m, "GPU0", "aten::mul")->self_increase, 4);
    /* rows by device, then name */
    ck_assert(memcmp(m->rows[0].device, "CPU", 3) == 0);
    for (size_t i = 3; i < m->n_rows; i++) /* CPU: addmm, linear; then GPU0 */
        ck_assert(strncmp(m->rows[i - 1].name, m->rows[i].name, 12) < 0);
    /* the curves: GPU0's peak 800 at ts 200 (thread 2's event), in ProfilerStep#7 */
    ck_assert_uint_eq(m->n_series, 2);
    const struct analyse_mv_series *g = &m->series[1];
    ck_assert_uint_eq(g->n_points, 9);
    ck_assert_int_eq(g->peak_allocated, 800);
    ck_assert_int_eq(g->peak_ts_ns, 200);
    ck_assert_int_eq(g->peak_step, 7);
    ck_assert_int_eq(g->first_ts_ns, 50);
    for (size_t i = 1; i < g->n_kept; i++)
        ck_assert_int_le(m->points[g->first_kept + i - 1].ts_ns,
                         m->points[g->first_kept + i].ts_ns);
    analyse_memview_free(m);
}
END_TEST

START_TEST(test_allocator_samples_and_downsampling)
{
    enum { N = 1000 };
    struct analyse_mv_event *e = calloc(N + 3, sizeof *e);
    ck_assert_ptr_nonnull(e);
    for (int i = 0; i < N; i++) {
        e[i] = ev("GPU0", i, 8, 1000 + (i * 37) % 101, 1);
        if (i == 613)
            e[i].allocated = 5000; /* the peak, alone in its bucket's middle */
    }
    /* a Paddle event's own peak_reserved (counted from the process's start) above every
     * current_reserved (1000) of the window: Paddle's Peak Reserved Memory is the peak */
    e[7].peak_reserved = 6000;
    /* three allocator samples: the allocator's own peak (9000) is larger than any current */
    for (int i = 0; i < 3; i++)
        e[N + i] = (struct analyse_mv_event){
            .pid = 1, .tid = 1, .ts_ns = 10000 + i, .device = "GPU0", .device_len = 4,
            .source = ANALYSE_MV_ALLOCATOR, .bytes = INT64_MIN, .allocated = 100 + i,
            .reserved = -1, .peak_allocated = i == 0 ? 500 : 9000, .peak_reserved = 7,
            .step = 40 + i};
    struct analyse_memview *m = NULL;
    ck_assert_int_eq(analyse_memview_compute(NULL, 0, e, N + 3, 50, &m), 0);
    ck_assert_uint_eq(m->n_series, 2);
    const struct analyse_mv_series *t = &m->series[0], *a = &m->series[1];
    ck_assert_int_eq(t->source, ANALYSE_MV_TRACE);
    ck_assert_uint_eq(t->n_points, N);
    ck_assert_uint_le(t->n_kept, 50);
    ck_assert_int_eq(t->peak_allocated, 5000);
    ck_assert_int_eq(t->peak_step, -1); /* no step span */
    ck_assert_int_eq(t->peak_reserved, 6000);
    bool kept = false;
    for (size_t i = 0; i < t->n_kept; i++)
        kept |= m->points[t->first_kept + i].allocated == 5000;
    ck_assert(kept);
    ck_assert_int_eq(m->points[t->first_kept].ts_ns, 0);
    ck_assert_int_eq(m->points[t->first_kept + t->n_kept - 1].ts_ns, N - 1);
    ck_assert_int_eq(a->source, ANALYSE_MV_ALLOCATOR);
    ck_assert_uint_eq(a->n_points, 3);
    ck_assert_int_eq(a->peak_allocated, 9000);
    ck_assert_int_eq(a->peak_step, 41); /* the first sample that shows it */
    ck_assert_int_eq(a->peak_reserved, 7);
    ck_assert_uint_eq(m->n_rows, 0); /* no operator */
    analyse_memview_free(m);
    ck_assert_int_eq(analyse_memview_compute(NULL, 0, e, N, 9, &m), -EINVAL);
    free(e);
}
END_TEST

/* A long thread (300 k operators) and 30 k memory events on it: each event's thread was found by
 * walking the thread's nodes one by one (O(events x nodes): a 1 M-event job's /memory ran past
 * its 30 s deadline, tests/bench/memory_route.py); a binary search over the threads' ranges takes
 * well under the test's 5 s. */
START_TEST(test_long_thread_many_events)
{
    enum { N = 300000, E = 30000 };
    struct analyse_span *s = calloc(N + 1, sizeof *s);
    struct analyse_mv_event *e = calloc(E, sizeof *e);
    ck_assert(s && e);
    for (int i = 0; i < N; i++)
        s[i] = sp("cpu_op", "aten::op", (int64_t)i * 10, 5, 1);
    s[N] = sp("cpu_op", "aten::other", 0, 1000, 2); /* another thread */
    for (int i = 0; i < E; i++)
        e[i] = ev("GPU0", (int64_t)i * 100 + 2, 8, 8 * (i + 1), 1);
    struct analyse_memview *m = NULL;
    ck_assert_int_eq(analyse_memview_compute(s, N + 1, e, E, 2000, &m), 0);
    ck_assert_uint_eq(m->n_attributed, E);
    ck_assert_uint_eq(m->n_rows, 1);
    ck_assert_int_eq(m->rows[0].calls, N);
    ck_assert_int_eq(m->rows[0].self_alloc_count, E);
    ck_assert_uint_le(m->series[0].n_kept, 2000);
    ck_assert_int_eq(m->series[0].peak_allocated, 8 * E);
    analyse_memview_free(m);
    free(s);
    free(e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_memview");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_tree_self_and_total);
    tcase_add_test(tc, test_allocator_samples_and_downsampling);
    suite_add_tcase(s, tc);
    TCase *big = tcase_create("big");
    tcase_set_timeout(big, 5);
    tcase_add_test(big, test_long_thread_many_events);
    suite_add_tcase(s, big);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
