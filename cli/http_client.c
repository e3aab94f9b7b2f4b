/* SPDX-License-Identifier: MIT */
/*
 * hclient: blocking sockets with send and receive timeouts (Linux applies SO_SNDTIMEO to
 * connect() too), one request, read to EOF. The target reuses daemon/core/config.c, so the CLI
 * accepts exactly the address and token forms the daemon does and checks them the same way.
 */
#include "http_client.h"

#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "../daemon/core/config.h"
#include "../lib/sbuf.h"

int hclient_target(struct hclient_target *ret, char *const *envp, const char *http,
                   const char *token_file, char *err)
{
    struct config *c = malloc(sizeof *c);
    char sub[CONFIG_ERR_MAX];
    int r = -ENOMEM;
    if (!c) {
        snprintf(err, HCLIENT_ERR_MAX, "out of memory");
        return r;
    }
    config_init(c, envp, 0, "");
    r = config_load_env(c, envp, sub);
    if (r < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "environment: %s", sub);
        goto out;
    }
    if (http && (r = config_set(c, "http", http, sub)) < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "--http: %s", sub);
        goto out;
    }
    if (token_file) {
        c->auth_token[0] = '\0'; /* the flag outranks a token from the environment */
        if ((r = config_set(c, "auth_token_file", token_file, sub)) < 0) {
            snprintf(err, HCLIENT_ERR_MAX, "--auth-token-file: %s", sub);
            goto out;
        }
    }
    r = config_load_token(c, sub);
    if (r < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "auth token: %s", sub);
        goto out;
    }
    snprintf(ret->http, sizeof ret->http, "%s", c->http);
    snprintf(ret->token, sizeof ret->token, "%s", c->auth_token);
out:
    explicit_bzero(c->auth_token, sizeof c->auth_token);
    free(c);
    return r;
}

/* Connects to http's host at its port: a numeric address, or a name (localhost, [::1] ...)
 * tried at each address getaddrinfo() gives, in its order, until one answers. */
static int connect_to(const char *http, char *host, size_t host_size, char *err)
{
    uint16_t port;
    if (config_parse_hostport(http, host, host_size, &port) < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "http: \"%.64s\" is not ADDR:PORT", http);
        return -EINVAL;
    }
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV};
    struct addrinfo *list = NULL;
    int g = getaddrinfo(host, service, &hints, &list);
    if (g != 0) {
        snprintf(err, HCLIENT_ERR_MAX, "http: cannot resolve \"%.64s\": %s", host, gai_strerror(g));
        return -EINVAL;
    }
    int e = ECONNREFUSED;
    for (struct addrinfo *ai = list; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        struct timeval tv = {.tv_sec = HCLIENT_TIMEOUT_MS / 1000,
                             .tv_usec = (HCLIENT_TIMEOUT_MS % 1000) * 1000};
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            freeaddrinfo(list);
            return fd;
        }
        e = errno == EINPROGRESS || errno == EAGAIN ? ETIMEDOUT : errno;
        close(fd);
    }
    freeaddrinfo(list);
    snprintf(err, HCLIENT_ERR_MAX, "cannot connect to stepscoped at %.64s: %s", http, strerror(e));
    return -e;
}

