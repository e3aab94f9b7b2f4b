/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of daemon/ingest: the line decoder, table-driven (every record kind, exact
 * microsecond-to-nanosecond conversion, each rejection code, hello validation), and the socket
 * server on a real uv loop and a real Unix socket in a temp dir, driven by a blocking client and
 * bounded uv_run(UV_RUN_NOWAIT) spins: framing across writes, sequence numbers, error replies,
 * acks, replay, backpressure, sink failure, connection limits, socket-file handling and shutdown.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "../../lib/lbuf.h"
#include "../../daemon/core/decode.h"
#include "../../daemon/ingest/ingest.h"

/* ---- decoder ---- */

static char line_buf[1 << 16];
static char arena_buf[1 << 16];
static struct json_arena arena;
static struct decoder *dec;

static void dec_setup(void)
{
    dec = decoder_new(sizeof line_buf - LBUF_PADDING - 1);
    ck_assert_ptr_nonnull(dec);
    arena = (struct json_arena){arena_buf, 0, sizeof arena_buf};
}

static void dec_teardown(void)
{
    decoder_free(dec);
    dec = NULL;
}

/* Copies s into a buffer laid out as lbuf leaves a line: NUL, then LBUF_PADDING bytes. */
static const char *place(const char *s, size_t n)
{
    ck_assert_uint_lt(n + 1 + LBUF_PADDING, sizeof line_buf);
    memcpy(line_buf, s, n);
    memset(line_buf + n, 0, 1 + LBUF_PADDING);
    return line_buf;
}

static int decode(const char *s, struct record *r, char *msg)
{
    size_t n = strlen(s);
    arena.used = 0;
    msg[0] = '\0';
    return decode_record(dec, place(s, n), n, &arena, r, msg);
}

static bool text_eq(struct record_text t, const char *s)
{
    return s ? t.len == strlen(s) && memcmp(t.ptr, s, t.len) == 0 : t.len == 0;
}

#define ABSENT INT64_MIN
#define ANY "\x01"

struct decode_case {
    const char *line;
    int want;
    enum record_kind kind;
    char ph;
    int64_t ts_ns;
    int64_t dur_ns;
    const char *name; /* ANY: not checked */
    const char *pid;
    const char *tid;
};

static const struct decode_case decode_cases[] = {
    {"{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"void at::native::k<4>\",\"pid\":0,\"tid\":7,"
     "\"ts\":1700000000123.456,\"dur\":12.5,\"args\":{\"stream\":7,\"grid\":[80,1,1]}}",
     DECODE_OK, RECORD_TRACE, 'X', 1700000000123456, 12500, "void at::native::k<4>", "0",
     "7"},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1700000000123456.789,\"dur\":0}", DECODE_OK,
     RECORD_TRACE, 'X', 1700000000123456789, 0, "a", NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1.5e3,\"dur\":2E-3}", DECODE_OK, RECORD_TRACE, 'X',
     1500000, 2, "a", NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":-5,\"dur\":0.0005}", DECODE_OK, RECORD_TRACE, 'X',
     -5000, 1, "a", NULL, NULL},
    {" { \"ph\" : \"B\" , \"name\" : \"fwd\" , \"ts\" : 10 , \"pid\" : \"Spans\" , \"tid\" : "
     "\"a\\\"b\" } ",
     DECODE_OK, RECORD_TRACE, 'B', 10000, 0, "fwd", "Spans", "a\"b"},
    {"{\"ph\":\"E\",\"ts\":11,\"pid\":1,\"tid\":1}", DECODE_OK, RECORD_TRACE, 'E', 11000, 0,
     NULL, "1", "1"},
    {"{\"ph\":\"i\",\"name\":\"mark\",\"ts\":3,\"s\":\"g\"}", DECODE_OK, RECORD_TRACE, 'i',
     3000, 0, "mark", NULL, NULL},
    {"{\"ph\":\"C\",\"name\":\"mem\",\"ts\":4,\"args\":{\"bytes\":1e9,\"x\":null,\"y\":true}}",
     DECODE_OK, RECORD_TRACE, 'C', 4000, 0, "mem", NULL, NULL},
    {"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":3,\"args\":{\"name\":\"python\"}}",
     DECODE_OK, RECORD_TRACE, 'M', ABSENT, 0, "process_name", "3", NULL},
    {"{\"name\":\"\\u00e9t\\u00e9\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"name\":5}", DECODE_OK,
     RECORD_TRACE, 'X', 1000, 1000, "\xc3\xa9t\xc3\xa9", NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":2,\"type\":\"step\"}", DECODE_OK,
     RECORD_TRACE, 'X', 1000, 2000, "a", NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"ph\":\"Q\"}", DECODE_OK, RECORD_TRACE,
     'X', 1000, 1000, "a", NULL, NULL},
    {"{\"type\":\"pipeline\",\"ops\":[{\"id\":0,\"name\":\"Batch\",\"children\":[1]}]}",
     DECODE_OK, RECORD_PIPELINE, 0, ABSENT, 0, NULL, NULL, NULL},
    {"{\"type\":\"bye\"}", DECODE_BYE, 0, 0, 0, 0, ANY, NULL, NULL},
    /* unknown */
    {"{}", DECODE_UNKNOWN, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"nope\",\"ts\":1}", DECODE_UNKNOWN, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":3}", DECODE_UNKNOWN, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\"}", DECODE_UNKNOWN, 0, 0, 0, 0, ANY, NULL,
     NULL},
    /* invalid */
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":-1}", DECODE_INVALID, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":\"1\",\"dur\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"X\",\"ts\":1,\"dur\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"X\",\"name\":7,\"ts\":1,\"dur\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"B\",\"name\":\"a\"}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"M\",\"ts\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"XX\",\"name\":\"a\",\"ts\":1,\"dur\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":1,\"ts\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1e300}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"step\",\"step\":1,\"begin_us\":5,\"end_us\":4}", DECODE_INVALID, 0, 0, 0,
     0, ANY, NULL, NULL},
    {"{\"type\":\"step\",\"step\":1.5,\"begin_us\":5,\"end_us\":6}", DECODE_INVALID, 0, 0,
     0, 0, ANY, NULL, NULL},
    {"{\"type\":\"step\",\"step\":1,\"begin_us\":5,\"end_us\":6,\"phases\":{\"f\":\"x\"}}",
     DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"step\",\"step\":1,\"begin_us\":5,\"end_us\":6,\"phases\":[1]}",
     DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"queue\",\"size\":1}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"queue\",\"name\":\"q\",\"size\":-1}", DECODE_INVALID, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"type\":\"pipeline\",\"ops\":{}}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"type\":\"host\",\"cpu_percent\":\"high\"}", DECODE_INVALID, 0, 0, 0, 0, ANY, NULL,
     NULL},
    /* malformed */
    {"", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\",\"ts\":1", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"[1,2]", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"\"ph\"", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"42", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"X\",\"name\":\"a\xff\",\"ts\":1,\"dur\":1}", DECODE_MALFORMED, 0, 0, 0, 0,
     ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":NaN}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"args\":{\"v\":NaN}}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"args\":{\"v\":tru}}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"args\":[1 2]}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"i\",\"ts\":01}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"s\":\"\\q\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"s\":\"a\tb\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"i\",\"ts\":1}{}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1} x", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\" \"ts\":1}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"p\\h\":\"i\",\"ts\":1}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    /* jscan strictness; the simdjson decoder agreed on each (tests/fuzz/fuzz_jscan.c) ... */
    {"{\"p\\u0068\":\"i\",\"ts\":1}", DECODE_OK, RECORD_TRACE, 'i', 1000, 0, NULL,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"name\":\"\\uD834\\uDD1E\"}", DECODE_OK, RECORD_TRACE,
     'i', 1000, 0, "\xf0\x9d\x84\x9e", NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"name\":\"\\ud800\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"name\":\"\\udc00\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":\"\\ud800\\u0041\"}", DECODE_MALFORMED, 0, 0, 0, 0,
     ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":\"\xc0\x80\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":\"\xed\xa0\x80\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":\"\xf4\x90\x80\x80\"}", DECODE_MALFORMED, 0, 0, 0,
     0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":\"\xe2\x82\"}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":[1,]}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":{\"b\":1,}}", DECODE_MALFORMED, 0, 0, 0, 0, ANY,
     NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":1x}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":-}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":1.}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"{\"ph\":\"i\",\"ts\":1,\"a\":Infinity}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"i\",\"ts\":1} /* */", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL, NULL},
    {"\xef\xbb\xbf{\"ph\":\"i\",\"ts\":1}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    /* ... and where it did not: On-Demand swallowed the error after "zz"'s value (see fuzz_jscan). */
    {"{\"ph\":\"i\",\"ts\":2,\"zz\":\"a\":[]]}", DECODE_MALFORMED, 0, 0, 0, 0, ANY, NULL,
     NULL},
    {"{\"ph\":\"X\",\"ts\":2,\"dur\":1,\"name\":\"a\":[]]}", DECODE_MALFORMED, 0, 0, 0,
     0, ANY, NULL, NULL},
};

