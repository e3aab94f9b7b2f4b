/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of order: the thread and times tscan hands it (top-level members only, the first
 * occurrence), and the sending order (each thread's X events by (ts, -dur) into their places,
 * every other line in place) for any resume point, also when pass 1 indexed two halves.
 */
#include "import/span_order.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines: X events of two threads and one counter; text only needs "ts", "dur", "pid", "tid". */
static const char *lines[] = {
    "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1}",   /* A0 */
    "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":2,\"ts\":9,\"dur\":1}",   /* B0 */
    "{\"ph\":\"C\",\"name\":\"c\",\"pid\":1,\"ts\":1}",                        /* C */
    "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":3}",   /* A1: before A0 (longer) */
    "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1}",   /* A2: first of A */
    "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":2,\"ts\":10,\"dur\":1}",  /* B1 */
};
/* Places of A: 0, 3, 4 -> A2, A1, A0; B and C stay. */
static const int want[] = {4, 1, 2, 3, 0, 5};

struct got {
    uint64_t off[8];
    uint64_t len[8];
    int n;
};

static int collect(void *ud, uint64_t off, uint64_t len)
{
    struct got *g = ud;
    ck_assert_int_lt(g->n, 8);
    g->off[g->n] = off;
    g->len[g->n++] = len;
    return 0;
}

/* Notes ev (one event's JSON text) in o as tfile would give it: scanned by tscan. */
static void note(struct order *o, const char *ev, uint64_t off)
{
    struct tscan s;
    tscan_init(&s);
    size_t used, n = strlen(ev);
    char doc[256];
    snprintf(doc, sizeof doc, "[%s]", ev);
    ck_assert_int_eq(tscan_feed(&s, doc, strlen(doc), &used), TSCAN_EVENT);
    ck_assert_int_eq(order_note(o, &s.event, off, (uint32_t)n), 0);
}

static struct order *build(uint64_t *offs, uint64_t *ret_unordered, int *ret_r)
{
    struct order *o = order_new();
    ck_assert_ptr_nonnull(o);
    uint64_t off = 0;
    for (int i = 0; i < 6; i++) {
        offs[i] = off;
        note(o, lines[i], off);
        off += strlen(lines[i]) + 1;
    }
    *ret_r = order_finish(o, ret_unordered);
    return o;
}

/* What order_note() reads from a scanned event: top-level "tid" (not args' nor a string's), the
 * first occurrence, ts and dur in ns. */
START_TEST(event_thread_and_times_from_tscan)
{
    const char *doc = "[{\"args\": {\"tid\": 9, \"x\": [\"tid\", {\"dur\": 1}]}, \"ph\": \"X\", "
                      "\"name\": \"tid\\\"dur\", \"pid\": 3, \"tid\" : \"7 (a,b)\" ,\"dur\":12.5, "
                      "\"ts\": 1000.25, \"tid\": 8}]";
    struct tscan s;
    size_t used;
    tscan_init(&s);
    ck_assert_int_eq(tscan_feed(&s, doc, strlen(doc), &used), TSCAN_EVENT);
    ck_assert_str_eq(s.event.tid, "\"7 (a,b)\"");
    ck_assert_str_eq(s.event.pid, "3");
    ck_assert_int_eq(s.event.ts_ns, 1000250);
    ck_assert_int_eq(s.event.dur_ns, 12500);
    /* The next event starts clean. */
    const char *doc2 = "[{\"ph\": \"i\", \"name\": \"m\", \"ts\": 1}]";
    tscan_init(&s);
    ck_assert_int_eq(tscan_feed(&s, doc2, strlen(doc2), &used), TSCAN_EVENT);
    ck_assert_str_eq(s.event.tid, "");
    ck_assert_int_eq(s.event.dur_ns, 0);
}
END_TEST

