/* SPDX-License-Identifier: MIT */
/*
 * answer: what a route gives back, and the request it reads. No libmicrohttpd here.
 *
 * A route fills one struct web_answer: a status, a Content-Type, the few headers it needs, and a
 * body that is either bytes (a rendered document), a stream (a callback that produces the body as
 * the client reads: the CSV tables, the timeline export, the event stream) or a file (a
 * dashboard file). http.c, and only http.c, turns the answer into a libmicrohttpd response, adds
 * the headers every answer carries, counts the errors and keeps the answers the cache may serve
 * again (cache.h). A route never queues anything and never sees a connection.
 *
 * A route reads its request through struct web_req (http.c owns it): query arguments as sent
 * (web__req_arg(), or checked by the web__param_*() helpers, which answer 400 naming the bad
 * parameter), and headers. The two routes that outlive their call (the event stream, whose stream
 * parks its connection while there is nothing to send, and the summaries, computed on a thread of
 * their own) hold a struct web_conn and park or wake it through http.c.
 *
 * Ownership: the answer owns its body (bytes, the stream's ctx, the fd) until http.c takes it;
 * web__answer_done() frees what was not taken. Builders that take an sbuf take its bytes.
 */
#ifndef STEPSCOPE_WEB_ANSWER_H
#define STEPSCOPE_WEB_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../../lib/log.h"
#include "../../lib/sbuf.h"
#include "render.h"

struct web;

/* The statuses the server answers. */
enum web_status {
    WEB_HTTP_OK = 200,
    WEB_HTTP_CREATED = 201,
    WEB_HTTP_NO_CONTENT = 204,
    WEB_HTTP_BAD_REQUEST = 400,
    WEB_HTTP_UNAUTHORIZED = 401,
    WEB_HTTP_FORBIDDEN = 403,
    WEB_HTTP_NOT_FOUND = 404,
    WEB_HTTP_METHOD_NOT_ALLOWED = 405,
    WEB_HTTP_CONFLICT = 409,
    WEB_HTTP_CONTENT_TOO_LARGE = 413,
    WEB_HTTP_URI_TOO_LONG = 414,
    WEB_HTTP_UNSUPPORTED_MEDIA_TYPE = 415,
    WEB_HTTP_MISDIRECTED_REQUEST = 421,
    WEB_HTTP_TOO_MANY_REQUESTS = 429,
    WEB_HTTP_INTERNAL_SERVER_ERROR = 500,
    WEB_HTTP_SERVICE_UNAVAILABLE = 503,
};

#define WEB_ERROR_BODY_MAX 4096 /* an error document always fits in this */
#define WEB_CHUNK 65536         /* bytes per block a streamed answer hands the server */

/* What a stream's read() returns besides a byte count (> 0). 0 means nothing now: the stream
 * has parked its connection (web__conn_park()) and wakes it when it has more. */
#define WEB_STREAM_END ((ssize_t)-1)   /* the body is complete */
#define WEB_STREAM_ERROR ((ssize_t)-2) /* cut short: the client sees a truncated body */

/* A body produced as the client reads. read() fills buf[0, max) in order; free(ctx) runs once,
 * when the answer is done or abandoned (or was never sent). block: bytes asked per read(). */
struct web_stream {
    ssize_t (*read)(void *ctx, char *buf, size_t max);
    void (*free)(void *ctx);
    void *ctx;
    size_t block;
};

enum web_body {
    WEB_BODY_NONE,   /* no body (204) */
    WEB_BODY_BYTES,  /* body[0, len), malloc'd */
    WEB_BODY_STREAM, /* stream */
    WEB_BODY_FILE,   /* fd, file_size bytes from offset 0 */
};

enum web_answer_how {
    WEB_ANSWER_SEND,    /* send it */
    WEB_ANSWER_CLOSE,   /* no answer: close the connection (a client that hung up, or no memory
                           for even an error); status still counts as an error when >= 400 */
    WEB_ANSWER_PARKED,  /* not yet: the connection is parked and the route answers when it is
                           woken (the summaries' analysis thread; http.c calls
                           web__analysis_answer()) */
};

