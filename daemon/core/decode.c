/* SPDX-License-Identifier: MIT */
/*
 * The line decoder (contract in decode.h): the record and hello rules on top of lib/json.
 *
 * Shape: the scanner validates the whole line in one pass and hands back, for the first occurrence of
 * each known top-level key, the value's type and text (numbers: the exact token, converted here
 * by core/num so that microseconds become nanoseconds without a double; strings: the bytes
 * between the quotes, or an unescaped copy in the arena when they hold escapes; "phases": the
 * object's raw text). Only then, when "ph" or "type" is known, are the slots checked against that
 * kind's rules, so a malformed line is always reported as malformed, whatever its fields.
 * Nothing here allocates per line: strings go to the caller's arena.
 *
 * This replaced a simdjson On-Demand decoder with the same results on every input (proved by the
 * differential fuzzer tests/fuzz/fuzz_jscan.c, which keeps that decoder as its oracle).
 */
#include "decode.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <errno.h>

#include "../../lib/json.h"
#include "../../lib/num.h"

/* record_from_line() sets every field of struct record one by one; on LP64 this catches a field
 * added to it. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct record) == 360, "struct record changed: update record_from_line()");
#endif

enum field_id {
    F_PH,
    F_TYPE,
    F_NAME,
    F_CAT,
    F_TS,
    F_DUR,
    F_PID,
    F_TID,
    F_STEP,
    F_BEGIN_US,
    F_END_US,
    F_SAMPLES,
    F_PHASES,
    F_SIZE,
    F_CAPACITY,
    F_TS_US,
    F_CPU_PERCENT,
    F_SYS_CPU_PERCENT,
    F_RSS_BYTES,
    F_OPS,
    F_ARGS,
    F_ID,
    F_STATE,
    F_REASON,
    F_RECORD_COUNT,
};

/* The members of a trace event's "args" object the daemon reads (Kineto's links between a
 * device event, its runtime call and its host operator). */
enum args_id {
    A_CORRELATION = F_RECORD_COUNT, /* slots after the record's: one array, one pass */
    A_EXTERNAL_ID,
    A_DISPATCH,
    A_EXECUTION,
    A_END,
};

/* The members of a step record's "phases" object the daemon reads (struct record_phases). */
enum phase_id {
    P_DATALOADER = A_END, /* slots after the args', in the same array */
    P_FORWARD,
    P_BACKWARD,
    P_END,
};
_Static_assert(P_END <= JSON_SLOTS_MAX, "too many known record keys for one slot array");

static const struct json_key phase_keys[] = {
    {"dataloader", P_DATALOADER, 0},
    {"forward", P_FORWARD, 0},
    {"backward", P_BACKWARD, 0},
};

static const struct json_key args_keys[] = {
    {"correlation", A_CORRELATION, 0},
    {"External id", A_EXTERNAL_ID, 0},
    {"dispatch_time_us", A_DISPATCH, 0},
    {"execution_time_us", A_EXECUTION, 0},
};

/* Paddle's memory events and window information (docs/PROTOCOL.md 9): a second scan of the
 * rare lines that are such events, with key sets of their own (the record's slot array is full). */
enum paddle_id {
    PD_ARGS,
    PD_INCREASE,
    PD_PEAK_ALLOCATED,
    PD_PEAK_RESERVED,
    PD_PLACE,
    PD_OWNER,
    PD_OWNER_TS,
    PD_PROCESS_CPU,
    PD_SYSTEM_CPU,
    PD_CUR_ALLOCATED, /* Paddle's current_allocated, Kineto's "Total Allocated" */
    PD_CUR_RESERVED,
    PD_TOTAL_ALLOCATED,
    PD_TOTAL_RESERVED,
    PD_KINETO_BYTES,
    PD_DEVICE_TYPE,
    PD_DEVICE_ID,
    PD_STATS_PEAK_ALLOCATED, /* the collector's "[memory stats]" (docs/PROTOCOL.md 10) */
    PD_STATS_PEAK_RESERVED,
    PD_STEP,
    PD_END,
};

static const struct json_key paddle_keys[] = {
    {"args", PD_ARGS, JSON_F_SUBKEYS},
    {"owner", PD_OWNER, 0},
    {"owner_ts", PD_OWNER_TS, 0},
    {"step", PD_STEP, 0},
};

static const struct json_key paddle_args_keys[] = {
    {"increase_bytes", PD_INCREASE, 0},
    {"peak_allocated", PD_PEAK_ALLOCATED, 0},
    {"peak_reserved", PD_PEAK_RESERVED, 0},
    {"place", PD_PLACE, 0},
    {"Process Cpu Utilization", PD_PROCESS_CPU, 0},
    {"System Cpu Utilization", PD_SYSTEM_CPU, 0},
    {"current_allocated", PD_CUR_ALLOCATED, 0},
    {"current_reserved", PD_CUR_RESERVED, 0},
    {"Total Allocated", PD_TOTAL_ALLOCATED, 0},
    {"Total Reserved", PD_TOTAL_RESERVED, 0},
    {"Bytes", PD_KINETO_BYTES, 0},
    {"Device Type", PD_DEVICE_TYPE, 0},
    {"Device Id", PD_DEVICE_ID, 0},
    {"Peak Allocated", PD_STATS_PEAK_ALLOCATED, 0},
    {"Peak Reserved", PD_STATS_PEAK_RESERVED, 0},
};

