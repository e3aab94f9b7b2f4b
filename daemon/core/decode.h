/* SPDX-License-Identifier: MIT */
/*
 * decode: the record decoder. One protocol line (docs/PROTOCOL.md) in, one struct record (or
 * struct record_hello) out, with typed fields; decode.c applies the record rules to what
 * lib/json's strict single-pass scanner extracts. Ingest decodes each line it frames; the replay
 * and web's summary routes decode stored lines (line_decoder below), so no module past ingest
 * reads a record's JSON itself. C, with extern "C" guards because the differential fuzzer's C++
 * oracle includes it too.
 *
 * A line is scanned in place (lbuf leaves LBUF_PADDING readable bytes after its NUL, which the
 * scanner's word-at-a-time loads rely on), once from start to end (so every value is validated,
 * including the ones the daemon does not look at, and kept verbatim only if it is valid JSON), and
 * each top-level key is dispatched once. Strings without escapes point into the line itself;
 * unescaped copies go to a per-connection arena that the caller owns and empties after each sink
 * call.
 */
#ifndef STEPSCOPE_DECODE_H
#define STEPSCOPE_DECODE_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stddef.h>
#include <stdint.h>

#include "../../lib/json.h"
#include "record.h"

#define DECODE_MSG_MAX JSON_MSG_MAX /* bytes of a decode error message, NUL included */
#define DECODE_LINE_MAX_DEFAULT (1u << 20) /* config max_line_bytes' default */

enum ingest_decode {
    DECODE_OK = 0,    /* *ret filled */
    DECODE_BYE,       /* {"type":"bye"}: no record */
    DECODE_MALFORMED, /* not a JSON object, invalid JSON or invalid UTF-8 */
    DECODE_UNKNOWN,   /* an object with neither "ph" nor a known "type" */
    DECODE_INVALID,   /* a known record with a missing or ill-typed field */
    DECODE_BAD_HELLO, /* not a valid hello (any reason) */
    DECODE_NOSPACE,   /* the arena cannot hold this line's strings: empty it, retry */
    DECODE_CAPTURE,   /* {"type":"capture"}: a capture report, not a stored record: the
                              * capture id in ret->step, the state in ret->name, the reason (if
                              * any) in ret->cat */
};

struct decoder;

/* A decoder for lines of up to max_line bytes. It holds only the known-key tables, never changed
 * after this call. Returns NULL on OOM. Caller frees with decoder_free() (NULL-safe). */
struct decoder *decoder_new(size_t max_line);
void decoder_free(struct decoder *d);

/* Decodes a record line. line is NUL-terminated at line[len] and followed by at least
 * LBUF_PADDING readable bytes; it is borrowed, and so are the pointers written to *ret (into line,
 * or into a; valid while both are). ret->seq is left 0 for the caller to set. A trace event "M"
 * without "ts", and stepscope records without "ts_us", get ts_ns = INT64_MIN.
 * Returns DECODE_OK or _BYE, or another enum ingest_decode value with a short reason in
 * msg (DECODE_MSG_MAX bytes). On failure *ret is unspecified and a is as it was. */
int decode_record(struct decoder *d, const char *line, size_t len,
                          struct json_arena *a, struct record *ret, char *msg);

/* Decodes and validates a hello line (docs/PROTOCOL.md section 1); same buffer rules. Its strings
 * are NUL-terminated copies in a (absent ones point to a static ""); ret->raw is line.
 * Returns DECODE_OK, _BAD_HELLO (reason in msg) or _NOSPACE. */
int decode_hello(struct decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record_hello *ret, char *msg);

/* The typed members of a step's "phases" object text[0, len) as the store keeps it (no padding
 * needed): what decode_record() fills from a line in its own pass. All -1 when text is empty or
 * not an object; a member that is not a time in µs >= 0 is -1. */
void decode_phases(const char *text, size_t len, struct record_phases *ret);

/* Reads a {"type":"pipeline"} record's text[0, len) (the line as decoded or as stored: no padding
 * needed) into *ret, whose values it allocates (free(ret->values) when done; NULL on failure).
 * Pipeline records are rare and their typed form is large (RECORD_PIPE_OPS_MAX ops, up to
 * RECORD_PIPE_VALUES_MAX numbers), so decode_record() leaves this to the record's consumer.
 * Returns 0, -EINVAL for a shape it cannot read (an op or child link past the caps, a value of
 * the wrong type), -ENOMEM. */
int decode_pipeline(const char *text, size_t len, struct record_pipeline *ret);

/* The protocol's error code for a failed decode: "malformed", "unknown", "invalid", "bad_hello". */
const char *decode_code(int result);

/* Decoding stored lines outside a connection (daemon/replay feeds the store to daemon/live;
 * daemon/web's summary routes read stored spans). A stored line has no padding after it, so the
 * decoder copies it into its own padded buffer first. Any thread, one decoder per thread. */
struct line_decoder;

/* A decoder for lines of up to max_line bytes (0: DECODE_LINE_MAX_DEFAULT). NULL on OOM. Free
 * with line_decoder_free() (NULL-safe). */
struct line_decoder *line_decoder_new(size_t max_line);
void line_decoder_free(struct line_decoder *ld);

/* Decodes one record line (no '\n'; need not be NUL-terminated) into *ret, whose pointers
 * borrow ld's buffers until the next call on ld. ret->seq is 0. Returns 0; -EMSGSIZE for a line
 * longer than max_line; -EINVAL for a line the protocol rejects (or a bye). */
int decode_line(struct line_decoder *ld, const char *line, size_t len, struct record *ret);

/* Decodes one hello line (as a session's hello is stored) into *ret, with the same rules as a
 * connection's first line; its strings borrow ld's buffers until the next call on ld. Returns 0;
 * -EMSGSIZE for a line longer than max_line; -EINVAL for a line that is not a valid hello or is a
 * probe. */
int decode_hello_line(struct line_decoder *ld, const char *line, size_t len,
                      struct record_hello *ret);

/* What torch's Kineto writes in a trace event's "args" that the kernel and communication
 * tables read (analyse_tbprof.h), read by a second pass over the line made only on demand (the
 * ingest path never reads them). Members of another type are absent, never an error. */
#define DECODE_INPUTS_MAX 64 /* "Input Dims" / "Input type" entries read; the rest are ignored */
#define DECODE_TYPE_MAX 32   /* bytes kept of an "Input type" string, NUL included */

struct decode_trace_args {
    double blocks_per_sm;  /* "blocks per SM", -1 if absent */
    double occupancy_pct;  /* "est. achieved occupancy %", -1 if absent */
    int64_t regs;          /* "registers per thread", -1 if absent */
    int64_t smem;          /* "shared memory", -1 if absent */
    int32_t grid[3];       /* "grid": its first n_grid integers */
    int32_t block[3];      /* "block" */
    uint8_t n_grid, n_block;
    size_t n_dims;         /* "Input Dims" entries read; 0 if absent */
    int64_t elems[DECODE_INPUTS_MAX]; /* each entry's product of sizes (1 for []), -1 when it
                                         is not a list of integers; saturates at INT64_MAX */
    size_t n_types;        /* "Input type" entries read */
    char type[DECODE_INPUTS_MAX][DECODE_TYPE_MAX]; /* each a string ("" if not one), cut */
};

/* Reads a stored trace event line's args into *ret (all absent when the line has none). Returns
 * 0, or -EINVAL when the line is not a JSON object (*ret then all absent). */
int decode_args_read(const char *line, size_t len, struct decode_trace_args *ret);

#ifdef __cplusplus
}
#endif

#endif
