/* SPDX-License-Identifier: MIT */
/*
 * http: the libmicrohttpd daemon. It binds the configured address, runs MHD's internal polling
 * thread (a pool of them when threads > 1, epoll where MHD has it), and sends every request
 * through one access handler: count it, refuse methods a route does not take (405 with Allow:
 * GET and HEAD everywhere, POST for captures and the session, DELETE for a job), route the path
 * (parse.c) to the API (routes.c) or the dashboard files (static.c).
 *
 * MHD normally percent-decodes the path and query values before the handler sees them, which
 * would turn "%00" into a NUL that silently cuts the path short. An identity unescape callback
 * keeps the bytes as sent, and parse.c decodes them once, rejecting NUL and bad escapes.
 *
 * With an auth token configured, every API request but /api/v1/health and POST /api/v1/session
 * must carry "Authorization: Bearer <token>" or the cookie stepscope_token that the session
 * route sets (the token in hex); the comparison takes the same time wherever the given token
 * differs. The dashboard files hold no data and are served to anyone, so a browser can load the
 * page that asks for the token. POST and DELETE must carry Content-Type: application/json or
 * X-Requested-With, which a cross-site form cannot send (CSRF). Without a token, web_start()
 * binds loopback addresses only.
 *
 * DNS rebinding: a page at http://attacker.test:PORT whose name later resolves to 127.0.0.1 is
 * same-origin with this server for the browser, and could read and change everything a loopback
 * daemon without a token serves. What it cannot change is the Host header, which names the
 * attacker's host: so before anything else a request whose Host is not one of this daemon's
 * names (127.0.0.1, localhost, [::1], the bound address, http_allowed_hosts) gets 421. Any port
 * is taken, since the name is what matters and an SSH tunnel's port differs from ours. A request
 * without Host (HTTP/1.0; MHD refuses an HTTP/1.1 one) comes from no browser and is answered.
 *
 * Every answer leaves through web__queue(), which adds the headers all answers carry and counts
 * the errors, so no handler can forget either. Handlers run on MHD's threads and only read: the
 * store through store_query.h, the counters with relaxed atomic loads.
 */
#include "web.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "../core/config.h"
#include "../../lib/log.h"
#include "web_int.h"

union web_addr {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
};

static void on_mhd_log(void *cls, const char *fmt, va_list ap) SS_PRINTF(2, 0);
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    static struct log_ratelimit rl;
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    /* MHD's messages end with a newline of their own; log_msg adds one. */
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        msg[--n] = '\0';
    /* A client that goes away (a browser tab closing its event stream, a curl interrupted)
     * makes MHD report the failed send: that is how HTTP ends, not a fault of the daemon. */
    static const char *const peer_gone[] = {
        "no longer available for sending", "forcibly closed by remote peer",
        "Connection reset by peer", "Broken pipe",
    };
    for (size_t i = 0; i < sizeof peer_gone / sizeof peer_gone[0]; i++) {
        if (strstr(msg, peer_gone[i])) {
            log_debug("http: %s", msg);
            return;
        }
    }
    if (log_ratelimit(&rl, 1000000000))
        log_warn("http: %s", msg);
}

/* The bytes stay as the client sent them; parse.c decodes (see the file comment). */
static size_t on_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

int web__queue(struct web *w, struct MHD_Connection *c, unsigned status, struct MHD_Response *resp)
{
    if (status >= 400)
        STATS_ADD(w->stats, http_errors, 1);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    enum MHD_Result r = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return r;
}

static int send_typed(struct web *w, struct MHD_Connection *c, unsigned status, char *data,
                      size_t len, const char *disposition, const char *type, const char *allow)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(data);
        return web__queue(w, c, status, NULL);
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (disposition)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disposition);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow ? allow : "GET, HEAD");
    if (status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"stepscope\"");
    struct web_capture *cap = web__capture;
    if (cap && cap->armed && status == MHD_HTTP_OK && len <= WEB_CACHE_BODY_MAX && w->cache) {
        web__capture = NULL; /* one answer per request */
        /* The headers web__queue() adds, added once: a kept response is shared by threads. */
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
        return web__cache_store(w, c, cap, resp);
    }
    return web__queue(w, c, status, resp);
}

