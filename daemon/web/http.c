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
 * The routes (routes.h) never see libmicrohttpd: each fills a struct web_answer (answer.h) and
 * every answer leaves through respond() here, which turns it into an MHD response, adds the
 * headers all answers carry, counts the errors and keeps the answers the cache may serve again
 * (cache.h), so no handler can forget any of it. This is the one file that includes
 * <microhttpd.h>: the request and connection accessors of answer.h (query arguments, headers,
 * parking a connection) and guard.c's sockets are implemented here too. Handlers run on MHD's
 * threads and only read: the store through store_query.h, the counters with relaxed atomic
 * loads.
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
#include "answer.h"
#include "cache.h"
#include "events.h"
#include "guard.h"
#include "routes.h"
#include "server.h"

#define WEB_QUERY_PARAMS_MAX 64 /* more: 414 (on_uri()) */

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

/* ---- the request, as routes read it (answer.h) ---- */

/* What the access handler's call for a request is about (the request's state between calls). */
enum web_req_kind {
    WEB_REQ_NEW,             /* its first call */
    WEB_REQ_TOO_MANY_PARAMS, /* over WEB_QUERY_PARAMS_MAX query parameters (on_uri): 414 */
    WEB_REQ_GET,             /* a GET or HEAD past its first call */
    WEB_REQ_DELETE,          /* a DELETE past its first call */
    WEB_REQ_POST,            /* a POST whose body is being gathered */
    WEB_REQ_PARKED,          /* a GET whose analysis runs on its own thread (routes_summary.c) */
};

/* One request: MHD's per-request context (con_cls), created by on_uri() and freed by
 * on_completed(). */
struct web_req {
    enum web_req_kind kind;
    struct MHD_Connection *c;
    struct web_route route; /* POST: its route */
    char *body;             /* POST: WEB_POST_BODY_MAX bytes, body_len of them received */
    size_t body_len;
    bool too_big;           /* the body passed WEB_POST_BODY_MAX: the rest is skipped, 413 */
};

static struct web_req *req_new(void)
{
    return calloc(1, sizeof(struct web_req));
}

static void req_free(struct web_req *q)
{
    if (!q)
        return;
    free(q->body);
    free(q);
}

int web__req_arg(const struct web_req *q, const char *name, const char **ret_v, size_t *ret_n)
{
    return MHD_lookup_connection_value_n(q->c, MHD_GET_ARGUMENT_KIND, name, strlen(name), ret_v,
                                         ret_n) == MHD_YES;
}

struct args_each {
    void (*fn)(void *ud, const char *key, size_t key_len, const char *value, size_t value_len);
    void *ud;
};

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                              size_t key_size, const char *value, size_t value_size)
{
    struct args_each *x = cls;
    (void)kind;
    x->fn(x->ud, key, key_size, value, value_size);
    return MHD_YES;
}

void web__req_args_each(const struct web_req *q,
                        void (*fn)(void *ud, const char *key, size_t key_len, const char *value,
                                   size_t value_len),
                        void *ud)
{
    struct args_each x = {fn, ud};
    MHD_get_connection_values_n(q->c, MHD_GET_ARGUMENT_KIND, on_arg, &x);
}

const char *web__req_header(const struct web_req *q, const char *name)
{
    return MHD_lookup_connection_value(q->c, MHD_HEADER_KIND, name);
}

bool web__req_is_json(const struct web_req *q)
{
    static const char json[] = "application/json";
    const char *t = web__req_header(q, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!t || strncasecmp(t, json, sizeof json - 1) != 0)
        return false;
    char next = t[sizeof json - 1];
    return next == '\0' || next == ';' || next == ' ' || next == '\t';
}

/* A struct web_conn is the MHD connection itself, under a name the routes may hold. */
struct web_conn *web__req_conn(const struct web_req *q)
{
    return (struct web_conn *)q->c;
}

void web__conn_park(struct web_conn *c)
{
    MHD_suspend_connection((struct MHD_Connection *)c);
}

