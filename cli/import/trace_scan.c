/* SPDX-License-Identifier: MIT */
/*
 * tscan: the resumable, validating scanner behind `stepscope import` (contract in trace_scan.h).
 *
 * One state per "what may come next" (enum state); a chunk boundary can fall anywhere, even
 * inside a \u escape or a UTF-8 sequence, because everything a token needs is in struct tscan.
 * String bodies, which are most of a trace's bytes, go through a table-driven inner loop, and
 * only the members the importer cares about (a few top-level keys, and ph/name/ts/dur/cat/pid of
 * each event) are copied, bounded, into cap[]. The event checks mirror the daemon's decoder
 * (daemon/ingest/decode.c, build_trace) so that a file this scanner passes is taken whole; the
 * times are checked with the daemon's own num_us_to_ns(). Events that lie whole in the chunk
 * take event_fast() instead (see there): 1.8x less CPU on a pretty-printed Kineto trace.
 */
#include "trace_scan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "log.h"
#include "num.h"
#include "util.h"

enum state {
    ST_VALUE,      /* a value; after ':' or at the very start; next: the value's own state */
    ST_OBJ_FIRST,  /* after '{': a key or '}' */
    ST_OBJ_KEY,    /* after ',' in an object: a key */
    ST_COLON,      /* after a key: ':' then ST_VALUE */
    ST_OBJ_NEXT,   /* after a member: ',' (ST_OBJ_KEY) or '}' */
    ST_ARR_FIRST,  /* after '[': a value or ']' */
    ST_ARR_NEXT,   /* after an element: ',' (ST_VALUE) or ']' */
    ST_STR,        /* inside a string; '"' ends it */
    ST_STR_ESC,    /* after a backslash */
    ST_STR_U,      /* reading the hex digits of \u (u_left more) */
    ST_STR_UTF8,   /* reading the continuation bytes of a UTF-8 sequence (utf8_left more) */
    ST_STR_LOW_BS, /* after a high surrogate: its low half's backslash */
    ST_STR_LOW_U,  /* after that backslash: 'u' */
    ST_NUM_MINUS,  /* after '-': a digit */
    ST_NUM_ZERO,   /* after a leading 0: '.', 'e' or the end */
    ST_NUM_INT,    /* in the integer digits */
    ST_NUM_DOT,    /* after '.': a digit */
    ST_NUM_FRAC,   /* in the fraction digits */
    ST_NUM_E,      /* after 'e': a sign or a digit */
    ST_NUM_ESIGN,  /* after the exponent's sign: a digit */
    ST_NUM_EXP,    /* in the exponent digits */
    ST_LIT,        /* matching true/false/null */
    ST_END,        /* after the top-level value: blanks only */
    ST_FAILED,     /* an error was reported; every call fails */
};

/* What a value is, when its key is one the importer watches. */
enum slot {
    SL_NONE,
    SL_TRACE_EVENTS,
    SL_SCHEMA,
    SL_DTU,
    SL_BASE_NS,
    SL_TRACE_NAME,
    SL_DIST,
    SL_DEVPROPS,
    SL_PADDLE,
    SL_DIST_RANK,
    SL_DIST_WS,
    SL_DIST_BACKEND,
    SL_EXTRA,
    SL_EXTRA_PROCESS_CPU,
    SL_EXTRA_SYSTEM_CPU,
    SL_EV_PH,
    SL_EV_NAME,
    SL_EV_TS,
    SL_EV_DUR,
    SL_EV_CAT,
    SL_EV_PID,
    SL_EV_ARGS,
    SL_EV_START_TIME,
    SL_EV_TID,
};

enum jtype { JT_ABSENT, JT_STRING, JT_NUMBER, JT_OBJECT, JT_ARRAY, JT_LITERAL };

/* 1 for the bytes a string body may hold as they are: not '"', '\\', controls or non-ASCII. */
static const uint8_t plain[256] = {
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
    R16(0), R16(0),
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20: '"' is 0x22 */
    R16(1), R16(1),
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50: '\\' is 0x5c */
    R16(1), R16(1),
    R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0), R16(0),
#undef R16
};

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether one of the 8 bytes in x may end a plain run of string body: '"', '\\', a control
 * character or a non-ASCII byte. A false positive only costs the byte loop that follows. */
static inline bool has_special(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    uint64_t zq = (q - ONES) & ~q, zb = (b - ONES) & ~b, ctl = (x - ONES * 0x20) & ~x;
    return ((x | zq | zb | ctl) & HIGHS) != 0;
}

static int fail(struct tscan *s, uint64_t off, const char *fmt, ...) SS_PRINTF(3, 4);

static int fail(struct tscan *s, uint64_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
    s->err_off = off;
    s->state = ST_FAILED;
    return -EINVAL;
}

/* A byte as an error message shows it. */
static const char *show(unsigned char c, char buf[8])
{
    if (c > 0x20 && c < 0x7f)
        snprintf(buf, 8, "'%c'", c);
    else
        snprintf(buf, 8, "0x%02x", c);
    return buf;
}

void tscan_init(struct tscan *s)
{
    memset(s, 0, sizeof *s);
    s->state = ST_VALUE;
    s->meta.dist_rank = -1;
    s->meta.dist_world_size = -1;
}

static void cap_add(struct tscan *s, const char *p, size_t n)
{
    if (s->cap_len < TSCAN_CAP_MAX) {
        size_t room = TSCAN_CAP_MAX - s->cap_len;
        memcpy(s->cap + s->cap_len, p, n < room ? n : room);
    }
    s->cap_len += n;
}

static bool cap_cut(const struct tscan *s)
{
    return s->cap_len > TSCAN_CAP_MAX;
}

/* Whether the captured string is the key lit (a literal: its size is known at compile time). */
#define cap_is(s, lit)                                                                         \
    (!(s)->cap_escaped && (s)->cap_len == sizeof(lit) + 1 &&                                   \
     memcmp((s)->cap + 1, (lit), sizeof(lit) - 1) == 0)

/* An integer >= 0 from a captured number, else -1. */
static int64_t cap_count(const struct tscan *s)
{
    if (cap_cut(s) || s->cap_len == 0 || s->cap_len > 18)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i < s->cap_len; i++) {
        if (s->cap[i] < '0' || s->cap[i] > '9')
            return -1;
        v = v * 10 + (s->cap[i] - '0');
    }
    return v;
}

