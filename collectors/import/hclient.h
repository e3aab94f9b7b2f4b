/* SPDX-License-Identifier: MIT */
/*
 * hclient: the CLI's read side of stepscoped's HTTP API (docs/API.md): one GET over HTTP/1.0
 * (so the answer is never chunked and ends when the daemon closes), with the bearer token when
 * the daemon has one, bounded in size and time. For the subcommands that print what the API
 * says (`stepscope jobs`); where the daemon is and the token come from the same options and
 * environment as the daemon's own (hclient_target()).
 */
#ifndef STEPSCOPE_IMPORT_HCLIENT_H
#define STEPSCOPE_IMPORT_HCLIENT_H

#include <stddef.h>

#define HCLIENT_ERR_MAX 512
#define HCLIENT_TIMEOUT_MS 30000      /* a wait with no progress fails after this */
#define HCLIENT_ANSWER_MAX (64u << 20) /* the daemon's max_response_bytes default */
#define HCLIENT_ADDR_MAX 4096
#define HCLIENT_TOKEN_MAX 256

/* Where the daemon answers and how to authenticate. */
struct hclient_target {
    char http[HCLIENT_ADDR_MAX];   /* ADDR:PORT, as the daemon's http option */
    char token[HCLIENT_TOKEN_MAX]; /* "" : none */
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

/* The "message" of a {"error":{"code","message"}} body, copied into buf (size bytes) with
 * control bytes replaced by '?'; the body's first line when it is not one. */
void hclient_error_message(const char *body, size_t len, char *buf, size_t size);

#endif
