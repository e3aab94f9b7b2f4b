/* SPDX-License-Identifier: MIT */
/*
 * tscan: a strict, resumable JSON scanner that finds the trace events of a Chrome-trace file.
 *
 * The importer reads files of up to many gigabytes and must neither hold one in memory nor send
 * a byte of it before the whole file is known to be good. tscan therefore takes the file in
 * chunks of any size, keeps all its state in struct tscan (a stack of open containers, the
 * state of the token being read), and validates everything as it goes (an event that lies whole
 * in a chunk takes a fast path; one cut by the chunk's end, or with an error, is scanned again
 * byte by byte from its '{', so each event is read at most twice): RFC 8259 grammar, UTF-8 (no overlongs, surrogates or code points above U+10FFFF), \u
 * escapes with paired surrogates, no leading zeros, NaN, comments or trailing commas.
 *
 * Two layouts are understood: a top-level array of event objects (legacy torch, MindSpore
 * timelines) and a top-level object whose "traceEvents" member is that array (Kineto, Paddle,
 * Chrome). Every element of the events array must be an object that the daemon would take as a
 * trace event (PROTOCOL.md section 2: "ph" a one-letter string; "name" a string for X and M;
 * "ts" a number except for M; "dur" a number >= 0 for X; times that fit int64 nanoseconds; at
 * most TSCAN_EVENT_DEPTH_MAX deep; at most TSCAN_EVENT_BYTES_MAX long), so that a file that
 * passes will be taken whole. A few other top-level members (schemaVersion, displayTimeUnit,
 * baseTimeNanoseconds, distributedInfo's rank/world_size/backend, Paddle's markers) are kept in
 * struct tscan_meta. Pure: no I/O, no allocation.
 */
#ifndef STEPSCOPE_IMPORT_TSCAN_H
#define STEPSCOPE_IMPORT_TSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TSCAN_DEPTH_MAX 128             /* deepest nesting in the whole file */
#define TSCAN_EVENT_DEPTH_MAX 64        /* deepest nesting inside one event (the daemon's limit) */
#define TSCAN_EVENT_BYTES_MAX 1048575u  /* longest event: its line plus '\n' fits 1 MiB */
#define TSCAN_CAP_MAX 256               /* longest scalar kept for a check or for metadata */
#define TSCAN_ERR_MAX 200               /* longest error message, NUL included */
#define TSCAN_TEXT_MAX 64               /* longest cat/name/pid prefix kept per event */

enum tscan_result {
    TSCAN_MORE = 0,  /* the chunk is used up: feed the next one (or call tscan_finish) */
    TSCAN_EVENT = 1, /* an event ended: *ret_used bytes were taken, the last one its '}' */
};

/* What the last completed event looked like; valid after TSCAN_EVENT until the next feed. */
struct tscan_event {
    uint64_t start;                /* absolute offset of its '{' */
    uint64_t end;                  /* absolute offset one past its '}' */
    uint64_t index;                /* 0-based among the file's events */
    char ph;                       /* its phase letter */
    char cat[TSCAN_TEXT_MAX];      /* "cat" string's raw text, cut to fit, NUL-terminated */
    char name[TSCAN_TEXT_MAX];     /* "name" string's raw text, cut to fit */
    char pid[TSCAN_TEXT_MAX];      /* "pid" value's raw JSON text (quotes kept), cut to fit */
    char tid[TSCAN_TEXT_MAX];      /* "tid" value's raw JSON text (quotes kept), cut to fit */
    int64_t ts_ns;                 /* "ts" in ns, once the event ended with a valid one; else 0 */
    int64_t dur_ns;                /* "dur" in ns, once an X event ended; else 0 */
    uint64_t ts_at;                /* absolute offset of the "ts" number's first byte */
    uint32_t ts_len;               /* its length in bytes; 0 when "ts" is absent or not a number */
    uint64_t name_at;              /* absolute offset of the "name" string's opening quote */
    uint32_t name_len;             /* its length, quotes included; 0 when not a string */
    char start_time[TSCAN_TEXT_MAX]; /* "args":{"start_time":...} raw string text (Paddle's
                                    * "917.229 us"), "" when absent, escaped or cut */
};

/* Top-level facts, complete only after tscan_finish() returned 0. Texts are raw JSON values
 * (a string keeps its quotes), "" when absent. */
struct tscan_meta {
    bool root_is_array;            /* a bare array of events, not an object */
    char schema_version[TSCAN_CAP_MAX + 1];
    char display_time_unit[TSCAN_CAP_MAX + 1];
    char base_time_ns[TSCAN_CAP_MAX + 1];
    char trace_name[TSCAN_CAP_MAX + 1];
    char dist_backend[TSCAN_CAP_MAX + 1];
    int64_t dist_rank;             /* distributedInfo.rank, -1 if absent or not an integer >= 0 */
    int64_t dist_world_size;       /* distributedInfo.world_size, -1 likewise */
    bool dist_rank_seen, dist_world_size_seen; /* those members were there (as scalars) */
    bool has_device_properties;
    bool has_distributed_info;
    bool has_paddle_marker;        /* "span_indx" or "ExtraInfo" at the top level (Paddle) */
    /* Paddle's top-level "ExtraInfo" object: its "Process Cpu Utilization" and "System Cpu
     * Utilization" members' raw JSON values ("\"1.000000\""), "" when absent */
    char extra_process_cpu[TSCAN_CAP_MAX + 1];
    char extra_system_cpu[TSCAN_CAP_MAX + 1];
    uint64_t n_events;             /* events completed so far */
    uint64_t n_empty_events;       /* "{}" elements of the event array, skipped (Paddle's last) */
};