/* The slot of an event member whose key (unescaped) is k[0, n); SL_NONE after the first
 * occurrence, which is the one that counts, as in the daemon. */
static int event_key_slot(struct tscan *s, const char *k, size_t n)
{
    int slot = SL_NONE;
    /* Called for every member of every event: decide on the length first. */
    switch (n) {
    case 2:
        slot = memcmp(k, "ph", 2) == 0 ? SL_EV_PH : memcmp(k, "ts", 2) == 0 ? SL_EV_TS : SL_NONE;
        break;
    case 3:
        slot = memcmp(k, "dur", 3) == 0   ? SL_EV_DUR
               : memcmp(k, "cat", 3) == 0 ? SL_EV_CAT
               : memcmp(k, "pid", 3) == 0 ? SL_EV_PID
               : memcmp(k, "tid", 3) == 0 ? SL_EV_TID
                                          : SL_NONE;
        break;
    case 4:
        slot = memcmp(k, "name", 4) == 0 ? SL_EV_NAME : memcmp(k, "args", 4) == 0 ? SL_EV_ARGS : SL_NONE;
        break;
    default:
        return SL_NONE;
    }
    if (slot == SL_NONE)
        return SL_NONE;
    unsigned bit = 1u << slot;
    if (s->ev_seen & bit)
        return SL_NONE;
    s->ev_seen |= bit;
    return slot;
}

/* The slot of a member of an event's "args" object whose key (unescaped) is k[0, n): Paddle's
 * "start_time", first occurrence only. */
static int args_key_slot(struct tscan *s, const char *k, size_t n)
{
    unsigned bit = 1u << SL_EV_START_TIME;
    if (n != 10 || memcmp(k, "start_time", 10) != 0 || (s->ev_seen & bit))
        return SL_NONE;
    s->ev_seen |= bit;
    return SL_EV_START_TIME;
}

/* Which slot a just-read key names, given where it is. */
static int key_slot(struct tscan *s)
{
    if (s->in_event && s->depth == s->events_depth + 1) {
        if (s->cap_escaped || s->cap_len < 2 || cap_cut(s))
            return SL_NONE;
        return event_key_slot(s, s->cap + 1, s->cap_len - 2);
    }
    if (s->args_depth && s->depth == s->args_depth) {
        if (s->cap_escaped || s->cap_len < 2 || cap_cut(s))
            return SL_NONE;
        return args_key_slot(s, s->cap + 1, s->cap_len - 2);
    }
    if (s->depth == 1 && s->stack[0] == 'o') {
        if (cap_is(s, "traceEvents"))
            return SL_TRACE_EVENTS;
        if (cap_is(s, "schemaVersion"))
            return SL_SCHEMA;
        if (cap_is(s, "displayTimeUnit"))
            return SL_DTU;
        if (cap_is(s, "baseTimeNanoseconds"))
            return SL_BASE_NS;
        if (cap_is(s, "traceName"))
            return SL_TRACE_NAME;
        if (cap_is(s, "distributedInfo"))
            return SL_DIST;
        if (cap_is(s, "deviceProperties"))
            return SL_DEVPROPS;
        if (cap_is(s, "ExtraInfo"))
            return SL_EXTRA;
        if (cap_is(s, "span_indx"))
            return SL_PADDLE;
        return SL_NONE;
    }
    if (s->extra_depth && s->depth == s->extra_depth) {
        if (cap_is(s, "Process Cpu Utilization"))
            return SL_EXTRA_PROCESS_CPU;
        if (cap_is(s, "System Cpu Utilization"))
            return SL_EXTRA_SYSTEM_CPU;
    }
    if (s->dist_depth && s->depth == s->dist_depth) {
        if (cap_is(s, "rank"))
            return SL_DIST_RANK;
        if (cap_is(s, "world_size"))
            return SL_DIST_WS;
        if (cap_is(s, "backend"))
            return SL_DIST_BACKEND;
    }
    return SL_NONE;
}

/* Whether a key starting now is at a depth where keys are watched. */
static bool key_watched(const struct tscan *s)
{
    return (s->in_event && s->depth == s->events_depth + 1) ||
           (s->args_depth && s->depth == s->args_depth) || (s->depth == 1 && s->stack[0] == 'o') ||
           (s->dist_depth && s->depth == s->dist_depth) ||
           (s->extra_depth && s->depth == s->extra_depth);
}

static void set_after_value(struct tscan *s)
{
    if (s->depth == 0)
        s->state = ST_END;
    else
        s->state = s->stack[s->depth - 1] == 'o' ? ST_OBJ_NEXT : ST_ARR_NEXT;
}

/* Copies the raw text v[0, n) (its first TSCAN_CAP_MAX bytes are readable) into a
 * NUL-terminated field of size size, cut to fit. */
static void text_copy(char *dst, size_t size, const char *v, size_t n)
{
    if (n > TSCAN_CAP_MAX)
        n = TSCAN_CAP_MAX;
    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* An event member's scalar value ended: v[0, n) is its raw text (only the first TSCAN_CAP_MAX
 * bytes need be readable) at absolute offset at, escaped whether a string value held a
 * backslash. */
static void event_scalar(struct tscan *s, int slot, int type, const char *v, size_t n,
                         bool escaped, uint64_t at)
{
    switch (slot) {
    case SL_EV_PH:
        s->event.ph = (type == JT_STRING && n == 3 && !escaped) ? v[1] : 0;
        break;
    case SL_EV_NAME:
        text_copy(s->event.name, sizeof s->event.name, v, n);
        if (type == JT_STRING && n <= UINT32_MAX) {
            s->event.name_at = at;
            s->event.name_len = (uint32_t)n;
        }
        break;
    case SL_EV_START_TIME:
        if (type == JT_STRING && !escaped && n < sizeof s->event.start_time)
            text_copy(s->event.start_time, sizeof s->event.start_time, v, n);
        break;
    case SL_EV_CAT:
        text_copy(s->event.cat, sizeof s->event.cat, v, n);
        break;
    case SL_EV_PID:
        text_copy(s->event.pid, sizeof s->event.pid, v, n);
        break;
    case SL_EV_TID:
        text_copy(s->event.tid, sizeof s->event.tid, v, n);
        break;
    case SL_EV_TS:
        text_copy(s->ev_ts, sizeof s->ev_ts, v, n);
        if (n > TSCAN_CAP_MAX)
            s->ev_ts[0] = '\0';
        if (type == JT_NUMBER && n <= UINT32_MAX) {
            s->event.ts_at = at;
            s->event.ts_len = (uint32_t)n;
        }
        break;
    case SL_EV_DUR:
        text_copy(s->ev_dur, sizeof s->ev_dur, v, n);
        if (n > TSCAN_CAP_MAX)
            s->ev_dur[0] = '\0';
        break;
    default:
        break;
    }
}