static int send_error_allow(struct web *w, struct MHD_Connection *c, unsigned status,
                            const char *code, const char *message, const char *allow)
{
    struct sbuf b;
    sbuf_init(&b, WEB_ERROR_BODY_MAX);
    web__render_error(&b, code, message);
    size_t len;
    char *data = sbuf_steal(&b, &len);
    sbuf_done(&b);
    if (!data)
        return web__queue(w, c, status, NULL);
    return send_typed(w, c, status, data, len, NULL, "application/json", allow);
}

int web__send_error(struct web *w, struct MHD_Connection *c, unsigned status, const char *code,
                    const char *message)
{
    return send_error_allow(w, c, status, code, message, NULL);
}

int web__send_405(struct web *w, struct MHD_Connection *c, const char *allow, const char *message)
{
    return send_error_allow(w, c, MHD_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", message,
                            allow);
}

static int send_sbuf(struct web *w, struct MHD_Connection *c, unsigned status, struct sbuf *b,
                     const char *disposition, const char *type)
{
    if (b->error == -EMSGSIZE) {
        char msg[128];
        snprintf(msg, sizeof msg, "the answer would exceed max_response_bytes (%zu); ask for less",
                 w->max_response_bytes);
        sbuf_done(b);
        return web__send_error(w, c, MHD_HTTP_CONTENT_TOO_LARGE, "response_too_large", msg);
    }
    size_t len = 0;
    bool failed = b->error != 0;
    char *data = sbuf_steal(b, &len);
    sbuf_done(b);
    if (!data && !failed)
        data = calloc(1, 1); /* an empty answer (a summary table Paddle leaves out) */
    if (!data)
        return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    return send_typed(w, c, status, data, len, disposition, type, NULL);
}

int web__send_json(struct web *w, struct MHD_Connection *c, unsigned status, struct sbuf *b,
                   const char *disposition)
{
    return send_sbuf(w, c, status, b, disposition, "application/json");
}

int web__send_csv(struct web *w, struct MHD_Connection *c, struct sbuf *b)
{
    return send_sbuf(w, c, 200, b, NULL, "text/csv; charset=utf-8");
}

int web__send_records(struct web *w, struct MHD_Connection *c, struct sbuf *b)
{
    return send_sbuf(w, c, MHD_HTTP_OK, b, NULL, "application/json");
}

/* ---- tables streamed row by row (web__send_rows()) ---- */

struct rows_stream {
    struct web *w;        /* borrowed; outlives MHD's connections */
    struct web_rows rows; /* rows.ctx owned */
    size_t next;          /* the next row to render */
    bool head, tail;      /* written */
    struct sbuf out;      /* bytes not yet handed to MHD: out.data[out_pos, out.len) */
    size_t out_pos;
};

static void rows_stream_free(void *cls)
{
    struct rows_stream *s = cls;
    if (s->rows.free)
        s->rows.free(s->rows.ctx);
    sbuf_done(&s->out);
    atomic_fetch_sub_explicit(&s->w->exports_active, 1, memory_order_relaxed);
    free(s);
}

/* Renders the next chunk into s->out: the head, rows up to WEB_TIMELINE_CHUNK bytes, the tail.
 * Returns false when everything was written before this call. */
static bool rows_produce(struct rows_stream *s)
{
    bool csv = s->rows.fmt == WEB_FORMAT_CSV;
    if (s->tail)
        return false;
    if (!s->head) {
        sbuf_adds(&s->out, csv ? s->rows.csv_header : "[");
        s->head = true;
    }
    while (s->next < s->rows.n && s->out.len < WEB_TIMELINE_CHUNK) {
        if (!csv && s->next > 0)
            sbuf_addc(&s->out, ',');
        s->rows.row(&s->out, s->rows.fmt, s->rows.ctx, s->next++);
    }
    if (s->next == s->rows.n) {
        if (!csv)
            sbuf_addc(&s->out, ']');
        s->tail = true;
    }
    return true;
}

bool web__chunk_copy(const struct sbuf *out, size_t *pos, char *buf, size_t max, size_t *n)
{
    if (*pos >= out->len)
        return true;
    size_t k = out->len - *pos;
    if (k > max - *n)
        k = max - *n;
    memcpy(buf + *n, out->data + *pos, k);
    *n += k;
    *pos += k;
    return false;
}

static ssize_t on_rows_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct rows_stream *s = cls;
    (void)pos; /* MHD reads in order */
    size_t n = 0;
    while (n < max) {
        if (!web__chunk_copy(&s->out, &s->out_pos, buf, max, &n))
            continue;
        sbuf_reset(&s->out);
        s->out_pos = 0;
        if (!rows_produce(s))
            break;
        if (s->out.error)
            return MHD_CONTENT_READER_END_WITH_ERROR; /* out of memory: the client sees a cut */
    }
    if (n == 0)
        return MHD_CONTENT_READER_END_OF_STREAM;
    return (ssize_t)n;
}

