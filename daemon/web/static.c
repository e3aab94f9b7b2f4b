/* SPDX-License-Identifier: MIT */
/*
 * static: the dashboard files under static_dir, read-only, no templating. A request path must
 * first pass web__static_path() (decoded once, no "..", "//", dot files, NUL, backslash or control
 * bytes); the file it names is then resolved with realpath() and must still lie under the
 * realpath() of static_dir, so a symlink cannot lead out either. Only regular files are served,
 * through MHD_create_response_from_fd() (MHD reads, or sendfile()s, the file and closes the fd).
 * Everything refused looks the same from outside: 404 with a JSON error.
 *
 * Caching: HTML is "no-cache" (a new build shows up at once), the assets it names are cacheable
 * for an hour. HTML also carries a Content-Security-Policy that allows same-origin scripts,
 * styles and fetches only, so the page cannot run injected markup even if some text slipped in.
 */
#include "web_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

#define CSP                                                                                    \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "         \
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

static int not_found(struct web *w, struct MHD_Connection *c)
{
    return web__send_error(w, c, MHD_HTTP_NOT_FOUND, "not_found", "no such file");
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

int web__route_static(struct web *w, struct MHD_Connection *c, const char *path)
{
    if (w->static_root_len == 0)
        return not_found(w, c);
    char rel[WEB_PATH_MAX + 1];
    if (web__static_path(path, rel, sizeof rel) < 0)
        return not_found(w, c);
    char full[PATH_MAX];
    int n = snprintf(full, sizeof full, "%s/%s", w->static_root, rel);
    if (n < 0 || (size_t)n >= sizeof full)
        return not_found(w, c);
    char resolved[PATH_MAX];
    if (!realpath(full, resolved))
        return not_found(w, c);
    if (strncmp(resolved, w->static_root, w->static_root_len) != 0 ||
        resolved[w->static_root_len] != '/')
        return not_found(w, c);
    /* O_NOFOLLOW: the path was just resolved, so a symlink here means it changed under us. */
    int fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return not_found(w, c);
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return not_found(w, c);
    }
    struct MHD_Response *resp = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return web__send_error(w, c, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal",
                               "out of memory");
    }
    const char *type = web__mime_type(rel);
    bool html = has_suffix(rel, ".html");
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
                            html ? "no-cache" : "public, max-age=3600");
    if (html) {
        MHD_add_response_header(resp, "Content-Security-Policy", CSP);
        MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    }
    return web__queue(w, c, MHD_HTTP_OK, resp);
}
