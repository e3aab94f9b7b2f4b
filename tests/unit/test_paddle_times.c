/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of pdtrace: Paddle's offsets parsed exactly, duration suffixes found in raw names,
 * and whole events rewritten after tscan found them in chunks of any size (its ts, name and
 * args.start_time positions must not depend on where the chunks end). The same executable runs
 * pdproto's suite (test_paddle_proto.c).
 */
#include "import/paddle_times.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Two Paddle events (ts truncated to the µs, start_time the offset to the ns), a metadata event
 * and an event with a nested args object of its own. */
static const char *doc =
    "{\"schemaVersion\": \"1.0.2\", \"traceEvents\": [\n"
    "{\"name\": \"ProfileStep#2[1.658 ms]\", \"pid\": 1, \"tid\": \"1(Python)\",\n"
    "  \"ts\": 1000, \"dur\": 1658.327, \"ph\": \"X\", \"cat\": \"ProfileStep\",\n"
    "  \"args\": {\"start_time\": \"0.000 us\", \"end_time\": \"1658.327 us\"}},\n"
    "{\"args\": {\"x\": {\"start_time\": \"9 us\"}, \"start_time\": \"1.2337 ms\"}, \"ph\": \"X\",\n"
    "  \"name\": \"matmul dygraph[12.5us]\", \"ts\": 2234, \"dur\": 1},\n"
    "{\"ph\":\"X\",\"name\":\"c\",\"ts\":1001,\"dur\":0,\"args\":{\"start_time\":\"0.5 us\"}},\n"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"args\": {\"name\": \"a[1 us]\"}},\n"
    "{}]}";

/* Multi-line elements in parentheses: clang's -Wstring-concatenation otherwise takes them for
 * a missing comma. */
static const char *want[] = {
    ("{\"name\": \"ProfileStep#2\", \"pid\": 1, \"tid\": \"1(Python)\",\n"
     "  \"ts\": 1000.5, \"dur\": 1658.327, \"ph\": \"X\", \"cat\": \"ProfileStep\",\n"
     "  \"args\": {\"start_time\": \"0.000 us\", \"end_time\": \"1658.327 us\"}}"),
    ("{\"args\": {\"x\": {\"start_time\": \"9 us\"}, \"start_time\": \"1.2337 ms\"}, \"ph\": \"X\",\n"
     "  \"name\": \"matmul dygraph\", \"ts\": 2234.2, \"dur\": 1}"),
    "{\"ph\":\"X\",\"name\":\"c\",\"ts\":1001,\"dur\":0,\"args\":{\"start_time\":\"0.5 us\"}}",
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"args\": {\"name\": \"a[1 us]\"}}",
};

/* Scans d in chunks of step bytes; pass 1 notes every event, pass 2 rewrites them into out,
 * one per line. Returns the number of events. */
static int run(const char *d, size_t step, struct pdtrace *p, char *out, size_t outn)
{
    struct sbuf b;
    size_t o = 0;
    int n = 0;
    out[0] = '\0';
    for (int pass = 1; pass <= 2; pass++) {
        struct tscan s;
        size_t len = strlen(d), pos = 0;
        tscan_init(&s);
        n = 0;
        while (pos < len) {
            size_t used, chunk = len - pos < step ? len - pos : step;
            int r = tscan_feed(&s, d + pos, chunk, &used);
            ck_assert_int_ge(r, 0);
            pos += used;
            if (r != TSCAN_EVENT)
                continue;
            const char *ev = d + s.event.start;
            size_t evlen = (size_t)(s.event.end - s.event.start);
            if (pass == 1) {
                pdtrace_note(p, ev, evlen, &s.event);
            } else {
                sbuf_init(&b, 1u << 20);
                pdtrace_rewrite(p, ev, evlen, &s.event, &b);
                o += (size_t)snprintf(out + o, outn - o, "%s|", b.data);
                sbuf_done(&b);
            }
            n++;
        }
        ck_assert_int_eq(tscan_finish(&s), 0);
        if (pass == 1)
            pdtrace_finish(p);
    }
    return n;
}

