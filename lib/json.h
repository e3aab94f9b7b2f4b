/* SPDX-License-Identifier: MIT */
/*
 * json: the JSON codec of the daemon and the CLI (curl's curlx is the model for lib/). Pure: it
 * knows JSON, never a record, a job or the protocol; daemon/core/decode.c builds the protocol's
 * records on it.
 *
 * The scanner: one call validates a whole line as exactly one RFC 8259 object (UTF-8 checked,
 * escapes and surrogate pairs checked, no leading zeros, NaN, trailing commas or comments, nesting
 * at most JSON_DEPTH_MAX deep, nothing but blanks after the object) and, in the same pass, fills
 * one slot per known key from its first occurrence: the type of the value and its text (a
 * string's bytes, unescaped into the caller's arena only when they hold a backslash; a number's
 * exact token; an object's or array's raw text). A known key may name a set of sub keys
 * (json_keys_sub()): the members of its object fill their own slots in the same pass. Keys are
 * compared after unescaping ("forw\u0061rd" is "forward").
 *
 * Why hand-written: the daemon must validate every byte of every line (events are stored verbatim
 * and exported as one JSON document), and a general parser's per-value walk cost more than the
 * rest of ingest together. This scanner touches each byte once, checks string bodies 16 bytes at
 * a time with SSE2, else 8 (the JSON_PADDING readable bytes after each line make the over-read
 * safe) and allocates nothing. Text without that padding (a stored value, a sub-object
 * kept as text) goes through json_scan_copy(), which scans a padded copy.
 */
#ifndef STEPSCOPE_LIB_JSON_H
#define STEPSCOPE_LIB_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


#define JSON_MSG_MAX 128  /* bytes of an error message, NUL included */
#define JSON_DEPTH_MAX 64 /* deepest nesting of arrays and objects accepted in a line */
#define JSON_PADDING 32   /* readable bytes the scanner needs after a line's NUL (lbuf leaves
                             LBUF_PADDING >= this after every line it frames) */

enum json_result {
    JSON_OK = 0,
    JSON_MALFORMED, /* not a JSON object, invalid JSON or invalid UTF-8 (reason in msg) */
    JSON_NOSPACE,   /* the arena cannot hold the unescaped strings: empty it, retry */
};

/* Room for unescaped strings. The caller owns data (cap bytes) and resets used to 0 once what
 * points into it has been handed on. A line of n bytes never needs more than n + 16. */
struct json_arena {
    char *data;
    size_t used;
    size_t cap;
};

#define JSON_KEY_MAX 31   /* longest known key, in bytes */
#define JSON_SLOTS_MAX 32 /* most known keys in one key set */

enum json_type {
    JSON_ABSENT = 0, /* the key was not seen */
    JSON_STRING,
    JSON_NUMBER,
    JSON_OBJECT,
    JSON_ARRAY,
    JSON_BOOL,
    JSON_NULL,
};

enum json_flag {
    JSON_F_DOUBLE = 1, /* number: also convert it to slot.d (strtod; out of range is malformed) */
    JSON_F_DURATIONS = 2, /* object: set slot.bad if any member is not a number >= 0 */
    JSON_F_SUBKEYS = 4,   /* object: also fill the slots of this key's sub keys (json_keys_sub())
                              from its own members (first occurrence), in the same pass; with
                              JSON_F_DURATIONS, only members that are numbers fill theirs */
};

/* What the pass learnt about one known key (its first occurrence). */
struct json_slot {
    uint8_t type;  /* enum json_type */
    bool bad;      /* JSON_F_DURATIONS: some member is not a non-negative number */
    const char *p; /* string: its (unescaped) bytes; number: its token; object/array: raw text */
    size_t n;
    double d;      /* JSON_F_DOUBLE numbers */
};

struct json_key {
    const char *name; /* NUL-terminated, at most JSON_KEY_MAX bytes */
    uint8_t id;       /* slot index, < JSON_SLOTS_MAX */
    uint8_t flags;    /* enum json_flag */
};

