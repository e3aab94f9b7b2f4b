/* SPDX-License-Identifier: MIT */
/*
 * client: the importer's protocol session (contract in proto_client.h).
 *
 * Replies are small lines the daemon formats itself ({"welcome":..}, {"ack":N}, {"error":{..}});
 * they are read into a fixed buffer and picked apart by find_member(), a bounded walk over one
 * object's members that skips nested values without building anything. Lines of other kinds
 * (control lines, section 6) are ignored as the protocol asks.
 */
#include "proto_client.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "line_spool.h"

struct client {
    int fd;
    client_error_cb on_error;
    void *ud;
    char *out;            /* CLIENT_OUT_MAX bytes, owned: queued, not yet written */
    size_t out_len;
    char in[CLIENT_IN_MAX]; /* reply bytes not yet split into lines */
    size_t in_len;
    bool in_skip;         /* dropping an over-long reply up to its '\n' */
    bool closed;          /* the daemon closed its end */
    bool welcome;         /* a welcome arrived */
    uint64_t next_seq;    /* from the welcome */
    bool refused;         /* an error arrived before any welcome */
    char refusal[CLIENT_ERR_MAX - 64];
    uint64_t acked;       /* highest ack */
    uint64_t n_errors;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Skips one JSON value at p (blanks first). Returns the position after it, or NULL. Trusts the
 * daemon's output enough not to validate, never reads past e. */
static const char *skip_value(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (p == e)
        return NULL;
    if (*p == '"') {
        for (p++; p < e; p++) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                return p + 1;
        }
        return NULL;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        bool str = false;
        for (; p < e; p++) {
            if (str) {
                if (*p == '\\')
                    p++;
                else if (*p == '"')
                    str = false;
            } else if (*p == '"') {
                str = true;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ')
        p++;
    return p;
}

/* Finds member key of the object at [p, e). Returns true and sets *ret_v and *ret_n to its raw
 * value text. */
static bool find_member(const char *p, const char *e, const char *key, const char **ret_v,
                        size_t *ret_n)
{
    size_t klen = strlen(key);
    while (p < e && *p != '{')
        p++;
    if (p == e)
        return false;
    p++;
    for (;;) {
        while (p < e && (*p == ' ' || *p == ',' || *p == '\t'))
            p++;
        if (p == e || *p != '"')
            return false;
        const char *k = p + 1;
        const char *ke = skip_value(p, e);
        if (!ke)
            return false;
        p = ke;
        while (p < e && *p == ' ')
            p++;
        if (p == e || *p != ':')
            return false;
        p++;
        while (p < e && *p == ' ')
            p++;
        const char *v = p;
        const char *ve = skip_value(p, e);
        if (!ve)
            return false;
        if ((size_t)(ke - 1 - k) == klen && memcmp(k, key, klen) == 0) {
            *ret_v = v;
            *ret_n = (size_t)(ve - v);
            return true;
        }
        p = ve;
    }
}

static bool member_u64(const char *p, const char *e, const char *key, uint64_t *ret)
{
    const char *v;
    size_t n;
    if (!find_member(p, e, key, &v, &n) || n == 0 || n > 20)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *ret = x;
    return true;
}

/* Copies a string member's text (escapes left as they are) into dst[n]. */
static void member_str(const char *p, const char *e, const char *key, char *dst, size_t n)
{
    const char *v;
    size_t vn;
    dst[0] = '\0';
    if (!find_member(p, e, key, &v, &vn) || vn < 2 || v[0] != '"')
        return;
    vn -= 2;
    if (vn >= n)
        vn = n - 1;
    memcpy(dst, v + 1, vn);
    dst[vn] = '\0';
}

static void on_reply(struct client *c, const char *p, size_t n)
{
    const char *e = p + n, *v;
    size_t vn;
    uint64_t x;
    if (member_u64(p, e, "ack", &x)) {
        if (x > c->acked)
            c->acked = x;
    } else if (find_member(p, e, "welcome", &v, &vn)) {
        c->welcome = true;
        c->next_seq = 0;
        (void)member_u64(p, e, "next_seq", &c->next_seq);
    } else if (find_member(p, e, "error", &v, &vn)) {
        char code[64], msg[CLIENT_ERR_MAX - 160];
        uint64_t seq = 0, line = 0;
        bool has_seq = member_u64(v, v + vn, "seq", &seq);
        (void)member_u64(v, v + vn, "line", &line);
        member_str(v, v + vn, "code", code, sizeof code);
        member_str(v, v + vn, "message", msg, sizeof msg);
        if (!c->welcome) {
            c->refused = true;
            snprintf(c->refusal, sizeof c->refusal, "%s: %s", code, msg);
        } else {
            c->n_errors++;
            if (c->on_error)
                c->on_error(c->ud, has_seq ? (int64_t)seq : -1, (int64_t)line, code, msg);
        }
    }
}

/* Reads what is available. Returns 0 (c->closed set at EOF) or a negative errno. */
static int read_replies(struct client *c)
{
    for (;;) {
        ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            if (errno == ECONNRESET) {
                c->closed = true;
                return 0;
            }
            return -errno;
        }
        if (n == 0) {
            c->closed = true;
            return 0;
        }
        c->in_len += (size_t)n;
        size_t start = 0;
        for (;;) {
            char *nl = memchr(c->in + start, '\n', c->in_len - start);
            if (!nl)
                break;
            size_t len = (size_t)(nl - (c->in + start));
            if (!c->in_skip)
                on_reply(c, c->in + start, len);
            c->in_skip = false;
            start += len + 1;
        }
        memmove(c->in, c->in + start, c->in_len - start);
        c->in_len -= start;
        if (c->in_len == sizeof c->in) {
            c->in_skip = true; /* an over-long line: not ours to understand */
            c->in_len = 0;
        }
    }
}

/* Writes what the socket takes now. Returns 0 or a negative errno (-EPIPE when closed). */
static int write_some(struct client *c)
{
    size_t done = 0;
    int r = 0;
    while (done < c->out_len) {
        ssize_t n = send(c->fd, c->out + done, c->out_len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                r = errno == ECONNRESET ? -EPIPE : -errno;
            break;
        }
        done += (size_t)n;
    }
    memmove(c->out, c->out + done, c->out_len - done);
    c->out_len -= done;
    return r;
}

/* Waits (poll) until done(c) holds, writing and reading meanwhile. Returns 0, -EPIPE if the
 * daemon closed first, -ETIMEDOUT after CLIENT_IDLE_MS without progress, or an I/O errno. */
static int wait_until(struct client *c, bool (*done)(const struct client *, uint64_t), uint64_t arg,
                      char *ret_err)
{
    int64_t last = now_ms();
    for (;;) {
        if (done(c, arg))
            return 0;
        if (c->closed) {
            snprintf(ret_err, CLIENT_ERR_MAX, "the daemon closed the connection");
            return -EPIPE;
        }
        int64_t left = last + CLIENT_IDLE_MS - now_ms();
        if (left <= 0) {
            snprintf(ret_err, CLIENT_ERR_MAX, "no progress for %d s", CLIENT_IDLE_MS / 1000);
            return -ETIMEDOUT;
        }
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN | (c->out_len ? POLLOUT : 0)};
        int n = poll(&pfd, 1, (int)left);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(ret_err, CLIENT_ERR_MAX, "poll: %s", strerror(errno));
            return -errno;
        }
        if (n == 0)
            continue;
        uint64_t acked = c->acked;
        size_t queued = c->out_len;
        int r = read_replies(c);
        if (r == 0 && (pfd.revents & (POLLOUT | POLLERR | POLLHUP)) && c->out_len)
            r = write_some(c);
        if (r < 0) {
            if (r == -EPIPE) {
                c->closed = true;
                continue;
            }
            snprintf(ret_err, CLIENT_ERR_MAX, "socket: %s", strerror(-r));
            return r;
        }
        if (c->acked != acked || c->out_len != queued)
            last = now_ms();
    }
}

