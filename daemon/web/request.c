/* SPDX-License-Identifier: MIT */
/*
 * request: query parameters read strictly (answer.h), on top of http.c's web__req_arg(). A bad
 * parameter is a 400 that names it. No libmicrohttpd.
 */
#include <errno.h>
#include <stdio.h>
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

static int param_bad(struct web_answer *a, const char *name, int r, const char *what)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s: %s", name, r == -ERANGE ? "out of range" : what);
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
        return param_bad(a, name, r, what);
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

int web__param_format(const struct web_req *q, struct web_answer *a, bool text,
                      enum web_format *ret)
{
    char buf[8];
    size_t len;
    int r = web__param_str(q, a, "format", buf, sizeof buf, &len);
    if (r < 0)
        return -1;
    *ret = WEB_FORMAT_JSON;
    if (r == 0 || strcmp(buf, "json") == 0)
        return 0;
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

bool web__param_has(const struct web_req *q, const char *name)
{
    const char *v;
    size_t n;
    return web__req_arg(q, name, &v, &n) && v;
}