enum hello_id {
    H_HELLO,
    H_JOB,
    H_RANK,
    H_WORLD_SIZE,
    H_HOST,
    H_PID,
    H_FRAMEWORK,
    H_FRAMEWORK_VERSION,
    H_RUN,
    H_CLOCK,
    H_STREAM,
    H_SEQ,
    H_ENV,
    H_CAPABILITIES,
    H_PROBE,
    H_SOURCE,
    H_COUNT,
};

/* The members of the hello's "env" object the daemon reads (step-trace points). */
enum env_id {
    E_STEPSCOPE_FP,
    E_STEPSCOPE_BP,
    E_PROFILING_FP,
    E_PROFILING_BP,
    E_FP_POINT,
    E_BP_POINT,
    E_COUNT,
};

static const struct json_key env_keys[] = {
    {"STEPSCOPE_FP_POINT", E_STEPSCOPE_FP, 0},
    {"STEPSCOPE_BP_POINT", E_STEPSCOPE_BP, 0},
    {"PROFILING_FP_START", E_PROFILING_FP, 0},
    {"PROFILING_BP_END", E_PROFILING_BP, 0},
    {"FP_POINT", E_FP_POINT, 0},
    {"BP_POINT", E_BP_POINT, 0},
};

static const struct json_key record_keys[] = {
    {"ph", F_PH, 0},
    {"type", F_TYPE, 0},
    {"name", F_NAME, 0},
    {"cat", F_CAT, 0},
    {"ts", F_TS, 0},
    {"dur", F_DUR, 0},
    {"pid", F_PID, 0},
    {"tid", F_TID, 0},
    {"step", F_STEP, 0},
    {"begin_us", F_BEGIN_US, 0},
    {"end_us", F_END_US, 0},
    {"samples", F_SAMPLES, 0},
    {"phases", F_PHASES, JSON_F_DURATIONS | JSON_F_SUBKEYS},
    {"size", F_SIZE, 0},
    {"capacity", F_CAPACITY, 0},
    {"ts_us", F_TS_US, 0},
    {"cpu_percent", F_CPU_PERCENT, JSON_F_DOUBLE},
    {"sys_cpu_percent", F_SYS_CPU_PERCENT, JSON_F_DOUBLE},
    {"rss_bytes", F_RSS_BYTES, 0},
    {"ops", F_OPS, 0},
    {"args", F_ARGS, JSON_F_SUBKEYS},
    {"id", F_ID, 0},
    {"state", F_STATE, 0},
    {"reason", F_REASON, 0},
};

static const struct json_key hello_keys[] = {
    {"hello", H_HELLO, 0},
    {"job", H_JOB, 0},
    {"rank", H_RANK, 0},
    {"world_size", H_WORLD_SIZE, 0},
    {"host", H_HOST, 0},
    {"pid", H_PID, 0},
    {"framework", H_FRAMEWORK, 0},
    {"framework_version", H_FRAMEWORK_VERSION, 0},
    {"run", H_RUN, 0},
    {"clock", H_CLOCK, 0},
    {"stream", H_STREAM, 0},
    {"seq", H_SEQ, 0},
    {"env", H_ENV, 0},
    {"capabilities", H_CAPABILITIES, 0},
    {"probe", H_PROBE, 0},
    {"source", H_SOURCE, 0},
};

struct decoder {
    struct json_keys record; /* record_keys, indexed */
    struct json_keys hello;  /* hello_keys, indexed */
    struct json_keys env;    /* env_keys, indexed */
    struct json_keys args;   /* args_keys, indexed: the sub keys of record's "args" */
    struct json_keys phases; /* phase_keys, indexed: the sub keys of record's "phases" */
    struct json_keys paddle; /* paddle_keys, indexed */
    struct json_keys paddle_args; /* paddle_args_keys: paddle's sub keys */
};

struct ctx {
    struct json_arena *a;
    char *msg;
    int status; /* why the last helper returned false */
};

__attribute__((format(printf, 3, 4))) static bool fail(struct ctx *c, int status,
                                                       const char *fmt, ...)
{
    c->status = status;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(c->msg, DECODE_MSG_MAX, fmt, ap);
    va_end(ap);
    return false;
}

static char *arena_put(struct json_arena *a, const char *p, size_t n, bool nul)
{
    size_t need = n + (nul ? 1 : 0);
    if (a->cap - a->used < need)
        return NULL;
    char *dst = a->data + a->used;
    if (n > 0)
        memcpy(dst, p, n);
    if (nul)
        dst[n] = '\0';
    a->used += need;
    return dst;
}

static inline bool text_is(const struct json_slot *s, const char *lit, size_t n)
{
    return s->n == n && memcmp(s->p, lit, n) == 0;
}
#define TEXT_IS(s, lit) text_is((s), (lit), sizeof(lit) - 1)

/* Slot readers: each returns false (with the reason) if the slot does not hold what it should. */