int client_open(const char *path, client_error_cb on_error, void *ud, struct client **ret_c,
                char *ret_err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(ret_err, CLIENT_ERR_MAX, "socket path too long: %s", path);
        return -ENAMETOOLONG;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int r = -ENOMEM;
    struct client *c = calloc(1, sizeof *c);
    if (c)
        c->fd = -1;
    if (!c || !(c->out = malloc(CLIENT_OUT_MAX))) {
        snprintf(ret_err, CLIENT_ERR_MAX, "out of memory");
        goto fail;
    }
    c->on_error = on_error;
    c->ud = ud;
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        r = -errno;
        snprintf(ret_err, CLIENT_ERR_MAX, "socket: %s", strerror(errno));
        goto fail;
    }
    while (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        if (errno == EINTR)
            continue;
        r = -errno;
        snprintf(ret_err, CLIENT_ERR_MAX, "cannot connect to %s: %s", path, strerror(errno));
        goto fail;
    }
    int fl = fcntl(c->fd, F_GETFL);
    if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
        r = -errno;
        snprintf(ret_err, CLIENT_ERR_MAX, "fcntl: %s", strerror(errno));
        goto fail;
    }
    *ret_c = c;
    return 0;
fail:
    client_free(c);
    return r;
}

void client_free(struct client *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    free(c);
}

static bool welcomed(const struct client *c, uint64_t unused)
{
    (void)unused;
    return c->welcome || c->refused;
}