/* A set of known keys, indexed by length; built once by json_keys_init() (and json_keys_sub()). */
struct json_keys {
    uint8_t start[JSON_KEY_MAX + 2]; /* keys of length L are key[start[L], start[L + 1]) */
    struct json_key key[JSON_SLOTS_MAX];
    uint64_t word[JSON_SLOTS_MAX][(JSON_KEY_MAX + 1) / 8]; /* key[i].name, zero-padded */
    uint32_t ids;                     /* bit id set for every key's id */
    const struct json_keys *sub[JSON_SLOTS_MAX]; /* by key id: the members a JSON_F_SUBKEYS
                                         object's slots take; their ids share the slot array and
                                         differ from these keys' */
};

/* Indexes the n (<= JSON_SLOTS_MAX) keys of list into *ret; list's strings must outlive it. */
void json_keys_init(struct json_keys *ret, const struct json_key *list, size_t n);

/* Gives the JSON_F_SUBKEYS key id of ret its sub key set (it must outlive ret; its ids must not be
 * among ret's). Every JSON_F_SUBKEYS key must have one before a scan. The sub keys' slots are
 * filled (JSON_ABSENT when not seen) only when that key's value is an object: read them only
 * then. */
void json_keys_sub(struct json_keys *ret, unsigned id, const struct json_keys *sub);

/* Scans line[0, len) (line[len] is '\0' and JSON_PADDING readable bytes follow it) and fills
 * slots[id] for the first occurrence of each key in keys; slots needs no initialisation (on
 * success the slot of every key not seen has type JSON_ABSENT) and must have room for every id.
 * Escaped strings of known keys are unescaped into a (a->used grows). Sub keys: json_keys_sub().
 * Returns JSON_OK, JSON_MALFORMED (reason in msg, JSON_MSG_MAX bytes) or JSON_NOSPACE; on
 * failure a->used may have grown and the caller restores it. */
int json_scan_object(const char *line, size_t len, const struct json_keys *keys,
                     struct json_slot *slots, struct json_arena *a, char *msg);

/* json_scan_object() on text[0, len) that has no padding after it (a stored value, a
 * sub-object's raw text): scans a padded copy, which *copy receives (malloc'd; the caller frees it
 * once done with the slots, which may point into it). Not for the per-line path. Returns as
 * json_scan_object(), or JSON_NOSPACE (*copy NULL) when the copy cannot be made. */
int json_scan_copy(const char *text, size_t len, const struct json_keys *keys,
                   struct json_slot *slots, struct json_arena *a, char *msg, char **copy);

/* The reader: a cursor over JSON text that needs no padding (a stored line, a slot's object or
 * array) and never reads past its end, for shapes a key set cannot express (arrays of objects,
 * series of numbers). Meant for text json_scan_object() accepted; on any other text its calls
 * fail (false, and bad is set), never crash. Each call skips the blanks before what it reads. */
struct json_reader {
    const char *p;   /* the next byte to read */
    const char *end;
    bool bad;        /* a call failed: the text is not what was asked for */
};

void json_reader_init(struct json_reader *r, const char *text, size_t len);

/* The type of the value at the cursor (JSON_ABSENT at the end, or before a byte no value starts
 * with); reads nothing but blanks. */
enum json_type json_peek(struct json_reader *r);

/* Opens the object or array at the cursor; false if there is none. */
bool json_object_begin(struct json_reader *r);
bool json_array_begin(struct json_reader *r);

/* The next member of the open object: true with its name (unescaped, NUL-terminated, cut to cap
 * bytes; key may be NULL) read and its ':' consumed, the value next; false once the object is
 * closed (or on an error: bad). */
bool json_member(struct json_reader *r, char *key, size_t cap);

/* Whether the open array has another element (then it is next); false once it is closed. */
bool json_element(struct json_reader *r);

/* A string: its bytes unescaped into out (NUL-terminated, cut to cap bytes; out may be NULL) and
 * its whole unescaped length into *ret_len (may be NULL). */
bool json_read_string(struct json_reader *r, char *out, size_t cap, size_t *ret_len);

/* A number, as a finite double (tokens longer than 63 bytes fail). */
bool json_read_double(struct json_reader *r, double *ret);

/* A number as written: its token's text (into the reader's text) in *ret_p, *ret_n. */
bool json_read_number_text(struct json_reader *r, const char **ret_p, size_t *ret_n);

/* Any value, nested at most JSON_DEPTH_MAX deep. */
bool json_skip(struct json_reader *r);

/* Whether the JSON array text[0, len) has a string element equal (unescaped) to word. */
bool json_array_has_string(const char *text, size_t len, const char *word);

#endif