int web__send_rows(struct web *w, struct MHD_Connection *c, const struct web_rows *rows)
{
    /* Each table in flight holds its rows until its reader has them, however slowly it reads:
     * they count against http_max_exports with the timeline exports. */
    if (atomic_fetch_add_explicit(&w->exports_active, 1, memory_order_relaxed) >= w->exports_max) {
        atomic_fetch_sub_explicit(&w->exports_active, 1, memory_order_relaxed);
        if (rows->free)
            rows->free(rows->ctx);
        STATS_ADD(w->stats, http_exports_refused, 1);
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "busy",
                               "too many streamed answers in progress (http_max_exports); retry");
    }
    struct rows_stream *s = calloc(1, sizeof *s);
    if (!s) {
        atomic_fetch_sub_explicit(&w->exports_active, 1, memory_order_relaxed);
        if (rows->free)
            rows->free(rows->ctx);
        return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    }
    s->w = w;
    s->rows = *rows;
    sbuf_init(&s->out, w->max_response_bytes);
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, WEB_TIMELINE_CHUNK, on_rows_read, s, rows_stream_free);
    if (!resp) {
        rows_stream_free(s);
        return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            rows->fmt == WEB_FORMAT_CSV ? "text/csv; charset=utf-8"
                                                        : "application/json");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    char v[96];
    snprintf(v, sizeof v, "%zu", rows->total);
    MHD_add_response_header(resp, "X-Total-Count", v);
    if (rows->n < rows->total) {
        if (rows->n == 0)
            snprintf(v, sizeof v, "rows none of %zu", rows->total);
        else
            snprintf(v, sizeof v, "rows %zu-%zu of %zu", rows->offset,
                     rows->offset + rows->n - 1, rows->total);
        MHD_add_response_header(resp, "X-Stepscope-Truncated", v);
    }
    return web__queue(w, c, MHD_HTTP_OK, resp);
}

int web__send_text(struct web *w, struct MHD_Connection *c, struct sbuf *b, const char *type)
{
    return send_sbuf(w, c, MHD_HTTP_OK, b, NULL, type);
}

int web__send_store_error(struct web *w, struct MHD_Connection *c, int r, const char *what)
{
    static struct log_ratelimit rl;
    if (r == -ENOENT)
        return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", NULL);
    if (r == -EBUSY || r == -EAGAIN)
        return web__send_error(w, c, MHD_HTTP_SERVICE_UNAVAILABLE, "busy",
                               "the store is busy; retry");
    if (log_ratelimit(&rl, 1000000000))
        log_warn("http: %s: %s", what, strerror(-r));
    return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                           r == -ENOMEM ? "out of memory" : "store error");
}

/* Looks up query parameter name; 0 absent, 1 present (decoded into buf), -1 answered 400. */
static int param_get(struct web *w, struct MHD_Connection *c, const char *name, char *buf,
                     size_t size, size_t *ret_len, int *ret_mhd)
{
    const char *v;
    size_t n;
    if (MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &n) !=
        MHD_YES)
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
    *ret_mhd = web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request", msg);
    return -1;
}

int web__param_str(struct web *w, struct MHD_Connection *c, const char *name, char *buf,
                   size_t size, size_t *ret_len, int *ret_mhd)
{
    return param_get(w, c, name, buf, size, ret_len, ret_mhd);
}

static int param_bad(struct web *w, struct MHD_Connection *c, const char *name, int r,
                     const char *what, int *ret_mhd)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s: %s", name, r == -ERANGE ? "out of range" : what);
    *ret_mhd = web__send_error(w, c, MHD_HTTP_BAD_REQUEST, "bad_request", msg);
    return -1;
}

int web__param_i64(struct web *w, struct MHD_Connection *c, const char *name, int64_t min,
                   int64_t max, int64_t def, int64_t *ret, int *ret_mhd)
{
    char buf[64];
    size_t len;
    int r = param_get(w, c, name, buf, sizeof buf, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 0) {
        *ret = def;
        return 0;
    }
    r = web__parse_i64(buf, len, min, max, ret);
    if (r < 0)
        return param_bad(w, c, name, r, "not an integer", ret_mhd);
    return 0;
}