/* A scalar value ended: file what was captured, then expect what follows a value. */
static void scalar_done(struct tscan *s, int type)
{
    if (s->capture) {
        s->cap[s->cap_len < TSCAN_CAP_MAX ? s->cap_len : TSCAN_CAP_MAX] = '\0';
        struct tscan_meta *m = &s->meta;
        switch (s->slot) {
        case SL_SCHEMA:
            text_copy(m->schema_version, sizeof m->schema_version, s->cap, s->cap_len);
            break;
        case SL_DTU:
            text_copy(m->display_time_unit, sizeof m->display_time_unit, s->cap, s->cap_len);
            break;
        case SL_BASE_NS:
            text_copy(m->base_time_ns, sizeof m->base_time_ns, s->cap, s->cap_len);
            break;
        case SL_TRACE_NAME:
            text_copy(m->trace_name, sizeof m->trace_name, s->cap, s->cap_len);
            break;
        case SL_DIST_BACKEND:
            text_copy(m->dist_backend, sizeof m->dist_backend, s->cap, s->cap_len);
            break;
        case SL_EXTRA_PROCESS_CPU:
            if (!cap_cut(s))
                text_copy(m->extra_process_cpu, sizeof m->extra_process_cpu, s->cap, s->cap_len);
            break;
        case SL_EXTRA_SYSTEM_CPU:
            if (!cap_cut(s))
                text_copy(m->extra_system_cpu, sizeof m->extra_system_cpu, s->cap, s->cap_len);
            break;
        case SL_DIST_RANK:
            m->dist_rank = type == JT_NUMBER ? cap_count(s) : -1;
            m->dist_rank_seen = true;
            break;
        case SL_DIST_WS:
            m->dist_world_size = type == JT_NUMBER ? cap_count(s) : -1;
            m->dist_world_size_seen = true;
            break;
        default:
            event_scalar(s, s->slot, type, s->cap, s->cap_len, s->cap_escaped, s->val_at);
            break;
        }
        s->capture = false;
    }
    s->slot = SL_NONE;
    set_after_value(s);
}

static void note_type(struct tscan *s, int type)
{
    switch (s->slot) {
    case SL_EV_PH:
        s->ev_ph_type = type;
        break;
    case SL_EV_NAME:
        s->ev_name_type = type;
        break;
    case SL_EV_TS:
        s->ev_ts_type = type;
        break;
    case SL_EV_DUR:
        s->ev_dur_type = type;
        break;
    default:
        break;
    }
}

/* The checks the daemon's decoder makes of a trace event (PROTOCOL.md section 2). */
static int check_event(struct tscan *s)
{
    uint64_t n = s->meta.n_events, at = s->event.start;
    int64_t ns;
    char ph = s->event.ph;
    if (s->ev_ph_type == JT_ABSENT)
        return fail(s, at, "event #%llu has no \"ph\"", (unsigned long long)n);
    if (s->ev_ph_type != JT_STRING || ph == 0)
        return fail(s, at, "event #%llu: \"ph\" must be a one-letter string", (unsigned long long)n);
    if ((ph == 'X' || ph == 'M') && s->ev_name_type != JT_STRING)
        return fail(s, at, "event #%llu (ph %c): \"name\" must be a string",
                    (unsigned long long)n, ph);
    if (s->ev_ts_type == JT_ABSENT) {
        if (ph != 'M')
            return fail(s, at, "event #%llu (ph %c): missing \"ts\"", (unsigned long long)n, ph);
    } else if (s->ev_ts_type != JT_NUMBER) {
        return fail(s, at, "event #%llu: \"ts\" must be a number", (unsigned long long)n);
    } else if (num_us_to_ns(s->ev_ts, strlen(s->ev_ts), &ns) < 0 || ns >= NUM_TIME_MAX_NS ||
               ns <= NUM_TIME_MIN_NS) {
        return fail(s, at, "event #%llu: \"ts\" is out of range", (unsigned long long)n);
    } else {
        s->event.ts_ns = ns;
    }
    if (ph == 'X') {
        if (s->ev_dur_type == JT_ABSENT)
            return fail(s, at, "event #%llu (ph X): missing \"dur\"", (unsigned long long)n);
        if (s->ev_dur_type != JT_NUMBER)
            return fail(s, at, "event #%llu: \"dur\" must be a number", (unsigned long long)n);
        if (num_us_to_ns(s->ev_dur, strlen(s->ev_dur), &ns) < 0 || ns >= NUM_DUR_MAX_NS)
            return fail(s, at, "event #%llu: \"dur\" is out of range", (unsigned long long)n);
        if (ns < 0)
            return fail(s, at, "event #%llu: \"dur\" must be >= 0", (unsigned long long)n);
        s->event.dur_ns = ns;
    }
    return 0;
}

static void event_begin(struct tscan *s, uint64_t at)
{
    s->in_event = true;
    s->ev_seen = 0;
    s->ev_ph_type = s->ev_name_type = s->ev_ts_type = s->ev_dur_type = JT_ABSENT;
    s->ev_ts[0] = s->ev_dur[0] = '\0';
    s->event.start = at;
    s->event.index = s->meta.n_events;
    s->event.start_time[0] = '\0';
    s->event.ts_len = s->event.name_len = 0;
    s->event.ts_at = s->event.name_at = 0;
    s->args_depth = 0;
    s->event.ph = 0;
    s->event.cat[0] = s->event.name[0] = s->event.pid[0] = s->event.tid[0] = '\0';
    s->event.ts_ns = s->event.dur_ns = 0;
}

