/* SPDX-License-Identifier: MIT */
/* analyse_clock: the offsets of hosts' clocks from the ends of the steps they share. */
#include "analyse_clock.h"

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000LL
#define T0 1700000000000000000LL /* 2023-11-14, as a trainer's clock reads */
#define STEP_NS (100 * MS)

/* A small deterministic generator (the tests must not depend on libc's rand()). */
static uint64_t lcg_state;

static int64_t noise(int64_t amplitude)
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t u = (int64_t)(lcg_state >> 33) % (2 * amplitude + 1);
    return u - amplitude;
}

/* Fills rows of ranks [first_rank, first_rank + ranks) for steps [first_step, first_step + n):
 * the true end of step s is T0 + s * period; each rank's end is that plus the host's clock
 * offset plus skew (+/- skew_ns, of the collective), its begin jitter_ns before the period's
 * start (a data loader that differs by rank). Returns the number of rows. */
static size_t fill(struct analyse_clock_step *out, int64_t first_rank, int64_t ranks,
                   int64_t first_step, int64_t n, int64_t period, int64_t offset, int64_t skew_ns,
                   int64_t jitter_ns)
{
    size_t k = 0;
    for (int64_t s = first_step; s < first_step + n; s++)
        for (int64_t r = first_rank; r < first_rank + ranks; r++) {
            int64_t end = T0 + s * period + offset + (skew_ns ? noise(skew_ns) : 0);
            int64_t begin = T0 + (s - 1) * period + offset + (jitter_ns ? noise(jitter_ns) : 0) +
                            jitter_ns;
            out[k++] = (struct analyse_clock_step){.rank = r, .step = s, .begin_ns = begin,
                                                   .end_ns = end};
        }
    return k;
}

static struct analyse_clock *compute(const struct analyse_clock_host *h, size_t n,
                                     const struct analyse_clock_params *p)
{
    struct analyse_clock *c = NULL;
    ck_assert_int_eq(analyse_clock_compute(h, n, p, &c), 0);
    ck_assert_ptr_nonnull(c);
    ck_assert_uint_eq(c->n_hosts, n);
    return c;
}