int web__param_us(struct web *w, struct MHD_Connection *c, const char *name, int64_t min_ns,
                  int64_t max_ns, int64_t def_ns, int64_t *ret_ns, int *ret_mhd)
{
    char buf[64];
    size_t len;
    int r = param_get(w, c, name, buf, sizeof buf, &len, ret_mhd);
    if (r < 0)
        return -1;
    if (r == 0) {
        *ret_ns = def_ns;
        return 0;
    }
    r = web__parse_us(buf, len, min_ns, max_ns, ret_ns);
    if (r < 0)
        return param_bad(w, c, name, r,
                         "not a time in microseconds (digits, up to 3 after a '.')", ret_mhd);
    return 0;
}

/* Compares in time that depends on the token's length only: every byte of the token is read
 * whatever the given bytes are and wherever they first differ. */
bool web__token_equal(const char *given, size_t n, const char *token, size_t len)
{
    volatile unsigned char diff = (unsigned char)(n != len);
    for (size_t i = 0; i < len; i++)
        diff |= (unsigned char)(token[i] ^ (i < n ? given[i] : 0));
    return diff == 0;
}

/* True when the request may go on: no token configured, a dashboard file, the health or session
 * route, an Authorization header "Bearer <token>" (scheme in any case, blanks after it skipped)
 * with the token, or the cookie stepscope_token with the token in hex. */
static bool authorized(const struct web *w, struct MHD_Connection *c, const char *url)
{
    static const char scheme[] = "bearer ";
    static const char cookie[] = "stepscope_token";
    if (w->auth_token_len == 0 || strcmp(url, "/api/v1/health") == 0 ||
        strcmp(url, "/api/v1/session") == 0)
        return true;
    if (strcmp(url, "/metrics") != 0 && strcmp(url, "/api") != 0 && strncmp(url, "/api/", 5) != 0)
        return true; /* a dashboard file: no data in it */
    const char *v;
    size_t n;
    if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION,
                                      strlen(MHD_HTTP_HEADER_AUTHORIZATION), &v, &n) == MHD_YES &&
        v && n >= sizeof scheme - 1 && strncasecmp(v, scheme, sizeof scheme - 1) == 0) {
        v += sizeof scheme - 1;
        n -= sizeof scheme - 1;
        while (n > 0 && (*v == ' ' || *v == '\t')) {
            v++;
            n--;
        }
        return web__token_equal(v, n, w->auth_token, w->auth_token_len);
    }
    if (MHD_lookup_connection_value_n(c, MHD_COOKIE_KIND, cookie, sizeof cookie - 1, &v, &n) ==
            MHD_YES &&
        v)
        return web__token_equal(v, n, w->auth_cookie, 2 * w->auth_token_len);
    return false;
}

/* True when Host names this daemon (see the file comment): "name" or "name:port", the name
 * compared without case against w->hosts, the port digits only. */
static bool host_allowed(const struct web *w, struct MHD_Connection *c)
{
    if (w->any_host)
        return true;
    const char *v;
    size_t n;
    if (MHD_lookup_connection_value_n(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST,
                                      sizeof MHD_HTTP_HEADER_HOST - 1, &v, &n) != MHD_YES ||
        !v)
        return true;
    size_t name_len;
    if (n > 0 && v[0] == '[') {
        const char *close = memchr(v, ']', n);
        if (!close)
            return false;
        name_len = (size_t)(close - v) + 1;
    } else {
        const char *colon = memchr(v, ':', n);
        name_len = colon ? (size_t)(colon - v) : n;
    }
    if (name_len == 0)
        return false;
    if (name_len < n) {
        size_t digits = n - name_len - 1;
        if (v[name_len] != ':' || digits == 0 || digits > 5 ||
            strspn(v + name_len + 1, "0123456789") < digits)
            return false;
    }
    for (const char *h = w->hosts; *h;) {
        const char *end = strchr(h, ',');
        if ((size_t)(end - h) == name_len && strncasecmp(h, v, name_len) == 0)
            return true;
        h = end + 1;
    }
    return false;
}

/* Fills w->hosts from the loopback names, the bound address and the configured list; any_host
 * when the list says "*", or is empty with a token on a wildcard address. */