START_TEST(test_decode_record_table)
{
    const struct decode_case *tc = &decode_cases[_i];
    struct record r;
    char msg[DECODE_MSG_MAX];
    int got = decode(tc->line, &r, msg);
    ck_assert_msg(got == tc->want, "case %d %s: got %d (%s), want %d", _i, tc->line, got, msg,
                  tc->want);
    if (got != DECODE_OK) {
        if (got != DECODE_BYE)
            ck_assert_msg(msg[0] != '\0', "case %d: no message", _i);
        ck_assert_uint_eq(arena.used, 0);
        return;
    }
    ck_assert_int_eq(r.kind, tc->kind);
    ck_assert_ptr_eq(r.raw, line_buf);
    ck_assert_uint_eq(r.raw_len, strlen(tc->line));
    ck_assert_int_eq(r.ph, tc->ph);
    ck_assert_int_eq(r.ts_ns, tc->ts_ns);
    ck_assert_int_eq(r.dur_ns, tc->dur_ns);
    if (!tc->name || strcmp(tc->name, ANY) != 0)
        ck_assert_msg(text_eq(r.name, tc->name), "case %d: name %.*s", _i, (int)r.name.len,
                      r.name.ptr);
    ck_assert_msg(text_eq(r.pid, tc->pid), "case %d: pid", _i);
    ck_assert_msg(text_eq(r.tid, tc->tid), "case %d: tid", _i);
}
END_TEST

START_TEST(test_decode_record_step)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    const char *s = "{\"type\":\"step\",\"step\":12,\"begin_us\":1700000000000000.5,"
                    "\"end_us\":1700000000016500.25,\"samples\":256,"
                    "\"phases\":{\"dataloader\":1200,\"forward\":5300.5} ,\"x\":1}";
    ck_assert_int_eq(decode(s, &r, msg), DECODE_OK);
    ck_assert_int_eq(r.kind, RECORD_STEP);
    ck_assert_int_eq(r.step, 12);
    ck_assert_int_eq(r.ts_ns, 1700000000000000500);
    ck_assert_int_eq(r.dur_ns, 16499750);
    ck_assert_int_eq(r.samples, 256);
    ck_assert(text_eq(r.phases, "{\"dataloader\":1200,\"forward\":5300.5}"));
    ck_assert_int_eq(r.phase_ns.dataloader_ns, 1200000);
    ck_assert_int_eq(r.phase_ns.forward_ns, 5300500);
    ck_assert_int_eq(r.phase_ns.backward_ns, -1);

    ck_assert_int_eq(decode("{\"type\":\"step\",\"step\":0,\"begin_us\":1,\"end_us\":1}", &r, msg),
                     DECODE_OK);
    ck_assert_int_eq(r.samples, -1);
    ck_assert_uint_eq(r.phases.len, 0);
    ck_assert_int_eq(r.phase_ns.dataloader_ns, -1);
    ck_assert_int_eq(r.phase_ns.forward_ns, -1);
    ck_assert_int_eq(r.dur_ns, 0);
}
END_TEST

/* decode_pipeline(): the typed topology from the record's text as stored (no padding), names
 * compared unescaped, unknown values skipped whatever their shape; a record it cannot read is
 * -EINVAL and leaves nothing allocated. */
START_TEST(test_decode_pipeline_typed)
{
    const char *t = "{\"type\":\"pipeline\",\"x\":[{\"ops\":1}],\"ops\":["
                    "{\"id\":1,\"n\\u0061me\":\"Batch\",\"children\":[2],\"queue_sizes\":[1,3],"
                    "\"queue_capacity\":4,\"skip\":{\"a\":[null,true]}},"
                    "{\"id\":2,\"type\":\"Map\",\"num_workers\":8,\"queue_usage\":0.5}],"
                    "\"cpu\":{\"user\":[10,20],\"processors\":null,\"sampling_interval_ms\":50}}";
    struct record_pipeline *pl = malloc(sizeof *pl);
    ck_assert_ptr_nonnull(pl);
    ck_assert_int_eq(decode_pipeline(t, strlen(t), pl), 0);
    ck_assert_uint_eq(pl->n_ops, 2);
    ck_assert_str_eq(pl->ops[0].type, "Batch");
    ck_assert_int_eq(pl->ops[0].parent_id, -1);
    ck_assert_int_eq(pl->ops[1].parent_id, 1);
    ck_assert(pl->ops[0].usage == 0.5 && pl->ops[0].queue_avg == 2.0);
    ck_assert_int_eq(pl->ops[1].num_workers, 8);
    ck_assert(pl->ops[1].usage == 0.5);
    ck_assert(pl->has_cpu && pl->cpu[0].sum == 30.0 && pl->cpu[0].count == 2);
    ck_assert(pl->cpu_interval_ms == 50.0);
    ck_assert_int_eq(pl->processors, -1);
    free(pl->values);
    const char *bad[] = {"{\"ops\":[{\"id\":1.5}]}", "{\"type\":\"pipeline\"}",
                         "{\"ops\":[{\"children\":[1,\"x\"]}]}", "{\"ops\":[{\"id\":1}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_msg(decode_pipeline(bad[i], strlen(bad[i]), pl) == -EINVAL, "%s", bad[i]);
        ck_assert_ptr_null(pl->values);
    }
    free(pl);
}
END_TEST

/* The phases' names are JSON strings: an escaped name is the same name, blanks around a value
 * are blanks, a name holding an escaped quote is one name, and the first occurrence counts;
 * decode_phases() reads the stored object text alike. */
START_TEST(test_decode_record_step_phases_typed)
{
    static const struct {
        const char *phases;
        int64_t data, fwd, bwd;
    } cases[] = {
        {"{\"dataloader\":10,\"forw\\u0061rd\":50,\"b\\u0061ckward\":100}", 10000, 50000, 100000},
        {"{ \"dataloader\" : 20 , \"forward\" : 60 , \"backward\" : 90 }", 20000, 60000, 90000},
        {"{\"note \\\"forward\\\"\":7,\"forward\":1.5}", -1, 1500, -1},
        {"{\"forward\":1,\"forward\":2,\"optimizer\":3}", -1, 1000, -1},
        {"{\"forward\":1e30}", -1, -1, -1},
        {"{}", -1, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"type\":\"step\",\"step\":1,\"begin_us\":1,\"end_us\":2,\"phases\":%s}",
                 cases[i].phases);
        struct record r;
        char msg[DECODE_MSG_MAX];
        ck_assert_msg(decode(line, &r, msg) == DECODE_OK, "%s: %s", line, msg);
        ck_assert_msg(r.phase_ns.dataloader_ns == cases[i].data &&
                          r.phase_ns.forward_ns == cases[i].fwd &&
                          r.phase_ns.backward_ns == cases[i].bwd,
                      "%s: %lld %lld %lld", cases[i].phases, (long long)r.phase_ns.dataloader_ns,
                      (long long)r.phase_ns.forward_ns, (long long)r.phase_ns.backward_ns);
        struct record_phases st;
        decode_phases(r.phases.ptr, r.phases.len, &st);
        ck_assert_msg(st.dataloader_ns == cases[i].data && st.forward_ns == cases[i].fwd &&
                          st.backward_ns == cases[i].bwd,
                      "stored %s", cases[i].phases);
    }
    struct record_phases st;
    decode_phases("", 0, &st);
    ck_assert_int_eq(st.forward_ns, -1);
    decode_phases("{\"forward\":1", 12, &st); /* cut short */
    ck_assert_int_eq(st.forward_ns, -1);
}
END_TEST

/* args.correlation and args["External id"]: rows of {line, correlation, external_id}. */
START_TEST(test_decode_record_trace_links)
{
    static const struct {
        const char *line;
        int64_t correlation, external_id;
    } cases[] = {
        {"{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2,\"args\":{\"External id\":7,"
         "\"device\":0,\"correlation\":99,\"grid\":[1,2,{\"correlation\":5}]}}",
         99, 7},
        {"{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2}", -1, -1},
        {"{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2,\"args\":[1]}", -1, -1},
        {"{\"args\":{\"correlation\":\"12\",\"External id\":-3},\"ph\":\"X\",\"name\":\"k\","
         "\"ts\":1,\"dur\":2}", -1, -1},
        {"{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2,\"args\":{\"correlation\":1.5,"
         "\"External\\u0020id\":0}}", -1, 0},
        {"{\"ph\":\"i\",\"ts\":1,\"args\":{ \"correlation\" : 4 , \"correlation\":6 }}", 4, -1},
        {"{\"type\":\"host\",\"ts_us\":1,\"args\":{\"correlation\":4}}", -1, -1},
    };
    struct record r;
    char msg[DECODE_MSG_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_msg(decode(cases[i].line, &r, msg) == DECODE_OK, "case %zu: %s", i, msg);
        ck_assert_msg(r.correlation == cases[i].correlation, "case %zu: correlation %lld", i,
                      (long long)r.correlation);
        ck_assert_msg(r.external_id == cases[i].external_id, "case %zu: external id %lld", i,
                      (long long)r.external_id);
    }
    /* args is scanned for its links in the line's own pass: nesting inside it is limited
     * exactly as inside any other member ("argz"). */
    for (int depth = 60; depth <= 66; depth++) {
        char line[512], other[512];
        int n = snprintf(line, sizeof line, "{\"ph\":\"i\",\"ts\":1,\"args\":{\"correlation\":3,\"x\":");
        for (int k = 0; k < depth; k++)
            line[n++] = '[';
        for (int k = 0; k < depth; k++)
            line[n++] = ']';
        line[n++] = '}';
        line[n++] = '}';
        line[n] = '\0';
        memcpy(other, line, (size_t)n + 1);
        memcpy(strstr(other, "args"), "argz", 4);
        int want = decode(other, &r, msg);
        ck_assert_int_eq(decode(line, &r, msg), want);
        if (want == DECODE_OK)
            ck_assert_int_eq(r.correlation, 3);
        ck_assert_int_eq(want, depth <= 62 ? DECODE_OK : DECODE_MALFORMED);
    }
    /* The args object is still validated by the line's own scan. */
    ck_assert_int_eq(decode("{\"ph\":\"X\",\"name\":\"k\",\"ts\":1,\"dur\":2,"
                            "\"args\":{\"correlation\":01}}", &r, msg),
                     DECODE_MALFORMED);
}
END_TEST

