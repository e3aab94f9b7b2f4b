/* SPDX-License-Identifier: MIT */
/*
 * request: query parameters read strictly (answer.h), on top of http.c's web__req_arg(). A bad
 * parameter is a 400 that names it. No libmicrohttpd.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "parse.h"

int web__param_str(const struct web_req *q, struct web_answer *a, const char *name, char *buf,
                   size_t size, size_t *ret_len)
{
    const char *v;
    size_t n;
    if (!web__req_arg(q, name, &v, &n))
        return 0;
    char msg[128];
    if (!v || n == 0) {
        snprintf(msg, sizeof msg, "%s: empty", name);
        goto bad;
    }
    if (n >= size) {
        snprintf(msg, sizeof msg, "%s: too long", name);
        goto bad;
    }
    if (web__pct_decode(v, n, buf, ret_len) < 0) {
        snprintf(msg, sizeof msg, "%s: bad percent-encoding", name);
        goto bad;
    }
    return 1;
bad:
    web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
    return -1;
}

/* v into buf as the parameter is written: an integer, or (us) nanoseconds as microseconds with
 * the 3 decimals only when they are not all 0. */
static void param_value(char *buf, size_t size, int64_t v, bool us)
{
    if (!us || v % 1000 == 0)
        snprintf(buf, size, "%" PRId64, us ? v / 1000 : v);
    else
        snprintf(buf, size, "%s%" PRId64 ".%03d", v < 0 && v / 1000 == 0 ? "-" : "", v / 1000,
                 abs((int)(v % 1000)));
}

static int param_bad(struct web_answer *a, const char *name, int r, const char *what, int64_t min,
                     int64_t max, bool us)
{
    char msg[160];
    if (r == -ERANGE) {
        char lo[32], hi[32];
        param_value(lo, sizeof lo, min, us);
        param_value(hi, sizeof hi, max, us);
        snprintf(msg, sizeof msg, "%s: out of range (%s..%s)", name, lo, hi);
    } else {
        snprintf(msg, sizeof msg, "%s: %s", name, what);
    }
    web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
    return -1;
}

/* Parameter name through parse (web__parse_i64() or web__parse_us(), what naming its syntax). */
static int param_num(const struct web_req *q, struct web_answer *a, const char *name,
                     int (*parse)(const char *, size_t, int64_t, int64_t, int64_t *),
                     const char *what, int64_t min, int64_t max, int64_t def, int64_t *ret)
{
    char buf[64];
    size_t len;
    int r = web__param_str(q, a, name, buf, sizeof buf, &len);
    if (r < 0)
        return -1;
    if (r == 0) {
        *ret = def;
        return 0;
    }
    r = parse(buf, len, min, max, ret);
    if (r < 0)
        return param_bad(a, name, r, what, min, max, parse == web__parse_us);
    return 0;
}

int web__param_i64(const struct web_req *q, struct web_answer *a, const char *name, int64_t min,
                   int64_t max, int64_t def, int64_t *ret)
{
    return param_num(q, a, name, web__parse_i64, "not an integer", min, max, def, ret);
}

int web__param_us(const struct web_req *q, struct web_answer *a, const char *name, int64_t min_ns,
                  int64_t max_ns, int64_t def_ns, int64_t *ret_ns)
{
    return param_num(q, a, name, web__parse_us,
                     "not a time in microseconds (digits, up to 3 after a '.')", min_ns, max_ns,
                     def_ns, ret_ns);
}

/* ?format= into buf (8 bytes): -1 answered, 0 absent or json, 1 another value. */
static int param_format_word(const struct web_req *q, struct web_answer *a, char *buf)
{
    size_t len;
    int r = web__param_str(q, a, "format", buf, 8, &len);
    if (r <= 0)
        return r;
    return strcmp(buf, "json") != 0;
}

int web__param_format(const struct web_req *q, struct web_answer *a, bool text,
                      enum web_format *ret)
{
    char buf[8];
    int r = param_format_word(q, a, buf);
    *ret = WEB_FORMAT_JSON;
    if (r <= 0)
        return r;
    if (strcmp(buf, "csv") == 0)
        *ret = WEB_FORMAT_CSV;
    else if (strcmp(buf, "records") == 0)
        *ret = WEB_FORMAT_RECORDS;
    else if (text && strcmp(buf, "text") == 0)
        *ret = WEB_FORMAT_TEXT;
    else {
        web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request",
                   text ? "format: json, csv, records or text" : "format: json, csv or records");
        return -1;
    }
    return 0;
}

int web__param_json_only(const struct web_req *q, struct web_answer *a)
{
    char buf[8];
    int r = param_format_word(q, a, buf);
    if (r <= 0)
        return r;
    web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request",
               "format: json only (this route has no table)");
    return -1;
}

bool web__param_has(const struct web_req *q, const char *name)
{
    const char *v;
    size_t n;
    return web__req_arg(q, name, &v, &n) && v;
}
