/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes daemon/web/parse.c, the code that turns what an HTTP client sends into decisions: percent
 * decoding, routing, the static-file path check and the strict integer and microsecond
 * parameters. The same bytes go through every function, and each result is checked against the
 * invariant the rest of daemon/web/ relies on:
 *   - a static path accepted as safe has no NUL, "..", "//", backslash, control byte or dot
 *     segment, and does not start with '/';
 *   - a decoded string holds no NUL and is never longer than its input;
 *   - a routed {job} is 1..RECORD_NAME_MAX bytes without NUL;
 *   - an accepted integer or time prints back to text that parses to the same value.
 * A broken invariant aborts, so the replay (tests/fuzz/replay_main.c) fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/web/parse.h"
#include "../../daemon/web/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "fuzz_query: invariant failed: %s (line %d)\n", #cond, __LINE__);  \
            abort();                                                                           \
        }                                                                                      \
    } while (0)

static void check_static(const char *path)
{
    char out[WEB_PATH_MAX + 1];
    if (web__static_path(path, out, sizeof out) < 0)
        return;
    size_t len = strlen(out);
    CHECK(len > 0 && len < sizeof out);
    CHECK(out[0] != '/');
    CHECK(!strstr(out, ".."));
    CHECK(!strstr(out, "//"));
    CHECK(!strstr(out, "/."));
    CHECK(out[0] != '.');
    CHECK(out[len - 1] != '/');
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)out[i];
        CHECK(ch >= 0x20 && ch != 0x7f && ch != '\\');
    }
}

static void check_route(const char *path)
{
    struct web_route r;
    if (web__route_parse(path, &r) < 0)
        return;
    if (r.id == WEB_ROUTE_JOB || r.id == WEB_ROUTE_TIMELINE) {
        CHECK(r.job_len >= 1 && r.job_len <= RECORD_NAME_MAX);
        CHECK(strlen(r.job) == r.job_len);
    }
    if (r.id == WEB_ROUTE_STATIC)
        CHECK(strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0);
}

static void check_i64(const char *s, size_t n)
{
    int64_t v, again;
    if (web__parse_i64(s, n, INT64_MIN, INT64_MAX, &v) < 0)
        return;
    char buf[32];
    int k = snprintf(buf, sizeof buf, "%" PRId64, v);
    CHECK(web__parse_i64(buf, (size_t)k, INT64_MIN, INT64_MAX, &again) == 0);
    CHECK(again == v);
    /* A narrower range accepts exactly the values inside it. */
    int64_t lo = -1000, hi = 1000, w;
    int r = web__parse_i64(s, n, lo, hi, &w);
    CHECK((r == 0) == (v >= lo && v <= hi));
}

static void check_us(const char *s, size_t n)
{
    int64_t ns, again;
    if (web__parse_us(s, n, INT64_MIN, INT64_MAX, &ns) < 0)
        return;
    struct sbuf b;
    sbuf_init(&b, 64);
    sbuf_json_us(&b, ns);
    CHECK(b.error == 0);
    CHECK(web__parse_us(b.data, b.len, INT64_MIN, INT64_MAX, &again) == 0);
    CHECK(again == ns);
    sbuf_done(&b);
}

/* A POST /api/v1/session body: a token without NUL that fits, or a refusal. */
static void check_token_body(const char *s, size_t n)
{
    char tok[WEB_TOKEN_MAX];
    size_t len;
    int r = web__parse_token_body(s, n, tok, sizeof tok, &len);
    CHECK(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
    if (r == 0) {
        CHECK(len < sizeof tok && tok[len] == '\0' && strlen(tok) == len);
        CHECK(len <= n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4 * WEB_PATH_MAX)
        return 0;
    const char *s = (const char *)data;
    char *dec = malloc(size + 1);
    char *z = malloc(size + 1);
    if (!dec || !z)
        goto out;
    size_t len;
    if (web__pct_decode(s, size, dec, &len) == 0) {
        CHECK(len <= size);
        CHECK(memchr(dec, '\0', len) == NULL);
        CHECK(dec[len] == '\0');
    }
    /* MHD hands the path over as a C string: the bytes up to the first NUL. */
    memcpy(z, data, size);
    z[size] = '\0';
    check_static(z);
    check_route(z);
    check_i64(s, size);
    check_us(s, size);
    check_token_body(s, size);
    (void)web__mime_type(z);
out:
    free(dec);
    free(z);
    return 0;
}
