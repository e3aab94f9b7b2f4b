/* SPDX-License-Identifier: MIT */
/*
 * Tests of the operators and kernels of a range of steps (stepops.c): HTA's membership rule
 * (a host span is in a step it starts inside, the step's end excluded; a kernel in the step of
 * the runtime that launched it, even when it runs after the step; a kernel without a launch in
 * none), torch's self time over the spans kept, per thread, and the errors. The real traces
 * (against HTA's trace diff and torch's key_averages()) are tests/integ/test_diff_steps.py.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analyse_stepops.h"
#include "analyse_steptrace.h"

static struct analyse_span sp(const char *name, enum analyse_role role, int64_t ts, int64_t dur,
                              int64_t tid, int64_t corr)
{
    return (struct analyse_span){.ts_ns = ts, .dur_ns = dur, .name = name,
                                 .name_len = strlen(name), .cat = "", .pid = 1, .tid = tid,
                                 .correlation = corr, .external_id = -1, .role = role};
}

/* The part named name of parts[0, n): calls, total and self summed. */
static struct analyse_op_part sum(const struct analyse_op_part *p, size_t n, const char *name)
{
    struct analyse_op_part o = {.name = name};
    for (size_t i = 0; i < n; i++)
        if (p[i].name_len == strlen(name) && memcmp(p[i].name, name, p[i].name_len) == 0) {
            o.calls += p[i].calls;
            o.total_ns += p[i].total_ns;
            o.self_ns += p[i].self_ns;
        }
    return o;
}

/* Two steps [100, 200) and [210, 300), a gap between them, and a third [300, 400). */
static size_t trace(struct analyse_span *v)
{
    size_t n = 0;
    v[n++] = sp("ProfilerStep#1", ANALYSE_ROLE_STEP, 100, 100, 1, -1);
    v[n++] = sp("ProfilerStep#2", ANALYSE_ROLE_STEP, 210, 90, 1, -1);
    v[n++] = sp("ProfilerStep#3", ANALYSE_ROLE_STEP, 300, 100, 1, -1);
    v[n++] = sp("aten::mm", ANALYSE_ROLE_HOST_OP, 100, 50, 1, -1);   /* at step 1's start */
    v[n++] = sp("aten::add", ANALYSE_ROLE_HOST_OP, 110, 20, 1, -1);  /* inside mm */
    v[n++] = sp("cudaLaunchKernel", ANALYSE_ROLE_RUNTIME, 120, 5, 1, 7);
    v[n++] = sp("aten::mm", ANALYSE_ROLE_HOST_OP, 200, 5, 1, -1);    /* in the gap: no step */
    v[n++] = sp("aten::mm", ANALYSE_ROLE_HOST_OP, 290, 30, 1, -1);   /* in step 2, ends in 3 */
    v[n++] = sp("cudaLaunchKernel", ANALYSE_ROLE_RUNTIME, 295, 4, 1, 8);
    v[n++] = sp("aten::relu", ANALYSE_ROLE_HOST_OP, 150, 10, 2, -1); /* another thread */
    v[n++] = sp("aten::relu", ANALYSE_ROLE_HOST_OP, 300, 10, 1, -1); /* at step 3's start */
    v[n++] = sp("gemm", ANALYSE_ROLE_KERNEL, 500, 40, 0, 7);          /* launched in step 1 */
    v[n++] = sp("gemm", ANALYSE_ROLE_KERNEL, 600, 30, 0, 8);          /* launched in step 2 */
    v[n++] = sp("gemm", ANALYSE_ROLE_KERNEL, 150, 30, 0, 99);         /* no launch known */
    v[n++] = sp("gemm", ANALYSE_ROLE_KERNEL, 150, 30, 0, -1);         /* no correlation */
    v[n++] = sp("py", ANALYSE_ROLE_PYTHON, 120, 1, 1, -1);            /* in no table */
    return n;
}