START_TEST(test_pdtrace_rewrites_any_chunking)
{
    char out[2048], expect[2048] = "";
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        strcat(expect, want[i]);
        strcat(expect, "|");
    }
    struct pdtrace p;
    pdtrace_init(&p);
    ck_assert_int_eq(run(doc, (size_t)_i, &p, out, sizeof out), 4);
    /* ts - start_time: 1000000 - 0, 2234000 - 1233700 and 1001000 - 500: the start is
     * 1000.5 µs (the largest), 0.5 µs after the first event's truncated ts */
    ck_assert(p.exact);
    ck_assert_int_eq(p.n, 3);
    ck_assert_int_eq(p.hi, 1000500);
    ck_assert_int_eq(p.lo, 1000000);
    ck_assert_str_eq(out, expect);
}
END_TEST

START_TEST(test_pdtrace_inconsistent_offsets_keep_ts)
{
    /* The second event's offset is 2 µs off what its ts allows: the file's ts are kept, the
     * names still lose their suffix. */
    const char *d = "[{\"ph\":\"X\",\"name\":\"a[1 us]\",\"ts\":10,\"dur\":1,\"args\":{\"start_time\":\"0 us\"}},"
                    "{\"ph\":\"X\",\"name\":\"b\",\"ts\":20,\"dur\":1,\"args\":{\"start_time\":\"8 us\"}}]";
    char out[512];
    struct pdtrace p;
    pdtrace_init(&p);
    ck_assert_int_eq(run(d, 5, &p, out, sizeof out), 2);
    ck_assert(!p.exact);
    ck_assert_str_eq(out, "{\"ph\":\"X\",\"name\":\"a\",\"ts\":10,\"dur\":1,\"args\":{\"start_time\":\"0 us\"}}|"
                          "{\"ph\":\"X\",\"name\":\"b\",\"ts\":20,\"dur\":1,\"args\":{\"start_time\":\"8 us\"}}|");
}
END_TEST

START_TEST(test_pdtrace_float_offsets)
{
    /* Events of a real Paddle 3.3.1 export (a CNN's 4-step window, names shortened): offsets
     * past 8.4 ms come float-rounded, so ts - start_time spreads over 1.032 µs (698094 -
     * 697062 below); within each offset's slack a window start fits them all. The largest
     * ts - start_time - slack is Pool2dGrad's 698078 - 29; adam's 698094 - 47 is below it. */
    const char *d =
        "[{\"ph\":\"X\",\"name\":\"add kernel launch[1.016 ms]\",\"ts\":1795669280530222,\"dur\":1016.142,"
        "\"args\":{\"start_time\":\"523.952 us\"}},"
        "{\"ph\":\"X\",\"name\":\"adam kernel launch\",\"ts\":1795669280927164,\"dur\":27.97,"
        "\"args\":{\"start_time\":\"397465.906 us\"}},"
        "{\"ph\":\"X\",\"name\":\"unsqueeze\",\"ts\":1795669280994110,\"dur\":25.164,"
        "\"args\":{\"start_time\":\"464412.938 us\"}},"
        "{\"ph\":\"X\",\"name\":\"Pool2dGrad\",\"ts\":1795669280770197,\"dur\":31902.0,"
        "\"args\":{\"start_time\":\"240498.922 us\"}},"
        "{\"ph\":\"X\",\"name\":\"Conv2dGrad\",\"ts\":1795669280704161,\"dur\":241.437,"
        "\"args\":{\"start_time\":\"174463.922 us\"}},"
        "{\"ph\":\"X\",\"name\":\"Optimization Step\",\"ts\":1795669280926631,\"dur\":64946.742,"
        "\"args\":{\"start_time\":\"396932.938 us\"}}]";
    char out[4096];
    struct pdtrace p;
    pdtrace_init(&p);
    ck_assert_int_eq(pdtrace_slack_ns(8388607), 0);
    ck_assert_int_eq(pdtrace_slack_ns(8388608), 1);
    ck_assert_int_eq(pdtrace_slack_ns(-782369938), 93);
    ck_assert_int_eq(run(d, 7, &p, out, sizeof out), 6);
    ck_assert(p.exact);
    ck_assert_int_eq(p.hi, 1795669280529698049LL);
    ck_assert_int_eq(p.lo, 1795669280529697078LL + 21); /* Conv2dGrad's */
    /* start + offset; adam's and the Optimization Step's land 45 and 13 ns before their
     * truncated ts and are kept at it */
    ck_assert_ptr_nonnull(strstr(out, "\"ts\":1795669280530222.001,"));
    ck_assert_ptr_nonnull(strstr(out, "\"ts\":1795669280927164,"));
    ck_assert_ptr_nonnull(strstr(out, "\"ts\":1795669280926631,"));
    ck_assert_ptr_nonnull(strstr(out, "\"ts\":1795669280704161.971,"));
}
END_TEST