void web__conn_wake(struct web_conn *c)
{
    MHD_resume_connection((struct MHD_Connection *)c);
}

int web__conn_fd(struct web_conn *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info((struct MHD_Connection *)c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

/* ---- answers into responses: the one place ---- */

static ssize_t on_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    const struct web_stream *s = cls;
    (void)pos; /* MHD reads in order; the position is the stream's */
    ssize_t n = s->read(s->ctx, buf, max);
    if (n == WEB_STREAM_END)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == WEB_STREAM_ERROR)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void on_stream_free(void *cls)
{
    struct web_stream *s = cls;
    if (s->free)
        s->free(s->ctx);
    free(s);
}

/* The response of a, taking its body; NULL when MHD has no memory (a keeps what it owned). */
static struct MHD_Response *build(struct web_answer *a)
{
    struct MHD_Response *resp = NULL;
    switch (a->body) {
    case WEB_BODY_NONE:
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        break;
    case WEB_BODY_BYTES:
        resp = MHD_create_response_from_buffer(a->len, a->bytes, MHD_RESPMEM_MUST_FREE);
        if (resp)
            a->bytes = NULL;
        break;
    case WEB_BODY_STREAM: {
        struct web_stream *s = malloc(sizeof *s);
        if (!s)
            break;
        *s = a->stream;
        resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, s->block, on_stream_read, s,
                                                 on_stream_free);
        if (resp)
            a->stream = (struct web_stream){0};
        else
            free(s);
        break;
    }
    case WEB_BODY_FILE:
        resp = MHD_create_response_from_fd64(a->file_size, a->fd);
        if (resp)
            a->fd = -1; /* MHD closes it */
        break;
    }
    if (!resp)
        return NULL;
    if (a->type)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
    if (a->cache_control)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, a->cache_control);
    for (size_t i = 0; i < a->n_headers; i++)
        MHD_add_response_header(resp, a->headers[i].name, a->hbuf + a->headers[i].value);
    if (a->status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, a->allow ? a->allow : "GET, HEAD");
    if (a->status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    if (a->status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer realm=\"stepscope\"");
    /* Every answer carries it; a kept response too, since it was added here once. */
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    return resp;
}

/* Queues a (always consumed), counting status >= 400 in http_errors. key (NULL: none) is the
 * request's cache key: a 200 bytes answer that may be kept is kept under it (cache.h). */