/* Kineto's "[memory]" events and the collector's "[memory stats]" samples (docs/PROTOCOL.md 9
 * and 10): Bytes, the totals, the device; Paddle's current_* are the same totals. */
START_TEST(test_decode_record_memory_view)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    ck_assert_int_eq(decode("{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\","
                            "\"name\":\"[memory]\",\"pid\":464,\"tid\":493,\"ts\":4835200323130.748,"
                            "\"args\":{\"Total Reserved\":94371840,\"Total Allocated\":77306880,"
                            "\"Bytes\":-1024,\"Device Id\":0,\"Device Type\":1,"
                            "\"Addr\":140561993960960}}", &r, msg), DECODE_OK);
    ck_assert_int_eq(r.mem_bytes, -1024);
    ck_assert_int_eq(r.mem_allocated, 77306880);
    ck_assert_int_eq(r.mem_reserved, 94371840);
    ck_assert_int_eq(r.mem_device_type, 1);
    ck_assert_int_eq(r.mem_device_id, 0);
    ck_assert_int_eq(r.mem_peak_allocated, -1);
    /* Kineto's CPU is Device Id -1 */
    ck_assert_int_eq(decode("{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":1,\"args\":{"
                            "\"Device Id\":-1,\"Device Type\":0,\"Bytes\":64}}", &r, msg),
                     DECODE_OK);
    ck_assert(r.mem_device_id == -1 && r.mem_device_type == 0 && r.mem_bytes == 64 &&
              r.mem_allocated == -1 && r.mem_reserved == -1);
    ck_assert_int_eq(decode("{\"ph\":\"C\",\"name\":\"[memory stats]\",\"ts\":2,\"step\":12,"
                            "\"args\":{\"Device Type\":1,\"Device Id\":3,\"Total Allocated\":10,"
                            "\"Total Reserved\":20,\"Peak Allocated\":30,\"Peak Reserved\":40}}",
                            &r, msg), DECODE_OK);
    ck_assert(r.mem_device_id == 3 && r.mem_allocated == 10 && r.mem_reserved == 20 &&
              r.mem_peak_allocated == 30 && r.mem_peak_reserved == 40 && r.step == 12 &&
              r.mem_bytes == INT64_MIN);
    /* Paddle's current totals */
    ck_assert_int_eq(decode("{\"name\":\"[memory]\",\"ph\":\"i\",\"cat\":\"Allocate\",\"ts\":1,"
                            "\"args\":{\"place\":\"Place(gpu:0)\",\"increase_bytes\":8,"
                            "\"current_allocated\":100,\"current_reserved\":200}}", &r, msg),
                     DECODE_OK);
    ck_assert(r.mem_bytes == 8 && r.mem_allocated == 100 && r.mem_reserved == 200 &&
              r.mem_device_type == -1 && r.mem_device_id == INT64_MIN);
    /* the same members elsewhere are not read */
    ck_assert_int_eq(decode("{\"ph\":\"C\",\"name\":\"[memory]\",\"ts\":2,"
                            "\"args\":{\"Total Allocated\":10}}", &r, msg), DECODE_OK);
    ck_assert(r.mem_allocated == -1);
}
END_TEST

/* Paddle's "[memory]" events and its ExtraInfo record (docs/PROTOCOL.md 9): their members are
 * read from those events only, a member of another type is absent, never an error. */
START_TEST(test_decode_record_paddle)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    ck_assert_int_eq(decode("{\"owner\":\"add kernel launch\",\"owner_ts\":1700000000123.456,"
                            "\"name\":\"[memory]\",\"ph\":\"i\",\"cat\":\"Free\",\"ts\":1700000000124,"
                            "\"tid\":\"8703(C++)\",\"args\":{\"place\":\"Place(cpu)\",\"addr\":\"94\","
                            "\"increase_bytes\":-1280,\"peak_allocated\":5987400,"
                            "\"peak_reserved\":5987401}}", &r, msg), DECODE_OK);
    ck_assert_int_eq(r.mem_bytes, -1280);
    ck_assert_int_eq(r.mem_peak_allocated, 5987400);
    ck_assert_int_eq(r.mem_peak_reserved, 5987401);
    ck_assert(r.mem_place.len == 10 && memcmp(r.mem_place.ptr, "Place(cpu)", 10) == 0);
    ck_assert(r.mem_owner.len == 17 && memcmp(r.mem_owner.ptr, "add kernel launch", 17) == 0);
    ck_assert_int_eq(r.mem_owner_ns, 1700000000123456LL);
    ck_assert(r.util_cpu == -1 && r.util_sys_cpu == -1);
    /* ill-typed members: absent */
    ck_assert_int_eq(decode("{\"name\":\"[memory]\",\"ph\":\"i\",\"ts\":1,\"owner\":3,"
                            "\"owner_ts\":\"x\",\"args\":{\"increase_bytes\":1.5,\"place\":7,"
                            "\"peak_allocated\":-4}}", &r, msg), DECODE_OK);
    ck_assert(r.mem_bytes == INT64_MIN && r.mem_peak_allocated == -1 && r.mem_place.len == 0 &&
              r.mem_owner.len == 0 && r.mem_owner_ns == INT64_MIN);
    /* the same members on another event are not read */
    ck_assert_int_eq(decode("{\"name\":\"memory\",\"ph\":\"i\",\"ts\":1,"
                            "\"args\":{\"increase_bytes\":8}}", &r, msg), DECODE_OK);
    ck_assert(r.mem_bytes == INT64_MIN);
    ck_assert_int_eq(decode("{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"ts\":1,\"dur\":5,\"args\":{"
                            "\"8703\":\"MainThread\",\"Process Cpu Utilization\":\"1.250000\","
                            "\"System Cpu Utilization\":0.5}}", &r, msg), DECODE_OK);
    ck_assert(r.util_cpu == 1.25 && r.util_sys_cpu == 0.5 && r.dur_ns == 5000);
    ck_assert_int_eq(decode("{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"args\":{"
                            "\"Process Cpu Utilization\":\"1.0x\",\"System Cpu Utilization\":\"-1\"}}",
                            &r, msg), DECODE_OK);
    ck_assert(r.util_cpu == -1 && r.util_sys_cpu == -1);
}
END_TEST


/* The public line decoders of core/decode.h, as the replay and web use them. */
START_TEST(test_decode_hello_line_public)
{
    struct line_decoder *ld = line_decoder_new(256);
    ck_assert_ptr_nonnull(ld);
    const char *line = "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"rank\":1,\"world_size\":2,"
                       "\"env\":{\"FP_POINT\":\"aten::linear\",\"PROFILING_BP_END\":\"a\\u0062\"}}";
    struct record_hello h;
    /* Not NUL-terminated: the decoder copies the line. */
    char buf[256];
    size_t n = strlen(line);
    memcpy(buf, line, n);
    buf[n] = 'x';
    ck_assert_int_eq(decode_hello_line(ld, buf, n, &h), 0);
    ck_assert_str_eq(h.job, "j");
    ck_assert_int_eq(h.rank, 1);
    ck_assert_str_eq(h.fp_point_env, "aten::linear");
    ck_assert_str_eq(h.profiling_bp_end, "ab");
    ck_assert_str_eq(h.stepscope_fp_point, "");
    ck_assert(!h.imported);
    /* "source":"import" marks stepscope import's sessions; any other source is never an error. */
    const char *imp = "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"source\":\"import\"}";
    ck_assert_int_eq(decode_hello_line(ld, imp, strlen(imp), &h), 0);
    ck_assert(h.imported);
    const char *other[] = {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"source\":\"importer\"}",
                           "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"source\":1}",
                           "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"source\":[\"import\"]}"};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        ck_assert_int_eq(decode_hello_line(ld, other[i], strlen(other[i]), &h), 0);
        ck_assert(!h.imported);
    }
    ck_assert_int_eq(decode_hello_line(ld, "{\"hello\":\"stepscope/1\"}", 23, &h), -EINVAL);
    /* A probe asks which daemon this is: never a stored session's hello. */
    ck_assert_int_eq(decode_hello_line(ld, "{\"hello\":\"stepscope/1\",\"probe\":true}", 36, &h),
                     -EINVAL);
    ck_assert_int_eq(decode_hello_line(ld, "{\"ph\":\"X\"}", 10, &h), -EINVAL);
    char big[300];
    memset(big, ' ', sizeof big);
    ck_assert_int_eq(decode_hello_line(ld, big, sizeof big, &h), -EMSGSIZE);
    line_decoder_free(ld);
}
END_TEST

