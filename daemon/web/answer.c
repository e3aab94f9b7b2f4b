/* SPDX-License-Identifier: MIT */
/*
 * answer: the builders routes fill their answer with (answer.h), and the streamed tables. No
 * libmicrohttpd: http.c turns the finished answer into a response.
 */
#include "answer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "render.h"
#include "server.h"

void web__answer_init(struct web_answer *a)
{
    a->how = WEB_ANSWER_SEND;
    a->status = WEB_HTTP_INTERNAL_SERVER_ERROR;
    a->type = NULL;
    a->cache_control = NULL;
    a->allow = NULL;
    a->n_headers = 0;
    a->hbuf_len = 0;
    a->body = WEB_BODY_NONE;
    a->bytes = NULL;
    a->len = 0;
    a->stream = (struct web_stream){0};
    a->fd = -1;
    a->file_size = 0;
    a->keep = false;
    a->job_id = 0;
    a->serial = 0;
    a->stored = false;
    a->commits = 0;
}

void web__answer_done(struct web_answer *a)
{
    free(a->bytes);
    a->bytes = NULL;
    if (a->stream.free)
        a->stream.free(a->stream.ctx);
    a->stream = (struct web_stream){0};
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    a->body = WEB_BODY_NONE;
    /* A header may hold the auth cookie. */
    explicit_bzero(a->hbuf, a->hbuf_len);
    a->hbuf_len = 0;
    a->n_headers = 0;
}

int web__answer_header(struct web_answer *a, const char *name, const char *fmt, ...)
{
    if (a->n_headers >= WEB_ANSWER_HEADERS_MAX)
        return -EMSGSIZE;
    size_t room = sizeof a->hbuf - a->hbuf_len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->hbuf + a->hbuf_len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room) {
        a->hbuf[a->hbuf_len] = '\0';
        return -EMSGSIZE;
    }
    a->headers[a->n_headers].name = name;
    a->headers[a->n_headers].value = a->hbuf_len;
    a->n_headers++;
    a->hbuf_len += (size_t)n + 1;
    return 0;
}

/* The bytes of a document: b's, taken. */
static void set_bytes(struct web_answer *a, unsigned status, char *data, size_t len,
                      const char *type)
{
    a->how = WEB_ANSWER_SEND;
    a->status = status;
    a->type = type;
    a->cache_control = "no-store";
    a->body = WEB_BODY_BYTES;
    a->bytes = data;
    a->len = len;
}

int web__error(struct web_answer *a, unsigned status, const char *code, const char *message)
{
    web__answer_done(a);
    a->keep = false;
    struct sbuf b;
    sbuf_init(&b, WEB_ERROR_BODY_MAX);
    web__render_error(&b, code, message);
    size_t len;
    char *data = sbuf_steal(&b, &len);
    sbuf_done(&b);
    a->status = status;
    if (!data) {
        a->how = WEB_ANSWER_CLOSE;
        return 0;
    }
    set_bytes(a, status, data, len, "application/json");
    return 0;
}

int web__error_405(struct web_answer *a, const char *allow, const char *message)
{
    web__error(a, WEB_HTTP_METHOD_NOT_ALLOWED, "method_not_allowed", message);
    a->allow = allow;
    return 0;
}

int web__store_error(struct web_answer *a, int r, const char *what)
{
    static struct log_ratelimit rl;
    if (r == -ENOENT)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", NULL);
    if (r == -EBUSY || r == -EAGAIN)
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy", "the store is busy; retry");
    if (log_ratelimit(&rl, 1000000000))
        log_warn("http: %s: %s", what, strerror(-r));
    return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal",
                      r == -ENOMEM ? "out of memory" : "store error");
}

int web__doc(struct web *w, struct web_answer *a, unsigned status, struct sbuf *b,
             const char *type, const char *disposition)
{
    if (b->error == -EMSGSIZE) {
        STATS_ADD(w->stats, http_responses_too_large, 1);
        char msg[128];
        snprintf(msg, sizeof msg, "the answer would exceed max_response_bytes (%zu); ask for less",
                 w->max_response_bytes);
        sbuf_done(b);
        return web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "response_too_large", msg);
    }
    size_t len = 0;
    bool failed = b->error != 0;
    char *data = sbuf_steal(b, &len);
    sbuf_done(b);
    if (!data && !failed)
        data = calloc(1, 1); /* an empty answer (a summary table Paddle leaves out) */
    if (!data)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    web__answer_done(a);
    set_bytes(a, status, data, len, type);
    if (disposition && web__answer_header(a, "Content-Disposition", "%s", disposition) < 0)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
    return 0;
}

int web__json(struct web *w, struct web_answer *a, unsigned status, struct sbuf *b)
{
    return web__doc(w, a, status, b, "application/json", NULL);
}

int web__csv(struct web *w, struct web_answer *a, struct sbuf *b)
{
    return web__doc(w, a, WEB_HTTP_OK, b, "text/csv; charset=utf-8", NULL);
}