static int hosts_init(struct web *w, const char *bound, bool wildcard, const char *list,
                      bool token, char *err)
{
    struct sbuf b;
    sbuf_init(&b, sizeof w->hosts - 1);
    sbuf_adds(&b, "127.0.0.1,localhost,[::1],");
    sbuf_adds(&b, bound);
    sbuf_addc(&b, ',');
    bool listed = false;
    for (const char *p = list ? list : ""; *p;) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, " ,");
        if (n == 0)
            break;
        listed = true;
        if (n == 1 && *p == '*')
            w->any_host = true;
        else {
            sbuf_add(&b, p, n);
            sbuf_addc(&b, ',');
        }
        p += n;
    }
    if (!listed && token && wildcard)
        w->any_host = true;
    int r = b.error;
    size_t len;
    char *s = r < 0 ? NULL : sbuf_steal(&b, &len);
    sbuf_done(&b);
    if (!s) {
        snprintf(err, WEB_ERR_MAX, "http: allowed hosts: %s",
                 r == -EMSGSIZE ? "the list is too long" : "out of memory");
        return r < 0 ? r : -ENOMEM;
    }
    for (size_t i = 0; i < len; i++)
        w->hosts[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    w->hosts[len] = '\0';
    free(s);
    if (w->any_host && !token) {
        snprintf(err, WEB_ERR_MAX,
                 "http: http_allowed_hosts \"*\" needs an auth token (any page could reach this "
                 "daemon through DNS rebinding)");
        return -EPERM;
    }
    return 0;
}

bool web__is_json_type(struct MHD_Connection *c)
{
    static const char json[] = "application/json";
    const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!t || strncasecmp(t, json, sizeof json - 1) != 0)
        return false;
    char next = t[sizeof json - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

bool web__csrf_safe(struct MHD_Connection *c)
{
    if (web__is_json_type(c))
        return true;
    const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Requested-With");
    return x && x[0];
}

static int first_call_seen; /* its address marks a GET or HEAD past its first call, */
static int delete_seen;     /* this one a DELETE, */
static int too_many_params; /* this one a request with over WEB_QUERY_PARAMS_MAX query parameters
                             * (on_uri), */
static int analysis_seen;   /* and this one a GET whose analysis runs on its own thread
                             * (routes_summary.c); any other non-NULL con_cls is a POST body
                             * being gathered (captures.c) */

static bool is_post(void *con_cls)
{
    return con_cls && con_cls != &first_call_seen && con_cls != &delete_seen &&
           con_cls != &too_many_params && con_cls != &analysis_seen;
}

/* MHD calls this with the request target as sent, before it splits the query into its
 * connection's memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT): a record per parameter, and
 * libmicrohttpd 0.9.75, out of pool, closes the connection without any answer (500 parameters
 * did that at the default 32 KiB). No route takes more than a few parameters, so past
 * WEB_QUERY_PARAMS_MAX the query's '&' become ';' in place, making it one parameter MHD can
 * hold, and the request is marked for a 414 from the access handler. uri points into MHD's own
 * read buffer, which it writes itself (it cuts the query off at '?' right after this call). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    char *q = strchr(uri, '?');
    if (!q)
        return NULL;
    size_t n = 1;
    for (const char *p = q; *p; p++)
        n += *p == '&';
    if (n <= WEB_QUERY_PARAMS_MAX)
        return NULL;
    for (char *p = q; *p; p++)
        if (*p == '&')
            *p = ';';
    return &too_many_params;
}

/* Frees a POST body still held when its request ends (answered, or the client went away). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    if (is_post(*con_cls))
        web__post_free(*con_cls);
    *con_cls = NULL;
    web__guard_completed(cls, c);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    web__guard_notify(cls, c, socket_context, code == MHD_CONNECTION_NOTIFY_STARTED);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct web *w = cls;
    (void)version;
    if (*con_cls == &too_many_params) {
        STATS_ADD(w->stats, http_requests, 1);
        *con_cls = NULL;
        char msg[96];
        snprintf(msg, sizeof msg, "more than %d query parameters", WEB_QUERY_PARAMS_MAX);
        return (enum MHD_Result)web__send_error(w, c, MHD_HTTP_URI_TOO_LONG, "uri_too_long", msg);
    }
    if (!*con_cls) {
        STATS_ADD(w->stats, http_requests, 1);
        if (!host_allowed(w, c))
            return (enum MHD_Result)web__send_error(
                w, c, MHD_HTTP_MISDIRECTED_REQUEST, "misdirected_request",
                "the Host header does not name this daemon (127.0.0.1, localhost, [::1], its "
                "address, or http_allowed_hosts): refused against DNS rebinding");
        /* Before anything else but the Host, so an unauthenticated client learns nothing, not even which
         * methods or paths exist. */
        if (!authorized(w, c, url))
            return (enum MHD_Result)web__send_error(
                w, c, MHD_HTTP_UNAUTHORIZED, "unauthorized",
                "this daemon needs \"Authorization: Bearer <token>\" (its auth_token) or the "
                "session cookie (POST /api/v1/session)");
        /* Other methods are refused at once: answering before the body is read makes MHD drop
         * the body and close the connection afterwards, which suits a request we will not
         * serve. */
        if (strcmp(method, MHD_HTTP_METHOD_POST) == 0)
            return (enum MHD_Result)web__post_begin(w, c, url, con_cls);
        struct web_route r;
        if (strlen(url) > WEB_PATH_MAX || web__route_parse(url, &r) < 0)
            r.id = WEB_ROUTE_API_UNKNOWN;
        const char *allow = web__route_allow(r.id);
        if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0 && r.id == WEB_ROUTE_JOB) {
            if (!web__csrf_safe(c))
                return (enum MHD_Result)web__send_error(
                    w, c, MHD_HTTP_FORBIDDEN, "forbidden",
                    "DELETE needs Content-Type: application/json or X-Requested-With (CSRF)");
            *con_cls = &delete_seen;
            return MHD_YES;
        }
        bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
                   strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
        if (!get || r.id == WEB_ROUTE_LOGIN)
            return (enum MHD_Result)web__send_405(w, c, allow, "see the Allow header");
        /* GET and HEAD are answered on the next call, once the whole request is in: an answer
         * queued on the first call would cost the connection its keep-alive. */
        *con_cls = &first_call_seen;
        return MHD_YES;
    }
    if (*con_cls == &analysis_seen) /* resumed by the analysis thread: its answer */
        return (enum MHD_Result)web__analysis_answer(w, c);
    if (is_post(*con_cls))
        return (enum MHD_Result)web__post_data(w, c, *con_cls, upload_data, upload_data_size);
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* a GET or DELETE with a body: the body is ignored */
        return MHD_YES;
    }
    if (strlen(url) > WEB_PATH_MAX)
        return (enum MHD_Result)web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found",
                                                "path too long");
    struct web_route r;
    int err = web__route_parse(url, &r);
    if (err < 0)
        return (enum MHD_Result)web__send_error(
            w, c, MHD_HTTP_BAD_REQUEST, "bad_request",
            err == -ENAMETOOLONG ? "job: longer than 256 bytes"
                                 : "job: bad percent-encoding or NUL");
    if (r.id == WEB_ROUTE_STATIC)
        return (enum MHD_Result)web__route_static(w, c, url);
    if (*con_cls == &delete_seen)
        return (enum MHD_Result)web__route_delete(w, c, &r);
    int res = web__route_api(w, c, &r);
    if (res == WEB_SUSPENDED) {
        *con_cls = &analysis_seen;
        return MHD_YES;
    }
    return (enum MHD_Result)res;
}

