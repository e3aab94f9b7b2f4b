/* SPDX-License-Identifier: MIT */
/*
 * client: one blocking-but-bounded protocol session with stepscoped (docs/PROTOCOL.md) for the
 * importer: connect, hello, wait for the welcome, send record lines in ~64 KiB writes, bye, and
 * wait for the ack that covers everything.
 *
 * The socket is non-blocking and every wait is a poll() on both directions, so the daemon's
 * replies (acks, errors) are read while we write and neither side can fill its buffers and wait
 * on the other. Nothing sent is kept: a session that breaks is replayed by the caller from the
 * file, starting at the welcome's next_seq of a new session.
 */
#ifndef STEPSCOPE_IMPORT_CLIENT_H
#define STEPSCOPE_IMPORT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLIENT_FLUSH_BYTES (64u << 10)  /* a write is issued once this much is queued */
#define CLIENT_OUT_MAX (4u << 20)       /* queued bytes, > CLIENT_FLUSH_BYTES + one line */
#define CLIENT_IN_MAX (64u << 10)       /* longest reply line kept; longer ones are skipped */
#define CLIENT_IDLE_MS 120000           /* a wait with no progress either way fails after this */
#define CLIENT_ERR_MAX 512              /* longest error message, NUL included */

struct client;

/* Called for every {"error":...} the daemon sends about a record line: seq is the line's
 * sequence number (-1 if absent), line its 1-based line number on the connection. code and
 * message are NUL-terminated, borrowed for the call. */
typedef void (*client_error_cb)(void *ud, int64_t seq, int64_t line, const char *code,
                                const char *message);

/* Connects to the Unix socket at path. Returns 0 and sets *ret_c (free with client_free()), or
 * -ENAMETOOLONG, -ENOMEM, or the negative errno of socket()/connect() (-ENOENT,
 * -ECONNREFUSED, ...), with ret_err (CLIENT_ERR_MAX bytes) saying why. */
int client_open(const char *path, client_error_cb on_error, void *ud, struct client **ret_c,
                char *ret_err);

/* Closes and frees c; NULL-safe. */
void client_free(struct client *c);

/* Sends the hello line (without its '\n') and waits for the answer. Returns 0 and sets
 * *ret_next_seq from the welcome; -EPROTO if the daemon refused the hello (ret_err has its code
 * and message); -EPIPE if the connection closed; -ETIMEDOUT; other negative errnos from I/O. */
int client_hello(struct client *c, const char *hello, size_t len, uint64_t *ret_next_seq,
                 char *ret_err);

/* Queues one record line: the n bytes at line (valid JSON) without their raw newlines and the
 * blanks after them (spool_line_copy()), and a '\n'; writes when CLIENT_FLUSH_BYTES are queued,
 * waiting (poll, reading replies) while the socket is full. n must be at most CLIENT_OUT_MAX -
 * CLIENT_FLUSH_BYTES - 1. Returns 0, -EPIPE if the connection closed, -ETIMEDOUT, or another
 * negative errno. */
int client_send(struct client *c, const char *line, size_t n, char *ret_err);

/* Writes what is queued, then sends len bytes of fd from offset off as they are (whole record
 * lines, each ending in '\n'), with sendfile(2), reading replies while the socket is full.
 * SIGPIPE must be ignored (sendfile has no MSG_NOSIGNAL). Returns 0, -EIO if fd ends early, or
 * as client_send(). */
int client_send_file(struct client *c, int fd, uint64_t off, uint64_t len, char *ret_err);

/* Sends {"type":"bye"}, writes everything queued, and waits until the daemon acks want_ack (the
 * bye's sequence number + 1). Returns 0, or as client_send() (-EPIPE: closed before the ack). */
int client_finish(struct client *c, uint64_t want_ack, char *ret_err);

/* The highest ack received so far (0 if none). */
uint64_t client_acked(const struct client *c);

/* Error replies received about record lines. */
uint64_t client_n_errors(const struct client *c);

#endif
