/* SPDX-License-Identifier: MIT */
/*
 * locate: the probe is one blocking Unix-socket exchange with a receive and send timeout; the
 * health check is one hclient_get(). Each address remembers where it came from (a flag, a
 * variable or the default), so that an error names the setting to change.
 */
#include "locate.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../daemon/core/config.h"

#define ID_MAX 64

/* What one side of the daemon says about itself. */
struct ident {
    char instance[ID_MAX];
    char other[HCLIENT_ADDR_MAX]; /* the probe: its HTTP address; health: its socket */
};

int locate_json_string(const char *text, size_t len, const char *key, char *out, size_t size)
{
    char pat[80];
    int k = snprintf(pat, sizeof pat, "\"%s\":\"", key);
    if (k < 0 || (size_t)k >= sizeof pat)
        return -ENAMETOOLONG;
    const char *end = text + len, *p = NULL;
    for (const char *s = text; s + k <= end; s++)
        if (memcmp(s, pat, (size_t)k) == 0) {
            p = s + k;
            break;
        }
    if (!p)
        return -ENOENT;
    size_t n = 0;
    while (p < end && *p != '"') {
        unsigned c = (unsigned char)*p++;
        if (c == '\\') {
            if (p >= end)
                return -EPROTO;
            c = (unsigned char)*p++;
            if (c == 'u') {
                unsigned v = 0;
                for (int i = 0; i < 4; i++, p++) {
                    if (p >= end)
                        return -EPROTO;
                    char h = *p;
                    v = v * 16 + (unsigned)(h >= '0' && h <= '9'   ? h - '0'
                                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                                   : 99);
                    if (v > 0xffff)
                        return -EPROTO;
                }
                if (v == 0 || v >= 0x80)
                    return -EPROTO;
                c = v;
            } else {
                const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
                const char *at = strchr(from, (int)c);
                if (!at || c == 0)
                    return -EPROTO;
                c = (unsigned char)to[at - from];
            }
        }
        if (n + 1 >= size)
            return -ENAMETOOLONG;
        out[n++] = (char)c;
    }
    if (p >= end)
        return -EPROTO;
    out[n] = '\0';
    return 0;
}

/* Asks the daemon on socket path which daemon it is. Returns 0, or a negative errno with err. */
static int probe(const char *path, struct ident *ret, char *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        snprintf(err, HCLIENT_ERR_MAX, "socket path is too long for a Unix socket");
        return -ENAMETOOLONG;
    }
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        snprintf(err, HCLIENT_ERR_MAX, "socket: %s", strerror(e));
        return -e;
    }
    struct timeval tv = {.tv_sec = LOCATE_TIMEOUT_MS / 1000,
                         .tv_usec = (LOCATE_TIMEOUT_MS % 1000) * 1000};
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    static const char hello[] = "{\"hello\":\"stepscope/1\",\"probe\":true}\n";
    char line[1024];
    size_t n = 0;
    int r = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
        send(fd, hello, sizeof hello - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof hello - 1)) {
        r = -(errno == EAGAIN ? ETIMEDOUT : errno);
        snprintf(err, HCLIENT_ERR_MAX, "%s", strerror(-r));
    }
    while (r == 0 && n + 1 < sizeof line && !memchr(line, '\n', n)) {
        ssize_t k = recv(fd, line + n, sizeof line - 1 - n, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r = k < 0 ? -(errno == EAGAIN ? ETIMEDOUT : errno) : -EPROTO;
            snprintf(err, HCLIENT_ERR_MAX, "%s", k < 0 ? strerror(-r) : "closed without an answer");
        }
        n += k > 0 ? (size_t)k : 0;
    }
    close(fd);
    if (r < 0)
        return r;
    if (locate_json_string(line, n, "probe", ret->other, sizeof ret->other) < 0 ||
        strcmp(ret->other, "stepscope/1") != 0 ||
        locate_json_string(line, n, "instance", ret->instance, sizeof ret->instance) < 0 ||
        locate_json_string(line, n, "http", ret->other, sizeof ret->other) < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "it does not answer a probe (a stepscoped older than this "
                                       "command?)");
        return -EPROTO;
    }
    return 0;
}

/* Asks the daemon at t->http which daemon it is. Returns 0, or a negative errno with err. */
static int health(const struct hclient_target *t, struct ident *ret, char *err)
{
    int status;
    char *body = NULL;
    size_t len;
    int r = hclient_get(t, "/api/v1/health", &status, &body, &len, err);
    if (r < 0)
        return r;
    if (status != 200) {
        hclient_error_message(body, len, ret->other, sizeof ret->other);
        snprintf(err, HCLIENT_ERR_MAX, "/api/v1/health answered %d: %.200s", status, ret->other);
        r = -EPROTO;
    } else if (locate_json_string(body, len, "instance", ret->instance, sizeof ret->instance) < 0 ||
               locate_json_string(body, len, "socket", ret->other, sizeof ret->other) < 0 ||
               !ret->instance[0]) {
        snprintf(err, HCLIENT_ERR_MAX, "/api/v1/health names no instance and socket (a stepscoped "
                                       "older than this command?)");
        r = -EPROTO;
    }
    free(body);
    return r;
}