START_TEST(runs_in_torch_order_from_any_line)
{
    uint64_t offs[6], unordered;
    int r;
    struct order *o = build(offs, &unordered, &r);
    ck_assert_int_eq(r, 1);
    ck_assert_uint_eq(unordered, 1);
    for (uint64_t from = 0; from <= 6; from++) {
        struct got g = {0};
        ck_assert_int_eq(order_runs(o, from, collect, &g), 0);
        /* Expand the runs back into lines and compare with want[from..]. */
        int k = (int)from;
        for (int i = 0; i < g.n; i++) {
            uint64_t at = g.off[i], end = g.off[i] + g.len[i];
            while (at < end) {
                ck_assert_int_lt(k, 6);
                ck_assert_uint_eq(at, offs[want[k]]);
                at += strlen(lines[want[k]]) + 1;
                k++;
            }
            ck_assert_uint_eq(at, end);
        }
        ck_assert_int_eq(k, 6);
    }
    order_free(o);
}
END_TEST

START_TEST(in_order_is_left_alone)
{
    struct order *o = order_new();
    const char *a = "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":3}";
    const char *b = "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":3}"; /* equal: in order */
    note(o, a, 0);
    note(o, b, strlen(a) + 1);
    uint64_t u;
    ck_assert_int_eq(order_finish(o, &u), 0);
    ck_assert_uint_eq(u, 0);
    order_free(o);
}
END_TEST

/* Pass 1 in two parts: the lines cut at every place, the second part's index appended to the
 * first's with its offsets moved, give the very runs of one index. */
START_TEST(appended_halves_send_as_one_index)
{
    uint64_t offs[7], unordered; /* offs[6]: the end */
    int r;
    struct order *whole = build(offs, &unordered, &r);
    ck_assert_int_eq(r, 1);
    offs[6] = offs[5] + strlen(lines[5]) + 1;
    struct got want_runs = {0};
    ck_assert_int_eq(order_runs(whole, 0, collect, &want_runs), 0);
    for (int cut = 0; cut <= 6; cut++) {
        struct order *a = order_new(), *b = order_new();
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        for (int i = 0; i < cut; i++)
            note(a, lines[i], offs[i]);
        for (int i = cut; i < 6; i++)
            note(b, lines[i], offs[i] - offs[cut]);
        ck_assert_int_eq(order_append(a, b, offs[cut]), 0);
        order_free(b);
        uint64_t u;
        ck_assert_int_eq(order_finish(a, &u), 1);
        ck_assert_uint_eq(u, unordered);
        struct got g = {0};
        ck_assert_int_eq(order_runs(a, 0, collect, &g), 0);
        ck_assert_int_eq(g.n, want_runs.n);
        for (int i = 0; i < g.n; i++) {
            ck_assert_uint_eq(g.off[i], want_runs.off[i]);
            ck_assert_uint_eq(g.len[i], want_runs.len[i]);
        }
        order_free(a);
    }
    order_free(whole);
}
END_TEST

/* Each part in order on its own, but the second's first span starts before the first's last:
 * the thread is out of order, and its spans are swapped. Continuing in order is left alone. */
START_TEST(appended_halves_out_of_order_across_the_cut)
{
    const char *late = "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":1}";
    const char *early = "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":1}";
    const char *later = "{\"ph\":\"X\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":1}";
    uint64_t shift = strlen(late) + 1, u;
    struct order *a = order_new(), *b = order_new();
    note(a, late, 0);
    note(b, early, 0);
    ck_assert_int_eq(order_append(a, b, shift), 0);
    ck_assert_int_eq(order_finish(a, &u), 1);
    ck_assert_uint_eq(u, 1);
    struct got g = {0};
    ck_assert_int_eq(order_runs(a, 0, collect, &g), 0);
    ck_assert_int_eq(g.n, 2);
    ck_assert_uint_eq(g.off[0], shift); /* early first */
    ck_assert_uint_eq(g.off[1], 0);
    order_free(a);
    order_free(b);

    a = order_new();
    b = order_new();
    note(a, late, 0);
    note(b, later, 0);
    ck_assert_int_eq(order_append(a, b, shift), 0);
    ck_assert_int_eq(order_finish(a, &u), 0);
    ck_assert_uint_eq(u, 0);
    order_free(a);
    order_free(b);
}
END_TEST