/* Starts the value whose first byte is c at offset at. Returns 0 or -EINVAL. */
static int value_begin(struct tscan *s, unsigned char c, uint64_t at)
{
    char b[8];
    if (s->depth == 0 && c != '{' && c != '[')
        return fail(s, at, "not a Chrome trace: the document starts with %s, not '[' or '{'",
                    show(c, b));
    if (c == ']' || c == '}')
        return fail(s, at, "expected a value, found %s (a trailing comma?)", show(c, b));
    if (s->events_depth && s->depth == s->events_depth && c != '{')
        return fail(s, at, "event #%llu is not a JSON object (starts with %s)",
                    (unsigned long long)s->meta.n_events, show(c, b));
    switch (c) {
    case '{':
    case '[':
        if (s->depth == TSCAN_DEPTH_MAX)
            return fail(s, at, "nesting deeper than %d", TSCAN_DEPTH_MAX);
        if (s->in_event && s->depth + 1 - s->events_depth > TSCAN_EVENT_DEPTH_MAX)
            return fail(s, at, "event #%llu nests deeper than %d (the daemon's limit)",
                        (unsigned long long)s->meta.n_events, TSCAN_EVENT_DEPTH_MAX);
        if (c == '{' && s->events_depth && s->depth == s->events_depth)
            event_begin(s, at);
        note_type(s, c == '{' ? JT_OBJECT : JT_ARRAY);
        if (s->depth == 0 && c == '[') {
            s->meta.root_is_array = true;
            s->events_depth = 1;
        }
        s->stack[s->depth++] = c == '{' ? 'o' : 'a';
        if (s->slot == SL_TRACE_EVENTS) {
            if (c != '[')
                return fail(s, at, "\"traceEvents\" is not an array");
            if (s->events_done)
                return fail(s, at, "a second \"traceEvents\" member");
            s->events_depth = s->depth;
        } else if (s->slot == SL_DIST && c == '{') {
            s->dist_depth = s->depth;
            s->meta.has_distributed_info = true;
        } else if (s->slot == SL_DEVPROPS) {
            s->meta.has_device_properties = true;
        } else if (s->slot == SL_PADDLE || s->slot == SL_EXTRA) {
            s->meta.has_paddle_marker = true;
            if (s->slot == SL_EXTRA && c == '{' && !s->extra_depth)
                s->extra_depth = s->depth;
        } else if (s->slot == SL_EV_ARGS && c == '{') {
            s->args_depth = s->depth;
        }
        s->slot = SL_NONE;
        s->state = c == '{' ? ST_OBJ_FIRST : ST_ARR_FIRST;
        return 0;
    case '"':
        note_type(s, JT_STRING);
        if (s->slot == SL_PADDLE || s->slot == SL_EXTRA)
            s->meta.has_paddle_marker = true;
        s->key = false;
        s->val_at = at;
        s->capture = s->slot != SL_NONE;
        s->cap_len = 0;
        s->cap_escaped = false;
        if (s->capture)
            cap_add(s, "\"", 1);
        s->state = ST_STR;
        return 0;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        note_type(s, JT_NUMBER);
        if (s->slot == SL_PADDLE || s->slot == SL_EXTRA)
            s->meta.has_paddle_marker = true;
        s->val_at = at;
        s->capture = s->slot != SL_NONE;
        s->cap_len = 0;
        s->cap_escaped = false;
        if (s->capture)
            cap_add(s, (const char *)&c, 1);
        s->state = c == '-' ? ST_NUM_MINUS : c == '0' ? ST_NUM_ZERO : ST_NUM_INT;
        return 0;
    case 't':
    case 'f':
    case 'n':
        note_type(s, JT_LITERAL);
        if (s->slot == SL_PADDLE || s->slot == SL_EXTRA)
            s->meta.has_paddle_marker = true;
        s->val_at = at;
        s->capture = s->slot != SL_NONE;
        s->cap_len = 0;
        s->cap_escaped = false;
        if (s->capture)
            cap_add(s, (const char *)&c, 1);
        s->lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
        s->lit_i = 1;
        s->state = ST_LIT;
        return 0;
    default:
        return fail(s, at, "expected a value, found %s", show(c, b));
    }
}

/* Closes the container at the top with c ('}' or ']'). Returns 1 if that ended an event, 0 if
 * not, -EINVAL on a mismatch or a bad event. */
static int container_end(struct tscan *s, unsigned char c, uint64_t at)
{
    char want = c == '}' ? 'o' : 'a';
    char b[8];
    bool empty = s->state == ST_OBJ_FIRST;
    if (s->depth == 0 || s->stack[s->depth - 1] != want)
        return fail(s, at, "unexpected %s", show(c, b));
    bool ends_event = s->in_event && s->depth == s->events_depth + 1;
    if (s->depth == s->events_depth) {
        s->events_depth = 0;
        s->events_done = true;
    }
    if (s->depth == s->dist_depth)
        s->dist_depth = 0;
    if (s->depth == s->extra_depth)
        s->extra_depth = 0;
    if (s->depth == s->args_depth)
        s->args_depth = 0;
    s->depth--;
    s->slot = SL_NONE;
    set_after_value(s);
    if (!ends_event)
        return 0;
    s->in_event = false;
    s->event.end = at + 1;
    if (empty) {
        /* Paddle ends its traceEvents with "{}": nothing to send, not an error. */
        s->meta.n_empty_events++;
        return 0;
    }
    if (s->event.end - s->event.start > TSCAN_EVENT_BYTES_MAX)
        return fail(s, s->event.start, "event #%llu is %llu bytes, longer than the daemon's line limit",
                    (unsigned long long)s->meta.n_events,
                    (unsigned long long)(s->event.end - s->event.start));
    if (check_event(s) < 0)
        return -EINVAL;
    s->meta.n_events++;
    return 1;
}

static bool is_blank(unsigned char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static const unsigned char *skip_blanks(const unsigned char *p, const unsigned char *end)
{
    while (p < end && is_blank(*p))
        p++;
    return p;
}

/* Starts a UTF-8 sequence with lead byte c. Returns false if c cannot lead one. */
static bool utf8_lead(struct tscan *s, unsigned char c)
{
    s->utf8_lo = 0x80;
    s->utf8_hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        s->utf8_left = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
        s->utf8_left = 2;
        if (c == 0xe0)
            s->utf8_lo = 0xa0; /* no overlongs */
        else if (c == 0xed)
            s->utf8_hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        s->utf8_left = 3;
        if (c == 0xf0)
            s->utf8_lo = 0x90;
        else if (c == 0xf4)
            s->utf8_hi = 0x8f; /* nothing above U+10FFFF */
    } else {
        return false;
    }
    return true;
}