/* True when the socket paths a and b name the same file (resolved; as written if either cannot
 * be resolved). */
static bool same_socket(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(a, ra) && realpath(b, rb))
        return strcmp(ra, rb) == 0;
    return strcmp(a, b) == 0;
}

int locate_daemon(struct hclient_target *ret, char *const *envp, const struct hclient_options *o,
                  unsigned need, char *err)
{
    int r = hclient_target(ret, envp, o->http, o->token_file, err);
    if (r < 0)
        return -EINVAL; /* a malformed option, variable or token file */
    /* Where each address comes from: the flag, the variable, or nobody (the default). */
    const char *env_http = config_env_get(envp, "STEPSCOPE_HTTP");
    const char *env_sock = config_env_get(envp, "STEPSCOPE_SOCKET");
    const char *http_from = o->http ? "--http" : env_http && *env_http ? "STEPSCOPE_HTTP" : NULL;
    const char *sock_from = o->socket       ? "--socket"
                            : env_sock && *env_sock ? "STEPSCOPE_SOCKET"
                                                    : NULL;
    struct config *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, HCLIENT_ERR_MAX, "out of memory");
        return -ENOMEM;
    }
    config_init(c, envp, (unsigned)getuid(), "");
    const char *sock = o->socket ? o->socket : sock_from ? env_sock : c->socket;
    if (!sock[0] || strlen(sock) >= sizeof ret->socket) {
        snprintf(err, HCLIENT_ERR_MAX, "%s: the socket path is empty or too long",
                 sock_from ? sock_from : "default socket");
        free(c);
        return -EINVAL;
    }
    snprintf(ret->socket, sizeof ret->socket, "%s", sock);
    free(c);

    struct ident ps, hs;
    char perr[HCLIENT_ERR_MAX], herr[HCLIENT_ERR_MAX];
    if (sock_from && http_from) {
        /* Both given: the same daemon, or nothing is sent. */
        int pr = probe(ret->socket, &ps, perr);
        r = health(ret, &hs, herr);
        if (r < 0) {
            snprintf(err, HCLIENT_ERR_MAX, "%s %.64s: %.200s (%s %.100s names the daemon too: "
                     "both must be the same one, or give one of them)", http_from, ret->http, herr,
                     sock_from, ret->socket);
            return r;
        }
        bool same = pr == 0 ? strcmp(ps.instance, hs.instance) == 0
                            : same_socket(ret->socket, hs.other);
        if (!same) {
            snprintf(err, HCLIENT_ERR_MAX, "%s %.100s and %s %.64s are two different daemons (the "
                     "one at %.64s has socket %.100s): give one of them, the other is asked from it",
                     sock_from, ret->socket, http_from, ret->http, ret->http, hs.other);
            return -EINVAL;
        }
        return 0;
    }
    if (sock_from || !http_from) {
        /* The socket names the daemon (given, or the default one). */
        if (!(need & LOCATE_HTTP))
            return 0;
        r = probe(ret->socket, &ps, perr);
        if (r == 0) {
            snprintf(ret->http, sizeof ret->http, "%s", ps.other);
            return 0;
        }
        if (!sock_from && (r == -ENOENT || r == -ECONNREFUSED))
            return 0; /* no daemon on the default socket: the default HTTP address */
        snprintf(err, HCLIENT_ERR_MAX, "cannot ask the daemon on socket %.100s (%s) for its HTTP "
                 "address: %.200s; give --http ADDR:PORT as well", ret->socket,
                 sock_from ? sock_from : "the default", perr);
        return r;
    }
    /* Only the HTTP address is given. */
    if (!(need & LOCATE_SOCKET))
        return 0;
    r = health(ret, &hs, herr);
    if (r < 0) {
        snprintf(err, HCLIENT_ERR_MAX, "cannot ask the daemon at %.64s (%s) for its socket: %.200s; "
                 "give --socket PATH as well", ret->http, http_from, herr);
        return r;
    }
    if (strlen(hs.other) >= sizeof ret->socket) {
        snprintf(err, HCLIENT_ERR_MAX, "the daemon's socket path is too long");
        return -ENAMETOOLONG;
    }
    snprintf(ret->socket, sizeof ret->socket, "%s", hs.other);
    return 0;
}
