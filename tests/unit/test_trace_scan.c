/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tscan, the importer's streaming scanner: which documents it takes, the events
 * and facts it finds, the errors and their offsets, and that any split of the input into chunks
 * gives the same result (the scanner is resumable anywhere, even inside an escape).
 */
#include "import/line_spool.h"
#include "import/trace_scan.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Feeds doc in chunks of step bytes; writes "start-end;" per event into out, or "ERR@off:msg".
 * Returns the number of events, or -1 on error. */
static int run(const char *doc, size_t step, char *out, size_t outn, struct tscan *s)
{
    size_t n = strlen(doc), pos = 0, o = 0;
    tscan_init(s);
    out[0] = '\0';
    while (pos < n) {
        size_t len = n - pos < step ? n - pos : step;
        size_t at = 0;
        while (at < len) {
            size_t used;
            int r = tscan_feed(s, doc + pos + at, len - at, &used);
            if (r < 0) {
                snprintf(out, outn, "ERR@%llu:%s", (unsigned long long)s->err_off, s->err);
                return -1;
            }
            at += used;
            if (r == TSCAN_EVENT)
                o += (size_t)snprintf(out + o, outn - o, "%llu-%llu;",
                                      (unsigned long long)s->event.start,
                                      (unsigned long long)s->event.end);
        }
        pos += len;
    }
    if (tscan_finish(s) < 0) {
        snprintf(out, outn, "ERR@%llu:%s", (unsigned long long)s->err_off, s->err);
        return -1;
    }
    return (int)s->meta.n_events;
}

static const char *kineto_doc =
    "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, "
    "\"world_size\": 8, \"pg\": [{\"rank\": 99}]},\n  \"traceEvents\": [\n  {\n    \"ph\": \"X\", "
    "\"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 7,\n    \"ts\": 1.5, "
    "\"dur\": 2e1, \"args\": {\"ph\": 1, \"s\": \"\\u00e9\\ud83d\\ude00\\\"\"}\n  },\n  {\"ph\": "
    "\"M\", \"name\": \"process_name\", \"args\": {\"name\": \"caf\xc3\xa9\"}},\n  {\"ph\": \"i\", "
    "\"ts\": -3, \"s\": \"t\", \"name\": null}\n  ],\n  \"displayTimeUnit\": \"ms\",\n  "
    "\"baseTimeNanoseconds\": 1700000000000000000\n}\n";

/* kineto_doc's top-level facts. */
static void check_kineto_facts(const struct tscan_meta *m)
{
    ck_assert_uint_eq(m->n_events, 3);
    ck_assert_int_eq(m->dist_rank, 3);
    ck_assert_int_eq(m->dist_world_size, 8);
    ck_assert_str_eq(m->dist_backend, "\"nccl\"");
    ck_assert_str_eq(m->schema_version, "1");
    ck_assert_str_eq(m->display_time_unit, "\"ms\"");
    ck_assert_str_eq(m->base_time_ns, "1700000000000000000");
    ck_assert(!m->root_is_array);
    ck_assert(m->has_distributed_info);
}

START_TEST(test_tscan_kineto_events_and_facts)
{
    struct tscan s;
    char out[512];
    ck_assert_int_eq(run(kineto_doc, 1u << 20, out, sizeof out, &s), 3);
    check_kineto_facts(&s.meta);
    /* Each event's bytes are exactly one object. */
    const char *first = strstr(kineto_doc, "{\n    \"ph\"");
    char want[64];
    snprintf(want, sizeof want, "%ld-", (long)(first - kineto_doc));
    ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s vs %s", out, want);
}
END_TEST

/* _i is the chunk size: every split gives the same events and facts as one big chunk. */
START_TEST(test_tscan_output_independent_of_chunking)
{
    struct tscan s;
    char want[512], got[512];
    run(kineto_doc, 1u << 20, want, sizeof want, &s);
    ck_assert_int_eq(run(kineto_doc, (size_t)_i, got, sizeof got, &s), 3);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(s.meta.dist_rank, 3);
    ck_assert_str_eq(s.meta.base_time_ns, "1700000000000000000");
}
END_TEST

/* Feeds doc[from, to) to s (any number of events). Returns 0, or -1 on an error. */
static int feed_range(struct tscan *s, const char *doc, size_t from, size_t to)
{
    while (from < to) {
        size_t used;
        if (tscan_feed(s, doc + from, to - from, &used) < 0)
            return -1;
        from += used;
    }
    return 0;
}

/* Pass 1 in two halves: a second scanner started at any '{' of the document fits the first
 * scanner's position exactly at the events that follow a ',' in the events array, and nowhere
 * else (not the first event, not an object inside an event or inside distributedInfo); there,
 * the two metas merged equal the one-piece scan's. */