/* ---- The fast path: one whole event in the chunk ------------------------------------------
 *
 * Most events lie whole inside the chunk being fed. For those, event_fast() scans the event in
 * one pointer walk instead of the byte-at-a-time state machine: string bodies 8 bytes at a time
 * (jumping to the first byte that needs a look), blanks, numbers and literals in tight loops, one
 * switch per token. It accepts only what the state machine accepts and leaves struct tscan as
 * the state machine would after the event's '}'. Anything else (the chunk ends first, an empty
 * "{}", the size or depth limits, any error) returns 0 without a trace: the state machine then
 * scans the same event from its '{', so every error and every chunk boundary is handled by one
 * code path, byte for byte as before. fuzz_trace_scan compares whole and chunked scans, i.e. this
 * path against the state machine. */

/* Bit 7 of each byte of x set for '"', '\\', controls and non-ASCII bytes; the lowest set bit is
 * exact (the borrows only run upward from a flagged byte). */
static inline uint64_t special_mask(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), b = x ^ (ONES * '\\');
    uint64_t zq = (q - ONES) & ~q, zb = (b - ONES) & ~b, ctl = (x - ONES * 0x20) & ~x;
    return (x | zq | zb | ctl) & HIGHS;
}

/* p is past an opening quote: the closing quote of a valid string body that ends before end,
 * or NULL. *escaped is set if the body holds a backslash. */
static const unsigned char *fast_string(const unsigned char *p, const unsigned char *end,
                                        bool *escaped)
{
    for (;;) {
#if defined(__SSE2__) && defined(__GNUC__)
        /* 16 bytes at a time: '"', '\\', and in one signed compare both controls and non-ASCII
         * bytes (negative as signed chars). */
        while (end - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                  _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                     _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
            int bits = _mm_movemask_epi8(m);
            if (bits) {
                p += __builtin_ctz((unsigned)bits);
                goto found;
            }
            p += 16;
        }
#endif
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t m = special_mask(x);
            if (m) {
                p += __builtin_ctzll(m) >> 3;
                break;
            }
            p += 8;
        }
#endif
        while (p < end && plain[*p])
            p++;
#if defined(__SSE2__) && defined(__GNUC__)
    found:
#endif
        if (p == end)
            return NULL;
        unsigned char c = *p;
        if (c == '"')
            return p;
        if (c == '\\') {
            if (end - p < 2)
                return NULL;
            *escaped = true;
            c = p[1];
            if (c != 'u') {
                if (!strchr("\"\\/bfnrt", c) || c == '\0')
                    return NULL;
                p += 2;
                continue;
            }
            if (end - p < 6)
                return NULL;
            uint32_t u = 0;
            for (int i = 2; i < 6; i++) {
                int h = util_hexval(p[i]);
                if (h < 0)
                    return NULL;
                u = u << 4 | (uint32_t)h;
            }
            p += 6;
            if (u >= 0xdc00 && u <= 0xdfff)
                return NULL;
            if (u >= 0xd800 && u <= 0xdbff) {
                if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
                    return NULL;
                u = 0;
                for (int i = 2; i < 6; i++) {
                    int h = util_hexval(p[i]);
                    if (h < 0)
                        return NULL;
                    u = u << 4 | (uint32_t)h;
                }
                if (u < 0xdc00 || u > 0xdfff)
                    return NULL;
                p += 6;
            }
            continue;
        }
        if (c < 0x80)
            return NULL; /* a control character */
        /* UTF-8, with utf8_lead()'s ranges. */
        unsigned lo = 0x80, hi = 0xbf;
        int left;
        if (c >= 0xc2 && c <= 0xdf) {
            left = 1;
        } else if (c >= 0xe0 && c <= 0xef) {
            left = 2;
            lo = c == 0xe0 ? 0xa0 : 0x80;
            hi = c == 0xed ? 0x9f : 0xbf;
        } else if (c >= 0xf0 && c <= 0xf4) {
            left = 3;
            lo = c == 0xf0 ? 0x90 : 0x80;
            hi = c == 0xf4 ? 0x8f : 0xbf;
        } else {
            return NULL;
        }
        if (end - p <= left)
            return NULL;
        if (p[1] < lo || p[1] > hi)
            return NULL;
        for (int i = 2; i <= left; i++)
            if (p[i] < 0x80 || p[i] > 0xbf)
                return NULL;
        p += left + 1;
    }
}

static inline bool is_digit(unsigned char c)
{
    return (unsigned char)(c - '0') < 10;
}

/* A number at p (its first byte is '-' or a digit) that ends before end: the byte past it, or
 * NULL. */
static const unsigned char *fast_number(const unsigned char *p, const unsigned char *end)
{
    if (*p == '-' && ++p == end)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        while (++p < end && is_digit(*p)) {
        }
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        if (++p == end || !is_digit(*p))
            return NULL;
        while (++p < end && is_digit(*p)) {
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return NULL;
        while (++p < end && is_digit(*p)) {
        }
    }
    return p < end ? p : NULL; /* at the end, more digits may follow in the next chunk */
}

/* note_type() for an event member's value, given its slot. */
static void note_slot_type(struct tscan *s, int slot, int type)
{
    int keep = s->slot;
    s->slot = slot;
    note_type(s, type);
    s->slot = keep;
}

/* The event whose '{' is at b (absolute offset at), if it ends before end. Returns 1 with
 * *ret_p past its '}' and s as after the state machine's TSCAN_EVENT; 0 to let the state
 * machine scan it; -EINVAL when the complete, well-formed event fails check_event(). */
