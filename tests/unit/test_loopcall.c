/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of daemon/loopcall on a real libuv loop run by a thread of its own: calls from other
 * threads run on the loop thread and get their own answers, many at once; a request the loop does
 * not take in time gives up and never runs, one it took is waited for past the wait; a closed
 * loopcall answers -ESHUTDOWN, to requests already queued too.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <uv.h>

#include "../../daemon/loopcall/loopcall.h"

#define MS 1000000LL

struct fixture {
    uv_loop_t loop;
    uv_async_t stop;        /* closes lc and itself: uv_run returns */
    struct loopcall lc;
    pthread_t loop_thread;
    atomic_int runs;        /* fn calls */
    atomic_int off_loop;    /* fn calls on another thread than loop_thread */
    int64_t sleep_ns;       /* each fn call sleeps this long first */
};

static struct fixture fx;

/* Returns the argument's value plus one, on the loop thread. */
static int add_one(void *ud, void *arg)
{
    struct fixture *f = ud;
    if (!pthread_equal(pthread_self(), f->loop_thread))
        atomic_fetch_add(&f->off_loop, 1);
    if (f->sleep_ns > 0) {
        struct timespec ts = {f->sleep_ns / 1000000000, f->sleep_ns % 1000000000};
        nanosleep(&ts, NULL);
    }
    atomic_fetch_add(&f->runs, 1);
    return *(int *)arg + 1;
}

static void on_stop(uv_async_t *h)
{
    struct fixture *f = h->data;
    loopcall_close(&f->lc);
    uv_close((uv_handle_t *)&f->stop, NULL);
}

static void *run_loop(void *arg)
{
    struct fixture *f = arg;
    uv_run(&f->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void setup(void)
{
    fx = (struct fixture){0};
    ck_assert_int_eq(uv_loop_init(&fx.loop), 0);
    ck_assert_int_eq(uv_async_init(&fx.loop, &fx.stop, on_stop), 0);
    fx.stop.data = &fx;
    ck_assert_int_eq(loopcall_init(&fx.lc, &fx.loop, add_one, &fx), 0);
}

static void start_loop(void)
{
    ck_assert_int_eq(pthread_create(&fx.loop_thread, NULL, run_loop, &fx), 0);
}

/* Stops the loop (closing lc on it) and joins its thread. */
static void stop_loop(void)
{
    uv_async_send(&fx.stop);
    pthread_join(fx.loop_thread, NULL);
}

static void teardown(void)
{
    ck_assert_int_eq(uv_loop_close(&fx.loop), 0);
    loopcall_destroy(&fx.lc);
}

START_TEST(test_call_runs_on_the_loop)
{
    start_loop();
    for (int i = 0; i < 100; i++)
        ck_assert_int_eq(loopcall_call(&fx.lc, &i, 10000 * MS), i + 1);
    ck_assert_int_eq(atomic_load(&fx.runs), 100);
    ck_assert_int_eq(atomic_load(&fx.off_loop), 0);
    stop_loop();
}
END_TEST

#define CALLERS 8
#define CALLS 200

static void *caller(void *arg)
{
    intptr_t base = (intptr_t)arg, bad = 0;
    for (int i = 0; i < CALLS; i++) {
        int v = (int)base * CALLS + i;
        if (loopcall_call(&fx.lc, &v, 10000 * MS) != v + 1)
            bad++;
    }
    return (void *)bad;
}

START_TEST(test_concurrent_callers_get_their_own_answers)
{
    start_loop();
    pthread_t t[CALLERS];
    for (intptr_t k = 0; k < CALLERS; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, caller, (void *)k), 0);
    for (int k = 0; k < CALLERS; k++) {
        void *bad;
        pthread_join(t[k], &bad);
        ck_assert_ptr_null(bad);
    }
    ck_assert_int_eq(atomic_load(&fx.runs), CALLERS * CALLS);
    ck_assert_int_eq(atomic_load(&fx.off_loop), 0);
    stop_loop();
}
END_TEST

START_TEST(test_not_taken_in_time_gives_up_and_never_runs)
{
    /* the loop does not run yet: nothing takes the request */
    int v = 1;
    ck_assert_int_eq(loopcall_call(&fx.lc, &v, 50 * MS), -ETIMEDOUT);
    start_loop();
    ck_assert_int_eq(loopcall_call(&fx.lc, &v, 10000 * MS), 2);
    ck_assert_int_eq(atomic_load(&fx.runs), 1); /* the one that gave up never ran */
    stop_loop();
}
END_TEST

START_TEST(test_taken_is_waited_for_past_the_wait)
{
    fx.sleep_ns = 300 * MS;
    start_loop();
    int v = 41;
    ck_assert_int_eq(loopcall_call(&fx.lc, &v, 20 * MS), 42);
    stop_loop();
}
END_TEST

struct queued {
    int v;
    int result;
};

static void *queued_call(void *arg)
{
    struct queued *q = arg;
    q->result = loopcall_call(&fx.lc, &q->v, 10000 * MS);
    return NULL;
}

START_TEST(test_close_answers_queued_and_later_calls)
{
    /* no loop running: the test's thread is the loop's, and the request stays queued */
    struct queued q = {.v = 1};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, queued_call, &q), 0);
    for (int i = 0; i < 1000; i++) { /* until the call is queued */
        pthread_mutex_lock(&fx.lc.lock);
        bool queued = fx.lc.queue != NULL;
        pthread_mutex_unlock(&fx.lc.lock);
        if (queued)
            break;
        struct timespec ts = {0, 1 * MS};
        nanosleep(&ts, NULL);
    }
    loopcall_close(&fx.lc);
    pthread_join(t, NULL);
    ck_assert_int_eq(q.result, -ESHUTDOWN);
    ck_assert_int_eq(loopcall_call(&fx.lc, &q.v, 10000 * MS), -ESHUTDOWN);
    loopcall_close(&fx.lc); /* idempotent */
    uv_close((uv_handle_t *)&fx.stop, NULL);
    ck_assert_int_eq(uv_run(&fx.loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(atomic_load(&fx.runs), 0);
}
END_TEST

static Suite *loopcall_suite(void)
{
    Suite *s = suite_create("loopcall");
    TCase *tc = tcase_create("calls");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_call_runs_on_the_loop);
    tcase_add_test(tc, test_concurrent_callers_get_their_own_answers);
    tcase_add_test(tc, test_not_taken_in_time_gives_up_and_never_runs);
    tcase_add_test(tc, test_taken_is_waited_for_past_the_wait);
    tcase_add_test(tc, test_close_answers_queued_and_later_calls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(loopcall_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
