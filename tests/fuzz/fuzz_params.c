/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the small parsers and escapers of the HTTP answers that fuzz_query does not
 * cover: the summary/benchmark parameters (?steps=, {kind}, operator columns), the user rule and
 * helper threshold texts, the Prometheus label escaper of /metrics and the JSON string escaper
 * every name goes through. The same bytes go through each. Invariants:
 *   - steps: accepted means 0 <= first <= last, and printing them back parses to the same pair;
 *   - kind and column names: accepted means the text is one of the names (a round trip);
 *   - rules: 0 with a table or -EINVAL with a line number inside the text; helper thresholds:
 *     a refused text leaves the rules unchanged, an accepted one leaves every number finite >= 0;
 *   - Prometheus label value: after undoing its three escapes the output is exactly the input
 *     with each byte that is not part of valid UTF-8 (checked here by an independent decoder)
 *     replaced by U+FFFD, and it holds no raw line feed or unescaped double quote;
 *   - JSON string: quoted, valid UTF-8, no raw control byte, no unescaped quote.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/analyse/analyse_helper.h"
#include "../../daemon/analyse/analyse_ops.h"
#include "../../daemon/analyse/analyse_roles.h"
#include "../../daemon/web/parse.h"
#include "../../daemon/web/summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_params: invariant failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

/* Length of the valid UTF-8 sequence at p (RFC 3629: no overlongs, surrogates or code points
 * past U+10FFFF), 0 if it is not one. Written from the RFC's table, not from sbuf.c. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    if (p[0] < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xbf;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        len = 3;
        lo = p[0] == 0xe0 ? 0xa0 : 0x80;
        hi = p[0] == 0xed ? 0x9f : 0xbf;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        len = 4;
        lo = p[0] == 0xf0 ? 0x90 : 0x80;
        hi = p[0] == 0xf4 ? 0x8f : 0xbf;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_seq(p + i, n - i);
        if (!k)
            return false;
        i += k;
    }
    return true;
}

static void check_steps(const char *s, size_t n)
{
    int64_t first, last, f2, l2;
    if (web__parse_steps(s, n, &first, &last) < 0)
        return;
    CHECK(first >= 0 && first <= last);
    char buf[48];
    int k = snprintf(buf, sizeof buf, "%" PRId64 "-%" PRId64, first, last);
    CHECK(web__parse_steps(buf, (size_t)k, &f2, &l2) == 0 && f2 == first && l2 == last);
    if (first == last) {
        k = snprintf(buf, sizeof buf, "%" PRId64, first);
        CHECK(web__parse_steps(buf, (size_t)k, &f2, &l2) == 0 && f2 == first && l2 == last);
    }
}

static void check_names(const char *z)
{
    enum web_summary_kind kind;
    if (web__summary_kind_parse(z, &kind) == 0)
        CHECK((unsigned)kind < WEB_SUMMARY_KIND_COUNT &&
              strcmp(web__summary_kind_names[kind], z) == 0);
    enum analyse_op_col col;
    if (analyse_op_col_parse(z, &col) == 0)
        CHECK(strlen(z) >= 3 && strlen(z) <= 8);
}

static void check_rules(const char *s, size_t n)
{
    struct analyse_rules *rules = NULL;
    size_t bad = 0;
    int r = analyse_rules_parse(s, n, &rules, &bad);
    CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
    if (r == 0) {
        CHECK(rules != NULL);
        for (size_t i = 0; i < rules->n_rules; i++)
            CHECK((unsigned)rules->rules[i].role < ANALYSE_ROLE_COUNT);
        analyse_rules_free(rules);
    } else if (r == -EINVAL) {
        size_t lines = 1;
        for (size_t i = 0; i < n; i++)
            lines += s[i] == '\n';
        CHECK(bad >= 1 && bad <= lines);
    }

    struct analyse_helper_rules h, before;
    analyse_helper_rules_default(&h);
    before = h;
    bad = 0;
    r = analyse_helper_rules_parse(s, n, &h, &bad);
    CHECK(r == 0 || r == -EINVAL);
    if (r < 0) {
        CHECK(memcmp(&h, &before, sizeof h) == 0 && bad >= 1);
    } else {
        const double v[] = {h.step_interval_ms, h.queue_empty_ratio, h.cpu_pct, h.pipe_high,
                            h.pipe_low, h.pipe_diff, h.dataloader_ratio, h.communication_ratio,
                            h.gpu_util, h.input_high_pct, h.input_moderate_pct, h.all_other_pct,
                            h.straggler_ratio, h.cluster_interval_ratio};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            CHECK(isfinite(v[i]) && v[i] >= 0);
    }
}

static void check_prom(const char *s, size_t n)
{
    struct sbuf b;
    sbuf_init(&b, 16 * n + 64);
    web__prom_label_value(&b, s, n);
    CHECK(b.error == 0);
    CHECK(utf8_valid(b.data, b.len));
    CHECK(!memchr(b.data, '\n', b.len));
    /* Undo the escapes, comparing with the model as we go. */
    const unsigned char *in = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        size_t k = utf8_seq(in + i, n - i);
        char want[4];
        size_t want_len;
        if (k == 0) {
            memcpy(want, "\xef\xbf\xbd", 3);
            want_len = 3;
            k = 1;
        } else {
            memcpy(want, in + i, k);
            want_len = k;
        }
        i += k;
        for (size_t j = 0; j < want_len; j++) {
            CHECK(o < b.len);
            char got = b.data[o++];
            CHECK(got != '"');
            if (got == '\\') {
                CHECK(o < b.len);
                char e = b.data[o++];
                CHECK(e == '\\' || e == '"' || e == 'n');
                got = e == 'n' ? '\n' : e;
            }
            CHECK(got == want[j]);
        }
    }
    CHECK(o == b.len);
    sbuf_done(&b);
}

static void check_json(const char *s, size_t n)
{
    struct sbuf b;
    sbuf_init(&b, 16 * n + 64);
    sbuf_json_str(&b, s, n);
    CHECK(b.error == 0);
    CHECK(b.len >= 2 && b.data[0] == '"' && b.data[b.len - 1] == '"');
    CHECK(utf8_valid(b.data, b.len));
    for (size_t i = 1; i + 1 < b.len; i++) {
        unsigned char c = (unsigned char)b.data[i];
        CHECK(c >= 0x20 && c != '"');
        if (c == '\\') {
            char e = b.data[++i];
            CHECK(i + 1 < b.len && strchr("\"\\/bfnrtu", e));
        }
    }
    sbuf_done(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    const char *s = (const char *)data;
    char *z = malloc(size + 1);
    if (!z)
        return 0;
    memcpy(z, data, size);
    z[size] = '\0';
    check_steps(s, size);
    check_names(z);
    check_rules(s, size);
    check_prom(s, size);
    check_json(s, size);
    free(z);
    return 0;
}
