/* SPDX-License-Identifier: MIT */
/*
 * The option table drives everything: config_set() finds the option by name and parses the value
 * by the kind of its field. Adding an option is one table row, one struct field and one line in
 * config/stepscoped.conf (a unit test checks that the file documents every row with its default).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/log.h"

const struct config_option config_options[] = {
    {"socket", NULL, "Unix socket path for training clients"},
    {"socket_mode", "0660", "permission bits of the socket (octal; owner rw required)"},
    {"http", "127.0.0.1:8080", "HTTP listen address ADDR:PORT (port 0: pick a free port)"},
    {"data_dir", NULL, "directory of the store (stepscope.db) and its lock"},
    {"static_dir", NULL, "directory the dashboard is served from"},
    {"log_level", "info", "error, warn, info or debug"},
    {"max_line_bytes", "1048576", "longest protocol line accepted, in bytes"},
    {"max_connections", "1024", "concurrent client connections"},
    {"hello_timeout_ms", "10000",
     "a client connection without a complete hello this long is closed (hello_timeout)"},
    {"reserved_connections", "64",
     "client connections that connections without a hello cannot take (an idle flood's limit)"},
    {"max_buffered_bytes", "268435456", "bytes accepted but not yet durable before reading pauses"},
    {"flush_interval_ms", "20", "longest wait before accepted records are committed"},
    {"retention_bytes_per_job", "524288000", "stored timeline bytes kept per job; oldest evicted"},
    {"min_free_bytes", "67108864",
     "free bytes on the data dir's file system below which /api/v1/health says degraded (0: never)"},
    {"live_max_bytes", "1073741824",
     "memory budget of the jobs' live analyses; ended jobs past it are evicted (reloaded on use)"},
    {"live_max_jobs", "65536",
     "jobs analysed live at once; ended jobs past 7/8 of it are evicted, new ones past it refused"},
    {"http_threads", "4", "HTTP worker threads"},
    {"http_max_connections", "4096", "concurrent HTTP connections"},
    {"http_timeout_s", "30", "idle HTTP connection timeout, in seconds"},
    {"http_max_connections_per_ip", "0",
     "concurrent HTTP connections from one address (0: only http_max_connections)"},
    {"http_max_exports", "32", "timeline exports and CSV tables streamed at once; else 503 busy"},
    {"http_request_timeout_s", "10",
     "seconds from a request's first byte to its last before the connection is closed (0: off)"},
    {"http_allowed_hosts", "",
     "Host names the HTTP server answers besides 127.0.0.1, localhost, [::1] and its address; "
     "comma-separated, \"*\" any (token only)"},
    {"http_analysis_timeout_ms", "30000",
     "longest an analysis (summaries, benchmark) may run before it answers 503 deadline"},
    {"http_analysis_max_bytes", "1073741824",
     "memory the running analyses (summaries, benchmark) may hold together; past it 503/413"},
    {"http_cache_max_bytes", "67108864",
     "memory the answer cache's kept answers hold together; past it the least recently used go"},
    {"max_response_bytes", "67108864", "largest HTTP answer, in bytes"},
    {"durability", "normal", "normal (survives a daemon crash) or full (survives power loss)"},
    {"helper_rules", "", "file of helper thresholds, key = value lines (empty: the defaults)"},
    {"role_rules", "", "file of extra role rules, tried before the built-in ones (empty: none)"},
    {"fp_point", "", "FP start operator name for every job (empty: detected per step)"},
    {"bp_point", "", "BP end operator name for every job (empty: detected per step)"},
    {"auth_token", "", "HTTP bearer token; required to bind a non-loopback address"},
    {"auth_token_file", "", "file holding the HTTP bearer token (instead of auth_token)"},
    {"metrics_max_ranks", "1024", "(job, rank) pairs GET /metrics exports; the rest are counted"},
    {"capture_max_open", "16",
     "captures of one job that have not ended; more answer 429 (0: no cap of its own)"},
    {"capture_max_kept", "1000",
     "captures of one job kept (listed); past it the oldest ended one is forgotten (0: no cap)"},
    {"capture_expire_s", "30",
     "seconds a capture part may stay pending (not armed by a client) before it expires"},
    {"cluster_url", "",
     "ClickHouse HTTP interface (http://HOST:8123/) to ship committed data to (empty: none)"},
    {"cluster_credentials_file", "",
     "file whose first line is USER:PASSWORD for cluster_url (empty: ClickHouse's default user)"},
    {"node", NULL, "this node's name in the cluster (default: the host name)"},
    {"cluster_batch_rows", "262144", "spans (and steps, queue samples) per shipped batch"},
    {"cluster_max_rows_per_s", "4000000", "rows shipped per second at most, catching up (0: no bound)"},
    {"cluster_retry_max_ms", "30000", "longest backoff between failed shipping attempts"},
    {"cluster_compression", "gzip",
     "request bodies to ClickHouse: gzip (level 1) or none (loopback, fast LAN: less node CPU)"},
    {"cluster_view", "true",
     "with cluster_url, also answer for the ranks other nodes shipped (false: only ship)"},
    {NULL, NULL, NULL},
};

static int set_str(char *dst, size_t size, const char *key, const char *value, char *err)
{
    size_t n = strlen(value);
    if (n >= size) {
        snprintf(err, CONFIG_ERR_MAX, "%s: value is %zu bytes, at most %zu allowed", key, n,
                 size - 1);
        return -ENAMETOOLONG;
    }
    memcpy(dst, value, n + 1);
    return 0;
}

static int set_u64(uint64_t *dst, const char *key, const char *value, uint64_t min, uint64_t max,
                   char *err)
{
    char *end;
    errno = 0;
    if (value[0] < '0' || value[0] > '9')
        goto bad;
    unsigned long long v = strtoull(value, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        goto bad;
    *dst = v;
    return 0;
bad:
    snprintf(err, CONFIG_ERR_MAX, "%s: \"%.64s\" is not a whole number in [%llu, %llu]", key, value,
             (unsigned long long)min, (unsigned long long)max);
    return -EINVAL;
}

/* Octal permission bits for the socket. The daemon's own user must keep read and write (and the
 * value is never 0, which ingest_start() reads as "the default"). */
