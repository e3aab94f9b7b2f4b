/* SPDX-License-Identifier: MIT */
/*
 * decode: one NDJSON line in, one struct record (or struct record_hello) out. decode.c applies
 * the record rules to what lib/json's strict single-pass scanner extracts. Internal to
 * daemon/ingest/ (C, with extern "C" guards because the differential fuzzer's C++ oracle includes
 * it too).
 *
 * A line is scanned in place (lbuf leaves LBUF_PADDING readable bytes after its NUL, which the
 * scanner's word-at-a-time loads rely on), once from start to end (so every value is validated,
 * including the ones the daemon does not look at, and kept verbatim only if it is valid JSON), and
 * each top-level key is dispatched once. Strings without escapes point into the line itself;
 * unescaped copies go to a per-connection arena that the caller owns and empties after each sink
 * call.
 */
#ifndef STEPSCOPE_INGEST_DECODE_H
#define STEPSCOPE_INGEST_DECODE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "../../lib/json.h"
#include "../core/record.h"

#define INGEST_DECODE_MSG_MAX JSON_MSG_MAX /* bytes of a decode error message, NUL included */

enum ingest_decode {
    INGEST_DECODE_OK = 0,    /* *ret filled */
    INGEST_DECODE_BYE,       /* {"type":"bye"}: no record */
    INGEST_DECODE_MALFORMED, /* not a JSON object, invalid JSON or invalid UTF-8 */
    INGEST_DECODE_UNKNOWN,   /* an object with neither "ph" nor a known "type" */
    INGEST_DECODE_INVALID,   /* a known record with a missing or ill-typed field */
    INGEST_DECODE_BAD_HELLO, /* not a valid hello (any reason) */
    INGEST_DECODE_NOSPACE,   /* the arena cannot hold this line's strings: empty it, retry */
    INGEST_DECODE_CAPTURE,   /* {"type":"capture"}: a capture report, not a stored record: the
                              * capture id in ret->step, the state in ret->name, the reason (if
                              * any) in ret->cat */
};

struct ingest_decoder;

/* A decoder for lines of up to max_line bytes. It holds only the known-key tables, never changed
 * after this call. Returns NULL on OOM. Caller frees with ingest__decoder_free() (NULL-safe). */
struct ingest_decoder *ingest__decoder_new(size_t max_line);
void ingest__decoder_free(struct ingest_decoder *d);

/* Decodes a record line. line is NUL-terminated at line[len] and followed by at least
 * LBUF_PADDING readable bytes; it is borrowed, and so are the pointers written to *ret (into line,
 * or into a; valid while both are). ret->seq is left 0 for the caller to set. A trace event "M"
 * without "ts", and stepscope records without "ts_us", get ts_ns = INT64_MIN.
 * Returns INGEST_DECODE_OK or _BYE, or another enum ingest_decode value with a short reason in
 * msg (INGEST_DECODE_MSG_MAX bytes). On failure *ret is unspecified and a is as it was. */
int ingest__decode_record(struct ingest_decoder *d, const char *line, size_t len,
                          struct json_arena *a, struct record *ret, char *msg);

/* Decodes and validates a hello line (docs/PROTOCOL.md section 1); same buffer rules. Its strings
 * are NUL-terminated copies in a (absent ones point to a static ""); ret->raw is line.
 * Returns INGEST_DECODE_OK, _BAD_HELLO (reason in msg) or _NOSPACE. */
int ingest__decode_hello(struct ingest_decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record_hello *ret, char *msg);

/* The protocol's error code for a failed decode: "malformed", "unknown", "invalid", "bad_hello". */
const char *ingest__decode_code(int result);

#ifdef __cplusplus
}
#endif

#endif