START_TEST(test_decode_record_queue_host)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    ck_assert_int_eq(decode("{\"type\":\"queue\",\"name\":\"device\\/0\",\"size\":3,"
                            "\"capacity\":64,\"step\":7,\"ts_us\":2.0005}",
                            &r, msg),
                     DECODE_OK);
    ck_assert_int_eq(r.kind, RECORD_QUEUE);
    ck_assert(text_eq(r.name, "device/0"));
    ck_assert_int_eq(r.size, 3);
    ck_assert_int_eq(r.capacity, 64);
    ck_assert_int_eq(r.step, 7);
    ck_assert_int_eq(r.ts_ns, 2001);
    ck_assert_uint_gt(arena.used, 0); /* the escaped name was copied */

    ck_assert_int_eq(decode("{\"type\":\"queue\",\"name\":\"q\",\"size\":0}", &r, msg),
                     DECODE_OK);
    ck_assert_int_eq(r.capacity, -1);
    ck_assert_int_eq(r.step, -1);
    ck_assert_int_eq(r.ts_ns, INT64_MIN);
    ck_assert_uint_eq(arena.used, 0); /* no escapes: the name points into the line */
    ck_assert_ptr_eq(r.name.ptr, line_buf + 24);

    ck_assert_int_eq(decode("{\"type\":\"host\",\"ts_us\":5,\"cpu_percent\":150.5,"
                            "\"sys_cpu_percent\":12,\"rss_bytes\":1048576}",
                            &r, msg),
                     DECODE_OK);
    ck_assert_int_eq(r.kind, RECORD_HOST);
    ck_assert_int_eq(r.ts_ns, 5000);
    ck_assert(r.cpu_percent == 150.5);
    ck_assert(r.sys_cpu_percent == 12);
    ck_assert_int_eq(r.rss_bytes, 1048576);
    ck_assert_int_eq(decode("{\"type\":\"host\"}", &r, msg), DECODE_OK);
    ck_assert(r.cpu_percent == -1);
    ck_assert_int_eq(r.rss_bytes, -1);
}
END_TEST

START_TEST(test_decode_record_deep_nesting)
{
    static char s[20100];
    struct record r;
    char msg[DECODE_MSG_MAX];
    memset(s, '[', 10000);
    s[10000] = '\0';
    ck_assert_int_eq(decode(s, &r, msg), DECODE_MALFORMED);
    /* Balanced and inside an object: still refused, by depth, without recursion blowing up. */
    strcpy(s, "{\"ph\":\"i\",\"ts\":1,\"args\":");
    size_t n = strlen(s);
    memset(s + n, '[', 10000);
    memset(s + n + 10000, ']', 10000);
    strcpy(s + n + 20000, "}");
    ck_assert_int_eq(decode(s, &r, msg), DECODE_MALFORMED);
    ck_assert_ptr_nonnull(strstr(msg, "nested"));
    /* Moderately deep is fine. */
    strcpy(s, "{\"ph\":\"i\",\"ts\":1,\"args\":");
    memset(s + n, '[', 30);
    memset(s + n + 30, ']', 30);
    strcpy(s + n + 60, "}");
    ck_assert_int_eq(decode(s, &r, msg), DECODE_OK);
}
END_TEST

/* The scanner's edges: NUL bytes, the exact depth limit, doubles beyond 19 digits. */
START_TEST(test_decode_record_scanner_edges)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    /* A NUL inside the line, in a string or between tokens, is never part of valid JSON. */
    static const char with_nul[] = "{\"ph\":\"i\",\"ts\":1,\"a\":\"x\0y\"}";
    size_t n = sizeof with_nul - 1;
    arena.used = 0;
    ck_assert_int_eq(decode_record(dec, place(with_nul, n), n, &arena, &r, msg),
                     DECODE_MALFORMED);
    static const char nul_after[] = "{\"ph\":\"i\",\"ts\":1}\0";
    n = sizeof nul_after - 1;
    ck_assert_int_eq(decode_record(dec, place(nul_after, n), n, &arena, &r, msg),
                     DECODE_MALFORMED);
    /* "\u0000" is fine: the unescaped name holds a NUL byte. */
    ck_assert_int_eq(decode("{\"ph\":\"i\",\"ts\":1,\"name\":\"a\\u0000b\"}", &r, msg),
                     DECODE_OK);
    ck_assert_uint_eq(r.name.len, 3);
    ck_assert(memcmp(r.name.ptr, "a\0b", 3) == 0);

    /* 64 levels counting the line's object are accepted, 65 are not. */
    static char s[400];
    strcpy(s, "{\"ph\":\"i\",\"ts\":1,\"args\":");
    size_t k = strlen(s);
    memset(s + k, '[', 63);
    memset(s + k + 63, ']', 63);
    strcpy(s + k + 126, "}");
    ck_assert_int_eq(decode(s, &r, msg), DECODE_OK);
    memset(s + k, '[', 64);
    memset(s + k + 64, ']', 64);
    strcpy(s + k + 128, "}");
    ck_assert_int_eq(decode(s, &r, msg), DECODE_MALFORMED);
    ck_assert_ptr_nonnull(strstr(msg, "nested"));

    /* Correctly rounded, where simdjson 3.0.1's get_double() gave 1.75e-48. */
    ck_assert_int_eq(decode("{\"type\":\"host\",\"cpu_percent\":"
                            "0.1000000000000000055511151231257827021181583404541015625000000000001}",
                            &r, msg),
                     DECODE_OK);
    ck_assert(r.cpu_percent == 0.1);
    ck_assert_int_eq(decode("{\"type\":\"host\",\"sys_cpu_percent\":1e-400}", &r, msg),
                     DECODE_OK);
    ck_assert(r.sys_cpu_percent == 0);
    ck_assert_int_eq(decode("{\"type\":\"host\",\"cpu_percent\":1e400}", &r, msg),
                     DECODE_MALFORMED);
    /* Long exponents are fine when the value is (simdjson 3.0.1 rejected both). */
    ck_assert_int_eq(decode("{\"type\":\"host\",\"cpu_percent\":0e0000000000000000000001,"
                            "\"sys_cpu_percent\":1e-99999999999999999999}",
                            &r, msg),
                     DECODE_OK);
    ck_assert(r.cpu_percent == 0 && r.sys_cpu_percent == 0);

    /* Escaped keys are matched after unescaping; a second "phases" is only validated. */
    ck_assert_int_eq(decode("{\"type\":\"step\",\"st\\u0065p\":4,\"begin_us\":1,\"end_us\":2,"
                            "\"phases\": { \"a\" : 1 } ,\"phases\":[\"x\"]}",
                            &r, msg),
                     DECODE_OK);
    ck_assert_int_eq(r.step, 4);
    ck_assert(text_eq(r.phases, "{ \"a\" : 1 }"));
}
END_TEST

/* A string's special byte at every offset around the scanner's 16-byte (and 8-byte) loads: the
 * name either decodes to exactly its bytes (plain, UTF-8, an escape unescaped) or the line is
 * malformed (a control byte, an invalid UTF-8 byte, the line ending inside the string). */
START_TEST(test_decode_record_string_offsets)
{
    static const struct {
        const char *in;   /* spliced after k bytes of 'a', then "bc" follows */
        const char *want; /* the name's bytes in the middle, or NULL: malformed */
    } specials[] = {
        {"", ""},
        {"\\n", "\n"},
        {"\\u00e9", "\xc3\xa9"},
        {"\\ud83d\\ude00", "\xf0\x9f\x98\x80"},
        {"\xc3\xa9", "\xc3\xa9"},
        {"\xe2\x82\xac", "\xe2\x82\xac"},
        {"\xff", NULL},
        {"\xc3(", NULL},
        {"\x01", NULL},
        {"\\x", NULL},
    };
    struct record r;
    char msg[DECODE_MSG_MAX], line[160], want[64];
    for (size_t k = 0; k <= 40; k++) {
        for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
            char name[64];
            memset(name, 'a', k);
            snprintf(name + k, sizeof name - k, "%sbc", specials[i].in);
            snprintf(line, sizeof line, "{\"ph\":\"X\",\"name\":\"%s\",\"ts\":1,\"dur\":2}",
                     name);
            int res = decode(line, &r, msg);
            if (!specials[i].want) {
                ck_assert_msg(res == DECODE_MALFORMED, "k=%zu i=%zu: %d", k, i, res);
                continue;
            }
            ck_assert_msg(res == DECODE_OK, "k=%zu i=%zu: %s", k, i, msg);
            memset(want, 'a', k);
            snprintf(want + k, sizeof want - k, "%sbc", specials[i].want);
            ck_assert_msg(text_eq(r.name, want), "k=%zu i=%zu", k, i);
        }
        /* The line ends inside the string. */
        memset(line, 0, sizeof line);
        strcpy(line, "{\"ph\":\"X\",\"name\":\"");
        memset(line + strlen(line), 'a', k);
        ck_assert_int_eq(decode(line, &r, msg), DECODE_MALFORMED);
    }
}
END_TEST