/* Every call of the access handler. The request deadline (guard.c) stops once the request is
 * all in: at the last call (no more body), before the answer is computed, which may take longer
 * than the deadline; or once an answer is queued earlier (a refusal on the first call). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    if (*con_cls && *upload_data_size == 0)
        web__guard_received(cls, c);
    enum MHD_Result r =
        handle(cls, c, url, method, version, upload_data, upload_data_size, con_cls);
    if (r == MHD_YES && MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS))
        web__guard_received(cls, c);
    return r;
}

/* Parses "ADDR:PORT"; ret_host (WEB_HOST_NAME_MAX) gets the address as a Host header names it
 * ("[v6]" bracketed), ret_wildcard whether it is 0.0.0.0 or [::]. */
static int parse_addr(const char *http, union web_addr *ret_addr, socklen_t *ret_len,
                      char *ret_host, bool *ret_wildcard, char *err)
{
    char host[128];
    uint16_t port;
    union web_addr a;
    memset(&a, 0, sizeof a);
    if (config_parse_hostport(http, host, sizeof host, &port) < 0) {
        snprintf(err, WEB_ERR_MAX, "http: \"%.64s\" is not ADDR:PORT", http);
        return -EINVAL;
    }
    if (inet_pton(AF_INET, host, &a.in4.sin_addr) == 1) {
        a.in4.sin_family = AF_INET;
        a.in4.sin_port = htons(port);
        *ret_len = sizeof a.in4;
        snprintf(ret_host, WEB_HOST_NAME_MAX, "%s", host);
        *ret_wildcard = a.in4.sin_addr.s_addr == htonl(INADDR_ANY);
    } else if (inet_pton(AF_INET6, host, &a.in6.sin6_addr) == 1) {
        a.in6.sin6_family = AF_INET6;
        a.in6.sin6_port = htons(port);
        *ret_len = sizeof a.in6;
        snprintf(ret_host, WEB_HOST_NAME_MAX, "[%s]", host);
        *ret_wildcard = IN6_IS_ADDR_UNSPECIFIED(&a.in6.sin6_addr);
    } else {
        snprintf(err, WEB_ERR_MAX, "http: \"%.64s\" is not an IPv4 or IPv6 address", host);
        return -EINVAL;
    }
    *ret_addr = a;
    return 0;
}