#define WEB_ANSWER_HEADERS_MAX 4
#define WEB_ANSWER_HEADER_BYTES 768

struct web_answer {
    enum web_answer_how how;
    unsigned status;
    const char *type;          /* Content-Type; NULL: none */
    const char *cache_control; /* Cache-Control; NULL: none */
    const char *allow;         /* a 405's Allow; NULL: "GET, HEAD" */
    /* Further headers in the order added (web__answer_header()); values in hbuf. */
    size_t n_headers;
    struct {
        const char *name;
        size_t value;      /* offset in hbuf */
    } headers[WEB_ANSWER_HEADERS_MAX];
    char hbuf[WEB_ANSWER_HEADER_BYTES];
    size_t hbuf_len;
    enum web_body body;
    char *bytes;
    size_t len;
    struct web_stream stream;
    int fd;
    uint64_t file_size;
    /* The answer cache: a live route that answered from one snapshot sets keep, the job and the
     * snapshot's serial; http.c keeps a 200 bytes answer of a cacheable request under them. A
     * store-read route (routes_summary.c) also sets stored and the store's commit count taken
     * before it read (store_query_commits()): its answer is kept under both (cache.h). */
    bool keep;
    int64_t job_id;
    uint64_t serial;
    bool stored;
    uint64_t commits;
};

/* An empty answer: 500 with no body, to be filled. */
void web__answer_init(struct web_answer *a);
/* Frees what the answer still owns (bytes, stream, fd) and wipes its header values. */
void web__answer_done(struct web_answer *a);
/* Adds header name (static storage) with a printf value. Returns 0, or -EMSGSIZE when it does
 * not fit (the header is left out). */
int web__answer_header(struct web_answer *a, const char *name, const char *fmt, ...)
    SS_PRINTF(3, 4);

/* {"error":{"code","message"}} with status. message may be NULL (the code is repeated). These
 * builders return 0, so a route can `return web__error(a, ...)`. */
int web__error(struct web_answer *a, unsigned status, const char *code, const char *message);
/* 405 method_not_allowed with "Allow: allow" (allow has static storage). */
int web__error_405(struct web_answer *a, const char *allow, const char *message);
/* The error matching a negative errno from store_query_*: -ENOENT 404 not_found, -EBUSY/-EAGAIN
 * 503 busy, -ENOMEM and others 500 internal (logged, rate-limited). what names the query. */
int web__store_error(struct web_answer *a, int r, const char *what);

/* A document built in b (its bytes are taken; b is left empty): status with Content-Type type,
 * Cache-Control no-store, and Content-Disposition when disposition is not NULL. A failed b
 * becomes 413 response_too_large (-EMSGSIZE, naming w's max_response_bytes) or 500 internal. */
int web__doc(struct web *w, struct web_answer *a, unsigned status, struct sbuf *b,
             const char *type, const char *disposition);
int web__json(struct web *w, struct web_answer *a, unsigned status, struct sbuf *b);
int web__csv(struct web *w, struct web_answer *a, struct sbuf *b);

/* b as a 200 in fmt: text/csv, text/plain (TEXT) or application/json. */
int web__doc_fmt(struct web *w, struct web_answer *a, struct sbuf *b, enum web_format fmt);

/* A table answered row by row (CSV or records), streamed: rows [offset, offset + n) of total.
 * row() appends row i (0 <= i < n, asked in order) in fmt: a CSV line with its '\n', or one JSON
 * object. free(ctx) runs when the answer is done or abandoned. */
struct web_rows {
    enum web_format fmt;     /* WEB_FORMAT_CSV or WEB_FORMAT_RECORDS */
    const char *csv_header;  /* the CSV header line, '\n' included */
    size_t n, offset, total;
    void (*row)(struct sbuf *b, enum web_format fmt, void *ctx, size_t i);
    void *ctx;
    void (*free)(void *ctx);
};