START_TEST(test_decode_record_arena_full)
{
    struct record r;
    char msg[DECODE_MSG_MAX];
    const char *s = "{\"ph\":\"X\",\"name\":\"a\\nb\",\"ts\":1,\"dur\":1}";
    size_t n = strlen(s);
    char small[2];
    struct json_arena a = {small, 0, sizeof small};
    ck_assert_int_eq(decode_record(dec, place(s, n), n, &a, &r, msg),
                     DECODE_NOSPACE);
    ck_assert_uint_eq(a.used, 0);
    a = (struct json_arena){arena_buf, 0, n + 16};
    ck_assert_int_eq(decode_record(dec, place(s, n), n, &a, &r, msg), DECODE_OK);
    ck_assert(text_eq(r.name, "a\nb"));
}
END_TEST

struct hello_case {
    const char *line;
    bool ok;
};

static const struct hello_case hello_cases[] = {
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\"}", true},
    {"{\"hello\":\"stepscope/1\",\"job\":\"resnet50\",\"rank\":3,\"world_size\":8,\"host\":\"n3\","
     "\"pid\":4242,\"framework\":\"torch\",\"framework_version\":\"2.4.0\",\"run\":\"r1\","
     "\"stream\":\"n3:4242:1\",\"seq\":1200,\"clock\":\"realtime\",\"env\":{\"FP_POINT\":\"x\"}}",
     true},
    {"{\"job\":\"j\"}", false},
    {"{\"hello\":\"stepscope/2\",\"job\":\"j\"}", false},
    {"{\"hello\":\"stepscope/1\"}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"\"}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"a\\u0001b\"}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"a\\u007fb\"}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":5}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"rank\":-1}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"rank\":1}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"rank\":1,\"world_size\":2}", true},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"world_size\":0}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"rank\":0.5,\"world_size\":2}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":-1}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":\"1\"}", false},
    /* the last seq a hello may carry is the largest ack (INGEST_SEQ_END = 2^63 - 1) */
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":9223372036854775807}", true},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":9223372036854775808}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":18446744073709551615}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"host\":7}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"stream\":\"a\\u0000b\"}", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\"", false},
    {"[\"hello\"]", false},
    {"{\"hello\":\"stepscope/1\",\"job\":\"j\",\"x\":[1 2]}", false},
};

START_TEST(test_decode_hello_table)
{
    const struct hello_case *tc = &hello_cases[_i];
    struct record_hello h;
    char msg[DECODE_MSG_MAX] = "";
    size_t n = strlen(tc->line);
    arena.used = 0;
    int r = decode_hello(dec, place(tc->line, n), n, &arena, &h, msg);
    ck_assert_msg((r == DECODE_OK) == tc->ok, "case %d %s: got %d (%s)", _i, tc->line, r,
                  msg);
    if (!tc->ok)
        ck_assert_int_eq(r, DECODE_BAD_HELLO);
}
END_TEST

/* The hello's "env" points: the six names in record_hello's order, "" when not taken. */
struct hello_env_case {
    const char *env; /* the "env" value's JSON text, NULL: no "env" */
    const char *want[6]; /* STEPSCOPE_FP/BP, PROFILING_FP/BP, FP_POINT, BP_POINT */
};

static const struct hello_env_case hello_env_cases[] = {
    {NULL, {"", "", "", "", "", ""}},
    {"{}", {"", "", "", "", "", ""}},
    {"{\"FP_POINT\":\"Default/Conv2D-op1\",\"BP_POINT\":\"Default/Sgd\"}",
     {"", "", "", "", "Default/Conv2D-op1", "Default/Sgd"}},
    {"{\"PROFILING_FP_START\":\"a\",\"PROFILING_BP_END\":\"b\",\"PATH\":\"/bin\"}",
     {"", "", "a", "b", "", ""}},
    {"{\"STEPSCOPE_FP_POINT\":\"x\\u00e9\",\"STEPSCOPE_BP_POINT\":\"y\\\"q\"}",
     {"x\xc3\xa9", "y\"q", "", "", "", ""}},
    /* first occurrence wins, as for every key */
    {"{\"FP_POINT\":\"first\",\"FP_POINT\":\"second\"}", {"", "", "", "", "first", ""}},
    /* ignored, never an error: non-strings, empty, a NUL, nested objects, env not an object */
    {"{\"FP_POINT\":7,\"BP_POINT\":\"\",\"PROFILING_FP_START\":\"a\\u0000b\","
     "\"PROFILING_BP_END\":{\"x\":1},\"STEPSCOPE_FP_POINT\":[\"a\"],\"STEPSCOPE_BP_POINT\":null}",
     {"", "", "", "", "", ""}},
    {"\"FP_POINT=x\"", {"", "", "", "", "", ""}},
    {"[1,2]", {"", "", "", "", "", ""}},
};

START_TEST(test_decode_hello_env)
{
    const struct hello_env_case *tc = &hello_env_cases[_i];
    char line[512];
    if (tc->env)
        snprintf(line, sizeof line, "{\"hello\":\"stepscope/1\",\"env\":%s,\"job\":\"j\"}",
                 tc->env);
    else
        snprintf(line, sizeof line, "{\"hello\":\"stepscope/1\",\"job\":\"j\"}");
    struct record_hello h;
    char msg[DECODE_MSG_MAX] = "";
    size_t n = strlen(line);
    arena.used = 0;
    ck_assert_int_eq(decode_hello(dec, place(line, n), n, &arena, &h, msg),
                     DECODE_OK);
    ck_assert_str_eq(h.job, "j");
    const char *got[6] = {h.stepscope_fp_point, h.stepscope_bp_point, h.profiling_fp_start,
                          h.profiling_bp_end,   h.fp_point_env,       h.bp_point_env};
    for (int k = 0; k < 6; k++)
        ck_assert_msg(got[k] && strcmp(got[k], tc->want[k]) == 0, "case %d field %d: \"%s\"",
                      _i, k, got[k] ? got[k] : "(null)");

    /* A name longer than RECORD_NAME_MAX is ignored too. */
    char big[RECORD_NAME_MAX + 128];
    int k = snprintf(big, sizeof big, "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"env\":{\"FP_POINT\":\"");
    memset(big + k, 'o', RECORD_NAME_MAX + 1);
    strcpy(big + k + RECORD_NAME_MAX + 1, "\"}}");
    n = strlen(big);
    ck_assert_int_eq(decode_hello(dec, place(big, n), n, &arena, &h, msg),
                     DECODE_OK);
    ck_assert_str_eq(h.fp_point_env, "");
}
END_TEST

START_TEST(test_decode_hello_fields)
{
    struct record_hello h;
    char msg[DECODE_MSG_MAX];
    const char *s = hello_cases[1].line;
    size_t n = strlen(s);
    arena.used = 0;
    ck_assert_int_eq(decode_hello(dec, place(s, n), n, &arena, &h, msg), DECODE_OK);
    ck_assert_str_eq(h.job, "resnet50");
    ck_assert_str_eq(h.host, "n3");
    ck_assert_str_eq(h.framework, "torch");
    ck_assert_str_eq(h.framework_version, "2.4.0");
    ck_assert_str_eq(h.run, "r1");
    ck_assert_str_eq(h.stream, "n3:4242:1");
    ck_assert_str_eq(h.clock, "realtime");
    ck_assert_int_eq(h.rank, 3);
    ck_assert_int_eq(h.world_size, 8);
    ck_assert_int_eq(h.pid, 4242);
    ck_assert(h.has_seq);
    ck_assert_uint_eq(h.seq, 1200);
    ck_assert_ptr_eq(h.raw, line_buf);
    ck_assert_uint_eq(h.raw_len, n);

    s = "{\"hello\":\"stepscope/1\",\"job\":\"caf\\u00e9\"}";
    n = strlen(s);
    ck_assert_int_eq(decode_hello(dec, place(s, n), n, &arena, &h, msg), DECODE_OK);
    ck_assert_str_eq(h.job, "caf\xc3\xa9");
    ck_assert_str_eq(h.stream, "");
    ck_assert_str_eq(h.host, "");
    ck_assert_int_eq(h.rank, 0);
    ck_assert_int_eq(h.world_size, 1);
    ck_assert_int_eq(h.pid, -1);
    ck_assert(!h.has_seq);

    /* 256 bytes is the longest job. */
    char big[400];
    strcpy(big, "{\"hello\":\"stepscope/1\",\"job\":\"");
    size_t k = strlen(big);
    memset(big + k, 'j', 256);
    strcpy(big + k + 256, "\"}");
    n = strlen(big);
    ck_assert_int_eq(decode_hello(dec, place(big, n), n, &arena, &h, msg),
                     DECODE_OK);
    memset(big + k, 'j', 257);
    strcpy(big + k + 257, "\"}");
    n = strlen(big);
    ck_assert_int_eq(decode_hello(dec, place(big, n), n, &arena, &h, msg),
                     DECODE_BAD_HELLO);
}
END_TEST