static bool need_string(struct ctx *c, const struct json_slot *s, const char *key,
                        struct record_text *ret)
{
    if (s->type != JSON_STRING)
        return fail(c, DECODE_INVALID, "\"%s\" must be a string", key);
    ret->ptr = s->p;
    ret->len = s->n;
    return true;
}

/* Microseconds to ns; absent gives absent_value if optional, else an error. */
/* The time range: core/num.h. */
#define TIME_MAX_NS NUM_TIME_MAX_NS
#define TIME_MIN_NS NUM_TIME_MIN_NS
#define DUR_MAX_NS NUM_DUR_MAX_NS

static bool get_us(struct ctx *c, const struct json_slot *s, const char *key, bool optional,
                   int64_t absent_value, int64_t *ret)
{
    if (s->type == JSON_ABSENT) {
        if (!optional)
            return fail(c, DECODE_INVALID, "missing \"%s\"", key);
        *ret = absent_value;
        return true;
    }
    if (s->type != JSON_NUMBER)
        return fail(c, DECODE_INVALID, "\"%s\" must be a number", key);
    if (num_us_to_ns(s->p, s->n, ret) < 0)
        return fail(c, DECODE_INVALID, "\"%s\" is out of range", key);
    if (*ret >= TIME_MAX_NS || *ret <= TIME_MIN_NS)
        return fail(c, DECODE_INVALID, "\"%s\" is out of range (-2^60 < t < 2^62 ns)", key);
    return true;
}

/* An integer >= 0; absent gives -1 if optional, else an error. */
static bool get_count(struct ctx *c, const struct json_slot *s, const char *key, bool optional,
                      int64_t *ret)
{
    if (s->type == JSON_ABSENT) {
        if (!optional)
            return fail(c, DECODE_INVALID, "missing \"%s\"", key);
        *ret = -1;
        return true;
    }
    int64_t v;
    if (s->type != JSON_NUMBER || num_parse_i64(s->p, s->n, &v) < 0 || v < 0)
        return fail(c, DECODE_INVALID, "\"%s\" must be an integer >= 0", key);
    *ret = v;
    return true;
}

static bool get_percent(struct ctx *c, const struct json_slot *s, const char *key, double *ret)
{
    if (s->type == JSON_ABSENT) {
        *ret = -1;
        return true;
    }
    if (s->type != JSON_NUMBER || !(s->d >= 0))
        return fail(c, DECODE_INVALID, "\"%s\" must be a number >= 0", key);
    *ret = s->d;
    return true;
}

/* pid and tid: a number's token or a string's text; anything else counts as absent. */
static void get_id(const struct json_slot *s, struct record_text *ret)
{
    if (s->type == JSON_NUMBER || s->type == JSON_STRING) {
        ret->ptr = s->p;
        ret->len = s->n;
    }
}

static bool build_trace(struct ctx *c, const struct json_slot *s, struct record *r)
{
    const struct json_slot *ph = &s[F_PH];
    if (ph->type != JSON_STRING || ph->n != 1)
        return fail(c, DECODE_INVALID, "\"ph\" must be a one-letter string");
    r->kind = RECORD_TRACE;
    r->ph = ph->p[0];
    if (r->ph == 'X' || r->ph == 'M') {
        if (!need_string(c, &s[F_NAME], "name", &r->name))
            return false;
    } else if (s[F_NAME].type == JSON_STRING) {
        r->name.ptr = s[F_NAME].p;
        r->name.len = s[F_NAME].n;
    }
    if (!get_us(c, &s[F_TS], "ts", r->ph == 'M', INT64_MIN, &r->ts_ns))
        return false;
    if (r->ph == 'X') {
        if (!get_us(c, &s[F_DUR], "dur", false, 0, &r->dur_ns))
            return false;
        if (r->dur_ns < 0)
            return fail(c, DECODE_INVALID, "\"dur\" must be >= 0");
        if (r->dur_ns >= DUR_MAX_NS)
            return fail(c, DECODE_INVALID, "\"dur\" is out of range (< 3 * 2^60 ns)");
    } else if (s[F_DUR].type == JSON_NUMBER) {
        /* Only X promises a duration; elsewhere take one if it makes sense, never reject. */
        int64_t dur;
        if (num_us_to_ns(s[F_DUR].p, s[F_DUR].n, &dur) == 0 && dur >= 0 && dur < DUR_MAX_NS)
            r->dur_ns = dur;
    }
    /* A span whose end would pass the largest time (INT64_MAX ns) ends there: every analysis
     * adds ts and dur, and the sum must not overflow. */
    if (r->ts_ns > 0 && r->dur_ns > INT64_MAX - r->ts_ns)
        r->dur_ns = INT64_MAX - r->ts_ns;
    if (s[F_CAT].type == JSON_STRING) {
        r->cat.ptr = s[F_CAT].p;
        r->cat.len = s[F_CAT].n;
    }
    get_id(&s[F_PID], &r->pid);
    get_id(&s[F_TID], &r->tid);
    return true;
}

/* An integer >= 0 from a slot, or -1. Kineto writes plain digits: read those directly, and leave
 * any other spelling (1.2e3, 12.0) to core/num. */