/* Many lines (enough for the two-CPU sort), several threads: two out of order (one much larger),
 * one in order, and counters. Every line is 100 bytes, so a run's offsets give line numbers.
 * The runs must give exactly the order spelled out by order.h, computed here the slow way. */
#define BIG_N 300000

static struct {
    int thread; /* -1: not an X event */
    int64_t ts, end;
} big[BIG_N];
static uint32_t got_order[BIG_N], want_order[BIG_N];
static size_t n_got;

static int collect_lines(void *ud, uint64_t off, uint64_t len)
{
    (void)ud;
    ck_assert_uint_eq(off % 100, 0);
    ck_assert_uint_eq(len % 100, 0);
    for (uint64_t k = 0; k < len / 100; k++) {
        ck_assert_uint_lt(n_got, BIG_N);
        got_order[n_got++] = (uint32_t)(off / 100 + k);
    }
    return 0;
}

static int cmp_big(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (big[x].ts != big[y].ts)
        return big[x].ts < big[y].ts ? -1 : 1;
    if (big[x].end != big[y].end)
        return big[x].end > big[y].end ? -1 : 1;
    return x < y ? -1 : x > y;
}

START_TEST(many_lines_two_cpus_exact_order)
{
    uint64_t seed = 12345;
    struct order *o = order_new();
    ck_assert_ptr_nonnull(o);
    int64_t clock[3] = {0, 0, 0};
    for (uint32_t i = 0; i < BIG_N; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(seed >> 33);
        int th = r % 10 < 6 ? 0 : r % 10 < 8 ? 1 : r % 10 < 9 ? 2 : -1;
        struct tscan_event ev = {.ph = th < 0 ? 'C' : 'X'};
        snprintf(ev.pid, sizeof ev.pid, "7");
        if (th >= 0) {
            snprintf(ev.tid, sizeof ev.tid, "%d", th);
            /* threads 0 and 1 jump back now and then, with ties; thread 2 only goes forward */
            clock[th] += th == 2 ? 5 : (int64_t)(r >> 8 & 7) - (r >> 12 & 1 ? 4 : 0);
            ev.ts_ns = clock[th];
            ev.dur_ns = (int64_t)(r >> 16 & 3);
        }
        big[i].thread = th;
        big[i].ts = ev.ts_ns;
        big[i].end = ev.ts_ns + ev.dur_ns;
        ck_assert_int_eq(order_note(o, &ev, (uint64_t)i * 100, 99), 0);
    }
    uint64_t unordered;
    ck_assert_int_eq(order_finish(o, &unordered), 1);
    ck_assert_uint_eq(unordered, 2);
    /* The slow way: each thread's lines sorted, dealt into that thread's places. */
    static uint32_t idx[BIG_N];
    for (int th = -1; th < 3; th++) {
        size_t k = 0;
        for (uint32_t i = 0; i < BIG_N; i++)
            if (big[i].thread == th)
                idx[k++] = i;
        if (th >= 0)
            qsort(idx, k, sizeof *idx, cmp_big);
        size_t m = 0;
        for (uint32_t i = 0; i < BIG_N; i++)
            if (big[i].thread == th)
                want_order[i] = idx[m++];
    }
    for (uint64_t from = 0; from < BIG_N; from += BIG_N / 3) {
        n_got = 0;
        ck_assert_int_eq(order_runs(o, from, collect_lines, NULL), 0);
        ck_assert_uint_eq(n_got, BIG_N - from);
        ck_assert_int_eq(memcmp(got_order, want_order + from, n_got * sizeof *got_order), 0);
    }
    order_free(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("order");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, event_thread_and_times_from_tscan);
    tcase_add_test(tc, runs_in_torch_order_from_any_line);
    tcase_add_test(tc, in_order_is_left_alone);
    tcase_add_test(tc, appended_halves_send_as_one_index);
    tcase_add_test(tc, appended_halves_out_of_order_across_the_cut);
    tcase_add_test(tc, many_lines_two_cpus_exact_order);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