/* ---- server ---- */

#define MAX_SEEN 256

struct seen_record {
    enum record_kind kind;
    uint64_t seq;
    int64_t ts_ns;
    char name[64];
};

struct fake {
    struct ingest *in;
    struct stats stats;
    int n_hellos;
    char job[64];
    uint64_t welcome_next_seq; /* what on_hello answers */
    int hello_result;          /* what on_hello returns */
    int sink_result;           /* what the sink returns */
    bool ack_in_sink;          /* the sink acks every next_seq at once */
    int n_sinks;
    uint64_t last_next_seq;
    int64_t last_session;   /* next_seq only has to grow within one session */
    struct seen_record recs[MAX_SEEN];
    size_t n_recs;
    int n_closes;
    bool last_clean;
    int64_t last_closed_session;
};

static int fake_hello(void *ud, const struct record_hello *h, struct record_welcome *w, char *err)
{
    struct fake *f = ud;
    f->n_hellos++;
    snprintf(f->job, sizeof f->job, "%s", h->job);
    if (f->hello_result < 0) {
        snprintf(err, INGEST_ERR_MAX, "refused by test");
        return f->hello_result;
    }
    w->job_id = 1;
    w->session_id = 100 + f->n_hellos;
    w->stream_id = 200 + f->n_hellos;
    w->next_seq = f->welcome_next_seq;
    return 0;
}

static int fake_sink(void *ud, int64_t session_id, const struct record *recs, size_t n,
                     uint64_t next_seq)
{
    struct fake *f = ud;
    f->n_sinks++;
    if (session_id == f->last_session)
        ck_assert_uint_ge(next_seq, f->last_next_seq);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_lt(recs[i].seq, next_seq);
        if (f->n_recs == MAX_SEEN)
            continue;
        struct seen_record *s = &f->recs[f->n_recs++];
        s->kind = recs[i].kind;
        s->seq = recs[i].seq;
        s->ts_ns = recs[i].ts_ns;
        snprintf(s->name, sizeof s->name, "%.*s", (int)recs[i].name.len, recs[i].name.ptr);
    }
    if (f->sink_result == 0) {
        f->last_next_seq = next_seq;
        f->last_session = session_id;
        if (f->ack_in_sink)
            ingest_ack(f->in, 200 + f->n_hellos, next_seq);
    }
    return f->sink_result;
}

static void fake_close(void *ud, int64_t session_id, bool clean)
{
    struct fake *f = ud;
    f->n_closes++;
    f->last_clean = clean;
    f->last_closed_session = session_id;
}

static char tmpdir[64];
static char sock_path[128];
static uv_loop_t loop;
static struct fake fk;

static void srv_setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    strcpy(tmpdir, "/tmp/ss-ingest-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    snprintf(sock_path, sizeof sock_path, "%s/s.sock", tmpdir);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    memset(&fk, 0, sizeof fk);
}

static void spin(void)
{
    for (int i = 0; i < 64; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
}

static void srv_teardown(void)
{
    ingest_close(fk.in);
    fk.in = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    struct stat sb;
    ck_assert_int_eq(stat(sock_path, &sb), -1); /* unlinked */
    (void)rmdir(tmpdir);
}

static struct ingest_config srv_config(size_t max_line, size_t max_conns)
{
    struct ingest_config cfg = {
        .socket_path = sock_path,
        .max_line_bytes = max_line,
        .max_connections = max_conns,
        .on_hello = fake_hello,
        .sink = fake_sink,
        .on_close = fake_close,
        .ud = &fk,
        .stats = &fk.stats,
    };
    return cfg;
}

static void srv_start(size_t max_line, size_t max_conns)
{
    struct ingest_config cfg = srv_config(max_line, max_conns);
    ck_assert_int_eq(ingest_start(&loop, &cfg, &fk.in), 0);
    struct stat sb;
    ck_assert_int_eq(stat(sock_path, &sb), 0);
    ck_assert(S_ISSOCK(sb.st_mode));
    ck_assert_int_eq(sb.st_mode & 0777, 0660);
}

static int client_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, sock_path);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void client_send_n(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, s, n);
        ck_assert_int_gt(k, 0);
        s += k;
        n -= (size_t)k;
    }
}

static void client_send(int fd, const char *s)
{
    client_send_n(fd, s, strlen(s));
}

/* Appends what the daemon sent to out; returns true once the daemon closed the connection. */
static bool client_recv(int fd, char *out, size_t cap)
{
    size_t len = strlen(out);
    for (;;) {
        ssize_t k = recv(fd, out + len, cap - 1 - len, MSG_DONTWAIT);
        if (k == 0) {
            out[len] = '\0';
            return true;
        }
        if (k < 0) {
            ck_assert(errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNRESET);
            out[len] = '\0';
            return errno == ECONNRESET;
        }
        len += (size_t)k;
        ck_assert_uint_lt(len, cap - 1);
    }
}

static size_t count_str(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

#define HELLO "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"stream\":\"s\"}\n"
#define EV(ts) "{\"ph\":\"X\",\"name\":\"n" #ts "\",\"ts\":" #ts ",\"dur\":1}\n"

START_TEST(test_ingest_session)
{
    srv_start(256, 8);
    fk.ack_in_sink = true;
    int fd = client_connect();
    char big[400];
    memset(big, 'a', 300);
    memcpy(big, "{\"ph\":\"i\",\"ts\":1,\"s\":\"", 22);
    strcpy(big + 300, "\"}\n");
    const char *split = "{\"ph\":\"X\",\"name\":\"split\",\"ts\":2.5,\"dur\":1}\n";

    client_send(fd, HELLO EV(1) "{\"ph\":\n" "\n" "   \r\n");
    client_send(fd, big);
    client_send_n(fd, split, 10);
    spin();
    client_send(fd, split + 10);
    client_send(fd, "{\"type\":\"queue\",\"name\":\"q\",\"size\":2}\r\n{\"foo\":1}\n"
                    "{\"type\":\"bye\"}\n" EV(99));
    spin();
    char out[8192] = "";
    bool closed = client_recv(fd, out, sizeof out);
    spin();
    closed = client_recv(fd, out, sizeof out) || closed;
    ck_assert_msg(closed, "daemon did not close after bye: %s", out);
    (void)close(fd);

    /* Line numbers: hello 1, EV(1) 2, {"ph": 3, blank 4 and 5, big 6, split 7, queue 8, foo 9,
     * bye 10. Seqs: 0 EV(1), 1 malformed, 2 oversized, 3 split, 4 queue, 5 unknown, 6 bye. */
    ck_assert_ptr_nonnull(strstr(out, "{\"welcome\":\"stepscope/1\",\"job_id\":1,\"session_id\":101,"
                                      "\"stream_id\":201,\"next_seq\":0}\n"));
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":3,\"seq\":1,\"code\":\"malformed\""), "%s", out);
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":6,\"seq\":2,\"code\":\"oversized\""), "%s", out);
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":9,\"seq\":5,\"code\":\"unknown\""), "%s", out);
    ck_assert_uint_eq(count_str(out, "\"error\""), 3);
    ck_assert_msg(strstr(out, "{\"ack\":7}\n"), "%s", out);
    ck_assert_str_eq(fk.job, "j");

    ck_assert_uint_eq(fk.n_recs, 3);
    ck_assert_uint_eq(fk.recs[0].seq, 0);
    ck_assert_str_eq(fk.recs[0].name, "n1");
    ck_assert_uint_eq(fk.recs[1].seq, 3);
    ck_assert_str_eq(fk.recs[1].name, "split");
    ck_assert_int_eq(fk.recs[1].ts_ns, 2500);
    ck_assert_uint_eq(fk.recs[2].seq, 4);
    ck_assert_int_eq(fk.recs[2].kind, RECORD_QUEUE);
    ck_assert_uint_eq(fk.last_next_seq, 7);
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(fk.last_clean);
    ck_assert_int_eq(fk.last_closed_session, 101);

    struct stats *st = &fk.stats;
    ck_assert_uint_eq(STATS_GET(st, hellos), 1);
    ck_assert_uint_eq(STATS_GET(st, lines), 7);
    ck_assert_uint_eq(STATS_GET(st, malformed), 1);
    ck_assert_uint_eq(STATS_GET(st, oversized), 1);
    ck_assert_uint_eq(STATS_GET(st, unknown), 1);
    ck_assert_uint_eq(STATS_GET(st, invalid), 0);
    ck_assert_uint_eq(STATS_GET(st, records[RECORD_TRACE]), 2);
    ck_assert_uint_eq(STATS_GET(st, records[RECORD_QUEUE]), 1);
    ck_assert_uint_eq(STATS_GET(st, partial_lines), 0);
    ck_assert_uint_eq(STATS_GET(st, connections_accepted), 1);
    ck_assert_uint_eq(STATS_GET(st, connections_open), 0);
}
END_TEST