static int set_mode(uint32_t *dst, const char *key, const char *value, char *err)
{
    char *end;
    errno = 0;
    unsigned long v = value[0] >= '0' && value[0] <= '7' ? strtoul(value, &end, 8) : 0;
    if (errno || value[0] < '0' || value[0] > '7' || *end != '\0' || v > 0777 ||
        (v & 0600) != 0600) {
        snprintf(err, CONFIG_ERR_MAX,
                 "%s: \"%.32s\" is not octal permission bits in [0600, 0777] with owner rw", key,
                 value);
        return -EINVAL;
    }
    *dst = (uint32_t)v;
    return 0;
}

/* A token travels in an HTTP header, so it is visible ASCII only; a short one is guessable. */
static int set_token(struct config *c, const char *value, char *err)
{
    size_t n = strlen(value);
    for (size_t i = 0; i < n; i++) {
        if (value[i] < 0x21 || value[i] > 0x7e) {
            snprintf(err, CONFIG_ERR_MAX,
                     "auth_token: byte %zu is not visible ASCII (no blanks or control bytes)", i);
            return -EINVAL;
        }
    }
    if (n > 0 && n < CONFIG_TOKEN_MIN) {
        snprintf(err, CONFIG_ERR_MAX, "auth_token: %zu bytes; at least %d required", n,
                 CONFIG_TOKEN_MIN);
        return -EINVAL;
    }
    return set_str(c->auth_token, sizeof c->auth_token, "auth_token", value, err);
}

/* A comma-separated list of Host names (blanks around the commas allowed): each a DNS name
 * (letters, digits, '-', '.'), an IPv4 literal, a bracketed IPv6 literal, or "*" alone. */
