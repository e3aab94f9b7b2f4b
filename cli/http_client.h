/* SPDX-License-Identifier: MIT */
/*
 * hclient: the CLI's read side of stepscoped's HTTP API (docs/API.md): one GET over HTTP/1.0
 * (libcurl)
 * (so the answer is never chunked and ends when the daemon closes), with the bearer token when
 * the daemon has one, bounded in size and time (hclient_request() also POSTs a JSON body). For
 * the subcommands that talk to the API (`stepscope jobs`, `capture`, `summary`). The token and
 * an HTTP address come from the same options and environment as the daemon's own
 * (hclient_target()); which daemon that is, locate.h decides.
 */
#ifndef STEPSCOPE_IMPORT_HCLIENT_H
#define STEPSCOPE_IMPORT_HCLIENT_H

#include <stddef.h>
#include <stdio.h>

#define HCLIENT_ERR_MAX 512
#define HCLIENT_TIMEOUT_MS 30000      /* a wait with no progress fails after this */
#define HCLIENT_ANSWER_MAX (64u << 20) /* the daemon's max_response_bytes default */
#define HCLIENT_ADDR_MAX 4096
#define HCLIENT_TOKEN_MAX 256

/* Where the daemon answers and how to authenticate. */
struct hclient_target {
    char http[HCLIENT_ADDR_MAX];   /* ADDR:PORT, as the daemon's http option; ADDR may also be a
                                      name (localhost), tried at each of its addresses */
    char token[HCLIENT_TOKEN_MAX]; /* "" : none */
    char socket[HCLIENT_ADDR_MAX]; /* its Unix socket (locate_daemon() fills it) */
};

/* Fills *ret from envp (STEPSCOPE_HTTP, STEPSCOPE_AUTH_TOKEN, STEPSCOPE_AUTH_TOKEN_FILE, each as
 * the daemon reads it; the daemon's default address otherwise), then http and token_file when
 * not NULL (command-line flags, which win). Returns 0, or a negative errno with err saying
 * which source is bad. */
int hclient_target(struct hclient_target *ret, char *const *envp, const char *http,
                   const char *token_file, char *err);

/* GETs path (already percent-encoded) from t. Returns 0 with the HTTP status in *ret_status and
 * the body in *ret_body (malloc'd, NUL-terminated, *ret_len bytes without the NUL; free() it);
 * or a negative errno (-ECONNREFUSED, -ETIMEDOUT, -EPROTO for an answer that is not HTTP,
 * -EMSGSIZE past HCLIENT_ANSWER_MAX, ...) with err saying what failed. */
int hclient_get(const struct hclient_target *t, const char *path, int *ret_status,
                char **ret_body, size_t *ret_len, char *err);

/* As hclient_get, with any method; json (json_len bytes, NULL for none) is sent as the body with
 * Content-Type: application/json. */
int hclient_request(const struct hclient_target *t, const char *method, const char *path,
                    const char *json, size_t json_len, int *ret_status, char **ret_body,
                    size_t *ret_len, char *err);

/* The getopt_long options every API command takes (put them last in its table), and what they
 * set. */
#define HCLIENT_OPTIONS                                                                            \
    {"http", required_argument, NULL, 'H'}, {"socket", required_argument, NULL, 'S'},              \
        {"auth-token-file", required_argument, NULL, 'T'}, {"help", no_argument, NULL, 'h'},       \
    {                                                                                              \
        NULL, 0, NULL, 0                                                                           \
    }
struct hclient_options {
    const char *http, *token_file, *socket;
};

/* Handles getopt_long's answer c when it is one of HCLIENT_OPTIONS or an unknown option (the
 * error said on stderr with usage). Returns -1 when parsing goes on, else the exit code of the
 * command (0 after --help printed its usage on stdout, 2 bad usage). */
int hclient_option(int c, const char *cmd, void (*usage)(FILE *), char **argv,
                   struct hclient_options *o);

/* Appends s percent-encoded as one path segment (every byte but A-Z a-z 0-9 - . _ ~) to the
 * NUL-terminated buf of size bytes. Returns 0, or -ENAMETOOLONG if it does not fit. */
int hclient_add_segment(char *buf, size_t size, const char *s);

/* Prints "stepscope CMD: the daemon answered STATUS: MESSAGE" (with a token hint on 401) to
 * stderr. */
void hclient_print_error(const char *cmd, int status, const char *body, size_t len);

/* The "message" of a {"error":{"code","message"}} body, unescaped into buf (size bytes) as
 * hclient_json_unescape() does; the body's first line, control bytes as '?', when it is not one. */
void hclient_error_message(const char *body, size_t len, char *buf, size_t size);

/* Unescapes the raw text s[0, n) of a JSON string (quotes excluded) into out (size bytes,
 * NUL-terminated, cut to fit), with control characters and lone surrogate halves as '?'. */
void hclient_json_unescape(const char *s, size_t n, char *out, size_t size);

#endif