/* rows as a stream (no Content-Length), rendered a chunk (WEB_CHUNK bytes) at a time as the
 * client reads, so no answer is ever whole in memory; it takes one of http_max_exports (503 busy
 * past them, released when the stream is freed). Headers: X-Total-Count (total), and when the
 * rows are not all of them, X-Stepscope-Truncated "rows A-B of N". rows->free(ctx) is called in
 * every case. */
int web__rows(struct web *w, struct web_answer *a, const struct web_rows *rows);

/* Takes one of http_max_exports for a stream: true, or false with a 503 busy answer in a (what
 * names the streams in its message) and the refusal counted. web__export_put() gives it back. */
bool web__export_take(struct web *w, struct web_answer *a, const char *what);
void web__export_put(struct web *w);

/* The read() of a stream that renders its body a chunk at a time into out: hands out
 * out.data[*pos, out.len) and, once it is drained, has produce(ctx) render the next chunk (1),
 * say the body is complete (0) or fail (negative: WEB_STREAM_ERROR, the client sees a cut). */
ssize_t web__chunks_read(struct sbuf *out, size_t *pos, char *buf, size_t max,
                         int (*produce)(void *ctx), void *ctx);

/* ---- the request, as a route reads it (http.c implements these) ---- */

struct web_req;  /* one request being answered */
struct web_conn; /* its connection, for a route that parks it */

/* Query argument name as sent (not decoded): 1 with *ret_v (NULL for "?name" without '=') and
 * *ret_n, or 0 when absent. */
int web__req_arg(const struct web_req *q, const char *name, const char **ret_v, size_t *ret_n);
/* Calls fn for every query argument in the order sent (value NULL for "?name"). */
void web__req_args_each(const struct web_req *q,
                        void (*fn)(void *ud, const char *key, size_t key_len, const char *value,
                                   size_t value_len),
                        void *ud);
/* Request header name (any case), or NULL. */
const char *web__req_header(const struct web_req *q, const char *name);
/* True when the request carries "Content-Type: application/json" (parameters allowed, any
 * case). */
bool web__req_is_json(const struct web_req *q);

struct web_conn *web__req_conn(const struct web_req *q);
/* Parks c: the server stops polling it until web__conn_wake(). From a route's call (or a
 * stream's read() about to return 0) only. */
void web__conn_park(struct web_conn *c);
/* Wakes a parked c, from any thread. */
void web__conn_wake(struct web_conn *c);
/* c's socket, or -1. */
int web__conn_fd(struct web_conn *c);

/* ---- query parameters, read strictly (request.c) ----
 * Each returns 0 with the value, or -1 with a 400 bad_request naming the parameter in a. */

/* Parameter name percent-decoded into buf (size bytes, NUL-terminated): 0 absent, 1 present
 * (length in *ret_len), -1 answered (empty, too long, bad escape). */
int web__param_str(const struct web_req *q, struct web_answer *a, const char *name, char *buf,
                   size_t size, size_t *ret_len);
/* As web__parse_i64() / web__parse_us() read it; absent gives def. */
int web__param_i64(const struct web_req *q, struct web_answer *a, const char *name, int64_t min,
                   int64_t max, int64_t def, int64_t *ret);
int web__param_us(const struct web_req *q, struct web_answer *a, const char *name, int64_t min_ns,
                  int64_t max_ns, int64_t def_ns, int64_t *ret_ns);
/* ?format=json|csv|records (text too when text) into *ret. */
int web__param_format(const struct web_req *q, struct web_answer *a, bool text,
                      enum web_format *ret);
/* ?format= on a route that answers JSON only: absent or json, anything else a 400 naming format
 * (never ignored: a client asking for CSV must not get JSON it takes for CSV). */
int web__param_json_only(const struct web_req *q, struct web_answer *a);
/* True when parameter name is present with a value. */
bool web__param_has(const struct web_req *q, const char *name);

#endif
