/* SPDX-License-Identifier: MIT */
/*
 * parse: the pure half of request handling. Everything a client controls in a request line (the
 * path, the {job} segment, the query values) is decoded and checked here, with no MHD, no store
 * and no allocation, so the same functions are unit-tested on tables and fuzzed on raw bytes
 * (tests/fuzz/fuzz_query.c). http.c installs an identity unescape callback in MHD, so the bytes
 * that reach these functions are exactly what the client sent: decoding happens once, here, and
 * a "%00" or a "%2e%2e" cannot slip past a check made before decoding.
 */
#include "parse.h"

#include <errno.h>
#include <string.h>

#include "../../lib/util.h"

int web__pct_decode(const char *src, size_t n, char *dst, size_t *ret_len)
{
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '%') {
            if (n - i < 3)
                return -EINVAL;
            int hi = util_hexval((unsigned char)src[i + 1]);
            int lo = util_hexval((unsigned char)src[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        /* A NUL would cut the C string every later check and open() sees. */
        if (c == '\0')
            return -EINVAL;
        dst[j++] = c;
    }
    dst[j] = '\0';
    *ret_len = j;
    return 0;
}

const struct web_route_def web__routes[] = {
    {WEB_ROUTE_HEALTH, "/api/v1/health"},
    {WEB_ROUTE_STATS, "/api/v1/stats"},
    {WEB_ROUTE_OPENAPI, "/api/v1/openapi.json"},
    {WEB_ROUTE_EVENTS, "/api/v1/events"},
    {WEB_ROUTE_LOGIN, "/api/v1/session"},
    {WEB_ROUTE_JOBS, "/api/v1/jobs"},
    {WEB_ROUTE_DIFF, "/api/v1/diff"},
    {WEB_ROUTE_JOB, "/api/v1/jobs/{job}"},
    {WEB_ROUTE_TIMELINE, "/api/v1/jobs/{job}/timeline"},
    {WEB_ROUTE_STEPS, "/api/v1/jobs/{job}/steps"},
    {WEB_ROUTE_STEP_TRACE, "/api/v1/jobs/{job}/step-trace"},
    {WEB_ROUTE_OPERATORS, "/api/v1/jobs/{job}/operators"},
    {WEB_ROUTE_KERNELS, "/api/v1/jobs/{job}/kernels"},
    {WEB_ROUTE_QUEUES, "/api/v1/jobs/{job}/queues"},
    {WEB_ROUTE_PIPELINE, "/api/v1/jobs/{job}/pipeline"},
    {WEB_ROUTE_RANKS, "/api/v1/jobs/{job}/ranks"},
    {WEB_ROUTE_HELPER, "/api/v1/jobs/{job}/helper"},
    {WEB_ROUTE_BREAKDOWN, "/api/v1/jobs/{job}/breakdown"},
    {WEB_ROUTE_CLUSTER_STEP_TRACE, "/api/v1/jobs/{job}/cluster/step-trace"},
    {WEB_ROUTE_CLUSTER_FLOPS, "/api/v1/jobs/{job}/cluster/flops"},
    {WEB_ROUTE_CLUSTER_MEMORY, "/api/v1/jobs/{job}/cluster/memory"},
    {WEB_ROUTE_CLUSTER_COMM, "/api/v1/jobs/{job}/cluster/communication"},
    {WEB_ROUTE_CLUSTER_LINKS, "/api/v1/jobs/{job}/cluster/links"},
    {WEB_ROUTE_GPU_TEMPORAL, "/api/v1/jobs/{job}/gpu/temporal"},
    {WEB_ROUTE_GPU_KERNEL_TYPES, "/api/v1/jobs/{job}/gpu/kernel-types"},
    {WEB_ROUTE_GPU_OVERLAP, "/api/v1/jobs/{job}/gpu/overlap"},
    {WEB_ROUTE_GPU_LAUNCHES, "/api/v1/jobs/{job}/gpu/launches"},
    {WEB_ROUTE_GPU_IDLE, "/api/v1/jobs/{job}/gpu/idle"},
    {WEB_ROUTE_GPU_QUEUE, "/api/v1/jobs/{job}/gpu/queue"},
    {WEB_ROUTE_METRICS, "/metrics"},
    {WEB_ROUTE_SUMMARY, "/api/v1/jobs/{job}/summary/{kind}"},
    {WEB_ROUTE_BENCHMARK, "/api/v1/jobs/{job}/benchmark"},
    {WEB_ROUTE_MEMORY, "/api/v1/jobs/{job}/memory"},
    {WEB_ROUTE_TREE, "/api/v1/jobs/{job}/tree"},
    {WEB_ROUTE_OPERATOR_VIEW, "/api/v1/jobs/{job}/operator-view"},
    {WEB_ROUTE_KERNEL_DETAILS, "/api/v1/jobs/{job}/kernels/details"},
    {WEB_ROUTE_COMM_OPS, "/api/v1/jobs/{job}/comm-ops"},
    {WEB_ROUTE_CAPTURES, "/api/v1/jobs/{job}/captures"},
    {WEB_ROUTE_CAPTURE, "/api/v1/jobs/{job}/captures/{id}"},
    {WEB_ROUTE_CAPTURE_CANCEL, "/api/v1/jobs/{job}/captures/{id}/cancel"},
};
const size_t web__n_routes = sizeof web__routes / sizeof web__routes[0];

int web__route_parse(const char *path, struct web_route *ret)
{
    static const char jobs[] = "/api/v1/jobs/";
    static const char job_tpl[] = "/api/v1/jobs/{job}";
    struct web_route r;
    r.id = WEB_ROUTE_STATIC;
    r.job[0] = '\0';
    r.job_len = 0;
    if (strcmp(path, "/metrics") == 0) {
        r.id = WEB_ROUTE_METRICS;
        goto out;
    }
    r.kind[0] = '\0';
    if (strcmp(path, "/api") != 0 && strncmp(path, "/api/", 5) != 0)
        goto out;
    r.id = WEB_ROUTE_API_UNKNOWN;
    if (strncmp(path, jobs, sizeof jobs - 1) != 0) {
        for (size_t i = 0; i < web__n_routes; i++)
            if (!strstr(web__routes[i].path, "{job}") && strcmp(path, web__routes[i].path) == 0)
                r.id = web__routes[i].id;
        goto out;
    }
    const char *seg = path + sizeof jobs - 1;
    const char *slash = strchr(seg, '/');
    size_t seg_len = slash ? (size_t)(slash - seg) : strlen(seg);
    if (seg_len == 0)
        goto out;
    const char *suffix = slash ? slash : "";
    enum web_route_id id = WEB_ROUTE_API_UNKNOWN;
    for (size_t i = 0; i < web__n_routes; i++) {
        const char *p = web__routes[i].path;
        if (strncmp(p, job_tpl, sizeof job_tpl - 1) != 0)
            continue;
        p += sizeof job_tpl - 1;
        const char *kind = strstr(p, "{kind}");
        const char *set = "abcdefghijklmnopqrstuvwxyz-";
        size_t kind_len = sizeof "{kind}" - 1;
        if (!kind && (kind = strstr(p, "{id}")) != NULL) {
            set = "0123456789"; /* "/captures/{id}": a decimal id */
            kind_len = sizeof "{id}" - 1;
        }
        if (!kind) {
            if (strcmp(p, suffix) == 0)
                id = web__routes[i].id;
            continue;
        }
        /* "/summary/{kind}": the prefix, then one segment of 1..WEB_KIND_MAX bytes of set, then
         * what the template has after it ("/captures/{id}/cancel"). */
        size_t pre = (size_t)(kind - p);
        if (strncmp(p, suffix, pre) != 0)
            continue;
        const char *k = suffix + pre;
        size_t kl = strspn(k, set);
        if (kl > 0 && kl <= WEB_KIND_MAX && strcmp(k + kl, kind + kind_len) == 0) {
            memcpy(r.kind, k, kl);
            r.kind[kl] = '\0';
            id = web__routes[i].id;
        }
    }
    if (id == WEB_ROUTE_API_UNKNOWN)
        goto out;
    /* Three encoded bytes per decoded one at most: anything longer cannot fit. */
    char tmp[3 * RECORD_NAME_MAX + 1];
    if (seg_len > 3 * RECORD_NAME_MAX)
        return -ENAMETOOLONG;
    size_t len;
    int err = web__pct_decode(seg, seg_len, tmp, &len);
    if (err < 0)
        return err;
    if (len == 0 || len > RECORD_NAME_MAX)
        return -ENAMETOOLONG;
    memcpy(r.job, tmp, len + 1);
    r.job_len = len;
    r.id = id;
out:
    *ret = r;
    return 0;
}

static bool is_unsafe_byte(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == '\\';
}

int web__static_path(const char *path, char *dst, size_t dst_size)
{
    static const char index_html[] = "index.html";
    size_t n = strlen(path);
    if (n == 0 || path[0] != '/')
        return -EPERM;
    /* Decoding never lengthens, so n + 1 bytes are enough for the decoded path. */
    if (n >= dst_size || dst_size < sizeof index_html)
        return -ENAMETOOLONG;
    size_t len;
    int r = web__pct_decode(path, n, dst, &len);
    if (r < 0)
        return r;
    if (dst[0] != '/')
        return -EPERM;
    if (len == 1) {
        memcpy(dst, index_html, sizeof index_html);
        return 0;
    }
    for (size_t i = 0; i < len; i++)
        if (is_unsafe_byte((unsigned char)dst[i]))
            return -EPERM;
    /* "/." also catches "/..", "/./" and dot files; ".." anywhere is refused as well, so no
     * spelling of a parent segment survives, whatever the platform's path rules. */
    if (strstr(dst, "//") || strstr(dst, "..") || strstr(dst, "/.") || dst[len - 1] == '/')
        return -EPERM;
    memmove(dst, dst + 1, len); /* drops the '/', keeps the NUL */
    return 0;
}

int web__parse_i64(const char *s, size_t n, int64_t min, int64_t max, int64_t *ret)
{
    size_t i = 0;
    bool neg = false;
    if (n > 0 && s[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == n)
        return -EINVAL;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    bool overflow = false;
    /* Keep scanning after an overflow, so junk later in the text still reads as junk. */
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EINVAL;
        unsigned d = (unsigned)(s[i] - '0');
        if (overflow)
            continue;
        if (v > (lim - d) / 10)
            overflow = true;
        else
            v = v * 10 + d;
    }
    if (overflow)
        return -ERANGE;
    int64_t x;
    if (!neg)
        x = (int64_t)v;
    else if (v == (uint64_t)INT64_MAX + 1)
        x = INT64_MIN;
    else
        x = -(int64_t)v;
    if (x < min || x > max)
        return -ERANGE;
    *ret = x;
    return 0;
}

int web__parse_us(const char *s, size_t n, int64_t min_ns, int64_t max_ns, int64_t *ret_ns)
{
    const char *dot = memchr(s, '.', n);
    size_t int_len = dot ? (size_t)(dot - s) : n;
    int64_t whole;
    int r = web__parse_i64(s, int_len, INT64_MIN, INT64_MAX, &whole);
    if (r < 0)
        return r;
    int64_t frac = 0;
    if (dot) {
        size_t frac_len = n - int_len - 1;
        if (frac_len < 1 || frac_len > 3)
            return -EINVAL;
        for (size_t i = 0; i < frac_len; i++) {
            if (dot[1 + i] < '0' || dot[1 + i] > '9')
                return -EINVAL;
            frac = frac * 10 + (dot[1 + i] - '0');
        }
        for (size_t i = frac_len; i < 3; i++)
            frac *= 10;
    }
    if (whole > INT64_MAX / 1000 || whole < INT64_MIN / 1000)
        return -ERANGE;
    int64_t ns = whole * 1000;
    /* The sign belongs to the whole text: "-0.5" is -500 ns although its whole part is 0. */
    if (s[0] == '-') {
        if (ns < INT64_MIN + frac)
            return -ERANGE;
        ns -= frac;
    } else {
        if (ns > INT64_MAX - frac)
            return -ERANGE;
        ns += frac;
    }
    if (ns < min_ns || ns > max_ns)
        return -ERANGE;
    *ret_ns = ns;
    return 0;
}

int web__parse_steps(const char *s, size_t n, int64_t *ret_first, int64_t *ret_last)
{
    const char *dash = n > 1 ? memchr(s + 1, '-', n - 1) : NULL;
    size_t l1 = dash ? (size_t)(dash - s) : n;
    if (web__parse_i64(s, l1, 0, INT64_MAX, ret_first) < 0)
        return -EINVAL;
    if (!dash)
        *ret_last = *ret_first;
    else if (web__parse_i64(dash + 1, n - l1 - 1, 0, INT64_MAX, ret_last) < 0)
        return -EINVAL;
    return *ret_last < *ret_first ? -EINVAL : 0;
}

const char *web__mime_type(const char *name)
{
    static const struct {
        const char *ext;
        const char *type;
    } types[] = {
        {"html", "text/html; charset=utf-8"},
        {"js", "text/javascript; charset=utf-8"},
        {"mjs", "text/javascript; charset=utf-8"},
        {"css", "text/css; charset=utf-8"},
        {"json", "application/json"},
        {"map", "application/json"},
        {"svg", "image/svg+xml"},
        {"png", "image/png"},
        {"ico", "image/x-icon"},
        {"txt", "text/plain; charset=utf-8"},
        {"woff2", "font/woff2"},
    };
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    if (dot)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(dot + 1, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

const char *web__route_allow(enum web_route_id id)
{
    switch (id) {
    case WEB_ROUTE_JOB:
        return "GET, HEAD, DELETE";
    case WEB_ROUTE_CAPTURES:
        return "GET, HEAD, POST";
    case WEB_ROUTE_LOGIN:
    case WEB_ROUTE_CAPTURE_CANCEL:
        return "POST";
    default:
        return "GET, HEAD";
    }
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* A JSON string starting at s[*i] (the opening quote) into dst; ASCII escapes only. */
static int json_ascii_str(const char *s, size_t n, size_t *i, char *dst, size_t size,
                          size_t *ret_len)
{
    size_t k = *i, j = 0;
    if (k >= n || s[k] != '"')
        return -EINVAL;
    for (k++; k < n && s[k] != '"'; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c < 0x20)
            return -EINVAL;
        if (c == '\\') {
            if (++k >= n)
                return -EINVAL;
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *e = s[k] ? strchr(from, s[k]) : NULL;
            if (e) {
                c = (unsigned char)to[e - from];
            } else if (s[k] == 'u' && n - k > 4) {
                int v = 0;
                for (int h = 1; h <= 4; h++) {
                    int d = util_hexval((unsigned char)s[k + (size_t)h]);
                    if (d < 0)
                        return -EINVAL;
                    v = v * 16 + d;
                }
                if (v == 0 || v > 0x7f)
                    return -EINVAL;
                c = (unsigned char)v;
                k += 4;
            } else {
                return -EINVAL;
            }
        }
        if (j + 1 >= size)
            return -ENAMETOOLONG;
        dst[j++] = (char)c;
    }
    if (k >= n)
        return -EINVAL;
    dst[j] = '\0';
    *ret_len = j;
    *i = k + 1;
    return 0;
}

int web__parse_token_body(const char *s, size_t n, char *dst, size_t size, size_t *ret_len)
{
    char key[8];
    size_t key_len;
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return -EINVAL;
    i = skip_ws(s, n, i + 1);
    if (json_ascii_str(s, n, &i, key, sizeof key, &key_len) < 0 || strcmp(key, "token") != 0)
        return -EINVAL;
    i = skip_ws(s, n, i);
    if (i >= n || s[i] != ':')
        return -EINVAL;
    i = skip_ws(s, n, i + 1);
    int r = json_ascii_str(s, n, &i, dst, size, ret_len);
    if (r < 0)
        return r;
    i = skip_ws(s, n, i);
    if (i >= n || s[i] != '}')
        return -EINVAL;
    return skip_ws(s, n, i + 1) == n ? 0 : -EINVAL;
}