static int64_t link_id(const struct json_slot *s)
{
    if (s->type != JSON_NUMBER)
        return -1;
    int64_t v = 0;
    size_t i = 0;
    if (s->n <= 18) {
        while (i < s->n && s->p[i] >= '0' && s->p[i] <= '9')
            v = v * 10 + (s->p[i++] - '0');
        if (i == s->n)
            return v;
    }
    if (num_parse_i64(s->p, s->n, &v) < 0 || v < 0)
        return -1;
    return v;
}

/* A time in µs >= 0 from a slot, in ns, or -1. */
static int64_t arg_us(const struct json_slot *s)
{
    int64_t ns;
    if (s->type != JSON_NUMBER || num_us_to_ns(s->p, s->n, &ns) < 0 || ns < 0)
        return -1;
    return ns;
}

/* args.correlation, args["External id"], args.dispatch_time_us and args.execution_time_us of a
 * trace event, which the line's own pass put in the slots after the record's
 * (JSON_F_SUBKEYS): members of other types are ignored, never an error. */
static void trace_links(const struct json_slot *s, struct record *r)
{
    if (s[F_ARGS].type != JSON_OBJECT)
        return; /* the sub slots are unset; the fields keep their -1 */
    r->correlation = link_id(&s[A_CORRELATION]);
    r->external_id = link_id(&s[A_EXTERNAL_ID]);
    r->dispatch_ns = arg_us(&s[A_DISPATCH]);
    r->exec_ns = arg_us(&s[A_EXECUTION]);
}

/* A phase's time in ns from its slot (a number >= 0 in µs), or -1. */
static int64_t phase_ns(const struct json_slot *s)
{
    int64_t ns;
    if (s->type != JSON_NUMBER || num_us_to_ns(s->p, s->n, &ns) < 0 || ns < 0)
        return -1;
    return ns;
}

static void phases_from_slots(const struct json_slot *s, struct record_phases *ret)
{
    ret->dataloader_ns = phase_ns(&s[P_DATALOADER]);
    ret->forward_ns = phase_ns(&s[P_FORWARD]);
    ret->backward_ns = phase_ns(&s[P_BACKWARD]);
}

/* An integer from a slot (plain digits, an optional '-'), or absent. */
static int64_t arg_int(const struct json_slot *s, int64_t absent)
{
    int64_t v;
    if (s->type != JSON_NUMBER || num_parse_i64(s->p, s->n, &v) < 0)
        return absent;
    return v;
}