START_TEST(test_stepops_membership)
{
    struct analyse_span v[32];
    size_t n = trace(v);
    struct analyse_stepops *s = NULL;
    ck_assert_int_eq(analyse_stepops_compute(v, n, 1, 2, &s), 0);
    ck_assert_uint_eq(s->n_steps, 2);
    ck_assert_int_eq(s->first_step, 1);
    ck_assert_int_eq(s->last_step, 2);
    struct analyse_op_part mm = sum(s->ops, s->n_ops, "aten::mm");
    ck_assert_int_eq(mm.calls, 2); /* not the one in the gap */
    ck_assert_int_eq(mm.total_ns, 80);
    ck_assert_int_eq(mm.self_ns, 80 - 20 - 4); /* add and the second launch are its children
                                                  (the first launch is add's) */
    struct analyse_op_part relu = sum(s->ops, s->n_ops, "aten::relu");
    ck_assert_int_eq(relu.calls, 1); /* thread 2's; step 3 is out of range */
    ck_assert_int_eq(relu.self_ns, 10);
    struct analyse_op_part st = sum(s->ops, s->n_ops, "ProfilerStep#1");
    ck_assert_int_eq(st.calls, 1);
    ck_assert_int_eq(st.self_ns, 100 - 50); /* mm is its child; relu is on another thread */
    ck_assert_int_eq(sum(s->ops, s->n_ops, "py").calls, 0);
    struct analyse_op_part k = sum(s->kernels, s->n_kernels, "gemm");
    ck_assert_int_eq(k.calls, 2); /* after their steps, but launched in them */
    ck_assert_int_eq(k.total_ns, 70);
    analyse_stepops_free(s);

    /* Step 3 alone: relu at its start, mm's launch not (it started in step 2). */
    ck_assert_int_eq(analyse_stepops_compute(v, n, 3, 3, &s), 0);
    ck_assert_int_eq(sum(s->ops, s->n_ops, "aten::relu").calls, 1);
    ck_assert_int_eq(sum(s->ops, s->n_ops, "aten::mm").calls, 0);
    ck_assert_uint_eq(s->n_kernels, 0);
    analyse_stepops_free(s);

    /* No bound: every step; still nothing from the gap. */
    ck_assert_int_eq(analyse_stepops_compute(v, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s),
                     0);
    ck_assert_uint_eq(s->n_steps, 3);
    ck_assert_int_eq(sum(s->ops, s->n_ops, "aten::mm").calls, 2);
    analyse_stepops_free(s);
}
END_TEST

START_TEST(test_stepops_overlapping_steps)
{
    /* A long step holding a short one: a span after the short one ends is still in the long. */
    struct analyse_span v[] = {
        sp("ProfilerStep#1", ANALYSE_ROLE_STEP, 0, 1000, 1, -1),
        sp("ProfilerStep#2", ANALYSE_ROLE_STEP, 100, 10, 2, -1),
        sp("aten::mm", ANALYSE_ROLE_HOST_OP, 500, 10, 3, -1),
        sp("aten::mm", ANALYSE_ROLE_HOST_OP, 1000, 10, 3, -1), /* the end is out */
    };
    struct analyse_stepops *s = NULL;
    ck_assert_int_eq(analyse_stepops_compute(v, 4, 1, 2, &s), 0);
    ck_assert_int_eq(sum(s->ops, s->n_ops, "aten::mm").calls, 1);
    analyse_stepops_free(s);
}
END_TEST

START_TEST(test_stepops_errors)
{
    struct analyse_span v[32];
    size_t n = trace(v);
    struct analyse_stepops *s = (void *)1;
    ck_assert_int_eq(analyse_stepops_compute(v, n, 4, 9, &s), -ENOENT);
    ck_assert_ptr_null(s);
    ck_assert_int_eq(analyse_stepops_compute(v, 0, 1, 1, &s), -ENOENT);
    /* A step span without a number is in no range. */
    struct analyse_span w[] = {sp("ProfilerStep", ANALYSE_ROLE_STEP, 0, 10, 1, -1)};
    ck_assert_int_eq(analyse_stepops_compute(w, 1, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, &s),
                     -ENOENT);
    analyse_stepops_free(NULL);
    ck_assert_uint_gt(analyse_stepops_bytes(1000), analyse_stepops_bytes(10));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_stepops");
    TCase *tc = tcase_create("stepops");
    tcase_add_test(tc, test_stepops_membership);
    tcase_add_test(tc, test_stepops_overlapping_steps);
    tcase_add_test(tc, test_stepops_errors);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
