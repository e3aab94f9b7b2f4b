/* SPDX-License-Identifier: MIT */
/*
 * tfile: one trace file (plain JSON or gzip, told apart by its first bytes) read through tscan,
 * event by event, in constant memory.
 *
 * The file is decompressed into a fixed buffer (TFILE_BUF_BYTES) and scanned in place; the bytes
 * of the event being scanned stay in the buffer until it ends, which tscan's event size limit
 * guarantees they fit. Errors (gzip damage or truncation, JSON or event errors) come out as one
 * message naming the file, the byte offset in the uncompressed text, its line and column, and
 * for gzip the compressed offset too.
 */
#ifndef STEPSCOPE_IMPORT_TFILE_H
#define STEPSCOPE_IMPORT_TFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_scan.h"

#define TFILE_BUF_BYTES (8u << 20) /* decompression and scan buffer, > TSCAN_EVENT_BYTES_MAX */
#define TFILE_ERR_MAX 512          /* longest error message, NUL included */

struct tfile;

/* Opens path for reading. Returns 0 and sets *ret_f (caller frees with tfile_free()), -ENOMEM,
 * or a negative errno from open(2); on failure ret_err (TFILE_ERR_MAX bytes) says why. */
int tfile_open(const char *path, struct tfile **ret_f, char *ret_err);

/* Opens the plain (not gzip) file at path from byte off on, scanned by a copy of *scan (NULL: a
 * fresh scanner; see tscan_init_split()). Offsets stay absolute; error lines and columns count
 * from off. Returns as tfile_open() (-EINVAL for a gzip file with off > 0). */
int tfile_open_at(const char *path, uint64_t off, const struct tscan *scan, struct tfile **ret_f,
                  char *ret_err);

/* Makes tfile_next() return 0 once every byte before absolute offset at has been scanned (the
 * document is not checked for its end there; tfile_scan() shows where the scanner stands); at
 * UINT64_MAX lifts the pause, and tfile_next() then goes on from there to the real end. */
void tfile_pause_at(struct tfile *f, uint64_t at);

/* The scanner (borrowed). */
const struct tscan *tfile_scan(const struct tfile *f);

/* Frees f; NULL-safe. */
void tfile_free(struct tfile *f);

/* The next event. Returns 1 with *ret_ev and *ret_len its exact bytes (borrowed, valid until the
 * next call; raw newlines between tokens are still there) and *ret_info (borrowed likewise);
 * 0 at the end of a valid file (tfile_meta() is then complete); -EINVAL for invalid input or
 * -EIO for a read or gzip error, with tfile_error() set. Errors are final. May block on disk. */
int tfile_next(struct tfile *f, const char **ret_ev, size_t *ret_len,
               const struct tscan_event **ret_info);

/* The file's top-level facts (borrowed; complete after tfile_next() returned 0). */
const struct tscan_meta *tfile_meta(const struct tfile *f);

/* The last error as "PATH: byte N (line L, column C): reason" (borrowed). */
const char *tfile_error(const struct tfile *f);

/* Whether the file is gzip-compressed. */
bool tfile_is_gzip(const struct tfile *f);

/* Uncompressed bytes read so far. */
uint64_t tfile_bytes(const struct tfile *f);

#endif