static int set_hosts(struct config *c, const char *value, char *err)
{
    const char *p = value;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        size_t n = (size_t)(e - p);
        if (n == 0)
            break;
        bool ok = n < 256;
        if (n == 1 && *p == '*')
            ok = true;
        else if (*p == '[')
            ok = ok && n > 2 && p[n - 1] == ']' && strspn(p + 1, "0123456789abcdefABCDEF:.") == n - 2;
        else
            ok = ok && strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") == n;
        if (!ok) {
            snprintf(err, CONFIG_ERR_MAX,
                     "http_allowed_hosts: \"%.*s\" is not a host name, an IP literal ([v6] "
                     "bracketed) or *", (int)(n < 64 ? n : 64), p);
            return -EINVAL;
        }
        p = e;
    }
    return set_str(c->http_allowed_hosts, sizeof c->http_allowed_hosts, "http_allowed_hosts",
                   value, err);
}

int config_set(struct config *c, const char *key, const char *value, char *err)
{
#define STR(field) set_str(c->field, sizeof c->field, key, value, err)
#define U64(field, min, max) set_u64(&c->field, key, value, min, max, err)
    if (strcmp(key, "socket") == 0)
        return value[0] ? STR(socket) : (snprintf(err, CONFIG_ERR_MAX, "socket: empty"), -EINVAL);
    if (strcmp(key, "socket_mode") == 0)
        return set_mode(&c->socket_mode, key, value, err);
    if (strcmp(key, "http") == 0) {
        char addr[64];
        uint16_t port;
        if (config_parse_hostport(value, addr, sizeof addr, &port) < 0) {
            snprintf(err, CONFIG_ERR_MAX, "http: \"%.64s\" is not ADDR:PORT", value);
            return -EINVAL;
        }
        return STR(http);
    }
    if (strcmp(key, "data_dir") == 0)
        return value[0] ? STR(data_dir)
                        : (snprintf(err, CONFIG_ERR_MAX, "data_dir: empty"), -EINVAL);
    if (strcmp(key, "static_dir") == 0)
        return STR(static_dir);
    if (strcmp(key, "log_level") == 0) {
        enum log_level l;
        if (log_level_parse(value, &l) < 0) {
            snprintf(err, CONFIG_ERR_MAX, "log_level: \"%.32s\" is not error|warn|info|debug",
                     value);
            return -EINVAL;
        }
        return STR(log_level);
    }
    if (strcmp(key, "max_line_bytes") == 0)
        return U64(max_line_bytes, 256, 1u << 30);
    if (strcmp(key, "max_connections") == 0)
        return U64(max_connections, 1, 65536);
    if (strcmp(key, "hello_timeout_ms") == 0)
        return U64(hello_timeout_ms, 100, 3600000);
    if (strcmp(key, "reserved_connections") == 0)
        return U64(reserved_connections, 0, 65535);
    if (strcmp(key, "max_buffered_bytes") == 0)
        return U64(max_buffered_bytes, 1u << 20, UINT64_MAX / 4);
    if (strcmp(key, "flush_interval_ms") == 0)
        return U64(flush_interval_ms, 1, 60000);
    if (strcmp(key, "retention_bytes_per_job") == 0)
        return U64(retention_bytes_per_job, 4096, UINT64_MAX / 4);
    if (strcmp(key, "min_free_bytes") == 0)
        return U64(min_free_bytes, 0, UINT64_MAX / 4);
    if (strcmp(key, "live_max_bytes") == 0)
        return U64(live_max_bytes, 0, UINT64_MAX / 4);
    if (strcmp(key, "live_max_jobs") == 0)
        return U64(live_max_jobs, 8, 16777216); /* LIVE_JOBS_LIMIT (live.h) */
    if (strcmp(key, "http_threads") == 0)
        return U64(http_threads, 1, 256);
    if (strcmp(key, "http_max_connections") == 0)
        return U64(http_max_connections, 1, 65536);
    if (strcmp(key, "http_timeout_s") == 0)
        return U64(http_timeout_s, 1, 86400);
    if (strcmp(key, "http_max_connections_per_ip") == 0)
        return U64(http_max_connections_per_ip, 0, 65536);
    if (strcmp(key, "http_max_exports") == 0)
        return U64(http_max_exports, 1, 65536);
    if (strcmp(key, "capture_max_open") == 0)
        return U64(capture_max_open, 0, 100000);
    if (strcmp(key, "capture_max_kept") == 0)
        return U64(capture_max_kept, 0, 100000);
    if (strcmp(key, "capture_expire_s") == 0)
        return U64(capture_expire_s, 1, 86400);
    if (strcmp(key, "http_request_timeout_s") == 0)
        return U64(http_request_timeout_s, 0, 86400);
    if (strcmp(key, "http_allowed_hosts") == 0)
        return set_hosts(c, value, err);
    if (strcmp(key, "http_analysis_timeout_ms") == 0)
        return U64(http_analysis_timeout_ms, 1, 86400000);
    if (strcmp(key, "http_analysis_max_bytes") == 0)
        return U64(http_analysis_max_bytes, 1u << 20, UINT64_MAX / 4);
    if (strcmp(key, "http_cache_max_bytes") == 0)
        return U64(http_cache_max_bytes, 1u << 20, UINT64_MAX / 4);
    if (strcmp(key, "max_response_bytes") == 0)
        return U64(max_response_bytes, 4096, UINT64_MAX / 4);
    if (strcmp(key, "durability") == 0) {
        if (strcmp(value, "normal") == 0)
            c->durability = CONFIG_DURABILITY_NORMAL;
        else if (strcmp(value, "full") == 0)
            c->durability = CONFIG_DURABILITY_FULL;
        else {
            snprintf(err, CONFIG_ERR_MAX, "durability: \"%.32s\" is not normal|full", value);
            return -EINVAL;
        }
        return 0;
    }
    if (strcmp(key, "helper_rules") == 0)
        return STR(helper_rules);
    if (strcmp(key, "role_rules") == 0)
        return STR(role_rules);
    if (strcmp(key, "fp_point") == 0)
        return STR(fp_point);
    if (strcmp(key, "bp_point") == 0)
        return STR(bp_point);
    if (strcmp(key, "auth_token") == 0)
        return set_token(c, value, err);
    if (strcmp(key, "auth_token_file") == 0)
        return STR(auth_token_file);
    if (strcmp(key, "metrics_max_ranks") == 0)
        return U64(metrics_max_ranks, 0, 1000000);
    if (strcmp(key, "cluster_url") == 0) {
        if (value[0] && strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0) {
            snprintf(err, CONFIG_ERR_MAX, "cluster_url: \"%.64s\" is not an http:// or https:// URL",
                     value);
            return -EINVAL;
        }
        const char *auth = strstr(value, "://");
        if (auth && memchr(auth + 3, '@', strcspn(auth + 3, "/?#"))) {
            snprintf(err, CONFIG_ERR_MAX, "cluster_url: credentials go in cluster_credentials_file");
            return -EINVAL;
        }
        return STR(cluster_url);
    }
    if (strcmp(key, "cluster_credentials_file") == 0)
        return STR(cluster_credentials_file);
    if (strcmp(key, "node") == 0) {
        size_t n = strlen(value);
        if (n == 0 || n > 64 ||
            strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:") != n) {
            snprintf(err, CONFIG_ERR_MAX,
                     "node: \"%.64s\" is not 1 to 64 of A-Z a-z 0-9 - . _ :", value);
            return -EINVAL;
        }
        return STR(node);
    }
    if (strcmp(key, "cluster_compression") == 0) {
        if (strcmp(value, "gzip") == 0 || strcmp(value, "none") == 0) {
            c->cluster_gzip = value[0] == 'g';
            return 0;
        }
        snprintf(err, CONFIG_ERR_MAX, "cluster_compression: \"%.32s\" is not gzip|none", value);
        return -EINVAL;
    }
    if (strcmp(key, "cluster_batch_rows") == 0)
        return U64(cluster_batch_rows, 1, 16u << 20);
    if (strcmp(key, "cluster_max_rows_per_s") == 0)
        return U64(cluster_max_rows_per_s, 0, UINT64_MAX / 4);
    if (strcmp(key, "cluster_retry_max_ms") == 0)
        return U64(cluster_retry_max_ms, 250, 3600000);
    if (strcmp(key, "cluster_view") == 0) {
        if (strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
            snprintf(err, CONFIG_ERR_MAX, "cluster_view: \"%.64s\" is not true or false", value);
            return -EINVAL;
        }
        c->cluster_view = strcmp(value, "true") == 0;
        return 0;
    }
#undef STR
#undef U64
    snprintf(err, CONFIG_ERR_MAX, "unknown option \"%.64s\"", key);
    return -ENOENT;
}