static int event_fast(struct tscan *s, const unsigned char *b, const unsigned char *end,
                      uint64_t at, const unsigned char **ret_p)
{
    uint8_t stack[TSCAN_EVENT_DEPTH_MAX + 1];
    int level = 1, slot = SL_NONE, args_level = 0;
    const unsigned char *p = b, *v;
    if (s->dist_depth || s->extra_depth || s->events_depth >= TSCAN_DEPTH_MAX)
        return 0;
    if ((size_t)(end - b) > TSCAN_EVENT_BYTES_MAX)
        end = b + TSCAN_EVENT_BYTES_MAX; /* longer: the state machine says so */
    event_begin(s, at);
    stack[1] = 'o';
    p = skip_blanks(p + 1, end);
    if (p == end || *p == '}')
        goto slow; /* Paddle's "{}": counted by the state machine */
key:
    if (p == end || *p != '"')
        goto slow;
    {
        bool esc = false;
        const unsigned char *q = fast_string(p + 1, end, &esc);
        if (!q)
            goto slow;
        slot = esc                  ? SL_NONE
               : level == 1          ? event_key_slot(s, (const char *)p + 1, (size_t)(q - p - 1))
               : level == args_level ? args_key_slot(s, (const char *)p + 1, (size_t)(q - p - 1))
                                     : SL_NONE;
        p = skip_blanks(q + 1, end);
        if (p == end || *p != ':')
            goto slow;
        p = skip_blanks(p + 1, end);
    }
value:
    if (p == end)
        goto slow;
    v = p;
    switch (*p) {
    case '{':
    case '[':
        if (level + 1 > TSCAN_EVENT_DEPTH_MAX || s->events_depth + level >= TSCAN_DEPTH_MAX)
            goto slow;
        if (slot != SL_NONE)
            note_slot_type(s, slot, *p == '{' ? JT_OBJECT : JT_ARRAY);
        stack[++level] = *p == '{' ? 'o' : 'a';
        if (slot == SL_EV_ARGS && *p == '{')
            args_level = level;
        p = skip_blanks(p + 1, end);
        if (p == end)
            goto slow;
        if (*p == (stack[level] == 'o' ? '}' : ']')) {
            p++;
            goto closed;
        }
        slot = SL_NONE;
        if (stack[level] == 'o')
            goto key;
        goto value;
    case '"': {
        bool esc = false;
        const unsigned char *q = fast_string(p + 1, end, &esc);
        if (!q)
            goto slow;
        p = q + 1;
        if (slot != SL_NONE) {
            note_slot_type(s, slot, JT_STRING);
            event_scalar(s, slot, JT_STRING, (const char *)v, (size_t)(p - v), esc,
                         at + (uint64_t)(v - b));
        }
        break;
    }
    case 't':
    case 'f':
    case 'n': {
        const char *lit = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
        size_t n = strlen(lit);
        if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
            goto slow;
        p += n;
        if (slot != SL_NONE) {
            note_slot_type(s, slot, JT_LITERAL);
            event_scalar(s, slot, JT_LITERAL, (const char *)v, n, false, at + (uint64_t)(v - b));
        }
        break;
    }
    default:
        p = fast_number(p, end);
        if (!p)
            goto slow;
        if (slot != SL_NONE) {
            note_slot_type(s, slot, JT_NUMBER);
            event_scalar(s, slot, JT_NUMBER, (const char *)v, (size_t)(p - v), false,
                         at + (uint64_t)(v - b));
        }
        break;
    }
next:
    p = skip_blanks(p, end);
    if (p == end)
        goto slow;
    if (*p == ',') {
        p = skip_blanks(p + 1, end);
        slot = SL_NONE;
        if (stack[level] == 'o')
            goto key;
        goto value;
    }
    if (*p != (stack[level] == 'o' ? '}' : ']'))
        goto slow;
    p++;
closed:
    if (level == args_level)
        args_level = 0;
    if (--level > 0)
        goto next;
    s->in_event = false;
    s->event.end = at + (uint64_t)(p - b);
    s->slot = SL_NONE;
    set_after_value(s);
    if (check_event(s) < 0)
        return -EINVAL;
    s->meta.n_events++;
    *ret_p = p;
    return 1;
slow:
    s->in_event = false;
    return 0;
}

/* The bytes tscan_feed() is scanning: p the next one, b0 the chunk's first (at s->off). */
struct feed {
    const unsigned char *p, *end, *b0;
};

#define AT(q) (s->off + (uint64_t)((q) - b0))

/* tscan_feed()'s step between tokens (a value's first byte, keys, ':', ',', the ends of
 * containers, blanks, the document's end): one byte, or a run of blanks, or a whole event by
 * event_fast(). Returns 0, 1 when an event of the events array ended, or -EINVAL. */
static int feed_structure(struct tscan *s, struct feed *f)
{
    const unsigned char *p = f->p, *end = f->end, *b0 = f->b0;
    unsigned char c = *p;
    char sb[8];
    int r;
    switch (s->state) {
    case ST_VALUE:
        if (is_blank(c)) {
            p = skip_blanks(p + 1, end);
            break;
        }
        if (c == '{' && s->events_depth && s->depth == s->events_depth) {
            const unsigned char *q;
            r = event_fast(s, p, end, AT(p), &q);
            if (r < 0)
                return -EINVAL;
            if (r == 1) {
                p = q;
                goto event;
            }
        }
        if (value_begin(s, c, AT(p)) < 0)
            return -EINVAL;
        p++;
        break;
    case ST_OBJ_FIRST:
    case ST_OBJ_KEY:
        if (is_blank(c)) {
            p = skip_blanks(p + 1, end);
            break;
        }
        if (c == '}' && s->state == ST_OBJ_FIRST) {
            r = container_end(s, c, AT(p));
            p++;
            if (r < 0)
                return -EINVAL;
            if (r == 1)
                goto event;
            break;
        }
        if (c != '"')
            return fail(s, AT(p), "expected a key string, found %s", show(c, sb));
        s->key = true;
        s->capture = key_watched(s);
        s->cap_len = 0;
        s->cap_escaped = false;
        if (s->capture)
            cap_add(s, "\"", 1);
        s->state = ST_STR;
        p++;
        break;
    case ST_COLON:
        if (is_blank(c)) {
            p = skip_blanks(p + 1, end);
            break;
        }
        if (c != ':')
            return fail(s, AT(p), "expected ':' after a key, found %s", show(c, sb));
        s->slot = s->key_slot;
        s->key_slot = SL_NONE;
        s->state = ST_VALUE;
        p++;
        break;
    case ST_OBJ_NEXT:
    case ST_ARR_NEXT:
        if (is_blank(c)) {
            p = skip_blanks(p + 1, end);
            break;
        }
        if (c == ',') {
            s->state = s->state == ST_OBJ_NEXT ? ST_OBJ_KEY : ST_VALUE;
            s->slot = SL_NONE;
            p++;
            break;
        }
        if (c == '}' || c == ']') {
            r = container_end(s, c, AT(p));
            p++;
            if (r < 0)
                return -EINVAL;
            if (r == 1)
                goto event;
            break;
        }
        return fail(s, AT(p), "expected ',' or '%c', found %s",
                    s->state == ST_OBJ_NEXT ? '}' : ']', show(c, sb));
    case ST_ARR_FIRST:
        if (is_blank(c)) {
            p = skip_blanks(p + 1, end);
            break;
        }
        if (c == ']') {
            r = container_end(s, c, AT(p));
            p++;
            if (r < 0)
                return -EINVAL;
            break;
        }
        /* The first element: as any other (ST_VALUE), without taking a byte here. */
        s->slot = SL_NONE;
        s->state = ST_VALUE;
        break;
    case ST_END:
        if (!is_blank(c))
            return fail(s, AT(p), "%s after the end of the document", show(c, sb));
        p++;
        break;

    default:
        return -EINVAL;
    }
    f->p = p;
    return 0;
event:
    f->p = p;
    return 1;
}