/* A fraction >= 0 from a number or a string holding one (Paddle writes "1.000000"), or -1. */
static double arg_fraction(const struct json_slot *s)
{
    char buf[64];
    if ((s->type != JSON_NUMBER && s->type != JSON_STRING) || s->n == 0 || s->n >= sizeof buf)
        return -1;
    memcpy(buf, s->p, s->n);
    buf[s->n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (*end != '\0' || !(v >= 0) || isinf(v))
        return -1;
    return v;
}

/* The args of the memory events (Paddle's and Kineto's "[memory]", the collector's "[memory
 * stats]") and of Paddle's "ExtraInfo" record (docs/PROTOCOL.md 9 and 10), from a second scan of
 * the line (only such lines: they are few). A member of another type is absent, never an error. */
static void paddle_args(struct decoder *d, const char *line, size_t len,
                        struct json_arena *a, struct record *r)
{
    bool mem = (r->ph == 'i' || r->ph == 'I') && r->name.len == 8 &&
               memcmp(r->name.ptr, "[memory]", 8) == 0;
    bool stats = r->ph == 'C' && r->name.len == 14 && memcmp(r->name.ptr, "[memory stats]", 14) == 0;
    bool extra = r->ph == 'M' && r->name.len == 9 && memcmp(r->name.ptr, "ExtraInfo", 9) == 0;
    if (!mem && !extra && !stats)
        return;
    struct json_slot s[PD_END];
    char msg[JSON_MSG_MAX];
    if (json_scan_object(line, len, &d->paddle, s, a, msg) != JSON_OK)
        return; /* the first scan took the line: only the arena can fail here */
    if (extra) {
        r->util_cpu = arg_fraction(&s[PD_PROCESS_CPU]);
        r->util_sys_cpu = arg_fraction(&s[PD_SYSTEM_CPU]);
        return;
    }
    /* Paddle's names first, then Kineto's (and the collector's). */
    r->mem_allocated = link_id(&s[PD_CUR_ALLOCATED]);
    if (r->mem_allocated < 0)
        r->mem_allocated = link_id(&s[PD_TOTAL_ALLOCATED]);
    r->mem_reserved = link_id(&s[PD_CUR_RESERVED]);
    if (r->mem_reserved < 0)
        r->mem_reserved = link_id(&s[PD_TOTAL_RESERVED]);
    r->mem_device_type = link_id(&s[PD_DEVICE_TYPE]);
    r->mem_device_id = arg_int(&s[PD_DEVICE_ID], INT64_MIN);
    if (stats) {
        r->mem_peak_allocated = link_id(&s[PD_STATS_PEAK_ALLOCATED]);
        r->mem_peak_reserved = link_id(&s[PD_STATS_PEAK_RESERVED]);
        r->step = link_id(&s[PD_STEP]);
        return;
    }
    r->mem_bytes = arg_int(&s[PD_INCREASE], INT64_MIN);
    if (r->mem_bytes == INT64_MIN)
        r->mem_bytes = arg_int(&s[PD_KINETO_BYTES], INT64_MIN);
    r->mem_peak_allocated = link_id(&s[PD_PEAK_ALLOCATED]);
    r->mem_peak_reserved = link_id(&s[PD_PEAK_RESERVED]);
    if (s[PD_PLACE].type == JSON_STRING)
        r->mem_place = (struct record_text){s[PD_PLACE].p, s[PD_PLACE].n};
    if (s[PD_OWNER].type == JSON_STRING)
        r->mem_owner = (struct record_text){s[PD_OWNER].p, s[PD_OWNER].n};
    int64_t ns;
    if (s[PD_OWNER_TS].type == JSON_NUMBER && num_us_to_ns(s[PD_OWNER_TS].p, s[PD_OWNER_TS].n, &ns) == 0)
        r->mem_owner_ns = ns;
}

static bool build_step(struct ctx *c, const struct json_slot *s, struct record *r)
{
    r->kind = RECORD_STEP;
    int64_t end;
    if (!get_count(c, &s[F_STEP], "step", false, &r->step) ||
        !get_us(c, &s[F_BEGIN_US], "begin_us", false, 0, &r->ts_ns) ||
        !get_us(c, &s[F_END_US], "end_us", false, 0, &end) ||
        !get_count(c, &s[F_SAMPLES], "samples", true, &r->samples))
        return false;
    if (end < r->ts_ns)
        return fail(c, DECODE_INVALID, "\"end_us\" must be >= \"begin_us\"");
    if (r->ts_ns < 0 && end > INT64_MAX + r->ts_ns)
        return fail(c, DECODE_INVALID, "\"end_us\" - \"begin_us\" is out of range");
    r->dur_ns = end - r->ts_ns;
    const struct json_slot *ph = &s[F_PHASES];
    if (ph->type != JSON_ABSENT) {
        if (ph->type != JSON_OBJECT || ph->bad)
            return fail(c, DECODE_INVALID,
                        "\"phases\" must be an object of durations >= 0");
        r->phases.ptr = ph->p;
        r->phases.len = ph->n;
        phases_from_slots(s, &r->phase_ns);
    }
    return true;
}

static bool build_queue(struct ctx *c, const struct json_slot *s, struct record *r)
{
    r->kind = RECORD_QUEUE;
    return need_string(c, &s[F_NAME], "name", &r->name) &&
           get_count(c, &s[F_SIZE], "size", false, &r->size) &&
           get_count(c, &s[F_CAPACITY], "capacity", true, &r->capacity) &&
           get_count(c, &s[F_STEP], "step", true, &r->step) &&
           get_us(c, &s[F_TS_US], "ts_us", true, INT64_MIN, &r->ts_ns);
}

static bool build_pipeline(struct ctx *c, const struct json_slot *s, struct record *r)
{
    r->kind = RECORD_PIPELINE;
    if (s[F_OPS].type != JSON_ARRAY)
        return fail(c, DECODE_INVALID, "\"ops\" must be an array");
    return true;
}

static bool build_host(struct ctx *c, const struct json_slot *s, struct record *r)
{
    r->kind = RECORD_HOST;
    return get_us(c, &s[F_TS_US], "ts_us", true, INT64_MIN, &r->ts_ns) &&
           get_percent(c, &s[F_CPU_PERCENT], "cpu_percent", &r->cpu_percent) &&
           get_percent(c, &s[F_SYS_CPU_PERCENT], "sys_cpu_percent", &r->sys_cpu_percent) &&
           get_count(c, &s[F_RSS_BYTES], "rss_bytes", true, &r->rss_bytes);
}

/* {"type":"capture"}: a client's report on a capture (docs/PROTOCOL.md section 6): the capture's
 * id in step, its state in name, the optional reason in cat, the optional step it started
 * recording at in samples (-1 if absent). */
static bool build_capture(struct ctx *c, const struct json_slot *s, struct record *r)
{
    if (!get_count(c, &s[F_ID], "id", false, &r->step) ||
        !get_count(c, &s[F_STEP], "step", true, &r->samples))
        return false;
    const struct json_slot *st = &s[F_STATE];
    if (st->type != JSON_STRING ||
        !(TEXT_IS(st, "armed") || TEXT_IS(st, "recording") || TEXT_IS(st, "done") ||
          TEXT_IS(st, "failed")))
        return fail(c, DECODE_INVALID,
                    "\"state\" must be \"armed\", \"recording\", \"done\" or \"failed\"");
    r->name = (struct record_text){st->p, st->n};
    const struct json_slot *why = &s[F_REASON];
    if (why->type == JSON_STRING)
        r->cat = (struct record_text){why->p, why->n};
    else if (why->type != JSON_ABSENT && why->type != JSON_NULL)
        return fail(c, DECODE_INVALID, "\"reason\" must be a string");
    return true;
}

static int record_from_line(struct decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record *ret, char *msg)
{
    struct ctx c = {a, msg, DECODE_MALFORMED};
    struct json_slot s[P_END]; /* the scanner fills every one */
    int r = json_scan_object(line, len, &d->record, s, a, msg);
    if (r != JSON_OK)
        return r == JSON_NOSPACE ? DECODE_NOSPACE : DECODE_MALFORMED;

    /* Field by field: clearing *ret first compiles to a slow "rep stos" (gcc 12, even for a copy
     * of a static template). A field added to struct record must be added here too. */
    static const struct record_text none = {NULL, 0};
    ret->kind = RECORD_TRACE;
    ret->seq = 0;
    ret->raw = line;
    ret->raw_len = len;
    ret->ph = 0;
    ret->ts_ns = INT64_MIN;
    ret->dur_ns = 0;
    ret->name = none;
    ret->cat = none;
    ret->pid = none;
    ret->tid = none;
    ret->phases = none;
    ret->phase_ns = (struct record_phases){-1, -1, -1};
    ret->step = -1;
    ret->samples = -1;
    ret->size = 0;
    ret->capacity = -1;
    ret->cpu_percent = -1;
    ret->sys_cpu_percent = -1;
    ret->rss_bytes = -1;
    ret->correlation = -1;
    ret->external_id = -1;
    ret->dispatch_ns = -1;
    ret->exec_ns = -1;
    ret->mem_bytes = INT64_MIN;
    ret->mem_peak_allocated = -1;
    ret->mem_peak_reserved = -1;
    ret->mem_place = none;
    ret->mem_owner = none;
    ret->mem_owner_ns = INT64_MIN;
    ret->mem_allocated = -1;
    ret->mem_reserved = -1;
    ret->mem_device_type = -1;
    ret->mem_device_id = INT64_MIN;
    ret->util_cpu = -1;
    ret->util_sys_cpu = -1;
    bool ok;
    if (s[F_PH].type != JSON_ABSENT) {
        ok = build_trace(&c, s, ret);
        if (ok) {
            trace_links(s, ret);
            paddle_args(d, line, len, a, ret);
        }
    } else if (s[F_TYPE].type == JSON_STRING) {
        const struct json_slot *t = &s[F_TYPE];
        if (TEXT_IS(t, "step"))
            ok = build_step(&c, s, ret);
        else if (TEXT_IS(t, "queue"))
            ok = build_queue(&c, s, ret);
        else if (TEXT_IS(t, "pipeline"))
            ok = build_pipeline(&c, s, ret);
        else if (TEXT_IS(t, "host"))
            ok = build_host(&c, s, ret);
        else if (TEXT_IS(t, "bye"))
            return DECODE_BYE;
        else if (TEXT_IS(t, "capture"))
            return build_capture(&c, s, ret) ? DECODE_CAPTURE : c.status;
        else
            ok = fail(&c, DECODE_UNKNOWN, "unknown \"type\"");
    } else {
        ok = fail(&c, DECODE_UNKNOWN, "neither \"ph\" nor a known \"type\"");
    }
    return ok ? DECODE_OK : c.status;
}

/* A hello string: absent gives "", present must be a string of at most RECORD_NAME_MAX bytes,
 * copied NUL-terminated into the arena. */
static bool hello_string(struct ctx *c, const struct json_slot *s, const char *key,
                         bool required, bool no_controls, const char **ret)
{
    if (s->type == JSON_ABSENT) {
        if (required)
            return fail(c, DECODE_BAD_HELLO, "missing \"%s\"", key);
        *ret = "";
        return true;
    }
    if (s->type != JSON_STRING)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" must be a string", key);
    if (s->n > RECORD_NAME_MAX)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" is longer than %d bytes", key,
                    RECORD_NAME_MAX);
    for (size_t i = 0; i < s->n; i++) {
        unsigned char ch = (unsigned char)s->p[i];
        if (ch == 0 || (no_controls && (ch < 0x20 || ch == 0x7f)))
            return fail(c, DECODE_BAD_HELLO, "\"%s\" contains a control character", key);
    }
    char *dst = arena_put(c->a, s->p, s->n, true);
    if (!dst)
        return fail(c, DECODE_NOSPACE, "arena full");
    *ret = dst;
    return true;
}