const char *config_env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (; envp && *envp; envp++) {
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    }
    return NULL;
}

void config_init(struct config *c, char *const *envp, unsigned uid, const char *default_static_dir)
{
    char err[CONFIG_ERR_MAX];
    memset(c, 0, sizeof *c);
    for (const struct config_option *o = config_options; o->name; o++) {
        if (o->def)
            (void)config_set(c, o->name, o->def, err);
    }
    const char *v = config_env_get(envp, "XDG_RUNTIME_DIR");
    if (v && v[0] == '/')
        snprintf(c->socket, sizeof c->socket, "%s/stepscope.sock", v);
    else
        snprintf(c->socket, sizeof c->socket, "/tmp/stepscope-%u.sock", uid);
    v = config_env_get(envp, "XDG_STATE_HOME");
    const char *home = config_env_get(envp, "HOME");
    if (v && v[0] == '/')
        snprintf(c->data_dir, sizeof c->data_dir, "%s/stepscope", v);
    else if (home && home[0] == '/')
        snprintf(c->data_dir, sizeof c->data_dir, "%s/.local/state/stepscope", home);
    else
        snprintf(c->data_dir, sizeof c->data_dir, "/tmp/stepscope-%u-state", uid);
    snprintf(c->static_dir, sizeof c->static_dir, "%s", default_static_dir ? default_static_dir : "");
    /* node: the host name, cut at the first character a node name cannot hold. */
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0 || !host[0])
        snprintf(host, sizeof host, "localhost");
    host[strspn(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._:")] = '\0';
    host[64] = '\0';
    snprintf(c->node, sizeof c->node, "%s", host[0] ? host : "localhost");
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *end = '\0';
    return s;
}

/* Reads at most max bytes of path into a fresh NUL-terminated buffer (*ret_buf, *ret_n).
 * Returns 0, -errno, or -EFBIG when the file is longer; err says which. */
static int read_file(const char *path, size_t max, char **ret_buf, size_t *ret_n, char *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, CONFIG_ERR_MAX, "%.200s: %s", path, strerror(e));
        return -e;
    }
    size_t n = 0;
    char *buf = malloc(max + 1);
    int r = -ENOMEM;
    if (!buf) {
        snprintf(err, CONFIG_ERR_MAX, "%.200s: out of memory", path);
        goto fail;
    }
    for (;;) {
        if (n == max + 1) {
            snprintf(err, CONFIG_ERR_MAX, "%.200s: larger than %zu bytes", path, max);
            r = -EFBIG;
            goto fail;
        }
        ssize_t k = read(fd, buf + n, max + 1 - n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            snprintf(err, CONFIG_ERR_MAX, "%.200s: %s", path, strerror(errno));
            goto fail;
        }
        if (k == 0)
            break;
        n += (size_t)k;
    }
    close(fd);
    buf[n] = '\0';
    *ret_buf = buf;
    *ret_n = n;
    return 0;