/* tscan_feed()'s step inside a string (a key or a value): a run of plain bytes, or one byte of
 * an escape, a \u escape or a multi-byte UTF-8 character. Returns 0 or -EINVAL. */
static int feed_string(struct tscan *s, struct feed *f)
{
    const unsigned char *p = f->p, *end = f->end, *b0 = f->b0;
    unsigned char c = *p;
    char sb[8];
    switch (s->state) {
    case ST_STR: {
        const unsigned char *q = p;
        while (end - q >= 8) {
            uint64_t x;
            memcpy(&x, q, 8);
            if (has_special(x))
                break;
            q += 8;
        }
        while (q < end && plain[*q])
            q++;
        if (s->capture)
            cap_add(s, (const char *)p, (size_t)(q - p));
        p = q;
        if (p == end)
            break;
        c = *p;
        if (c == '"') {
            if (s->capture)
                cap_add(s, "\"", 1);
            p++;
            if (s->key) {
                s->key_slot = s->capture ? key_slot(s) : SL_NONE;
                s->capture = false;
                s->state = ST_COLON;
            } else {
                scalar_done(s, JT_STRING);
            }
        } else if (c == '\\') {
            if (s->capture)
                cap_add(s, "\\", 1);
            s->cap_escaped = true;
            s->state = ST_STR_ESC;
            p++;
        } else if (c < 0x20) {
            return fail(s, AT(p), "control character 0x%02x inside a string", c);
        } else {
            if (!utf8_lead(s, c))
                return fail(s, AT(p), "invalid UTF-8: byte 0x%02x cannot start a character",
                            c);
            if (s->capture)
                cap_add(s, (const char *)p, 1);
            s->state = ST_STR_UTF8;
            p++;
        }
        break;
    }
    case ST_STR_UTF8:
        if (c < s->utf8_lo || c > s->utf8_hi)
            return fail(s, AT(p), "invalid UTF-8: byte 0x%02x in a multi-byte character", c);
        s->utf8_lo = 0x80;
        s->utf8_hi = 0xbf;
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        if (--s->utf8_left == 0)
            s->state = ST_STR;
        p++;
        break;
    case ST_STR_ESC:
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        if (c == 'u') {
            s->u_left = 4;
            s->u_val = 0;
            s->state = ST_STR_U;
        } else if (strchr("\"\\/bfnrt", c) && c != '\0') {
            s->state = ST_STR;
        } else {
            return fail(s, AT(p), "invalid escape \\%c in a string", c >= 0x20 && c < 0x7f ? c : '?');
        }
        p++;
        break;
    case ST_STR_U: {
        int h = util_hexval(c);
        if (h < 0)
            return fail(s, AT(p), "invalid \\u escape: %s is not a hex digit", show(c, sb));
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        s->u_val = s->u_val << 4 | (uint32_t)h;
        p++;
        if (--s->u_left > 0)
            break;
        if (s->u_high) {
            if (s->u_val < 0xdc00 || s->u_val > 0xdfff)
                return fail(s, AT(p) - 6, "lone high surrogate in a \\u escape");
            s->u_high = 0;
            s->state = ST_STR;
        } else if (s->u_val >= 0xd800 && s->u_val <= 0xdbff) {
            s->u_high = s->u_val;
            s->state = ST_STR_LOW_BS;
        } else if (s->u_val >= 0xdc00 && s->u_val <= 0xdfff) {
            return fail(s, AT(p) - 6, "lone low surrogate in a \\u escape");
        } else {
            s->state = ST_STR;
        }
        break;
    }
    case ST_STR_LOW_BS:
    case ST_STR_LOW_U:
        if (c != (s->state == ST_STR_LOW_BS ? '\\' : 'u'))
            return fail(s, AT(p), "lone high surrogate in a \\u escape");
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        if (s->state == ST_STR_LOW_BS) {
            s->state = ST_STR_LOW_U;
        } else {
            s->u_left = 4;
            s->u_val = 0;
            s->state = ST_STR_U;
        }
        p++;
        break;
    default:
        return -EINVAL;
    }
    f->p = p;
    return 0;
}

/* tscan_feed()'s step inside a number or a literal: a run of digits or one byte. Returns 0 or
 * -EINVAL. */
static int feed_scalar(struct tscan *s, struct feed *f)
{
    const unsigned char *p = f->p, *end = f->end, *b0 = f->b0;
    unsigned char c = *p;
    char sb[8];
    switch (s->state) {
    case ST_NUM_MINUS:
    case ST_NUM_DOT:
    case ST_NUM_ESIGN:
        if (c < '0' || c > '9')
            return fail(s, AT(p), "invalid number: expected a digit, found %s", show(c, sb));
        s->state = s->state == ST_NUM_MINUS ? (c == '0' ? ST_NUM_ZERO : ST_NUM_INT)
                   : s->state == ST_NUM_DOT ? ST_NUM_FRAC
                                            : ST_NUM_EXP;
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        p++;
        break;
    case ST_NUM_E:
        if (c != '+' && c != '-' && (c < '0' || c > '9'))
            return fail(s, AT(p), "invalid number: bad exponent %s", show(c, sb));
        s->state = (c == '+' || c == '-') ? ST_NUM_ESIGN : ST_NUM_EXP;
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        p++;
        break;
    case ST_NUM_ZERO:
    case ST_NUM_INT:
    case ST_NUM_FRAC:
    case ST_NUM_EXP:
        if (s->state != ST_NUM_ZERO && c >= '0' && c <= '9') {
            const unsigned char *q = p + 1;
            while (q < end && *q >= '0' && *q <= '9')
                q++;
            if (s->capture)
                cap_add(s, (const char *)p, (size_t)(q - p));
            p = q;
            break;
        }
        if (c >= '0' && c <= '9') {
            if (s->state == ST_NUM_ZERO)
                return fail(s, AT(p), "invalid number: leading zero");
        } else if (c == '.' && (s->state == ST_NUM_ZERO || s->state == ST_NUM_INT)) {
            s->state = ST_NUM_DOT;
        } else if ((c == 'e' || c == 'E') && s->state != ST_NUM_EXP) {
            s->state = ST_NUM_E;
        } else {
            /* The number ended; c belongs to what follows it. */
            scalar_done(s, JT_NUMBER);
            break;
        }
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        p++;
        break;
    case ST_LIT:
        if (c != (unsigned char)s->lit[s->lit_i])
            return fail(s, AT(p), "invalid literal: expected \"%s\"", s->lit);
        if (s->capture)
            cap_add(s, (const char *)p, 1);
        p++;
        if (s->lit[++s->lit_i] == '\0')
            scalar_done(s, JT_LITERAL);
        break;
    default:
        return -EINVAL;
    }
    f->p = p;
    return 0;
}