static bool hello_int(struct ctx *c, const struct json_slot *s, const char *key, int64_t min,
                      int64_t *ret)
{
    if (s->type == JSON_ABSENT)
        return true;
    int64_t v;
    if (s->type != JSON_NUMBER || num_parse_i64(s->p, s->n, &v) < 0 || v < min)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" must be an integer >= %lld", key,
                    (long long)min);
    *ret = v;
    return true;
}

/* Sets the six env point strings of *h from the hello's "env" slot: each is "" unless env is an
 * object whose member is a string of 1..RECORD_NAME_MAX bytes without NUL, copied into the arena.
 * Anything else is ignored (env was free-form before the daemon read it). Returns false only
 * when the arena is full. */
static bool hello_env(struct decoder *d, struct ctx *c, const struct json_slot *env,
                      struct record_hello *h)
{
    const char **dst[E_COUNT] = {
        [E_STEPSCOPE_FP] = &h->stepscope_fp_point, [E_STEPSCOPE_BP] = &h->stepscope_bp_point,
        [E_PROFILING_FP] = &h->profiling_fp_start, [E_PROFILING_BP] = &h->profiling_bp_end,
        [E_FP_POINT] = &h->fp_point_env,           [E_BP_POINT] = &h->bp_point_env,
    };
    for (size_t i = 0; i < E_COUNT; i++)
        *dst[i] = "";
    if (env->type != JSON_OBJECT)
        return true;
    /* The object's raw text has no padding after it: the scan takes a copy (a hello is one line
     * per connection, so the allocation is off the record path). */
    struct json_slot s[E_COUNT];
    char msg[JSON_MSG_MAX];
    size_t mark = c->a->used;
    char *copy = NULL;
    int r = json_scan_copy(env->p, env->n, &d->env, s, c->a, msg, &copy);
    if (!copy)
        return fail(c, DECODE_NOSPACE, "out of memory");
    bool ok = true;
    if (r == JSON_OK) {
        for (size_t i = 0; i < E_COUNT && ok; i++) {
            if (s[i].type != JSON_STRING || s[i].n == 0 || s[i].n > RECORD_NAME_MAX ||
                memchr(s[i].p, '\0', s[i].n))
                continue;
            char *v = arena_put(c->a, s[i].p, s[i].n, true);
            if (!v)
                ok = fail(c, DECODE_NOSPACE, "arena full");
            else
                *dst[i] = v;
        }
    } else {
        c->a->used = mark;
        if (r == JSON_NOSPACE)
            ok = fail(c, DECODE_NOSPACE, "arena full");
    }
    free(copy);
    return ok;
}