fail:
    free(buf);
    close(fd);
    return r;
}

int config_load_text(struct config *c, const char *buf, size_t n, char *err)
{
    char line[CONFIG_PATH_MAX + 128];
    size_t lineno = 0;
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(buf + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (buf + i)) : n - i;
        lineno++;
        if (len >= sizeof line) {
            snprintf(err, CONFIG_ERR_MAX, "line %zu: longer than %zu bytes", lineno,
                     sizeof line - 1);
            return -EINVAL;
        }
        memcpy(line, buf + i, len);
        line[len] = '\0';
        i += len + (nl ? 1 : 0);
        if (memchr(line, '\0', len)) {
            snprintf(err, CONFIG_ERR_MAX, "line %zu: contains a NUL byte", lineno);
            return -EINVAL;
        }
        char *hash = strchr(line, '#');
        char *end = hash ? hash : line + len;
        char *s = trim(line, end);
        if (*s == '\0')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, CONFIG_ERR_MAX, "line %zu: expected \"key = value\"", lineno);
            return -EINVAL;
        }
        char *key = trim(s, eq);
        char *value = trim(eq + 1, eq + 1 + strlen(eq + 1));
        char sub[CONFIG_ERR_MAX];
        int r = config_set(c, key, value, sub);
        if (r < 0) {
            snprintf(err, CONFIG_ERR_MAX, "line %zu: %.200s", lineno, sub);
            return r;
        }
    }
    return 0;
}

