/* SPDX-License-Identifier: MIT */
/*
 * config: every option of stepscoped, its default, its environment variable and its parser, in
 * one table. Sources are applied in increasing precedence by the caller: config_init() (defaults,
 * some derived from XDG variables), then config_load_file(), config_load_env(), and config_set()
 * for each command-line option. Pure: no logging, no globals; errors come back as text.
 */
#ifndef STEPSCOPE_CONFIG_H
#define STEPSCOPE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_PATH_MAX 4096
#define CONFIG_ERR_MAX 256
#define CONFIG_POINT_MAX 1024 /* fp_point, bp_point: longest operator name + 1 */
#define CONFIG_TOKEN_MIN 16    /* shortest auth_token accepted, in bytes */
#define CONFIG_TOKEN_MAX 256   /* auth_token: longest token + 1 */

enum config_durability {
    CONFIG_DURABILITY_NORMAL, /* survives a daemon crash (kill -9): WAL, synchronous=NORMAL */
    CONFIG_DURABILITY_FULL,   /* survives power loss too: synchronous=FULL, one fsync per commit */
};

struct config {
    char socket[CONFIG_PATH_MAX];     /* Unix socket path; length checked by the daemon */
    uint32_t socket_mode;             /* its permission bits, 0600..0777 with owner rw */
    char http[CONFIG_PATH_MAX];       /* ADDR:PORT; port 0 picks a free port */
    char data_dir[CONFIG_PATH_MAX];   /* holds stepscope.db and the lock file */
    char static_dir[CONFIG_PATH_MAX]; /* dashboard files served under / */
    char log_level[16];               /* error | warn | info | debug */
    uint64_t max_line_bytes;          /* longest accepted protocol line */
    uint64_t max_connections;         /* concurrent client connections */
    uint64_t hello_timeout_ms;        /* a connection without a complete hello is closed after */
    uint64_t reserved_connections;    /* slots of max_connections hello-less ones cannot take */
    uint64_t max_buffered_bytes;      /* accepted but not yet durable; reading pauses above it */
    uint64_t flush_interval_ms;       /* longest time a record waits for its transaction */
    uint64_t retention_bytes_per_job; /* stored timeline bytes per job before the oldest go */
    uint64_t min_free_bytes;          /* data dir's file system: less free is a degraded health */
    uint64_t live_max_bytes;          /* live state budget; ended jobs past it are evicted */
    uint64_t live_max_jobs;           /* jobs analysed live at once (8 to 16 777 216, LIVE_JOBS_LIMIT) */
    uint64_t http_threads;            /* libmicrohttpd thread pool size */
    uint64_t http_max_connections;    /* concurrent HTTP connections */
    uint64_t http_timeout_s;          /* idle HTTP connections are closed after this */
    uint64_t http_max_connections_per_ip; /* from one address; 0: no limit of its own */
    uint64_t http_max_exports;        /* timeline exports streamed at once */
    uint64_t http_request_timeout_s;  /* a request not fully in this long after its first byte
                                         has its connection closed; 0: never */
    char http_allowed_hosts[1024];    /* Host names answered besides the loopback names and the
                                         bound address; comma-separated; "*": any */
    uint64_t http_analysis_timeout_ms; /* an analysis still running this long answers 503 */
    uint64_t http_analysis_max_bytes; /* memory budget of the running analyses, together */
    uint64_t http_cache_max_bytes;    /* memory budget of the answer cache's kept answers */
    uint64_t max_response_bytes;      /* cap on one HTTP answer */
    enum config_durability durability;
    char helper_rules[CONFIG_PATH_MAX]; /* file of helper thresholds ("key = value", analyse_helper.h);
                                           "" keeps the peers' defaults */
    char role_rules[CONFIG_PATH_MAX];   /* file of extra role rules (analyse_rules_parse()),
                                           tried before the built-in table; "" = none */
    char fp_point[CONFIG_POINT_MAX];    /* daemon-wide FP start operator name; "" = automatic */
    char bp_point[CONFIG_POINT_MAX];    /* daemon-wide BP end operator name; "" = automatic */
    char auth_token[CONFIG_TOKEN_MAX];  /* HTTP bearer token; "" = no authentication (loopback
                                           only). Visible ASCII, CONFIG_TOKEN_MIN bytes or more */
    char auth_token_file[CONFIG_PATH_MAX]; /* file holding the token (config_load_token()) */
    uint64_t metrics_max_ranks;         /* (job, rank) pairs GET /metrics exports at most */
    uint64_t capture_max_open;          /* captures of one job not yet ended; 0: no cap */
    uint64_t capture_max_kept;          /* captures of one job kept; the oldest ended go first */
    uint64_t capture_expire_s;          /* a pending capture part expires after this long */
    char cluster_url[CONFIG_PATH_MAX];  /* ClickHouse HTTP interface; "" = no shipping */
    char cluster_credentials_file[CONFIG_PATH_MAX]; /* USER:PASSWORD on its first line */
    char node[65];                      /* this node's name; default the host name */
    uint64_t cluster_batch_rows;        /* rows per shipped batch */
    uint64_t cluster_max_rows_per_s;    /* catch-up bound; 0: none */
    uint64_t cluster_retry_max_ms;      /* longest backoff */
    bool cluster_gzip;                  /* cluster_compression: gzip (true) or none */
    bool cluster_view;                  /* with cluster_url: also show the other nodes' ranks */
};