START_TEST(test_pdtrace_offsets)
{
    static const struct {
        const char *raw;
        int ok;
        long long ns;
    } cases[] = {
        {"\"917.229 us\"", 1, 917229}, {"\"0.000 us\"", 1, 0}, {"\"1.5 ms\"", 1, 1500000},
        {"\"2 s\"", 1, 2000000000}, {"\"7 ns\"", 1, 7}, {"\"-3.0001 us\"", 1, -3000},
        {"\"1.2345678 us\"", 1, 1234}, {"\"9223372036.854775807 s\"", 1, 9223372036854775807LL},
        {"\"9223372036.854775808 s\"", 0, 0}, {"\"9223372037 s\"", 0, 0}, {"\"1 h\"", 0, 0},
        {"\"1us\"", 0, 0}, {"\"1  us\"", 0, 0}, {"\". us\"", 0, 0}, {"\"\"", 0, 0},
        {"1 us", 0, 0}, {"\"- us\"", 0, 0}, {"\"1.2.3 us\"", 0, 0},
        {"\"1234567890123456789 ns\"", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t ns = -1;
        bool ok = pdtrace_offset_ns(cases[i].raw, &ns);
        ck_assert_msg(ok == (bool)cases[i].ok, "%s", cases[i].raw);
        if (ok)
            ck_assert_msg(ns == cases[i].ns, "%s: %lld", cases[i].raw, (long long)ns);
    }
}
END_TEST

START_TEST(test_pdtrace_name_suffix)
{
    static const struct {
        const char *raw;
        size_t keep;
    } cases[] = {
        {"\"matmul[1.5 us]\"", 7}, {"\"x[3ms]\"", 2}, {"\"[-1 s]\"", 1}, {"\"a[b][2 ns]\"", 5},
        {"\"a[2 ns]b\"", 9}, {"\"a[ us]\"", 7}, {"\"a[1 h]\"", 7}, {"\"a[1 us\"", 7},
        {"\"a]\"", 3}, {"\"\"", 1}, {"\"a\\\"[1 us]\"", 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(pdtrace_name_keep(cases[i].raw, strlen(cases[i].raw)) == cases[i].keep,
                      "%s: %zu", cases[i].raw, pdtrace_name_keep(cases[i].raw, strlen(cases[i].raw)));
}
END_TEST

/* Pass 2's walk: a "[memory]" event names the last host event of its thread before it (runtime
 * events are not host events; one before any host event has none), and the top-level ExtraInfo
 * comes out as one record over the host events' window. */
START_TEST(test_pdtrace_walk_owners_and_extra)
{
    static const char wdoc[] =
        "{\"traceEvents\":[\n"
        "{\"name\":\"[memory]\",\"ph\":\"i\",\"cat\":\"Free\",\"tid\":\"5(C++)\",\"ts\":999,"
        "\"args\":{\"increase_bytes\":-4}},\n"
        "{\"name\":\"add dygraph[3 us]\",\"pid\":4,\"tid\":\"5(C++)\",\"ts\":1000,\"dur\":3,"
        "\"ph\":\"X\",\"cat\":\"Operator\",\"args\":{\"start_time\":\"0.250 us\"}},\n"
        "{\"name\":\"cudaLaunch\",\"tid\":\"5(C++)\",\"ts\":1001,\"dur\":1,\"ph\":\"X\","
        "\"cat\":\"CudaRuntime\",\"args\":{\"start_time\":\"1.000 us\"}},\n"
        "{\"name\":\"step\",\"pid\":4,\"tid\":\"6(Python)\",\"ts\":1000,\"dur\":10,\"ph\":\"X\","
        "\"cat\":\"ProfileStep\",\"args\":{\"start_time\":\"0.000 us\"}},\n"
        "{\"name\":\"[memory]\",\"ph\":\"i\",\"cat\":\"Allocate\",\"tid\":\"5(C++)\",\"ts\":1002,"
        "\"args\":{\"increase_bytes\":8}}\n"
        "],\"ExtraInfo\":{\"5\":\"MainThread\",\"Process Cpu Utilization\":\"1.250000\","
        "\"System Cpu Utilization\":\"0.500000\"}}";
    static const char *wwant[] = {
        ("{\"name\":\"[memory]\",\"ph\":\"i\",\"cat\":\"Free\",\"tid\":\"5(C++)\",\"ts\":999,"
         "\"args\":{\"increase_bytes\":-4}}"),
        ("{\"name\":\"add dygraph\",\"pid\":4,\"tid\":\"5(C++)\",\"ts\":1000.25,\"dur\":3,"
         "\"ph\":\"X\",\"cat\":\"Operator\",\"args\":{\"start_time\":\"0.250 us\"}}"),
        ("{\"name\":\"cudaLaunch\",\"tid\":\"5(C++)\",\"ts\":1001,\"dur\":1,\"ph\":\"X\","
         "\"cat\":\"CudaRuntime\",\"args\":{\"start_time\":\"1.000 us\"}}"),
        ("{\"name\":\"step\",\"pid\":4,\"tid\":\"6(Python)\",\"ts\":1000,\"dur\":10,\"ph\":\"X\","
         "\"cat\":\"ProfileStep\",\"args\":{\"start_time\":\"0.000 us\"}}"),
        ("{\"owner\":\"add dygraph\",\"owner_ts\":1000.25,\"name\":\"[memory]\",\"ph\":\"i\","
         "\"cat\":\"Allocate\",\"tid\":\"5(C++)\",\"ts\":1002,\"args\":{\"increase_bytes\":8}}"),
    };
    struct pdtrace p;
    struct pdtrace_walk w;
    pdtrace_init(&p);
    pdtrace_walk_init(&w);
    for (int pass = 1; pass <= 2; pass++) {
        struct tscan s;
        size_t used, len = strlen(wdoc), k = 0;
        tscan_init(&s);
        for (size_t pos = 0; pos < len; pos += used) {
            int r = tscan_feed(&s, wdoc + pos, len - pos, &used);
            ck_assert_int_ge(r, 0);
            if (r != TSCAN_EVENT)
                continue;
            const char *ev = wdoc + s.event.start;
            size_t evlen = (size_t)(s.event.end - s.event.start);
            if (pass == 1) {
                pdtrace_note(&p, ev, evlen, &s.event);
                continue;
            }
            struct sbuf line, out;
            sbuf_init(&line, 1u << 20);
            sbuf_init(&out, 1u << 20);
            int64_t ts = pdtrace_rewrite(&p, ev, evlen, &s.event, &line);
            ck_assert_int_eq(pdtrace_walk_event(&w, ev, evlen, line.data, line.len, ts, &s.event,
                                                &out), 0);
            ck_assert_uint_lt(k, 5);
            ck_assert_str_eq(out.data, wwant[k++]);
            sbuf_done(&line);
            sbuf_done(&out);
        }
        ck_assert_int_eq(tscan_finish(&s), 0);
        if (pass == 1) {
            pdtrace_finish(&p);
            ck_assert(p.exact);
            continue;
        }
        ck_assert_uint_eq(k, 5);
        ck_assert_str_eq(s.meta.extra_process_cpu, "\"1.250000\"");
        struct sbuf x;
        sbuf_init(&x, 1u << 20);
        ck_assert(pdtrace_extra_line(&w, &s.meta, &x));
        ck_assert_str_eq(x.data, "{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"pid\":4,\"tid\":0,"
                                 "\"ts\":1000,\"dur\":10,\"args\":{\"Process Cpu Utilization\":"
                                 "\"1.250000\",\"System Cpu Utilization\":\"0.500000\"}}\n");
        sbuf_done(&x);
    }
    pdtrace_walk_free(&w);
}
END_TEST

Suite *pdproto_suite(void); /* test_paddle_proto.c */

int main(void)
{
    Suite *s = suite_create("pdtrace");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_pdtrace_rewrites_any_chunking, 1, 48);
    tcase_add_test(tc, test_pdtrace_inconsistent_offsets_keep_ts);
    tcase_add_test(tc, test_pdtrace_float_offsets);
    tcase_add_test(tc, test_pdtrace_offsets);
    tcase_add_test(tc, test_pdtrace_walk_owners_and_extra);
    tcase_add_test(tc, test_pdtrace_name_suffix);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_add_suite(sr, pdproto_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