static int hello_from_line(struct decoder *d, const char *line, size_t len,
                        struct json_arena *a, struct record_hello *ret, char *msg)
{
    struct ctx c = {a, msg, DECODE_BAD_HELLO};
    struct json_slot s[H_COUNT]; /* the scanner fills every one */
    int r = json_scan_object(line, len, &d->hello, s, a, msg);
    if (r != JSON_OK)
        return r == JSON_NOSPACE ? DECODE_NOSPACE : DECODE_BAD_HELLO;
    struct record_hello h = {0};
    h.raw = line;
    h.raw_len = len;
    h.rank = 0;
    h.world_size = 1;
    h.pid = -1;
    if (s[H_HELLO].type != JSON_STRING || !TEXT_IS(&s[H_HELLO], "stepscope/1")) {
        fail(&c, DECODE_BAD_HELLO, "\"hello\" must be \"stepscope/1\"");
        return c.status;
    }
    if (s[H_PROBE].type == JSON_BOOL && TEXT_IS(&s[H_PROBE], "true")) {
        /* Asks which daemon this is (docs/PROTOCOL.md section 1): no session, nothing else read. */
        h.probe = true;
        h.job = h.run = h.stream = h.host = h.framework = h.framework_version = h.clock = "";
        h.stepscope_fp_point = h.stepscope_bp_point = h.profiling_fp_start = "";
        h.profiling_bp_end = h.fp_point_env = h.bp_point_env = "";
        *ret = h;
        return DECODE_OK;
    }
    int64_t seq = -1;
    bool ok = hello_string(&c, &s[H_JOB], "job", true, true, &h.job) &&
              hello_string(&c, &s[H_RUN], "run", false, false, &h.run) &&
              hello_string(&c, &s[H_STREAM], "stream", false, false, &h.stream) &&
              hello_string(&c, &s[H_HOST], "host", false, false, &h.host) &&
              hello_string(&c, &s[H_FRAMEWORK], "framework", false, false, &h.framework) &&
              hello_string(&c, &s[H_FRAMEWORK_VERSION], "framework_version", false, false,
                           &h.framework_version) &&
              hello_string(&c, &s[H_CLOCK], "clock", false, false, &h.clock) &&
              hello_int(&c, &s[H_RANK], "rank", 0, &h.rank) &&
              hello_int(&c, &s[H_WORLD_SIZE], "world_size", 1, &h.world_size) &&
              hello_int(&c, &s[H_PID], "pid", 0, &h.pid) &&
              hello_int(&c, &s[H_SEQ], "seq", 0, &seq) && hello_env(d, &c, &s[H_ENV], &h);
    if (!ok)
        return c.status;
    if (h.job[0] == '\0') {
        fail(&c, DECODE_BAD_HELLO, "\"job\" must not be empty");
        return c.status;
    }
    if (h.world_size <= h.rank) {
        fail(&c, DECODE_BAD_HELLO, "\"world_size\" must be > \"rank\"");
        return c.status;
    }
    /* Anything but an array naming "capture" only means the client cannot capture. */
    h.can_capture = s[H_CAPABILITIES].type == JSON_ARRAY &&
                    json_array_has_string(s[H_CAPABILITIES].p, s[H_CAPABILITIES].n, "capture");
    /* Any other "source" (or none) is a live sender; the member is never an error. */
    h.imported = s[H_SOURCE].type == JSON_STRING && TEXT_IS(&s[H_SOURCE], "import");
    if (seq >= 0) {
        h.has_seq = true;
        h.seq = (uint64_t)seq;
    }
    *ret = h;
    return DECODE_OK;
}