struct config_option {
    const char *name;    /* key in the file; STEPSCOPE_<NAME in upper case> in the environment */
    const char *def;     /* default as text; NULL when derived at run time (see config_init) */
    const char *doc;     /* one line for --help and the sample file */
};

/* The option table, terminated by a zeroed entry. */
extern const struct config_option config_options[];

/* Sets every option to its default. envp (NULL-terminated "K=V" strings, like environ) is read
 * for the derived defaults: socket from STEPSCOPE_SOCKET's absence falls back to
 * $XDG_RUNTIME_DIR/stepscope.sock, else /tmp/stepscope-$UID.sock (uid given); data_dir to
 * $XDG_STATE_HOME/stepscope, else $HOME/.local/state/stepscope. default_static_dir is the build's
 * choice for static_dir. */
void config_init(struct config *c, char *const *envp, unsigned uid, const char *default_static_dir);

/* Sets option key to value. Returns 0; -ENOENT for an unknown key; -EINVAL for a bad value,
 * -ENAMETOOLONG for a value too long. err (CONFIG_ERR_MAX bytes) gets a message on failure. */
int config_set(struct config *c, const char *key, const char *value, char *err);

/* Applies "key = value" lines from the text buf[0, n): '#' starts a comment, blank lines are
 * skipped, keys and values are trimmed. Stops at the first bad line; err names its number.
 * Returns 0 or the config_set() error (-EINVAL for a line without '='). */
int config_load_text(struct config *c, const char *buf, size_t n, char *err);

/* Reads path and applies it with config_load_text(). Returns 0, -errno from opening/reading
 * (err says so), or a config_load_text() error. */
int config_load_file(struct config *c, const char *path, char *err);

/* Applies every STEPSCOPE_<OPTION> variable found in envp. Returns 0 or the first error. */
int config_load_env(struct config *c, char *const *envp, char *err);

/* Looks up name=... in envp; NULL if absent. */
const char *config_env_get(char *const *envp, const char *name);

/* Splits "ADDR:PORT" ("[v6]:PORT" accepted) into addr (at least 64 bytes) and port.
 * Returns 0 or -EINVAL. */
int config_parse_hostport(const char *s, char *addr, size_t addr_size, uint16_t *ret_port);

/* Resolves auth_token_file: when set, reads the token from that file (its first line; a
 * trailing newline and blanks are dropped) into c->auth_token, checked as config_set() checks
 * auth_token. Giving both auth_token and auth_token_file is an error. Returns 0 (nothing to do
 * included), -EINVAL, or -errno from reading; err says why. */
int config_load_token(struct config *c, char *err);

/* True when http ("ADDR:PORT") names a loopback address: 127.0.0.0/8, ::1 or ::ffff:127.x.y.z.
 * False for anything else, unparsable text included. */
bool config_http_is_loopback(const char *http);

#endif