/* Any split of the input into writes gives the same records, seqs and replies (_i: write size). */
START_TEST(test_ingest_output_independent_of_chunking)
{
    static const size_t sizes[] = {1, 2, 3, 7, 16, 61, 200, 5000};
    size_t chunk = sizes[_i];
    srv_start(128, 8);
    int fd = client_connect();
#define DOTS20 "...................."
    const char *in = HELLO EV(1) "\n{bad\n" EV(2) "{\"ph\":\"i\",\"ts\":1,\"pad\":\"" DOTS20 DOTS20
        DOTS20 DOTS20 DOTS20 DOTS20 "\"}\n{\"type\":\"host\",\"cpu_percent\":5}\n" EV(3);
    size_t n = strlen(in);
    char out[8192] = "";
    for (size_t off = 0; off < n; off += chunk) {
        client_send_n(fd, in + off, off + chunk > n ? n - off : chunk);
        spin();
        (void)client_recv(fd, out, sizeof out);
    }
    ck_assert_uint_eq(fk.n_recs, 4);
    ck_assert_uint_eq(fk.recs[0].seq, 0);
    ck_assert_uint_eq(fk.recs[1].seq, 2);
    ck_assert_uint_eq(fk.recs[2].seq, 4);
    ck_assert_int_eq(fk.recs[2].kind, RECORD_HOST);
    ck_assert_uint_eq(fk.recs[3].seq, 5);
    ck_assert_uint_eq(fk.last_next_seq, 6);
    ck_assert_uint_eq(count_str(out, "\"error\""), 2);
    ck_assert_ptr_nonnull(strstr(out, "{\"error\":{\"line\":4,\"seq\":1,\"code\":\"malformed\""));
    ck_assert_ptr_nonnull(strstr(out, "{\"error\":{\"line\":6,\"seq\":3,\"code\":\"oversized\""));
    ck_assert_uint_eq(STATS_GET(&fk.stats, bytes), n);
    (void)close(fd);
    spin();
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(!fk.last_clean);
}
END_TEST

START_TEST(test_ingest_replay_skips_duplicates)
{
    srv_start(1024, 8);
    fk.welcome_next_seq = 5;
    int fd = client_connect();
    client_send(fd, "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"stream\":\"s\",\"seq\":3}\n" EV(3)
                    EV(4) "{bad\n" EV(5) EV(6));
    spin();
    char out[4096] = "";
    (void)client_recv(fd, out, sizeof out);
    ck_assert_ptr_nonnull(strstr(out, "\"next_seq\":5}"));
    ck_assert_uint_eq(STATS_GET(&fk.stats, duplicates), 2);
    ck_assert_uint_eq(STATS_GET(&fk.stats, lines), 5);
    ck_assert_uint_eq(STATS_GET(&fk.stats, malformed), 1);
    ck_assert_uint_eq(fk.n_recs, 2);
    ck_assert_uint_eq(fk.recs[0].seq, 6);
    ck_assert_str_eq(fk.recs[0].name, "n5");
    ck_assert_uint_eq(fk.recs[1].seq, 7);
    ck_assert_uint_eq(fk.last_next_seq, 8);
    ck_assert_ptr_nonnull(strstr(out, "\"line\":4,\"seq\":5,\"code\":\"malformed\""));

    /* A client that starts above next_seq: the gap is its own loss, numbering follows it. */
    int fd2 = client_connect();
    client_send(fd2, "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"seq\":50}\n" EV(1));
    spin();
    ck_assert_uint_eq(fk.n_recs, 3);
    ck_assert_uint_eq(fk.recs[2].seq, 50);
    ck_assert_uint_eq(fk.last_next_seq, 51);
    (void)close(fd);
    (void)close(fd2);
    spin();
}
END_TEST

/* The last numbers (issue 18, item 7): a stream resumed at 2^63 - 3 takes 2^63 - 3 and 2^63 - 2;
 * the line that would take 2^63 - 1 is refused (seq_exhausted), the session ends unclean, and
 * every ack sent is a seq the hello parser takes back. Before, the acks went past 2^63 and the
 * hello that carried one was bad_hello. */
START_TEST(test_ingest_last_seq_is_resumable)
{
    srv_start(1024, 8);
    fk.ack_in_sink = true;
    fk.welcome_next_seq = INGEST_SEQ_END - 2;
    int fd = client_connect();
    client_send(fd, "{\"hello\":\"stepscope/1\",\"job\":\"j\",\"stream\":\"s\","
                    "\"seq\":9223372036854775805}\n" EV(1) EV(2) EV(3) EV(4));
    char out[4096] = "";
    bool closed = false;
    for (int i = 0; i < 50 && !closed; i++) {
        spin();
        closed = client_recv(fd, out, sizeof out);
    }
    ck_assert_msg(closed, "not closed after the last seq: %s", out);
    (void)close(fd);
    spin();
    ck_assert_msg(strstr(out, "\"next_seq\":9223372036854775805}"), "%s", out);
    ck_assert_uint_eq(fk.n_recs, 2);
    ck_assert_uint_eq(fk.recs[0].seq, INGEST_SEQ_END - 2);
    ck_assert_uint_eq(fk.recs[1].seq, INGEST_SEQ_END - 1);
    ck_assert_uint_eq(fk.last_next_seq, INGEST_SEQ_END);
    ck_assert_msg(strstr(out, "\"code\":\"seq_exhausted\""), "%s", out);
    ck_assert_uint_eq(count_str(out, "\"error\""), 1);
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(!fk.last_clean);
    ck_assert_uint_eq(STATS_GET(&fk.stats, invalid), 1);

    /* Every ack is a number a hello may carry: the last one is INGEST_SEQ_END. */
    char *p = out, *last = NULL;
    size_t n_acks = 0;
    while ((p = strstr(p, "{\"ack\":")) != NULL) {
        last = p;
        n_acks++;
        char *end;
        errno = 0;
        unsigned long long a = strtoull(p + 7, &end, 10);
        ck_assert_int_eq(errno, 0);
        ck_assert_uint_le(a, INGEST_SEQ_END);
        p = end;
    }
    ck_assert_uint_ge(n_acks, 1);
    ck_assert_msg(strncmp(last, "{\"ack\":9223372036854775807}", 27) == 0, "%s", out);
    dec_setup();
    char hello[160];
    int hn = snprintf(hello, sizeof hello, "{\"hello\":\"stepscope/1\",\"job\":\"j\","
                      "\"stream\":\"s\",\"seq\":%.19s}", last + 7);
    struct record_hello h;
    char msg[DECODE_MSG_MAX] = "";
    ck_assert_int_eq(decode_hello(dec, place(hello, (size_t)hn), (size_t)hn, &arena, &h, msg),
                     DECODE_OK);
    ck_assert(h.has_seq);
    ck_assert_uint_eq(h.seq, INGEST_SEQ_END);
    dec_teardown();
}
END_TEST

START_TEST(test_ingest_bad_hello_closes)
{
    srv_start(1024, 8);
    int fd = client_connect();
    client_send(fd, "\n{\"hello\":\"nope\",\"job\":\"j\"}\n" EV(1));
    spin();
    char out[4096] = "";
    ck_assert(client_recv(fd, out, sizeof out));
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":2,\"code\":\"bad_hello\",\"message\":"), "%s",
                  out);
    ck_assert_uint_eq(count_str(out, "\n"), 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, bad_hellos), 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, hellos), 0);
    ck_assert_int_eq(fk.n_sinks, 0);
    ck_assert_int_eq(fk.n_closes, 0);
    (void)close(fd);

    fk.hello_result = -EBUSY;
    fd = client_connect();
    client_send(fd, HELLO);
    spin();
    out[0] = '\0';
    ck_assert(client_recv(fd, out, sizeof out));
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":1,\"code\":\"stream_busy\",\"message\":"
                              "\"refused by test\"}}\n"),
                  "%s", out);
    ck_assert_uint_eq(STATS_GET(&fk.stats, bad_hellos), 2);
    (void)close(fd);

    /* An over-long first line is a bad hello too. */
    fk.hello_result = 0;
    srv_teardown();
    srv_setup();
    srv_start(32, 8);
    fd = client_connect();
    client_send(fd, HELLO);
    spin();
    out[0] = '\0';
    ck_assert(client_recv(fd, out, sizeof out));
    ck_assert_msg(strstr(out, "\"line\":1,\"code\":\"bad_hello\""), "%s", out);
    (void)close(fd);
}
END_TEST

START_TEST(test_ingest_too_many_connections)
{
    srv_start(1024, 1);
    int a = client_connect();
    client_send(a, HELLO);
    spin();
    int b = client_connect();
    spin();
    char out[4096] = "";
    ck_assert(client_recv(b, out, sizeof out));
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":0,\"code\":\"too_many_connections\""), "%s",
                  out);
    ck_assert_uint_eq(STATS_GET(&fk.stats, connections_rejected), 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, connections_accepted), 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, connections_open), 1);
    (void)close(b);
    /* The first connection still works. */
    client_send(a, EV(1));
    spin();
    ck_assert_uint_eq(fk.n_recs, 1);
    (void)close(a);
    spin();
    ck_assert_uint_eq(STATS_GET(&fk.stats, connections_open), 0);
    /* And the freed place can be taken. */
    b = client_connect();
    client_send(b, HELLO EV(2));
    spin();
    ck_assert_uint_eq(fk.n_recs, 2);
    (void)close(b);
}
END_TEST