static int send_all(int fd, const char *p, size_t n, char *err)
{
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno == EAGAIN ? ETIMEDOUT : errno;
            snprintf(err, HCLIENT_ERR_MAX, "send: %s", strerror(e));
            return -e;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads to EOF into a fresh buffer of at most max bytes (NUL-terminated). */
static int recv_all(int fd, size_t max, char **ret_buf, size_t *ret_n, char *err)
{
    size_t n = 0, cap = 65536;
    char *buf = malloc(cap + 1);
    if (!buf) {
        snprintf(err, HCLIENT_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    for (;;) {
        if (n == cap) {
            char *p = cap < max ? realloc(buf, (cap *= 2) + 1) : NULL;
            if (!p) {
                free(buf);
                snprintf(err, HCLIENT_ERR_MAX, "%s",
                         n < max ? "out of memory" : "the answer is too large");
                return n < max ? -ENOMEM : -EMSGSIZE;
            }
            buf = p;
        }
        ssize_t k = recv(fd, buf + n, cap - n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno == EAGAIN ? ETIMEDOUT : errno;
            free(buf);
            snprintf(err, HCLIENT_ERR_MAX, "receive: %s", strerror(e));
            return -e;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    *ret_buf = buf;
    *ret_n = n;
    return 0;
}

int hclient_get(const struct hclient_target *t, const char *path, int *ret_status,
                char **ret_body, size_t *ret_len, char *err)
{
    return hclient_request(t, "GET", path, NULL, 0, ret_status, ret_body, ret_len, err);
}

int hclient_request(const struct hclient_target *t, const char *method, const char *path,
                    const char *json, size_t json_len, int *ret_status, char **ret_body,
                    size_t *ret_len, char *err)
{
    char host[128];
    int fd = connect_to(t->http, host, sizeof host, err);
    if (fd < 0)
        return fd;
    bool v6 = strchr(host, ':') != NULL;
    struct sbuf req;
    sbuf_init(&req, 16384);
    sbuf_printf(&req, "%s %s HTTP/1.0\r\nHost: %s%s%s\r\nUser-Agent: stepscope\r\n", method,
                path, v6 ? "[" : "", host, v6 ? "]" : "");
    if (t->token[0])
        sbuf_printf(&req, "Authorization: Bearer %s\r\n", t->token);
    if (json)
        sbuf_printf(&req, "Content-Type: application/json\r\nContent-Length: %zu\r\n", json_len);
    sbuf_adds(&req, "\r\n");
    if (json)
        sbuf_add(&req, json, json_len);
    int r = -ENOMEM;
    char *ans = NULL;
    size_t n = 0;
    if (req.error) {
        snprintf(err, HCLIENT_ERR_MAX, "request too long");
        goto out;
    }
    r = send_all(fd, req.data, req.len, err);
    if (r == 0)
        r = recv_all(fd, HCLIENT_ANSWER_MAX + 16384, &ans, &n, err);
    if (r < 0)
        goto out;
    int status = 0;
    char *body = strstr(ans, "\r\n\r\n");
    r = -EPROTO;
    if (sscanf(ans, "HTTP/1.%*1[01] %3d", &status) != 1 || status < 100 || !body) {
        snprintf(err, HCLIENT_ERR_MAX, "%.64s did not answer in HTTP", t->http);
        goto out;
    }
    body += 4;
    *ret_len = n - (size_t)(body - ans);
    memmove(ans, body, *ret_len + 1);
    *ret_body = ans;
    *ret_status = status;
    ans = NULL;
    r = 0;
out:
    if (req.data)
        explicit_bzero(req.data, req.len);
    sbuf_done(&req);
    free(ans);
    close(fd);
    return r;
}

static void put_utf8(char *out, size_t *k, size_t size, unsigned v)
{
    char b[4];
    size_t m;
    if (v < 0x20 || v == 0x7f) {
        b[0] = '?', m = 1;
    } else if (v < 0x80) {
        b[0] = (char)v, m = 1;
    } else if (v < 0x800) {
        b[0] = (char)(0xc0 | v >> 6), b[1] = (char)(0x80 | (v & 0x3f)), m = 2;
    } else if (v >= 0xd800 && v < 0xe000) {
        b[0] = '?', m = 1; /* a surrogate half: shown as unknown */
    } else {
        b[0] = (char)(0xe0 | v >> 12), b[1] = (char)(0x80 | ((v >> 6) & 0x3f));
        b[2] = (char)(0x80 | (v & 0x3f)), m = 3;
    }
    if (*k + m < size) {
        memcpy(out + *k, b, m);
        *k += m;
    }
}

void hclient_json_unescape(const char *s, size_t n, char *out, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch != '\\' || i + 1 == n) {
            out[k++] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
            continue;
        }
        char e = s[++i];
        unsigned v = (unsigned char)e;
        if (e == 'u' && i + 4 < n) {
            char hex[5] = {s[i + 1], s[i + 2], s[i + 3], s[i + 4], '\0'};
            char *end;
            v = (unsigned)strtoul(hex, &end, 16);
            v = *end == '\0' ? v : '?';
            i += 4;
        } else if (strchr("bfnrt", e)) {
            v = '?';
        }
        put_utf8(out, &k, size, v);
    }
    out[k] = '\0';
}

void hclient_error_message(const char *body, size_t len, char *buf, size_t size)
{
    static const char key[] = "\"message\":\"";
    const char *s = strstr(body, key);
    const char *end = body + len;
    if (s) {
        s += sizeof key - 1;
        /* Up to the closing quote, unescaped: the daemon escapes the quotes around a job's
         * name, which a person should read as quotes. */
        const char *q = s;
        while (q < end && *q != '"')
            q += *q == '\\' && q + 1 < end ? 2 : 1;
        hclient_json_unescape(s, (size_t)(q - s), buf, size);
        return;
    } else {
        s = body;
        const char *nl = memchr(body, '\n', len);
        end = nl ? nl : end;
    }
    size_t k = 0;
    for (; s < end && k + 1 < size; s++, k++)
        buf[k] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
    buf[k] = '\0';
}

int hclient_add_segment(char *buf, size_t size, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(buf);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        if (n + (plain ? 1 : 3) >= size)
            return -ENAMETOOLONG;
        if (plain) {
            buf[n++] = (char)c;
        } else {
            buf[n++] = '%';
            buf[n++] = hex[c >> 4];
            buf[n++] = hex[c & 15];
        }
    }
    buf[n] = '\0';
    return 0;
}

void hclient_print_error(const char *cmd, int status, const char *body, size_t len)
{
    char msg[256];
    hclient_error_message(body, len, msg, sizeof msg);
    fprintf(stderr, "stepscope %s: the daemon answered %d: %s%s\n", cmd, status, msg,
            status == 401 ? " (give its token: --auth-token-file FILE)" : "");
}

int hclient_option(int c, const char *cmd, void (*usage)(FILE *), char **argv,
                   struct hclient_options *o)
{
    switch (c) {
    case 'H':
        o->http = optarg;
        return -1;
    case 'T':
        o->token_file = optarg;
        return -1;
    case 'S':
        o->socket = optarg;
        return -1;
    case 'h':
        usage(stdout);
        return 0;
    default:
        fprintf(stderr, "stepscope %s: %s: unknown option or missing value\n", cmd,
                argv[optind - 1]);
        usage(stderr);
        return 2;
    }
}