START_TEST(test_tscan_split_fits_only_between_events)
{
    struct tscan whole, ref;
    char out[512];
    size_t n = strlen(kineto_doc), used;
    ck_assert_int_eq(run(kineto_doc, 1u << 20, out, sizeof out, &whole), 3);
    tscan_init(&ref);
    ck_assert_int_eq(tscan_feed(&ref, kineto_doc, n, &used), TSCAN_EVENT);
    const char *second = strstr(kineto_doc, "{\"ph\": \"M\""), *third = strstr(kineto_doc, "{\"ph\": \"i\"");
    int fits = 0;
    for (size_t cut = 1; cut < n; cut++) {
        if (kineto_doc[cut] != '{')
            continue;
        struct tscan a, guess, b;
        tscan_init(&a);
        ck_assert_int_eq(feed_range(&a, kineto_doc, 0, cut), 0);
        tscan_init_split(&guess, &ref, cut);
        bool want = kineto_doc + cut == second || kineto_doc + cut == third;
        ck_assert_msg(tscan_same_position(&a, &guess) == want, "cut at %zu", cut);
        if (!want)
            continue;
        fits++;
        b = guess;
        ck_assert_int_eq(feed_range(&b, kineto_doc, cut, n), 0);
        ck_assert_int_eq(tscan_finish(&b), 0);
        tscan_meta_merge(&a.meta, &b.meta);
        check_kineto_facts(&a.meta);
    }
    ck_assert_int_eq(fits, 2);
}
END_TEST

START_TEST(test_tscan_bare_array)
{
    struct tscan s;
    char out[256];
    const char *doc = "[{\"name\": \"aten::t\", \"ph\": \"X\", \"ts\": 1, \"dur\": 0, \"tid\": 1, "
                      "\"pid\": \"CPU functions\", \"args\": {}}, {\"ph\":\"B\",\"ts\":2}]";
    ck_assert_int_eq(run(doc, 7, out, sizeof out, &s), 2);
    ck_assert(s.meta.root_is_array);
    ck_assert_str_eq(s.event.name, "");
    ck_assert_int_eq(s.event.ph, 'B');
}
END_TEST

static const struct {
    const char *doc;
    const char *err; /* "off:substring of the message" */
} bad[] = {
    {"", "0:empty file"},
    {"   ", "3:empty file"},
    {"{\"traceEvents\": [{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}", "53:truncated"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1},", "38:truncated"},
    {"{\"a\": 1}", "8:no \"traceEvents\""},
    {"\"x\"", "0:not a Chrome trace"},
    {"[1]", "1:not a JSON object"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":01,\"dur\":1}]", "28:leading zero"},
    {"[{\"ph\":\"X\",\"name\":\"a\xff\",\"ts\":1,\"dur\":1}]", "20:invalid UTF-8"},
    {"[{\"ph\":\"X\",\"name\":\"\xc0\xaf\",\"ts\":1,\"dur\":1}]", "19:invalid UTF-8"},
    {"[{\"ph\":\"X\",\"name\":\"\xed\xa0\x80\",\"ts\":1,\"dur\":1}]", "20:invalid UTF-8"},
    {"[{\"ph\":\"X\",\"name\":\"a\nb\",\"ts\":1,\"dur\":1}]", "20:control character"},
    {"[{\"ph\":\"X\",\"name\":\"\\ud800x\",\"ts\":1,\"dur\":1}]", "25:lone high surrogate"},
    {"[{\"ph\":\"X\",\"name\":\"\\udc00\",\"ts\":1,\"dur\":1}]", "19:lone low surrogate"},
    {"[{\"ph\":\"X\",\"name\":\"\\q\",\"ts\":1,\"dur\":1}]", "20:invalid escape"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,}]", "37:expected a key"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}] x", "39:after the end"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":NaN,\"dur\":1}]", "27:expected a value"},
    {"[{\"name\":\"a\",\"ts\":1}]", "1:no \"ph\""},
    {"[{\"ph\":\"XX\",\"ts\":1}]", "1:one-letter"},
    {"[{\"ph\":\"X\",\"ts\":1,\"dur\":1}]", "1:\"name\" must be a string"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"dur\":1}]", "1:missing \"ts\""},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1}]", "1:missing \"dur\""},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":-1}]", "1:\"dur\" must be >= 0"},
    {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":\"1\",\"dur\":1}]", "1:\"ts\" must be a number"},
    {"[{\"ph\":\"i\",\"ts\":1e300}]", "1:out of range"},
    {"{\"traceEvents\": {}}", "16:not an array"},
    {"{\"traceEvents\": [], \"traceEvents\": []}", "35:a second"},
};

