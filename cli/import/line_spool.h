/* SPDX-License-Identifier: MIT */
/*
 * spool: the protocol lines of one input file, written during pass 1 to an unlinked temporary
 * file, so that pass 2 streams them to the daemon (sendfile) instead of reading, decompressing
 * and scanning the trace a second time.
 *
 * The file lives in $TMPDIR (else /tmp), opened O_TMPFILE (else mkstemp() and unlink()), so it
 * takes page cache and disk, not the importer's memory, and disappears with the process. Lines
 * are written through a SPOOL_BUF_BYTES buffer; the byte offset of every SPOOL_INDEX_EVERY-th
 * line is kept, so that a session that resumes at the welcome's next_seq finds its first line
 * after reading at most SPOOL_INDEX_EVERY - 1 lines. A write error is final, and so is a file
 * system about to run low (less than SPOOL_RESERVE_BYTES or SPOOL_RESERVE_PCT % free, checked
 * every SPOOL_CHECK_EVERY bytes: -ENOSPC before it is full, so that no other program finds the
 * temporary directory full because of an import): the caller drops the spool and reads the
 * trace again.
 */
#ifndef STEPSCOPE_IMPORT_SPOOL_H
#define STEPSCOPE_IMPORT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define SPOOL_BUF_BYTES (2u << 20) /* write buffer, > the longest event line */
#define SPOOL_INDEX_EVERY 4096u    /* lines between two kept offsets */
#define SPOOL_CHECK_EVERY (64ull << 20)     /* bytes written between two free-space checks */
#define SPOOL_RESERVE_BYTES (1ull << 30)    /* free space a spool leaves in its file system, */
#define SPOOL_RESERVE_PCT 5                 /* or this share of it if that is more */

struct spool;

/* Creates an empty spool. Returns 0 and sets *ret_s (free with spool_free()), or a negative
 * errno with ret_err (at least 256 bytes) saying why. */
int spool_new(struct spool **ret_s, char *ret_err);

/* Frees s and its file; NULL-safe. */
void spool_free(struct spool *s);

/* Appends the n bytes at ev (one valid JSON event) as one line, as spool_line_copy() makes it,
 * and a '\n'. Returns 0, -EMSGSIZE for n >= SPOOL_BUF_BYTES, or a negative errno (-ENOSPC,
 * -EIO, ...) from writing, which is final. */
int spool_add(struct spool *s, const char *ev, size_t n);

/* Writes what is buffered. Returns 0 or a negative errno. */
int spool_flush(struct spool *s);

/* Lines added, and bytes they take (flushed or not). */
uint64_t spool_lines(const struct spool *s);
uint64_t spool_bytes(const struct spool *s);

/* The file descriptor to read the flushed lines from (positioned reads only). */
int spool_fd(const struct spool *s);

/* Byte offset where line (0-based) starts; spool_bytes() for line == spool_lines(). The spool
 * must be flushed. Returns 0, -ERANGE past the end, or a negative errno from reading. */
int spool_line_offset(const struct spool *s, uint64_t line, uint64_t *ret_off);

/* Copies the valid JSON text src[0, n) to dst (n bytes of room) as one line: without its raw
 * newlines and the blanks that follow each (line breaks and indentation between tokens; a
 * string cannot hold a raw newline). Returns the bytes written. Shared with client.c. */
size_t spool_line_copy(char *dst, const char *src, size_t n);

#endif