int config_load_file(struct config *c, const char *path, char *err)
{
    char *buf;
    size_t n;
    int r = read_file(path, (1u << 20) - 1, &buf, &n, err);
    if (r < 0)
        return r;
    char sub[CONFIG_ERR_MAX];
    r = config_load_text(c, buf, n, sub);
    if (r < 0)
        snprintf(err, CONFIG_ERR_MAX, "%.40s: %.200s", path, sub);
    free(buf);
    return r;
}

int config_load_token(struct config *c, char *err)
{
    if (!c->auth_token_file[0])
        return 0;
    if (c->auth_token[0]) {
        snprintf(err, CONFIG_ERR_MAX, "give auth_token or auth_token_file, not both");
        return -EINVAL;
    }
    char *buf;
    size_t n;
    int r = read_file(c->auth_token_file, CONFIG_TOKEN_MAX + 2, &buf, &n, err);
    if (r < 0)
        return r;
    bool nul = memchr(buf, '\0', n) != NULL;
    char *nl = memchr(buf, '\n', n);
    char *token = trim(buf, nl ? nl : buf + n);
    char sub[CONFIG_ERR_MAX];
    r = -EINVAL;
    if (nul)
        snprintf(err, CONFIG_ERR_MAX, "%.200s: contains a NUL byte", c->auth_token_file);
    else if (!token[0])
        snprintf(err, CONFIG_ERR_MAX, "%.200s: empty", c->auth_token_file);
    else if ((r = set_token(c, token, sub)) < 0)
        snprintf(err, CONFIG_ERR_MAX, "%.40s: %.200s", c->auth_token_file, sub);
    explicit_bzero(buf, n);
    free(buf);
    return r;
}

bool config_http_is_loopback(const char *http)
{
    char host[64];
    uint16_t port;
    struct in_addr a4;
    struct in6_addr a6;
    if (config_parse_hostport(http, host, sizeof host, &port) < 0)
        return false;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) != 1)
        return false;
    return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
}

int config_load_env(struct config *c, char *const *envp, char *err)
{
    for (const struct config_option *o = config_options; o->name; o++) {
        char name[64] = "STEPSCOPE_";
        size_t k = strlen(name);
        for (const char *p = o->name; *p && k + 1 < sizeof name; p++)
            name[k++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        name[k] = '\0';
        const char *v = config_env_get(envp, name);
        if (!v)
            continue;
        char sub[CONFIG_ERR_MAX];
        int r = config_set(c, o->name, v, sub);
        if (r < 0) {
            snprintf(err, CONFIG_ERR_MAX, "%s: %.200s", name, sub);
            return r;
        }
    }
    return 0;
}

int config_parse_hostport(const char *s, char *addr, size_t addr_size, uint16_t *ret_port)
{
    const char *colon;
    const char *a = s;
    size_t alen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return -EINVAL;
        a = s + 1;
        alen = (size_t)(close - a);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -EINVAL;
        alen = (size_t)(colon - s);
    }
    if (alen == 0 || alen >= addr_size)
        return -EINVAL;
    const char *p = colon + 1;
    if (*p == '\0' || strlen(p) > 5)
        return -EINVAL;
    unsigned long port = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return -EINVAL;
        port = port * 10 + (unsigned long)(*p - '0');
    }
    if (port > 65535)
        return -EINVAL;
    memcpy(addr, a, alen);
    addr[alen] = '\0';
    *ret_port = (uint16_t)port;
    return 0;
}