START_TEST(test_tscan_rejects_with_offset)
{
    struct tscan s;
    char out[512];
    for (size_t step = 1; step <= 64; step *= 4) {
        ck_assert_int_eq(run(bad[_i].doc, step, out, sizeof out, &s), -1);
        char off[24];
        const char *colon = strchr(bad[_i].err, ':');
        snprintf(off, sizeof off, "ERR@%.*s:", (int)(colon - bad[_i].err), bad[_i].err);
        ck_assert_msg(strncmp(out, off, strlen(off)) == 0 && strstr(out, colon + 1),
                      "doc %zu step %zu: got %s, want %s", (size_t)_i, step, out, bad[_i].err);
    }
}
END_TEST

START_TEST(test_tscan_accepts_edge_cases)
{
    struct tscan s;
    char out[512];
    /* M without ts; first occurrence of a key counts; escaped pair; deep args; -0 duration. */
    const char *doc = "{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"n\"},"
                      "{\"ph\":\"X\",\"ph\":7,\"name\":\"\\ud83d\\ude00\",\"ts\":1.25e3,\"dur\":-0,"
                      "\"args\":{\"a\":[[[[{\"b\":[true,false,null]}]]]]}}],\"x\":{\"traceEvents\":1}}";
    ck_assert_int_eq(run(doc, 3, out, sizeof out, &s), 2);
}
END_TEST

/* Paddle's export_chrome_tracing ends traceEvents with "{}": skipped and counted, not an event. */
START_TEST(test_tscan_skips_empty_events)
{
    struct tscan s;
    char out[512];
    const char *doc = "{\"traceEvents\":[{\"ph\":\"i\",\"ts\":1,\"args\":{}}, { }, "
                      "{\"ph\":\"i\",\"ts\":2},\n  {}\n  ],\"ExtraInfo\":{}}";
    ck_assert_int_eq(run(doc, 4, out, sizeof out, &s), 2);
    ck_assert_int_eq(s.meta.n_empty_events, 2);
    const char *second = strstr(doc, "{\"ph\":\"i\",\"ts\":2}");
    char want[64];
    snprintf(want, sizeof want, "%ld-%ld;%ld-%ld;", (long)(strstr(doc, "{\"ph\"") - doc),
             (long)(strstr(doc, "}, { }") - doc + 1), (long)(second - doc),
             (long)(second - doc) + 17);
    ck_assert_str_eq(out, want);
}
END_TEST

START_TEST(test_tscan_event_depth_limit)
{
    struct tscan s;
    char doc[512], out[512];
    size_t o = (size_t)snprintf(doc, sizeof doc, "[{\"ph\":\"i\",\"ts\":1,\"a\":");
    int deep = _i; /* nesting inside the event, the event itself excluded */
    for (int k = 0; k < deep; k++)
        doc[o++] = '[';
    for (int k = 0; k < deep; k++)
        doc[o++] = ']';
    strcpy(doc + o, "}]");
    int r = run(doc, 5, out, sizeof out, &s);
    if (deep + 1 <= TSCAN_EVENT_DEPTH_MAX)
        ck_assert_int_eq(r, 1);
    else
        ck_assert_msg(r == -1 && strstr(out, "deeper"), "%s", out);
}
END_TEST

/* The line the importer sends for an event (spool.c): line breaks and the indentation after
 * them go, every other byte stays, strings included, at any length (the word loop and its tail). */
START_TEST(test_spool_line_copy_drops_line_breaks_only)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"{\n    \"ph\": \"X\",\n    \"name\": \"a  b\"\n  }", "{\"ph\": \"X\",\"name\": \"a  b\"}"},
        {"{\"a\":1}", "{\"a\":1}"},
        {"{\r\n\t\"k\" :\n\n \t [1,\n2]\n}", "{\r\"k\" :[1,2]}"},
        {"{\"s\": \"x\\n y\", \"t\":\n\"0123456789abcdef\"}",
         "{\"s\": \"x\\n y\", \"t\":\"0123456789abcdef\"}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].in);
        char out[256];
        size_t m = spool_line_copy(out, cases[i].in, n);
        ck_assert_uint_eq(m, strlen(cases[i].out));
        ck_assert_mem_eq(out, cases[i].out, m);
    }
}
END_TEST

static Suite *tscan_suite(void)
{
    Suite *s = suite_create("tscan");
    TCase *tc = tcase_create("tscan");
    tcase_add_test(tc, test_tscan_kineto_events_and_facts);
    tcase_add_loop_test(tc, test_tscan_output_independent_of_chunking, 1, 40);
    tcase_add_test(tc, test_tscan_bare_array);
    tcase_add_test(tc, test_tscan_split_fits_only_between_events);
    tcase_add_loop_test(tc, test_tscan_rejects_with_offset, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_tscan_accepts_edge_cases);
    tcase_add_test(tc, test_tscan_skips_empty_events);
    tcase_add_loop_test(tc, test_tscan_event_depth_limit, 62, 66);
    tcase_add_test(tc, test_spool_line_copy_drops_line_breaks_only);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tscan_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