struct decoder *decoder_new(size_t max_line)
{
    (void)max_line; /* the scanner needs no buffer of its own */
    struct decoder *d = malloc(sizeof *d);
    if (!d)
        return NULL;
    json_keys_init(&d->args, args_keys, sizeof args_keys / sizeof args_keys[0]);
    json_keys_init(&d->record, record_keys, sizeof record_keys / sizeof record_keys[0]);
    json_keys_sub(&d->record, F_ARGS, &d->args);
    json_keys_init(&d->phases, phase_keys, sizeof phase_keys / sizeof phase_keys[0]);
    json_keys_sub(&d->record, F_PHASES, &d->phases);
    json_keys_init(&d->hello, hello_keys, sizeof hello_keys / sizeof hello_keys[0]);
    json_keys_init(&d->env, env_keys, sizeof env_keys / sizeof env_keys[0]);
    json_keys_init(&d->paddle_args, paddle_args_keys,
                   sizeof paddle_args_keys / sizeof paddle_args_keys[0]);
    json_keys_init(&d->paddle, paddle_keys, sizeof paddle_keys / sizeof paddle_keys[0]);
    json_keys_sub(&d->paddle, PD_ARGS, &d->paddle_args);
    return d;
}

void decoder_free(struct decoder *d)
{
    free(d);
}

int decode_record(struct decoder *d, const char *line, size_t len,
                          struct json_arena *a, struct record *ret, char *msg)
{
    size_t mark = a->used;
    int r = record_from_line(d, line, len, a, ret, msg);
    if (r != DECODE_OK && r != DECODE_CAPTURE)
        a->used = mark;
    return r;
}

int decode_hello(struct decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record_hello *ret, char *msg)
{
    size_t mark = a->used;
    int r = hello_from_line(d, line, len, a, ret, msg);
    if (r != DECODE_OK)
        a->used = mark;
    return r;
}

const char *decode_code(int result)
{
    switch (result) {
    case DECODE_MALFORMED:
        return "malformed";
    case DECODE_UNKNOWN:
        return "unknown";
    case DECODE_INVALID:
        return "invalid";
    case DECODE_BAD_HELLO:
        return "bad_hello";
    default:
        return "internal";
    }
}

void decode_phases(const char *text, size_t len, struct record_phases *ret)
{
    *ret = (struct record_phases){-1, -1, -1};
    if (len == 0)
        return;
    struct json_keys keys;
    json_keys_init(&keys, phase_keys, sizeof phase_keys / sizeof phase_keys[0]);
    struct json_slot s[P_END];
    char msg[JSON_MSG_MAX];
    char tiny[16]; /* a member's value is a number: nothing to unescape */
    struct json_arena a = {tiny, 0, sizeof tiny};
    char *copy = NULL;
    if (json_scan_copy(text, len, &keys, s, &a, msg, &copy) == JSON_OK)
        phases_from_slots(s, ret);
    free(copy);
}

/* ---- stored lines (no padding after them) ---- */

struct line_decoder {
    struct decoder *dec;
    size_t max_line;
    char *buf;               /* max_line + 1 + JSON_PADDING bytes */
    struct json_arena arena; /* max_line + 16 bytes: enough for any line */
};

struct line_decoder *line_decoder_new(size_t max_line)
{
    if (max_line == 0)
        max_line = DECODE_LINE_MAX_DEFAULT;
    struct line_decoder *ld = calloc(1, sizeof *ld);
    if (!ld)
        return NULL;
    ld->max_line = max_line;
    ld->dec = decoder_new(max_line);
    ld->buf = malloc(max_line + 1 + JSON_PADDING);
    ld->arena.cap = max_line + 16;
    ld->arena.data = malloc(ld->arena.cap);
    if (!ld->dec || !ld->buf || !ld->arena.data) {
        line_decoder_free(ld);
        return NULL;
    }
    return ld;
}

void line_decoder_free(struct line_decoder *ld)
{
    if (!ld)
        return;
    decoder_free(ld->dec);
    free(ld->buf);
    free(ld->arena.data);
    free(ld);
}

/* Copies line into ld's buffer as lbuf would leave it (NUL, then padding). */
static int line_place(struct line_decoder *ld, const char *line, size_t len)
{
    if (len > ld->max_line)
        return -EMSGSIZE;
    memcpy(ld->buf, line, len);
    memset(ld->buf + len, 0, 1 + JSON_PADDING);
    ld->arena.used = 0;
    return 0;
}

int decode_hello_line(struct line_decoder *ld, const char *line, size_t len,
                             struct record_hello *ret)
{
    int r = line_place(ld, line, len);
    if (r < 0)
        return r;
    char msg[DECODE_MSG_MAX];
    if (decode_hello(ld->dec, ld->buf, len, &ld->arena, ret, msg) != DECODE_OK ||
        ret->probe)
        return -EINVAL;
    return 0;
}

int decode_line(struct line_decoder *ld, const char *line, size_t len,
                       struct record *ret)
{
    int r = line_place(ld, line, len);
    if (r < 0)
        return r;
    char msg[DECODE_MSG_MAX];
    r = decode_record(ld->dec, ld->buf, len, &ld->arena, ret, msg);
    if (r != DECODE_OK)
        return -EINVAL;
    ret->seq = 0;
    return 0;
}