static enum MHD_Result respond(struct web *w, struct MHD_Connection *c, struct web_answer *a,
                               const char *key, size_t key_len)
{
    if (a->status >= 400)
        STATS_ADD(w->stats, http_errors, 1);
    if (a->how != WEB_ANSWER_SEND) {
        web__answer_done(a);
        return MHD_NO;
    }
    bool keep = key && a->keep && w->cache && a->status == MHD_HTTP_OK &&
                a->body == WEB_BODY_BYTES && web__cache_fits(w->cache, a->len, key_len);
    bool streamed = a->body == WEB_BODY_STREAM || a->body == WEB_BODY_FILE;
    struct MHD_Response *resp = build(a);
    if (!resp) {
        web__answer_done(a);
        if (!streamed)
            return MHD_NO;
        web__error(a, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
        return respond(w, c, a, NULL, 0);
    }
    enum MHD_Result r = MHD_queue_response(c, a->status, resp);
    web__answer_done(a);
    /* The cache takes the creation reference; the queued one is the connection's. */
    struct web_cache_from from = {a->job_id, a->serial, a->stored, a->commits};
    if (keep && web__cache_keep(w->cache, key, key_len, &from, resp, a->len))
        STATS_ADD(w->stats, http_cache_misses, 1);
    else if (!keep)
        MHD_destroy_response(resp);
    return r;
}

static void release_response(void *val)
{
    MHD_destroy_response(val);
}

struct cache_hit {
    struct MHD_Connection *c;
    enum MHD_Result r;
};

static void queue_kept(void *val, void *ud)
{
    struct cache_hit *h = ud;
    h->r = MHD_queue_response(h->c, MHD_HTTP_OK, val);
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

/* The connection's guard entry (guard.h), kept by MHD as its socket context. */
static void *socket_context(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static bool csrf_safe(const struct web_req *q)
{
    if (web__req_is_json(q))
        return true;
    const char *x = web__req_header(q, "X-Requested-With");
    return x && x[0];
}

/* MHD calls this with the request target as sent, before it splits the query into its
 * connection's memory pool (MHD_OPTION_CONNECTION_MEMORY_LIMIT): a record per parameter, and
 * libmicrohttpd 0.9.75, out of pool, closes the connection without any answer (500 parameters
 * did that at the default 32 KiB). No route takes more than a few parameters, so past
 * WEB_QUERY_PARAMS_MAX the query's '&' become ';' in place, making it one parameter MHD can
 * hold, and the request is marked for a 414 from the access handler. uri points into MHD's own
 * read buffer, which it writes itself (it cuts the query off at '?' right after this call).
 *
 * Why in MHD's buffer: 0.9.75 offers no other hook between the request line and the split (no
 * option bounds the parameters, and a larger pool only lets a longer line in: a parameter costs
 * its record, about 28 times the two bytes "&a" that make one, so no pool size holds every line
 * that fits it). The write stays inside the query MHD is about to split, and changes only what
 * that split yields for a request answered 414 anyway.
 *
 * The request's context (struct web_req) is created here, since MHD calls this first for every
 * request and hands its result to the access handler and on_completed(). */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    struct web_req *q = req_new();
    if (q)
        q->c = c;
    char *p = strchr(uri, '?');
    if (!p)
        return q;
    size_t n = 1;
    for (const char *s = p; *s; s++)
        n += *s == '&';
    if (n <= WEB_QUERY_PARAMS_MAX)
        return q;
    for (char *s = p; *s; s++)
        if (*s == '&')
            *s = ';';
    if (q)
        q->kind = WEB_REQ_TOO_MANY_PARAMS;
    return q;
}

/* Frees the request's context when it ends (answered, or the client went away). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct web *w = cls;
    (void)toe;
    req_free(*con_cls);
    *con_cls = NULL;
    if (w->guard)
        web__guard_completed(w->guard, socket_context(c));
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct web *w = cls;
    if (!w->guard)
        return;
    int fd = -1;
    bool started = code == MHD_CONNECTION_NOTIFY_STARTED;
    if (started) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return; /* unguarded: still served, closed by the idle timeout only */
        fd = ci->connect_fd;
    }
    web__guard_notify(w->guard, fd, socket_context, started);
}

/* The first call of a request: the Host, the token, the method. Answers a refusal, or says what
 * the next calls are (q->kind). */