START_TEST(test_known_offsets_recovered_exactly)
{
    /* Three hosts of 4 ranks, 50 steps; b's clock is 37 ms ahead, c's 5 ms behind; the ranks'
     * begins differ by up to 3 ms (their data loaders), their ends agree (the collective) */
    static struct analyse_clock_step a[200], b[200], c[200];
    lcg_state = 1;
    size_t na = fill(a, 0, 4, 0, 50, STEP_NS, 0, 0, 3 * MS);
    size_t nb = fill(b, 4, 4, 0, 50, STEP_NS, 37 * MS, 0, 3 * MS);
    size_t nc = fill(c, 8, 4, 0, 50, STEP_NS, -5 * MS, 0, 3 * MS);
    /* In input order c, a, b: the reference is a (the lowest name) */
    struct analyse_clock_host h[] = {{"node-c", c, nc}, {"node-a", a, na}, {"node-b", b, nb}};
    struct analyse_clock *r = compute(h, 3, NULL);
    ck_assert_int_eq(r->reference, 1);
    ck_assert_uint_eq(r->min_steps, ANALYSE_CLOCK_MIN_STEPS);
    ck_assert_str_eq(r->hosts[1].name, "node-a");
    ck_assert(r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_REFERENCE);
    ck_assert_int_eq(r->hosts[1].offset_ns, 0);
    ck_assert_uint_eq(r->hosts[1].steps, 50);
    ck_assert_uint_eq(r->hosts[1].ranks, 4);
    ck_assert(r->hosts[2].aligned);
    ck_assert_int_eq(r->hosts[2].reason, ANALYSE_CLOCK_ALIGNED);
    ck_assert_int_eq(r->hosts[2].offset_ns, 37 * MS);
    ck_assert_int_eq(r->hosts[2].spread_ns, 0);
    ck_assert_uint_eq(r->hosts[2].steps, 50);
    ck_assert(r->hosts[0].aligned);
    ck_assert_int_eq(r->hosts[0].offset_ns, -5 * MS);
    ck_assert_int_eq(r->hosts[0].estimate_ns, -5 * MS);
    ck_assert_int_eq(r->hosts[0].spread_ns, 0);
    /* The threshold: 5 % of the reference's median step time, which begins up to 6 ms late */
    ck_assert_int_ge(r->ref_step_ns, STEP_NS - 6 * MS);
    ck_assert_int_le(r->ref_step_ns, STEP_NS);
    ck_assert_int_eq(r->max_spread_ns, (int64_t)(0.05 * (double)r->ref_step_ns));
    ck_assert_ptr_eq(analyse_clock_find(r, "node-b"), &r->hosts[2]);
    ck_assert_ptr_null(analyse_clock_find(r, "node-z"));
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_noise_within_spread)
{
    /* The collective's skew: each rank's end within +/- 400 us; 2 and 3 ranks a host */
    static struct analyse_clock_step a[400], b[600];
    lcg_state = 42;
    size_t na = fill(a, 0, 2, 0, 200, STEP_NS, 0, 400000, 0);
    size_t nb = fill(b, 2, 3, 0, 200, STEP_NS, 37 * MS, 400000, 0);
    struct analyse_clock_host h[] = {{"a", a, na}, {"b", b, nb}};
    struct analyse_clock *r = compute(h, 2, NULL);
    ck_assert_int_eq(r->reference, 0);
    const struct analyse_clock_row *rb = &r->hosts[1];
    ck_assert(rb->aligned);
    ck_assert_uint_eq(rb->steps, 200);
    ck_assert_int_gt(rb->spread_ns, 0);
    ck_assert_int_le(rb->spread_ns, 400000);
    ck_assert_int_le(llabs(rb->offset_ns - 37 * MS), rb->spread_ns);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_too_few_steps_refused)
{
    /* b shares 5 steps with a: refused, offset 0, what was measured still said */
    static struct analyse_clock_step a[40], b[10];
    size_t na = fill(a, 0, 2, 0, 20, STEP_NS, 0, 0, 0);
    size_t nb = fill(b, 2, 2, 15, 5, STEP_NS, 37 * MS, 0, 0);
    struct analyse_clock_host h[] = {{"a", a, na}, {"b", b, nb}};
    struct analyse_clock *r = compute(h, 2, NULL);
    ck_assert(!r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_FEW_STEPS);
    ck_assert_int_eq(r->hosts[1].offset_ns, 0);
    ck_assert_int_eq(r->hosts[1].estimate_ns, 37 * MS);
    ck_assert_uint_eq(r->hosts[1].steps, 5);
    ck_assert_str_eq(analyse_clock_reason_text(r->hosts[1].reason),
                     "too few steps in common with the reference");
    analyse_clock_free(r);
    /* ... and aligned when the bound asks for 5 */
    struct analyse_clock_params p = {.min_steps = 5, .max_spread_ratio = 0.05};
    r = compute(h, 2, &p);
    ck_assert(r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].offset_ns, 37 * MS);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_no_overlap_and_no_steps)
{
    /* c's steps are 100..119, a's 0..29: nothing to compare; d has no valid step at all */
    static struct analyse_clock_step a[30], c[20];
    size_t na = fill(a, 0, 1, 0, 30, STEP_NS, 0, 0, 0);
    size_t nc = fill(c, 1, 1, 100, 20, STEP_NS, 37 * MS, 0, 0);
    struct analyse_clock_step d[1] = {{.rank = 2, .step = 3, .begin_ns = 10, .end_ns = 5}};
    struct analyse_clock_host h[] = {{"a", a, na}, {"c", c, nc}, {"d", d, 1}, {"e", NULL, 0}};
    struct analyse_clock *r = compute(h, 4, NULL);
    ck_assert_int_eq(r->reference, 0);
    ck_assert(!r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_NO_SHARED);
    ck_assert_uint_eq(r->hosts[1].steps, 0);
    ck_assert_int_eq(r->hosts[1].offset_ns, 0);
    ck_assert_int_eq(r->hosts[1].estimate_ns, 0);
    ck_assert_int_eq(r->hosts[2].reason, ANALYSE_CLOCK_NO_STEPS);
    ck_assert_uint_eq(r->hosts[2].ranks, 0);
    ck_assert_int_eq(r->hosts[3].reason, ANALYSE_CLOCK_NO_STEPS);
    analyse_clock_free(r);
    /* No host with a step: no reference, nobody aligned */
    r = compute(h + 2, 2, NULL);
    ck_assert_int_eq(r->reference, -1);
    ck_assert(!r->hosts[0].aligned && !r->hosts[1].aligned);
    analyse_clock_free(r);
    /* No host at all */
    r = compute(NULL, 0, NULL);
    ck_assert_int_eq(r->reference, -1);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_not_in_lockstep_refused)
{
    /* An asynchronous pipeline: b's steps take 130 ms where a's take 100, so the same step
     * numbers end further apart each step; no offset describes that */
    static struct analyse_clock_step a[60], b[60];
    size_t na = fill(a, 0, 1, 0, 60, STEP_NS, 0, 0, 0);
    size_t nb = fill(b, 1, 1, 0, 60, 130 * MS, 37 * MS, 0, 0);
    struct analyse_clock_host h[] = {{"a", a, na}, {"b", b, nb}};
    struct analyse_clock *r = compute(h, 2, NULL);
    ck_assert(!r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_NOT_LOCKSTEP);
    ck_assert_int_eq(r->hosts[1].offset_ns, 0);
    ck_assert_int_gt(r->hosts[1].spread_ns, r->max_spread_ns);
    ck_assert_uint_eq(r->hosts[1].steps, 60);
    analyse_clock_free(r);
    /* A skew of +/- 20 ms on 100 ms steps (MAD ~10 ms > 5 ms): refused as well */
    static struct analyse_clock_step c[60];
    lcg_state = 7;
    size_t nc = fill(c, 2, 1, 0, 60, STEP_NS, 37 * MS, 20 * MS, 0);
    h[1] = (struct analyse_clock_host){"c", c, nc};
    r = compute(h, 2, NULL);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_NOT_LOCKSTEP);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_reference_lowest_name_with_enough_steps)
{
    /* a has 20 steps and z 30: a, the lowest name with min_steps, is the reference whatever the
     * counts, and z's clock reads 37 ms ahead of it */
    static struct analyse_clock_step a[20], z[30], y[5];
    size_t na = fill(a, 0, 1, 0, 20, STEP_NS, 0, 0, 0);
    size_t nz = fill(z, 1, 1, 0, 30, STEP_NS, 37 * MS, 0, 0);
    struct analyse_clock_host h[] = {{"z", z, nz}, {"a", a, na}};
    struct analyse_clock *r = compute(h, 2, NULL);
    ck_assert_int_eq(r->reference, 1);
    ck_assert_int_eq(r->hosts[0].offset_ns, 37 * MS);
    ck_assert_uint_eq(r->hosts[0].steps, 20);
    analyse_clock_free(r);
    /* With 5 steps a lowest-named host is no reference: z is, and the short host is refused */
    size_t ny = fill(y, 2, 1, 0, 5, STEP_NS, -3 * MS, 0, 0);
    struct analyse_clock_host h2[] = {{"z", z, nz}, {"b", y, ny}};
    r = compute(h2, 2, NULL);
    ck_assert_int_eq(r->reference, 0);
    ck_assert_int_eq(r->hosts[1].reason, ANALYSE_CLOCK_FEW_STEPS);
    ck_assert_int_eq(r->hosts[1].estimate_ns, -40 * MS);
    analyse_clock_free(r);
    /* No host with enough: the most steps, then the lowest name */
    struct analyse_clock_host h3[] = {{"z", z, 4}, {"y", y, 5}, {"x", y, 5}};
    r = compute(h3, 3, NULL);
    ck_assert_int_eq(r->reference, 2);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_end_not_begin)
{
    /* The ranks' ends agree and their begins do not (a rank that logs between steps begins its
     * next one 30 ms late): the estimate follows the ends */
    static struct analyse_clock_step a[80], b[80];
    size_t na = fill(a, 0, 2, 0, 40, STEP_NS, 0, 0, 0);
    size_t nb = fill(b, 2, 2, 0, 40, STEP_NS, 37 * MS, 0, 0);
    for (size_t i = 0; i < nb; i += 2)
        b[i].begin_ns += 30 * MS;
    struct analyse_clock_host h[] = {{"a", a, na}, {"b", b, nb}};
    struct analyse_clock *r = compute(h, 2, NULL);
    ck_assert(r->hosts[1].aligned);
    ck_assert_int_eq(r->hosts[1].offset_ns, 37 * MS);
    ck_assert_int_eq(r->hosts[1].spread_ns, 0);
    analyse_clock_free(r);
}
END_TEST