START_TEST(test_ingest_backpressure)
{
    srv_start(1024, 8);
    int a = client_connect();
    int b = client_connect();
    client_send(a, HELLO);
    client_send(b, HELLO);
    spin();
    fk.sink_result = -EAGAIN;
    client_send(a, EV(1));
    spin();
    ck_assert_uint_eq(fk.n_recs, 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, pauses), 1);
    ck_assert_uint_eq(STATS_GET(&fk.stats, records[RECORD_TRACE]), 1);
    fk.sink_result = 0;
    client_send(a, EV(2));
    client_send(b, EV(3));
    spin();
    ck_assert_uint_eq(fk.n_recs, 1); /* nobody reads while paused */
    ingest_resume(fk.in);
    spin();
    ck_assert_uint_eq(fk.n_recs, 3);
    ck_assert_uint_eq(STATS_GET(&fk.stats, pauses), 1);
    (void)close(a);
    (void)close(b);
    spin();
}
END_TEST

START_TEST(test_ingest_sink_failure)
{
    srv_start(1024, 8);
    int fd = client_connect();
    client_send(fd, HELLO EV(1));
    spin();
    fk.sink_result = -EIO;
    client_send(fd, EV(2) "{bad\n" EV(3));
    spin();
    char out[4096] = "";
    ck_assert(client_recv(fd, out, sizeof out));
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":3,\"seq\":1,\"code\":\"unavailable\""), "%s",
                  out);
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":4,\"seq\":2,\"code\":\"malformed\""), "%s",
                  out);
    ck_assert_msg(strstr(out, "{\"error\":{\"line\":5,\"seq\":3,\"code\":\"unavailable\""), "%s",
                  out);
    ck_assert_uint_eq(fk.last_next_seq, 1); /* nothing past the failed lines was taken */
    ck_assert_uint_eq(STATS_GET(&fk.stats, records[RECORD_TRACE]), 1);
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(!fk.last_clean);
    (void)close(fd);
}
END_TEST

START_TEST(test_ingest_partial_line_and_acks)
{
    srv_start(1024, 8);
    int fd = client_connect();
    client_send(fd, HELLO EV(1));
    spin();
    /* Acks coalesce: only the latest value is sent; unknown streams are ignored. */
    ingest_ack(fk.in, 201, 1);
    ingest_ack(fk.in, 201, 1);
    ingest_ack(fk.in, 999, 5);
    spin();
    char out[4096] = "";
    (void)client_recv(fd, out, sizeof out);
    ck_assert_uint_eq(count_str(out, "{\"ack\":1}\n"), 1);
    client_send(fd, "{\"ph\":\"X\"");
    spin();
    (void)close(fd);
    spin();
    ck_assert_uint_eq(STATS_GET(&fk.stats, partial_lines), 1);
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(!fk.last_clean);
    ingest_ack(fk.in, 201, 2); /* the stream is gone: no-op */
}
END_TEST

START_TEST(test_ingest_error_lines_rate_limited)
{
    srv_start(1024, 8);
    int fd = client_connect();
    client_send(fd, HELLO);
    static char bad[300 * 5 + 1];
    for (int i = 0; i < 300; i++)
        memcpy(bad + i * 5, "{xx}\n", 5);
    client_send(fd, bad);
    spin();
    char out[65536] = "";
    (void)client_recv(fd, out, sizeof out);
    ck_assert_uint_eq(STATS_GET(&fk.stats, malformed), 300);
    ck_assert_uint_eq(count_str(out, "\"code\":\"malformed\""), 100);
    ck_assert_uint_eq(fk.last_next_seq, 300); /* rejected lines are acknowledged too */
    (void)close(fd);
    spin();
}
END_TEST

START_TEST(test_ingest_stop_and_close_with_open_sessions)
{
    srv_start(1024, 8);
    int fd = client_connect();
    client_send(fd, HELLO EV(1));
    spin();
    ingest_stop_reading(fk.in);
    client_send(fd, EV(2));
    spin();
    ck_assert_uint_eq(fk.n_recs, 1);
    ingest_ack(fk.in, 201, 1);
    ingest_close(fk.in);
    fk.in = NULL;
    ck_assert_int_eq(fk.n_closes, 1);
    ck_assert(!fk.last_clean);
    uv_run(&loop, UV_RUN_DEFAULT);
    char out[4096] = "";
    ck_assert(client_recv(fd, out, sizeof out));
    ck_assert_msg(strstr(out, "{\"ack\":1}\n"), "%s", out);
    (void)close(fd);
}
END_TEST

START_TEST(test_ingest_start_socket_file)
{
    /* A live daemon on the path. */
    srv_start(1024, 8);
    struct ingest *other = NULL;
    struct ingest_config cfg = srv_config(1024, 8);
    ck_assert_int_eq(ingest_start(&loop, &cfg, &other), -EADDRINUSE);
    ck_assert_ptr_null(other);
    ingest_close(fk.in);
    fk.in = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);

    /* A stale socket left by a dead daemon is replaced. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    strcpy(sa.sun_path, sock_path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    (void)close(fd);
    srv_start(1024, 8);
    int c = client_connect();
    client_send(c, HELLO EV(1));
    spin();
    ck_assert_uint_eq(fk.n_recs, 1);
    (void)close(c);
    ingest_close(fk.in);
    fk.in = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);

    /* A file that is not a socket is left alone. */
    fd = open(sock_path, O_CREAT | O_WRONLY, 0600);
    ck_assert_int_ge(fd, 0);
    (void)close(fd);
    ck_assert_int_eq(ingest_start(&loop, &cfg, &other), -EADDRINUSE);
    ck_assert_int_eq(unlink(sock_path), 0);

    /* Too long for sun_path: refused before libuv can truncate it. */
    char longp[sizeof sa.sun_path + 8];
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = '\0';
    cfg.socket_path = longp;
    ck_assert_int_eq(ingest_start(&loop, &cfg, &other), -ENAMETOOLONG);
    longp[sizeof sa.sun_path] = '\0'; /* exactly sizeof(sun_path) bytes: no room for the NUL */
    ck_assert_int_eq(ingest_start(&loop, &cfg, &other), -ENAMETOOLONG);

    /* socket_mode sets the file's permission bits (0 kept the default 0660 above). */
    cfg = srv_config(1024, 8);
    cfg.socket_mode = 0600;
    ck_assert_int_eq(ingest_start(&loop, &cfg, &fk.in), 0);
    struct stat sb;
    ck_assert_int_eq(stat(sock_path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    ingest_close(fk.in);
    fk.in = NULL;
    uv_run(&loop, UV_RUN_DEFAULT);
}
END_TEST

static Suite *ingest_suite(void)
{
    Suite *s = suite_create("ingest");
    TCase *tc = tcase_create("decode");
    tcase_add_unchecked_fixture(tc, dec_setup, dec_teardown);
    tcase_add_loop_test(tc, test_decode_record_table, 0,
                        (int)(sizeof decode_cases / sizeof decode_cases[0]));
    tcase_add_test(tc, test_decode_record_step);
    tcase_add_test(tc, test_decode_record_step_phases_typed);
    tcase_add_test(tc, test_decode_pipeline_typed);
    tcase_add_test(tc, test_decode_record_queue_host);
    tcase_add_test(tc, test_decode_record_trace_links);
    tcase_add_test(tc, test_decode_record_paddle);
    tcase_add_test(tc, test_decode_record_memory_view);
    tcase_add_test(tc, test_decode_hello_line_public);
    tcase_add_test(tc, test_decode_record_deep_nesting);
    tcase_add_test(tc, test_decode_record_scanner_edges);
    tcase_add_test(tc, test_decode_record_string_offsets);
    tcase_add_test(tc, test_decode_record_arena_full);
    tcase_add_loop_test(tc, test_decode_hello_table, 0,
                        (int)(sizeof hello_cases / sizeof hello_cases[0]));
    tcase_add_test(tc, test_decode_hello_fields);
    tcase_add_loop_test(tc, test_decode_hello_env, 0,
                        (int)(sizeof hello_env_cases / sizeof hello_env_cases[0]));
    suite_add_tcase(s, tc);

    tc = tcase_create("server");
    tcase_add_checked_fixture(tc, srv_setup, srv_teardown);
    tcase_add_test(tc, test_ingest_session);
    tcase_add_loop_test(tc, test_ingest_output_independent_of_chunking, 0, 8);
    tcase_add_test(tc, test_ingest_replay_skips_duplicates);
    tcase_add_test(tc, test_ingest_last_seq_is_resumable);
    tcase_add_test(tc, test_ingest_bad_hello_closes);
    tcase_add_test(tc, test_ingest_too_many_connections);
    tcase_add_test(tc, test_ingest_backpressure);
    tcase_add_test(tc, test_ingest_sink_failure);
    tcase_add_test(tc, test_ingest_partial_line_and_acks);
    tcase_add_test(tc, test_ingest_error_lines_rate_limited);
    tcase_add_test(tc, test_ingest_stop_and_close_with_open_sessions);
    tcase_add_test(tc, test_ingest_start_socket_file);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(ingest_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
