/* SPDX-License-Identifier: MIT */
/*
 * static: the dashboard files under static_dir, read-only, no templating. A request path must
 * first pass web__static_path() (decoded once, no "..", "//", dot files, NUL, backslash or control
 * bytes); the file it names is then resolved with realpath() and must still lie under the
 * realpath() of static_dir, so a symlink cannot lead out either. Only regular files are served,
 * as a file answer (the server reads, or sendfile()s, the file and closes the fd).
 * Everything refused looks the same from outside: 404 with a JSON error.
 *
 * Caching: HTML is "no-cache" (a new build shows up at once), the assets it names are cacheable
 * for an hour. HTML also carries a Content-Security-Policy that allows same-origin scripts,
 * styles and fetches only, so the page cannot run injected markup even if some text slipped in.
 */
#include "answer.h"
#include "routes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CSP                                                                                    \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "         \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

static int not_found(struct web_answer *a)
{
    return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "no such file");
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int web__route_static(struct web *w, const char *path, struct web_answer *a)
{
    if (w->static_root_len == 0)
        return not_found(a);
    char rel[WEB_PATH_MAX + 1];
    if (web__static_path(path, rel, sizeof rel) < 0)
        return not_found(a);
    char full[PATH_MAX];
    int n = snprintf(full, sizeof full, "%s/%s", w->static_root, rel);
    if (n < 0 || (size_t)n >= sizeof full)
        return not_found(a);
    char resolved[PATH_MAX];
    if (!realpath(full, resolved))
        return not_found(a);
    if (strncmp(resolved, w->static_root, w->static_root_len) != 0 ||
        resolved[w->static_root_len] != '/')
        return not_found(a);
    /* O_NOFOLLOW: the path was just resolved, so a symlink here means it changed under us. */
    int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return not_found(a);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return not_found(a);
    }
    const char *type = web__mime_type(rel);
    bool html = has_suffix(rel, ".html");
    web__answer_done(a);
    a->status = WEB_HTTP_OK;
    a->type = type;
    a->cache_control = html ? "no-cache" : "public, max-age=3600";
    a->body = WEB_BODY_FILE;
    a->fd = fd;
    a->file_size = (uint64_t)st.st_size;
    if (html) {
        web__answer_header(a, "Content-Security-Policy", "%s", CSP);
        web__answer_header(a, "Referrer-Policy", "%s", "no-referrer");
    }
    return 0;
}