static enum MHD_Result first_call(struct web *w, struct web_req *q, const char *url,
                                  const char *method)
{
    struct MHD_Connection *c = q->c;
    struct web_answer a;
    web__answer_init(&a);
    STATS_ADD(w->stats, http_requests, 1);
    if (!host_allowed(w, c)) {
        web__error(&a, MHD_HTTP_MISDIRECTED_REQUEST, "misdirected_request",
                   "the Host header does not name this daemon (127.0.0.1, localhost, [::1], its "
                   "address, or http_allowed_hosts): refused against DNS rebinding");
        return respond(w, c, &a, NULL, 0);
    }
    /* Before anything else but the Host, so an unauthenticated client learns nothing, not even
     * which methods or paths exist. */
    if (!authorized(w, c, url)) {
        web__error(&a, MHD_HTTP_UNAUTHORIZED, "unauthorized",
                   "this daemon needs \"Authorization: Bearer <token>\" (its auth_token) or the "
                   "session cookie (POST /api/v1/session)");
        return respond(w, c, &a, NULL, 0);
    }
    /* Other methods are refused at once: answering before the body is read makes MHD drop the
     * body and close the connection afterwards, which suits a request we will not serve. */
    if (strcmp(method, MHD_HTTP_METHOD_POST) == 0) {
        if (web__post_check(q, url, &q->route, &a) < 0)
            return respond(w, c, &a, NULL, 0);
        if (!(q->body = malloc(WEB_POST_BODY_MAX))) {
            web__error(&a, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
            return respond(w, c, &a, NULL, 0);
        }
        q->kind = WEB_REQ_POST;
        return MHD_YES;
    }
    struct web_route r;
    if (strlen(url) > WEB_PATH_MAX || web__route_parse(url, &r) < 0)
        r.id = WEB_ROUTE_API_UNKNOWN;
    if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0 && r.id == WEB_ROUTE_JOB) {
        if (!csrf_safe(q)) {
            web__error(&a, MHD_HTTP_FORBIDDEN, "forbidden",
                       "DELETE needs Content-Type: application/json or X-Requested-With (CSRF)");
            return respond(w, c, &a, NULL, 0);
        }
        q->kind = WEB_REQ_DELETE;
        return MHD_YES;
    }
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
               strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (!get || r.id == WEB_ROUTE_LOGIN || r.id == WEB_ROUTE_CAPTURE_CANCEL) {
        web__error_405(&a, web__route_allow(r.id), "see the Allow header");
        return respond(w, c, &a, NULL, 0);
    }
    /* GET and HEAD are answered on the next call, once the whole request is in: an answer
     * queued on the first call would cost the connection its keep-alive. */
    q->kind = WEB_REQ_GET;
    return MHD_YES;
}

/* Whether request q of route r may be answered from the cache and keep its answer there: its key
 * is then in key. */
static bool cache_key(struct web *w, const struct web_req *q, const struct web_route *r, char *key,
                      size_t size, size_t *ret_len)
{
    return w->store && w->cache &&
           (web__route_cached(r->id) || web__route_store_cached(r->id)) &&
           web__cache_key(q, r, key, size, ret_len) == 0;
}

/* A GET, HEAD or DELETE once the whole request is in. */
static enum MHD_Result answer(struct web *w, struct web_req *q, const char *url)
{
    struct MHD_Connection *c = q->c;
    struct web_answer a;
    web__answer_init(&a);
    if (strlen(url) > WEB_PATH_MAX) {
        web__error(&a, MHD_HTTP_NOT_FOUND, "not_found", "path too long");
        return respond(w, c, &a, NULL, 0);
    }
    struct web_route r;
    int err = web__route_parse(url, &r);
    if (err < 0) {
        web__error(&a, MHD_HTTP_BAD_REQUEST, "bad_request",
                   err == -ENAMETOOLONG ? "job: longer than 256 bytes"
                                        : "job: bad percent-encoding or NUL");
        return respond(w, c, &a, NULL, 0);
    }
    if (r.id == WEB_ROUTE_STATIC) {
        web__route_static(w, url, &a);
        return respond(w, c, &a, NULL, 0);
    }
    if (q->kind == WEB_REQ_DELETE) {
        web__route_delete(w, &r, &a);
        return respond(w, c, &a, NULL, 0);
    }
    /* A live route's answer is served again while the job's snapshot is unchanged, a store-read
     * route's while moreover the store committed nothing since (cache.h). */
    char key[WEB_CACHE_KEY_MAX];
    size_t key_len = 0;
    bool cached = cache_key(w, q, &r, key, sizeof key, &key_len);
    if (cached) {
        struct cache_hit hit = {c, MHD_NO};
        if (web__cache_use(w->cache, w->live, w->store, key, key_len, queue_kept, &hit)) {
            STATS_ADD(w->stats, http_cache_hits, 1);
            return hit.r;
        }
    }
    web__route_api(w, q, &r, &a);
    if (a.how == WEB_ANSWER_PARKED) {
        q->kind = WEB_REQ_PARKED;
        return MHD_YES;
    }
    return respond(w, c, &a, cached ? key : NULL, key_len);
}