/* MHD_start_daemon() says only "failed", so bind once ourselves first: a taken port or an
 * address this host does not have comes back as its own errno. The probe socket is closed
 * before MHD binds; if another process takes the port in between, MHD's failure comes back as
 * -EIO with the generic message. */
static int probe_bind(const union web_addr *a, socklen_t len, const char *http, char *err)
{
    int fd = socket(a->sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int r = -errno;
        snprintf(err, WEB_ERR_MAX, "http: socket: %s", strerror(-r));
        return r;
    }
    int on = 1;
    /* MHD sets SO_REUSEADDR on its listen socket; the probe must judge the same way. */
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (a->sa.sa_family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    int r = 0;
    if (bind(fd, &a->sa, len) < 0) {
        r = -errno;
        snprintf(err, WEB_ERR_MAX, "http: cannot bind %.64s: %s", http, strerror(-r));
    }
    close(fd);
    return r;
}

int web_start(const struct web_config *cfg, struct web **ret_web, char *err)
{
    int r = -ENOMEM;
    union web_addr addr;
    socklen_t addr_len;
    struct web *w = NULL;
    err[0] = '\0';
    if (!cfg->http || !cfg->stats) {
        snprintf(err, WEB_ERR_MAX, "http: missing address or stats");
        return -EINVAL;
    }
    char bound[WEB_HOST_NAME_MAX];
    bool wildcard = false;
    r = parse_addr(cfg->http, &addr, &addr_len, bound, &wildcard, err);
    if (r < 0)
        return r;
    size_t token_len = cfg->auth_token ? strlen(cfg->auth_token) : 0;
    if (token_len >= WEB_TOKEN_MAX) {
        snprintf(err, WEB_ERR_MAX, "http: auth token longer than %d bytes", WEB_TOKEN_MAX - 1);
        return -EINVAL;
    }
    if (token_len == 0 && !config_http_is_loopback(cfg->http)) {
        snprintf(err, WEB_ERR_MAX,
                 "http: %.64s is not a loopback address; serving it needs an auth token "
                 "(auth_token or auth_token_file)", cfg->http);
        return -EPERM;
    }
    r = probe_bind(&addr, addr_len, cfg->http, err);
    if (r < 0)
        return r;

    r = -ENOMEM;
    w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(err, WEB_ERR_MAX, "http: out of memory");
        goto fail;
    }
    if (web__analyses_init(w) < 0) {
        snprintf(err, WEB_ERR_MAX, "http: out of memory");
        goto fail;
    }
    w->store = cfg->store;
    w->live = cfg->live;
    if (cfg->captures) {
        w->has_captures = true;
        w->captures = *cfg->captures;
    }
    if (w->live && web__cache_new(&w->cache) < 0) {
        snprintf(err, WEB_ERR_MAX, "http: out of memory");
        goto fail;
    }
    w->max_line_bytes = cfg->max_line_bytes;
    if (cfg->helper_rules)
        w->helper_rules = *cfg->helper_rules;
    else
        analyse_helper_rules_default(&w->helper_rules);
    w->stats = cfg->stats;
    if (token_len)
        memcpy(w->auth_token, cfg->auth_token, token_len + 1);
    w->auth_token_len = token_len;
    r = hosts_init(w, bound, wildcard, cfg->allowed_hosts, token_len > 0, err);
    if (r < 0)
        goto fail;
    r = -ENOMEM;
    for (size_t i = 0; i < token_len; i++)
        snprintf(w->auth_cookie + 2 * i, 3, "%02x", (unsigned char)cfg->auth_token[i]);
    if (cfg->jobs) {
        w->has_jobs = true;
        w->jobs = *cfg->jobs;
    }
    w->metrics_max_ranks = cfg->metrics_max_ranks;
    w->exports_max = cfg->max_exports ? cfg->max_exports : 32;
    w->analyses_max = cfg->threads > 1 ? cfg->threads - 1 : 1;
    w->analysis_timeout_ns = (int64_t)(cfg->analysis_timeout_ms ? cfg->analysis_timeout_ms : 30000) *
                             1000000;
    w->max_response_bytes = cfg->max_response_bytes ? cfg->max_response_bytes : SIZE_MAX / 2;
    snprintf(w->version, sizeof w->version, "%s", cfg->version ? cfg->version : "");
    snprintf(w->instance, sizeof w->instance, "%s", cfg->instance ? cfg->instance : "");
    snprintf(w->socket, sizeof w->socket, "%s", cfg->socket ? cfg->socket : "");
    if (cfg->static_dir && cfg->static_dir[0]) {
        if (!realpath(cfg->static_dir, w->static_root)) {
            /* The API stays useful without the dashboard: serve no files, say so once. */
            log_warn("http: static_dir %s: %s; serving no dashboard", cfg->static_dir,
                     strerror(errno));
            w->static_root[0] = '\0';
        }
        w->static_root_len = strlen(w->static_root);
    }

    /* Suspend/resume: /api/v1/events parks idle streams (events.c). */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    flags |= MHD_is_feature_supported(MHD_FEATURE_EPOLL) == MHD_YES ? MHD_USE_EPOLL
                                                                    : MHD_USE_POLL;
    if (addr.sa.sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned threads = cfg->threads ? cfg->threads : 1;
    /* Zero limits mean "MHD's default", so those options are left out; one thread is MHD's
     * own polling thread, more make a pool. */
    struct MHD_OptionItem opts[5];
    size_t n_opts = 0;
    if (cfg->max_connections)
        opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT,
                                                 (intptr_t)cfg->max_connections, NULL};
    /* Past it MHD closes a new connection from that address at once, before any byte is read. */
    if (cfg->max_connections_per_ip)
        opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                                 (intptr_t)cfg->max_connections_per_ip, NULL};
    if (cfg->timeout_s)
        opts[n_opts++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT,
                                                 (intptr_t)cfg->timeout_s, NULL};
    if (threads > 1)
        opts[n_opts++] =
            (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    opts[n_opts] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    if (w->live && web__events_start(w, WEB_EVENTS_MAX_STREAMS) < 0) {
        r = -ENOMEM;
        snprintf(err, WEB_ERR_MAX, "http: cannot start the event stream");
        goto fail;
    }
    if (cfg->request_timeout_s && web__guard_start(&w->guard, cfg->request_timeout_s,
                                                   w->stats) < 0) {
        r = -ENOMEM;
        snprintf(err, WEB_ERR_MAX, "http: cannot start the request deadline's thread");
        goto fail;
    }
    w->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, w,
                              MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)NULL,
                              MHD_OPTION_SOCK_ADDR, &addr.sa,
                              MHD_OPTION_UNESCAPE_CALLBACK, on_unescape, (void *)NULL,
                              MHD_OPTION_URI_LOG_CALLBACK, on_uri, (void *)NULL,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)w,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, (void *)w,
                              MHD_OPTION_ARRAY, opts,
                              MHD_OPTION_END);
    if (!w->mhd) {
        r = -EIO;
        snprintf(err, WEB_ERR_MAX, "http: cannot start the HTTP server on %.64s", cfg->http);
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(w->mhd, MHD_DAEMON_INFO_BIND_PORT);
    w->port = info ? info->port : 0;
    *ret_web = w;
    return 0;
fail:
    web_stop(w);
    return r;
}

uint16_t web_port(const struct web *w)
{
    return w->port;
}

void web_stop(struct web *w)
{
    if (!w)
        return;
    web__events_quiesce(w);
    web__analyses_stop(w);
    web__guard_stop_thread(w->guard);
    if (w->mhd)
        MHD_stop_daemon(w->mhd);
    web__analyses_free(w);
    web__guard_free(w->guard); /* MHD's CLOSED notifications have emptied it */
    explicit_bzero(w->auth_token, sizeof w->auth_token);
    explicit_bzero(w->auth_cookie, sizeof w->auth_cookie);
    web__cache_free(w->cache); /* after the threads: no answer is being queued any more */
    web__events_free(w);
    free(w);
}