int web__doc_fmt(struct web *w, struct web_answer *a, struct sbuf *b, enum web_format fmt)
{
    if (fmt == WEB_FORMAT_CSV)
        return web__csv(w, a, b);
    if (fmt == WEB_FORMAT_TEXT)
        return web__doc(w, a, WEB_HTTP_OK, b, "text/plain; charset=utf-8", NULL);
    return web__json(w, a, WEB_HTTP_OK, b);
}

bool web__export_take(struct web *w, struct web_answer *a, const char *what)
{
    if (atomic_fetch_add_explicit(&w->exports_active, 1, memory_order_relaxed) >= w->exports_max) {
        atomic_fetch_sub_explicit(&w->exports_active, 1, memory_order_relaxed);
        STATS_ADD(w->stats, http_exports_refused, 1);
        char msg[128];
        snprintf(msg, sizeof msg, "too many %s in progress (http_max_exports); retry", what);
        web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy", msg);
        return false;
    }
    return true;
}

void web__export_put(struct web *w)
{
    atomic_fetch_sub_explicit(&w->exports_active, 1, memory_order_relaxed);
}

/* Moves what is left of out from *pos into buf[*n, max), advancing *pos and *n. Returns true
 * when out was already drained (nothing copied). */
static bool chunk_copy(const struct sbuf *out, size_t *pos, char *buf, size_t max, size_t *n)
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

ssize_t web__chunks_read(struct sbuf *out, size_t *pos, char *buf, size_t max,
                         int (*produce)(void *ctx), void *ctx)
{
    size_t n = 0;
    while (n < max) {
        if (!chunk_copy(out, pos, buf, max, &n))
            continue;
        sbuf_reset(out);
        *pos = 0;
        int r = produce(ctx);
        if (r == 0)
            break;
        if (r < 0)
            return WEB_STREAM_ERROR; /* the client sees a cut */
    }
    if (n == 0)
        return WEB_STREAM_END;
    return (ssize_t)n;
}

/* ---- tables streamed row by row (web__rows()) ---- */

struct rows_stream {
    struct web *w;        /* borrowed; outlives the server's connections */
    struct web_rows rows; /* rows.ctx owned */
    size_t next;          /* the next row to render */
    bool head, tail;      /* written */
    struct sbuf out;      /* bytes not yet handed out: out.data[out_pos, out.len) */
    size_t out_pos;
};

static void rows_stream_free(void *cls)
{
    struct rows_stream *s = cls;
    if (s->rows.free)
        s->rows.free(s->rows.ctx);
    sbuf_done(&s->out);
    web__export_put(s->w);
    free(s);
}

/* Renders the next chunk into s->out: the head, rows up to WEB_CHUNK bytes, the tail. Returns 1,
 * 0 when everything was written before this call, or -ENOMEM. */
static int rows_produce(void *ctx)
{
    struct rows_stream *s = ctx;
    bool csv = s->rows.fmt == WEB_FORMAT_CSV;
    if (s->tail)
        return 0;
    if (!s->head) {
        sbuf_adds(&s->out, csv ? s->rows.csv_header : "[");
        s->head = true;
    }
    while (s->next < s->rows.n && s->out.len < WEB_CHUNK) {
        if (!csv && s->next > 0)
            sbuf_addc(&s->out, ',');
        s->rows.row(&s->out, s->rows.fmt, s->rows.ctx, s->next++);
    }
    if (s->next == s->rows.n) {
        if (!csv)
            sbuf_addc(&s->out, ']');
        s->tail = true;
    }
    return s->out.error ? -ENOMEM : 1;
}

static ssize_t on_rows_read(void *cls, char *buf, size_t max)
{
    struct rows_stream *s = cls;
    return web__chunks_read(&s->out, &s->out_pos, buf, max, rows_produce, s);
}

int web__rows(struct web *w, struct web_answer *a, const struct web_rows *rows)
{
    /* Each table in flight holds its rows until its reader has them, however slowly it reads:
     * they count against http_max_exports with the timeline exports. */
    if (!web__export_take(w, a, "streamed answers")) {
        if (rows->free)
            rows->free(rows->ctx);
        return 0;
    }
    struct rows_stream *s = calloc(1, sizeof *s);
    if (!s) {
        web__export_put(w);
        if (rows->free)
            rows->free(rows->ctx);
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    }
    s->w = w;
    s->rows = *rows;
    sbuf_init(&s->out, w->max_response_bytes);
    web__answer_done(a);
    a->how = WEB_ANSWER_SEND;
    a->status = WEB_HTTP_OK;
    a->type = rows->fmt == WEB_FORMAT_CSV ? "text/csv; charset=utf-8" : "application/json";
    a->cache_control = "no-store";
    a->body = WEB_BODY_STREAM;
    a->stream = (struct web_stream){.read = on_rows_read, .free = rows_stream_free, .ctx = s,
                                    .block = WEB_CHUNK};
    web__answer_header(a, "X-Total-Count", "%zu", rows->total);
    if (rows->n < rows->total) {
        if (rows->n == 0)
            web__answer_header(a, "X-Stepscope-Truncated", "rows none of %zu", rows->total);
        else
            web__answer_header(a, "X-Stepscope-Truncated", "rows %zu-%zu of %zu", rows->offset,
                               rows->offset + rows->n - 1, rows->total);
    }
    return 0;
}