/* The scanner. Fields are private to tscan.c, except meta, event, err and err_off, which are
 * read-only outside it. */
struct tscan {
    uint64_t off;                  /* absolute offset of the next byte to scan */
    int state;                     /* what the next byte may be (enum in tscan.c) */
    int depth;                     /* containers open */
    uint8_t stack[TSCAN_DEPTH_MAX];/* 'o' or 'a' per open container, [0] the root */
    int events_depth;              /* depth of the open events array, 0 if none is open */
    bool events_done;              /* the events array has been closed */
    int dist_depth;                /* depth of the open distributedInfo object, 0 if none */
    int extra_depth;               /* depth of the open ExtraInfo object (Paddle), 0 if none */
    int args_depth;                /* depth of the open event's "args" object, 0 if none */
    uint64_t val_at;               /* absolute offset of the scalar value being read */
    bool in_event;                 /* an event object is open */
    bool key;                      /* the string being read is an object key */
    int key_slot;                  /* slot named by the last key at a watched depth */
    int slot;                      /* slot of the value being read */
    bool capture;                  /* the value being read is copied to cap[] */
    bool cap_escaped;              /* cap[] holds a backslash escape */
    char cap[TSCAN_CAP_MAX + 1];   /* the captured scalar's raw text */
    size_t cap_len;                /* bytes in cap[]; > TSCAN_CAP_MAX means cut */
    uint32_t u_val;                /* \u escape: code unit being read */
    int u_left;                    /* \u escape: hex digits still to read */
    uint32_t u_high;               /* a high surrogate waiting for its low half, else 0 */
    int utf8_left;                 /* continuation bytes still to read */
    uint8_t utf8_lo, utf8_hi;      /* range allowed for the next continuation byte */
    const char *lit;               /* literal being matched ("true", "false", "null") */
    int lit_i;                     /* bytes of it matched */
    /* event checks, reset at each event's '{' */
    unsigned ev_seen;              /* bitmask of event slots already seen (first occurrence wins) */
    char ev_ts[TSCAN_CAP_MAX + 1], ev_dur[TSCAN_CAP_MAX + 1];
    int ev_ts_type, ev_dur_type, ev_name_type, ev_ph_type; /* JSON types of those members */
    struct tscan_event event;      /* read-only: the event in progress, then the last one */
    struct tscan_meta meta;        /* read-only */
    char err[TSCAN_ERR_MAX];       /* read-only: why the last call failed */
    uint64_t err_off;              /* read-only: absolute offset of the offending byte */
};

/* Prepares s for a new file. */
void tscan_init(struct tscan *s);

/* Scans buf[0, len), the bytes at absolute offsets [s->off, s->off + len). Returns TSCAN_EVENT
 * when an event ended, with *ret_used the bytes taken (the event's '}' the last of them; call
 * again with the rest), TSCAN_MORE with *ret_used == len when all were taken, or -EINVAL when the
 * input is not an acceptable trace (s->err says why, s->err_off where; every later call fails the
 * same way). Never reads outside buf[0, len). */
int tscan_feed(struct tscan *s, const char *buf, size_t len, size_t *ret_used);

/* Split scanning: a second scanner starts in the middle of a file, at the '{' of an event that
 * follows a ',' in the events array, guessing that the first scanner will be in exactly that
 * position when it reaches the same offset (tscan_same_position() tells whether it was).
 * tscan_init_split() prepares s for that: from any scanner `ref` that has seen an event of the
 * same file (so its stack and events array are the file's), s continues at absolute offset off
 * with fresh meta (its n_events and event indexes count from 0). */
void tscan_init_split(struct tscan *s, const struct tscan *ref, uint64_t off);

/* Whether a, a scanner that has read a file up to some offset, stands exactly where b, fresh from
 * tscan_init_split() at that offset, assumed it would: then b's scan of the rest is the one a
 * would have made, but for the event indexes and meta, which tscan_meta_merge() adds up. */
bool tscan_same_position(const struct tscan *a, const struct tscan *b);

/* Makes *a the meta of a whole file whose first part gave *a and the rest, scanned from
 * tscan_init_split(), gave *b: counts add up; a fact b saw is the later occurrence and wins. */
void tscan_meta_merge(struct tscan_meta *a, const struct tscan_meta *b);

/* Call at the end of input. Returns 0 if the document was complete and held an events array,
 * else -EINVAL with s->err and s->err_off (the end of input) set. */
int tscan_finish(struct tscan *s);

#endif