static enum MHD_Result handle(struct web *w, struct web_req *q, const char *url,
                              const char *method, const char *upload_data,
                              size_t *upload_data_size)
{
    struct web_answer a;
    switch (q->kind) {
    case WEB_REQ_TOO_MANY_PARAMS: {
        STATS_ADD(w->stats, http_requests, 1);
        q->kind = WEB_REQ_NEW;
        char msg[96];
        snprintf(msg, sizeof msg, "more than %d query parameters", WEB_QUERY_PARAMS_MAX);
        web__answer_init(&a);
        web__error(&a, MHD_HTTP_URI_TOO_LONG, "uri_too_long", msg);
        return respond(w, q->c, &a, NULL, 0);
    }
    case WEB_REQ_NEW:
        return first_call(w, q, url, method);
    case WEB_REQ_PARKED: { /* woken by the analysis thread: its answer, kept if it may be */
        web__answer_init(&a);
        web__analysis_answer(w, q, &a);
        struct web_route r;
        char key[WEB_CACHE_KEY_MAX];
        size_t key_len = 0;
        bool cached = strlen(url) <= WEB_PATH_MAX && web__route_parse(url, &r) == 0 &&
                      cache_key(w, q, &r, key, sizeof key, &key_len);
        return respond(w, q->c, &a, cached ? key : NULL, key_len);
    }
    case WEB_REQ_POST:
        if (*upload_data_size == 0) {
            web__answer_init(&a);
            web__route_post(w, &q->route, q->body, q->body_len, q->too_big, &a);
            return respond(w, q->c, &a, NULL, 0);
        }
        if (q->too_big || *upload_data_size > WEB_POST_BODY_MAX - q->body_len)
            q->too_big = true;
        else {
            memcpy(q->body + q->body_len, upload_data, *upload_data_size);
            q->body_len += *upload_data_size;
        }
        *upload_data_size = 0;
        return MHD_YES;
    case WEB_REQ_GET:
    case WEB_REQ_DELETE:
        break;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* a GET or DELETE with a body: the body is ignored */
        return MHD_YES;
    }
    return answer(w, q, url);
}

/* Every call of the access handler. The request deadline (guard.c) stops once the request is
 * all in: at the last call (no more body), before the answer is computed, which may take longer
 * than the deadline; or once an answer is queued earlier (a refusal on the first call). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
    struct web *w = cls;
    (void)version;
    struct web_req *q = *con_cls;
    if (!q) { /* on_uri() had no memory for it */
        if (!(q = req_new()))
            return MHD_NO;
        q->c = c;
        *con_cls = q;
    }
    if (w->guard && q->kind != WEB_REQ_NEW && *upload_data_size == 0)
        web__guard_received(w->guard, socket_context(c));
    enum MHD_Result r = handle(w, q, url, method, upload_data, upload_data_size);
    if (w->guard && r == MHD_YES && MHD_get_connection_info(c, MHD_CONNECTION_INFO_HTTP_STATUS))
        web__guard_received(w->guard, socket_context(c));
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
    if (w->live && web__cache_new(&w->cache, cfg->cache_max_bytes, cfg->stats, release_response) < 0) {
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
    w->analysis_max_bytes = cfg->analysis_max_bytes ? cfg->analysis_max_bytes : (size_t)1 << 30;
    w->max_response_bytes = cfg->max_response_bytes ? cfg->max_response_bytes : SIZE_MAX / 2;
    snprintf(w->version, sizeof w->version, "%s", cfg->version ? cfg->version : "");
    snprintf(w->instance, sizeof w->instance, "%s", cfg->instance ? cfg->instance : "");
    snprintf(w->socket, sizeof w->socket, "%s", cfg->socket ? cfg->socket : "");
    snprintf(w->node, sizeof w->node, "%s", cfg->node ? cfg->node : "");
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