int client_hello(struct client *c, const char *hello, size_t len, uint64_t *ret_next_seq,
                 char *ret_err)
{
    if (len + 1 > CLIENT_OUT_MAX - c->out_len) {
        snprintf(ret_err, CLIENT_ERR_MAX, "hello too long");
        return -EMSGSIZE;
    }
    memcpy(c->out + c->out_len, hello, len);
    c->out_len += len;
    c->out[c->out_len++] = '\n';
    int r = wait_until(c, welcomed, 0, ret_err);
    if (r < 0)
        return r;
    if (c->refused) {
        snprintf(ret_err, CLIENT_ERR_MAX, "the daemon refused the hello: %s", c->refusal);
        return -EPROTO;
    }
    *ret_next_seq = c->next_seq;
    return 0;
}

static bool drained_below(const struct client *c, uint64_t limit)
{
    return c->out_len < limit;
}

int client_send(struct client *c, const char *line, size_t n, char *ret_err)
{
    if (n + 1 > CLIENT_OUT_MAX - CLIENT_FLUSH_BYTES) {
        snprintf(ret_err, CLIENT_ERR_MAX, "line too long");
        return -EMSGSIZE;
    }
    if (c->out_len + n + 1 > CLIENT_OUT_MAX) {
        /* Make room by waiting for the socket; replies are read meanwhile. */
        int r = wait_until(c, drained_below, CLIENT_OUT_MAX - n - 1, ret_err);
        if (r < 0)
            return r;
    }
    /* Newlines can only be blanks between tokens (a string cannot hold a raw one), so turning
     * them into spaces keeps the event's meaning and makes it one line. */
    char *dst = c->out + c->out_len;
    size_t m = spool_line_copy(dst, line, n);
    dst[m] = '\n';
    c->out_len += m + 1;
    if (c->out_len < CLIENT_FLUSH_BYTES)
        return 0;
    int r = write_some(c);
    if (r == 0)
        r = read_replies(c);
    if (r == -EPIPE || c->closed) {
        c->closed = true;
        snprintf(ret_err, CLIENT_ERR_MAX, "the daemon closed the connection");
        return -EPIPE;
    }
    if (r < 0)
        snprintf(ret_err, CLIENT_ERR_MAX, "socket: %s", strerror(-r));
    return r;
}

int client_send_file(struct client *c, int fd, uint64_t off, uint64_t len, char *ret_err)
{
    int r = wait_until(c, drained_below, 1, ret_err);
    if (r < 0)
        return r;
    off_t pos = (off_t)off;
    int64_t last = now_ms();
    while (len > 0) {
        size_t chunk = len > (1u << 30) ? (1u << 30) : (size_t)len;
        ssize_t n = sendfile(c->fd, fd, &pos, chunk);
        if (n > 0) {
            len -= (uint64_t)n;
            last = now_ms();
            continue;
        }
        if (n == 0) {
            snprintf(ret_err, CLIENT_ERR_MAX, "sendfile: the file ended early");
            return -EIO;
        }
        if (errno == EINTR)
            continue;
        if (errno == EPIPE || errno == ECONNRESET) {
            c->closed = true;
            snprintf(ret_err, CLIENT_ERR_MAX, "the daemon closed the connection");
            return -EPIPE;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            r = -errno;
            snprintf(ret_err, CLIENT_ERR_MAX, "sendfile: %s", strerror(errno));
            return r;
        }
        /* The socket is full: read replies while the daemon catches up. */
        int64_t left = last + CLIENT_IDLE_MS - now_ms();
        if (left <= 0) {
            snprintf(ret_err, CLIENT_ERR_MAX, "no progress for %d s", CLIENT_IDLE_MS / 1000);
            return -ETIMEDOUT;
        }
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN | POLLOUT};
        if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR) {
            r = -errno;
            snprintf(ret_err, CLIENT_ERR_MAX, "poll: %s", strerror(errno));
            return r;
        }
        uint64_t acked = c->acked;
        r = read_replies(c);
        if (r < 0) {
            snprintf(ret_err, CLIENT_ERR_MAX, "socket: %s", strerror(-r));
            return r;
        }
        if (c->closed) {
            snprintf(ret_err, CLIENT_ERR_MAX, "the daemon closed the connection");
            return -EPIPE;
        }
        if (c->acked != acked)
            last = now_ms();
    }
    return 0;
}

static bool acked_to(const struct client *c, uint64_t want)
{
    return c->acked >= want;
}

int client_finish(struct client *c, uint64_t want_ack, char *ret_err)
{
    static const char bye[] = "{\"type\":\"bye\"}";
    int r = client_send(c, bye, sizeof bye - 1, ret_err);
    if (r < 0)
        return r;
    r = wait_until(c, drained_below, 1, ret_err);
    if (r < 0)
        return r;
    return wait_until(c, acked_to, want_ack, ret_err);
}

uint64_t client_acked(const struct client *c)
{
    return c->acked;
}

uint64_t client_n_errors(const struct client *c)
{
    return c->n_errors;
}