#undef AT

int tscan_feed(struct tscan *s, const char *buf, size_t len, size_t *ret_used)
{
    struct feed f = {(const unsigned char *)buf, (const unsigned char *)buf + len,
                     (const unsigned char *)buf};
    if (s->state == ST_FAILED)
        return -EINVAL;
    while (f.p < f.end) {
        int r;
        switch (s->state) {
        case ST_VALUE:
        case ST_OBJ_FIRST:
        case ST_OBJ_KEY:
        case ST_COLON:
        case ST_OBJ_NEXT:
        case ST_ARR_NEXT:
        case ST_ARR_FIRST:
        case ST_END:
            r = feed_structure(s, &f);
            break;
        case ST_STR:
        case ST_STR_UTF8:
        case ST_STR_ESC:
        case ST_STR_U:
        case ST_STR_LOW_BS:
        case ST_STR_LOW_U:
            r = feed_string(s, &f);
            break;
        case ST_NUM_MINUS:
        case ST_NUM_DOT:
        case ST_NUM_ESIGN:
        case ST_NUM_E:
        case ST_NUM_ZERO:
        case ST_NUM_INT:
        case ST_NUM_FRAC:
        case ST_NUM_EXP:
        case ST_LIT:
            r = feed_scalar(s, &f);
            break;
        default:
            return -EINVAL;
        }
        if (r < 0)
            return r;
        if (r == 1) {
            *ret_used = (size_t)(f.p - f.b0);
            s->off += *ret_used;
            return TSCAN_EVENT;
        }
    }
    *ret_used = len;
    s->off += len;
    if (s->in_event && s->off - s->event.start > TSCAN_EVENT_BYTES_MAX)
        return fail(s, s->event.start, "event #%llu is longer than %u bytes (the daemon's line limit)",
                    (unsigned long long)s->meta.n_events, TSCAN_EVENT_BYTES_MAX);
    return TSCAN_MORE;
}

void tscan_init_split(struct tscan *s, const struct tscan *ref, uint64_t off)
{
    tscan_init(s);
    s->off = off;
    s->state = ST_VALUE;
    s->depth = ref->events_depth;
    memcpy(s->stack, ref->stack, sizeof s->stack);
    s->events_depth = ref->events_depth;
    s->meta.root_is_array = ref->meta.root_is_array;
}

bool tscan_same_position(const struct tscan *a, const struct tscan *b)
{
    /* Everything the next byte's handling reads; the token and capture fields are only read
     * inside a token, and ST_VALUE is between tokens. */
    return a->state == ST_VALUE && b->state == ST_VALUE && a->off == b->off &&
           a->depth == b->depth && a->depth > 0 &&
           memcmp(a->stack, b->stack, (size_t)a->depth) == 0 &&
           a->events_depth == b->events_depth && a->events_depth == a->depth &&
           !a->events_done && !b->events_done && a->dist_depth == 0 && b->dist_depth == 0 &&
           a->extra_depth == 0 && b->extra_depth == 0 &&
           !a->in_event && !b->in_event && a->args_depth == 0 && b->args_depth == 0 &&
           a->slot == SL_NONE && b->slot == SL_NONE &&
           a->meta.root_is_array == b->meta.root_is_array;
}

void tscan_meta_merge(struct tscan_meta *a, const struct tscan_meta *b)
{
    const struct {
        char *dst;
        const char *src;
    } text[] = {{a->schema_version, b->schema_version},
                {a->display_time_unit, b->display_time_unit},
                {a->base_time_ns, b->base_time_ns},
                {a->trace_name, b->trace_name},
                {a->dist_backend, b->dist_backend},
                {a->extra_process_cpu, b->extra_process_cpu},
                {a->extra_system_cpu, b->extra_system_cpu}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        if (text[i].src[0])
            memcpy(text[i].dst, text[i].src, TSCAN_CAP_MAX + 1);
    /* The later occurrence decides, as in one scan. */
    if (b->dist_rank_seen)
        a->dist_rank = b->dist_rank;
    if (b->dist_world_size_seen)
        a->dist_world_size = b->dist_world_size;
    a->dist_rank_seen = a->dist_rank_seen || b->dist_rank_seen;
    a->dist_world_size_seen = a->dist_world_size_seen || b->dist_world_size_seen;
    a->has_device_properties = a->has_device_properties || b->has_device_properties;
    a->has_distributed_info = a->has_distributed_info || b->has_distributed_info;
    a->has_paddle_marker = a->has_paddle_marker || b->has_paddle_marker;
    a->n_events += b->n_events;
    a->n_empty_events += b->n_empty_events;
}

int tscan_finish(struct tscan *s)
{
    if (s->state == ST_FAILED)
        return -EINVAL;
    if (s->state != ST_END) {
        const char *where = s->in_event ? "inside an event" : s->events_depth ? "inside the events array"
                                                                              : "inside the document";
        if (s->state == ST_VALUE && s->depth == 0)
            return fail(s, s->off, "empty file: no JSON document");
        return fail(s, s->off, "truncated: the input ends %s (after %llu complete events)", where,
                    (unsigned long long)s->meta.n_events);
    }
    if (!s->meta.root_is_array && !s->events_done)
        return fail(s, s->off, "not a Chrome trace: the top-level object has no \"traceEvents\" array");
    return 0;
}
