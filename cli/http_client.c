/* SPDX-License-Identifier: MIT */
/*
 * hclient: one request through libcurl (the CLI's only HTTP code; the daemon's cluster shipper
 * uses libcurl too), answer read to the end, bounded in size and in time without progress. The
 * target reuses daemon/core/config.c, so the CLI accepts exactly the address and token forms the
 * daemon does and checks them the same way.
 */
#include "http_client.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

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

/* The answer as it comes in: at most HCLIENT_ANSWER_MAX bytes, then the transfer stops. */
struct answer {
    char *buf;
    size_t n, cap;
    int err; /* -ENOMEM or -EMSGSIZE once it failed */
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    struct answer *a = ud;
    size_t k = size * nmemb;
    if (a->n + k > HCLIENT_ANSWER_MAX) {
        a->err = -EMSGSIZE;
        return 0; /* stops the transfer: CURLE_WRITE_ERROR */
    }
    if (a->n + k + 1 > a->cap) {
        size_t cap = a->cap ? a->cap : 65536;
        while (cap < a->n + k + 1)
            cap *= 2;
        char *q = realloc(a->buf, cap);
        if (!q) {
            a->err = -ENOMEM;
            return 0;
        }
        a->buf = q;
        a->cap = cap;
    }
    memcpy(a->buf + a->n, p, k);
    a->n += k;
    a->buf[a->n] = '\0';
    return k;
}

static int curl_errno(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
        return -EINVAL;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return -EPROTO;
    default:
        return -EIO;
    }
}

int hclient_get(const struct hclient_target *t, const char *path, int *ret_status,
                char **ret_body, size_t *ret_len, char *err)
{
    return hclient_request(t, "GET", path, NULL, 0, ret_status, ret_body, ret_len, err);
}

/* One request through libcurl (HTTP/1.0 as before, so the daemon never chunks the answer; a
 * host name is tried at each of its addresses). The connection and each wait without progress
 * are bounded by HCLIENT_TIMEOUT_MS. */
int hclient_request(const struct hclient_target *t, const char *method, const char *path,
                    const char *json, size_t json_len, int *ret_status, char **ret_body,
                    size_t *ret_len, char *err)
{
    char host[128];
    uint16_t port;
    if (config_parse_hostport(t->http, host, sizeof host, &port) < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "http: \"%.64s\" is not ADDR:PORT", t->http);
        return -EINVAL;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, HCLIENT_ERR_MAX, "libcurl would not start");
        return -ENOMEM;
    }
    bool v6 = strchr(host, ':') != NULL;
    struct sbuf url, auth;
    sbuf_init(&url, 16384);
    sbuf_init(&auth, 512);
    sbuf_printf(&url, "http://%s%s%s:%u%s", v6 ? "[" : "", host, v6 ? "]" : "", (unsigned)port,
                path);
    if (t->token[0])
        sbuf_printf(&auth, "Authorization: Bearer %s", t->token);
    struct answer a = {0};
    struct curl_slist *hdr = NULL;
    char cerr[CURL_ERROR_SIZE] = "";
    int r = -ENOMEM;
    CURL *h = curl_easy_init();
    if (url.error || auth.error) {
        snprintf(err, HCLIENT_ERR_MAX, "request too long");
        goto out;
    }
    if (!h || (t->token[0] && !(hdr = curl_slist_append(hdr, auth.data)))) {
        snprintf(err, HCLIENT_ERR_MAX, "out of memory");
        goto out;
    }
    if (json) {
        struct curl_slist *h2 = curl_slist_append(hdr, "Content-Type: application/json");
        if (!h2) {
            snprintf(err, HCLIENT_ERR_MAX, "out of memory");
            goto out;
        }
        hdr = h2;
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, json);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)json_len);
    }
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_0);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "stepscope");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROXY, ""); /* the daemon is never behind an http_proxy */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)HCLIENT_TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)(HCLIENT_TIMEOUT_MS / 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_WRITE_ERROR && a.err) {
        r = a.err;
        snprintf(err, HCLIENT_ERR_MAX, "%s",
                 r == -EMSGSIZE ? "the answer is too large" : "out of memory");
        goto out;
    }
    if (rc == CURLE_COULDNT_RESOLVE_HOST) {
        r = -EINVAL;
        snprintf(err, HCLIENT_ERR_MAX, "http: cannot resolve \"%.64s\": %s", host,
                 cerr[0] ? cerr : curl_easy_strerror(rc));
        goto out;
    }
    if (rc == CURLE_WEIRD_SERVER_REPLY || rc == CURLE_UNSUPPORTED_PROTOCOL) {
        r = -EPROTO;
        snprintf(err, HCLIENT_ERR_MAX, "%.64s did not answer in HTTP", t->http);
        goto out;
    }
    if (rc != CURLE_OK) {
        r = curl_errno(rc);
        snprintf(err, HCLIENT_ERR_MAX, "cannot connect to stepscoped at %.64s: %s", t->http,
                 r == -ECONNREFUSED ? strerror(ECONNREFUSED)
                 : r == -ETIMEDOUT  ? strerror(ETIMEDOUT)
                                    : (cerr[0] ? cerr : curl_easy_strerror(rc)));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 100) {
        r = -EPROTO;
        snprintf(err, HCLIENT_ERR_MAX, "%.64s did not answer in HTTP", t->http);
        goto out;
    }
    if (!a.buf && !(a.buf = calloc(1, 1))) {
        snprintf(err, HCLIENT_ERR_MAX, "out of memory");
        goto out;
    }
    *ret_status = (int)status;
    *ret_body = a.buf;
    *ret_len = a.n;
    a.buf = NULL;
    r = 0;
out:
    if (auth.data)
        explicit_bzero(auth.data, auth.len);
    sbuf_done(&auth);
    sbuf_done(&url);
    curl_slist_free_all(hdr);
    if (h)
        curl_easy_cleanup(h);
    free(a.buf);
    curl_global_cleanup();
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