START_TEST(test_bad_arguments)
{
    struct analyse_clock *c = NULL;
    struct analyse_clock_host h[] = {{"a", NULL, 3}};
    struct analyse_clock_params nan_p = {.max_spread_ratio = NAN};
    struct analyse_clock_params neg_p = {.max_spread_ratio = -1};
    ck_assert_int_eq(analyse_clock_compute(h, 1, NULL, &c), -EINVAL);
    ck_assert_int_eq(analyse_clock_compute(NULL, 1, NULL, &c), -EINVAL);
    ck_assert_int_eq(analyse_clock_compute(NULL, 0, NULL, NULL), -EINVAL);
    ck_assert_int_eq(analyse_clock_compute(NULL, 0, &nan_p, &c), -EINVAL);
    ck_assert_int_eq(analyse_clock_compute(NULL, 0, &neg_p, &c), -EINVAL);
    ck_assert_ptr_null(c);
    struct analyse_clock_host unnamed[] = {{NULL, NULL, 0}};
    ck_assert_int_eq(analyse_clock_compute(unnamed, 1, NULL, &c), -EINVAL);
    ck_assert_str_eq(analyse_clock_reason_text(ANALYSE_CLOCK_REASON_COUNT), "unknown");
    analyse_clock_free(NULL);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_clock");
    TCase *tc = tcase_create("clock");
    tcase_add_test(tc, test_known_offsets_recovered_exactly);
    tcase_add_test(tc, test_noise_within_spread);
    tcase_add_test(tc, test_too_few_steps_refused);
    tcase_add_test(tc, test_no_overlap_and_no_steps);
    tcase_add_test(tc, test_not_in_lockstep_refused);
    tcase_add_test(tc, test_reference_lowest_name_with_enough_steps);
    tcase_add_test(tc, test_end_not_begin);
    tcase_add_test(tc, test_bad_arguments);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
