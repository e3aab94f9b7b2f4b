/* SPDX-License-Identifier: MIT */
/*
 * The test oracle of tests/fuzz/fuzz_jscan.c: the daemon's previous line decoder, simdjson 3.0.1
 * On-Demand behind the extern "C" functions of oracle_simdjson.h, kept as it was when it was
 * daemon/ingest/decode.cc (only its names changed), so that the hand-written scanner that
 * replaced it can be checked against it input by input. Never linked into the daemon.
 *
 * Shape: one forward pass over the top-level object. Each key is classified by length and bytes
 * (no unescaping unless the raw key holds a backslash); the first occurrence of a known key fills
 * a slot with the value's raw text (numbers: the exact token, converted later by core/num so that
 * microseconds become nanoseconds without a double; strings: the bytes between the quotes, or an
 * unescaped copy in the arena when they hold escapes). Every other value is walked and validated
 * too, because trace events are kept verbatim and must stay valid JSON for the exporters. Only
 * after the pass, when "ph" or "type" is known, are the slots checked against that kind's rules.
 * Nothing here allocates per line: the parser is reused and strings go to the caller's arena.
 */
#include "oracle_simdjson.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <new>

#include <simdjson.h>

extern "C" {
#include "../../lib/lbuf.h"
#include "../../lib/num.h"
}

namespace od = simdjson::ondemand;

/* core/log.h is C only (a function and a struct share a name), so say printf here. */
#define DECODE_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

static_assert(LBUF_PADDING + 1 >= simdjson::SIMDJSON_PADDING,
              "lbuf must leave simdjson's padding after each line");

struct oracle_decoder {
    od::parser parser;
    explicit oracle_decoder(size_t max_line) : parser(max_line + simdjson::SIMDJSON_PADDING) {}
};

namespace {

enum field_id {
    F_NONE = -1,
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
    F_ARGS_CORRELATION, /* args.correlation: filled by walk_object() through the args slot */
    F_ARGS_EXTERNAL_ID, /* args["External id"], likewise */
    F_ID,
    F_STATE,
    F_REASON,
    F_PHASE_DATALOADER, /* phases.dataloader: filled by walk_object() through the phases slot */
    F_PHASE_FORWARD,    /* phases.forward, likewise */
    F_PHASE_BACKWARD,   /* phases.backward, likewise */
    F_RECORD_COUNT,
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
    H_COUNT,
};

/* What the pass learnt about one known key. */
struct slot {
    bool present;        /* the key was seen (its first occurrence filled the slot) */
    od::json_type type;  /* valid if present */
    const char *p;       /* string: its unescaped bytes; number: its token; object: its raw text */
    size_t n;
    bool bad;            /* phases: some value is not a number >= 0 */
    double d;            /* F_CPU_PERCENT, F_SYS_CPU_PERCENT: the number */
};

struct ctx {
    od::document *doc;
    struct json_arena *a;
    char *msg;
    int status; /* why the last helper returned false */
    bool record = false; /* scanning a record line: the slots are record_key()'s */
};

DECODE_PRINTF(3, 4) bool fail(ctx &c, int status, const char *fmt, ...)
{
    c.status = status;
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(c.msg, DECODE_MSG_MAX, fmt, ap);
    va_end(ap);
    return false;
}

bool fail_json(ctx &c, simdjson::error_code e)
{
    return fail(c, DECODE_MALFORMED, "not valid JSON: %s", simdjson::error_message(e));
}

inline bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* A raw token without the blanks simdjson leaves after it. */
inline std::string_view trim(std::string_view s)
{
    size_t n = s.size();
    while (n > 0 && is_blank(s[n - 1]))
        n--;
    return s.substr(0, n);
}

inline bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* The JSON number grammar, exactly: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
bool is_json_number(std::string_view s)
{
    size_t i = 0, n = s.size();
    if (i < n && s[i] == '-')
        i++;
    if (i >= n || !is_digit(s[i]))
        return false;
    if (s[i] == '0') {
        i++;
    } else {
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !is_digit(s[i]))
            return false;
        while (i < n && is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !is_digit(s[i]))
            return false;
        while (i < n && is_digit(s[i]))
            i++;
    }
    return i == n;
}

char *arena_put(struct json_arena *a, const char *p, size_t n, bool nul)
{
    size_t need = n + (nul ? 1 : 0);
    if (a->cap - a->used < need)
        return nullptr;
    char *dst = a->data + a->used;
    if (n > 0)
        memcpy(dst, p, n);
    if (nul)
        dst[n] = '\0';
    a->used += need;
    return dst;
}

/* The text of a string value v whose raw token is raw: the bytes between its quotes when it has
 * no escapes (they were UTF-8-checked by simdjson's first stage), else an unescaped arena copy. */
bool take_string(ctx &c, od::value &v, std::string_view raw, const char **ret_p, size_t *ret_n)
{
    raw = trim(raw);
    if (raw.size() < 2)
        return fail(c, DECODE_MALFORMED, "not valid JSON: bad string");
    const char *p = raw.data() + 1;
    size_t n = raw.size() - 2;
    if (!memchr(p, '\\', n)) {
        *ret_p = p;
        *ret_n = n;
        return true;
    }
    std::string_view u;
    simdjson::error_code e = v.get_string().get(u);
    if (e)
        return fail_json(c, e);
    char *dst = arena_put(c.a, u.data(), u.size(), false);
    if (!dst)
        return fail(c, DECODE_NOSPACE, "arena full");
    *ret_p = dst;
    *ret_n = u.size();
    return true;
}

/* A key's bytes: straight from the input when it has no escape (the common case, no copy), else
 * unescaped (and so validated) by simdjson into its own buffer, valid until the next unescape. */
bool key_text(ctx &c, od::field &f, std::string_view *ret)
{
    const char *p = f.key().raw();
    const char *q = p;
    while (*q != '"' && *q != '\\')
        q++;
    if (*q == '"') {
        *ret = std::string_view(p, (size_t)(q - p));
        return true;
    }
    simdjson::error_code e = f.unescaped_key().get(*ret);
    if (e)
        return fail_json(c, e);
    return true;
}

bool walk(ctx &c, od::value &v, int depth);

/* links (NULL unless walking a trace event's args): the slots of "correlation" and
 * "External id", in that order, each taking its key's first occurrence when a number.
 * phase_vals (NULL unless walking a step's phases): those of "dataloader", "forward" and
 * "backward", each taking its key's first occurrence when a number >= 0. */
bool walk_object(ctx &c, od::value &v, int depth, slot *phases, slot *links = nullptr,
                 slot *phase_vals = nullptr)
{
    if (depth >= JSON_DEPTH_MAX)
        return fail(c, DECODE_MALFORMED, "nested deeper than %d", JSON_DEPTH_MAX);
    od::object o;
    simdjson::error_code e = v.get_object().get(o);
    if (e)
        return fail_json(c, e);
    for (auto fr : o) {
        od::field f;
        e = std::move(fr).get(f);
        if (e)
            return fail_json(c, e);
        std::string_view k;
        if (!key_text(c, f, &k))
            return false;
        od::value fv = f.value();
        if (phases) {
            /* A step's phases: name -> duration in microseconds, never negative. */
            od::json_type t;
            e = fv.type().get(t);
            if (e)
                return fail_json(c, e);
            if (t != od::json_type::number || fv.raw_json_token()[0] == '-')
                phases->bad = true;
        }
        if (phase_vals && (k == "dataloader" || k == "forward" || k == "backward")) {
            slot &l = phase_vals[k == "dataloader" ? 0 : k == "forward" ? 1 : 2];
            od::json_type t;
            e = fv.type().get(t);
            if (e)
                return fail_json(c, e);
            std::string_view raw = trim(fv.raw_json_token());
            if (!l.present && t == od::json_type::number && raw[0] != '-') {
                l.p = raw.data();
                l.n = raw.size();
                l.type = t;
            }
            l.present = true;
        }
        if (links && (k == "correlation" || k == "External id")) {
            slot &l = links[k == "correlation" ? 0 : 1];
            od::json_type t;
            e = fv.type().get(t);
            if (e)
                return fail_json(c, e);
            if (!l.present && t == od::json_type::number) {
                std::string_view raw = trim(fv.raw_json_token());
                l.p = raw.data();
                l.n = raw.size();
                l.type = t;
            }
            l.present = true;
        }
        if (!walk(c, fv, depth + 1))
            return false;
    }
    return true;
}

bool walk_array(ctx &c, od::value &v, int depth)
{
    if (depth >= JSON_DEPTH_MAX)
        return fail(c, DECODE_MALFORMED, "nested deeper than %d", JSON_DEPTH_MAX);
    od::array arr;
    simdjson::error_code e = v.get_array().get(arr);
    if (e)
        return fail_json(c, e);
    for (auto vr : arr) {
        od::value ev;
        e = std::move(vr).get(ev);
        if (e)
            return fail_json(c, e);
        if (!walk(c, ev, depth + 1))
            return false;
    }
    return true;
}

/* Validates a scalar from its raw token; t is its type as simdjson guessed from the first byte. */
bool check_scalar(ctx &c, od::value &v, od::json_type t, std::string_view raw)
{
    raw = trim(raw);
    switch (t) {
    case od::json_type::number:
        if (!is_json_number(raw))
            return fail(c, DECODE_MALFORMED, "not valid JSON: bad number");
        return true;
    case od::json_type::string: {
        if (raw.size() < 2 || !memchr(raw.data() + 1, '\\', raw.size() - 2))
            return true;
        std::string_view u;
        simdjson::error_code e = v.get_string().get(u);
        if (e)
            return fail_json(c, e);
        return true;
    }
    case od::json_type::boolean:
        if (raw != "true" && raw != "false")
            return fail(c, DECODE_MALFORMED, "not valid JSON: bad literal");
        return true;
    case od::json_type::null:
        if (raw != "null")
            return fail(c, DECODE_MALFORMED, "not valid JSON: bad literal");
        return true;
    default:
        return fail(c, DECODE_MALFORMED, "not valid JSON");
    }
}

bool walk(ctx &c, od::value &v, int depth)
{
    od::json_type t;
    simdjson::error_code e = v.type().get(t);
    if (e)
        return fail_json(c, e);
    if (t == od::json_type::object)
        return walk_object(c, v, depth, nullptr);
    if (t == od::json_type::array)
        return walk_array(c, v, depth);
    return check_scalar(c, v, t, v.raw_json_token());
}

inline bool key_is(std::string_view k, const char *lit, size_t n)
{
    return memcmp(k.data(), lit, n) == 0;
}
#define KEY_IS(k, lit) key_is((k), (lit), sizeof(lit) - 1)

int record_key(std::string_view k)
{
    switch (k.size()) {
    case 2:
        if (KEY_IS(k, "ph"))
            return F_PH;
        if (KEY_IS(k, "ts"))
            return F_TS;
        if (KEY_IS(k, "id"))
            return F_ID;
        break;
    case 3:
        if (KEY_IS(k, "pid"))
            return F_PID;
        if (KEY_IS(k, "tid"))
            return F_TID;
        if (KEY_IS(k, "cat"))
            return F_CAT;
        if (KEY_IS(k, "dur"))
            return F_DUR;
        if (KEY_IS(k, "ops"))
            return F_OPS;
        break;
    case 4:
        if (KEY_IS(k, "args"))
            return F_ARGS;
        if (KEY_IS(k, "name"))
            return F_NAME;
        if (KEY_IS(k, "type"))
            return F_TYPE;
        if (KEY_IS(k, "step"))
            return F_STEP;
        if (KEY_IS(k, "size"))
            return F_SIZE;
        break;
    case 5:
        if (KEY_IS(k, "ts_us"))
            return F_TS_US;
        if (KEY_IS(k, "state"))
            return F_STATE;
        break;
    case 6:
        if (KEY_IS(k, "end_us"))
            return F_END_US;
        if (KEY_IS(k, "phases"))
            return F_PHASES;
        if (KEY_IS(k, "reason"))
            return F_REASON;
        break;
    case 7:
        if (KEY_IS(k, "samples"))
            return F_SAMPLES;
        break;
    case 8:
        if (KEY_IS(k, "begin_us"))
            return F_BEGIN_US;
        if (KEY_IS(k, "capacity"))
            return F_CAPACITY;
        break;
    case 9:
        if (KEY_IS(k, "rss_bytes"))
            return F_RSS_BYTES;
        break;
    case 11:
        if (KEY_IS(k, "cpu_percent"))
            return F_CPU_PERCENT;
        break;
    case 15:
        if (KEY_IS(k, "sys_cpu_percent"))
            return F_SYS_CPU_PERCENT;
        break;
    default:
        break;
    }
    return F_NONE;
}

int hello_key(std::string_view k)
{
    static const struct {
        const char *name;
        int id;
    } keys[] = {
        {"hello", H_HELLO},   {"job", H_JOB},       {"rank", H_RANK},
        {"world_size", H_WORLD_SIZE}, {"host", H_HOST}, {"pid", H_PID},
        {"framework", H_FRAMEWORK}, {"framework_version", H_FRAMEWORK_VERSION},
        {"run", H_RUN},       {"clock", H_CLOCK},   {"stream", H_STREAM},
        {"seq", H_SEQ},
    };
    for (const auto &key : keys) {
        if (k == key.name)
            return key.id;
    }
    return F_NONE;
}

/* Fills s from v, the value of a known key, and validates v. */
bool fill_slot(ctx &c, od::value &v, slot &s, int id, int depth)
{
    od::json_type t;
    simdjson::error_code e = v.type().get(t);
    if (e)
        return fail_json(c, e);
    s.present = true;
    s.type = t;
    switch (t) {
    case od::json_type::string:
        return take_string(c, v, v.raw_json_token(), &s.p, &s.n);
    case od::json_type::number: {
        std::string_view raw = trim(v.raw_json_token());
        if (!is_json_number(raw))
            return fail(c, DECODE_MALFORMED, "not valid JSON: bad number");
        s.p = raw.data();
        s.n = raw.size();
        if (id == F_CPU_PERCENT || id == F_SYS_CPU_PERCENT) {
            e = v.get_double().get(s.d);
            if (e)
                return fail_json(c, e);
        }
        return true;
    }
    case od::json_type::object: {
        /* The link slots follow the args slot in the caller's slot array. */
        if (id == F_ARGS)
            return walk_object(c, v, depth, nullptr, &s + 1);
        if (id != F_PHASES)
            return walk_object(c, v, depth, nullptr);
        /* Keep the object's raw text: from its '{' to the '}' before the next token. */
        const char *start = v.raw_json_token().data();
        /* The phase slots are the record slot array's (a hello's "env" shares the id). */
        if (!walk_object(c, v, depth, &s, nullptr,
                         c.record ? &s - F_PHASES + F_PHASE_DATALOADER : nullptr))
            return false;
        const char *end;
        e = c.doc->current_location().get(end);
        if (e)
            return fail_json(c, e);
        while (end > start && end[-1] != '}')
            end--;
        s.p = start;
        s.n = (size_t)(end - start);
        return true;
    }
    case od::json_type::array:
        return walk_array(c, v, depth);
    default:
        return check_scalar(c, v, t, v.raw_json_token());
    }
}

/* Iterates the top-level object of the line, filling slots[0, n_slots) for the keys classify()
 * knows and validating everything. */
template <typename Classify>
bool scan_line(ctx &c, od::parser &parser, const char *line, size_t len, slot *slots,
               Classify classify)
{
    od::document doc;
    simdjson::error_code e = parser.iterate(line, len, len + 1 + LBUF_PADDING).get(doc);
    if (e)
        return fail_json(c, e);
    c.doc = &doc;
    od::object o;
    e = doc.get_object().get(o);
    if (e) {
        if (e == simdjson::INCORRECT_TYPE)
            return fail(c, DECODE_MALFORMED, "not a JSON object");
        return fail_json(c, e);
    }
    for (auto fr : o) {
        od::field f;
        e = std::move(fr).get(f);
        if (e)
            return fail_json(c, e);
        std::string_view k;
        if (!key_text(c, f, &k))
            return false;
        od::value v = f.value();
        int id = classify(k);
        bool ok = (id != F_NONE && !slots[id].present) ? fill_slot(c, v, slots[id], id, 1)
                                                     : walk(c, v, 1);
        if (!ok)
            return false;
    }
    /* A second document, or anything else, after the object. */
    const char *rest;
    if (!doc.current_location().get(rest))
        return fail(c, DECODE_MALFORMED, "not valid JSON: trailing content");
    return true;
}

/* Slot readers: each returns false (with the reason) if the slot does not hold what it should. */

bool need_string(ctx &c, const slot &s, const char *key, struct record_text *ret)
{
    if (!s.present || s.type != od::json_type::string)
        return fail(c, DECODE_INVALID, "\"%s\" must be a string", key);
    ret->ptr = s.p;
    ret->len = s.n;
    return true;
}

/* Microseconds to ns; absent gives absent_value if optional, else an error. */
/* The time range: core/num.h. */
#define TIME_MAX_NS NUM_TIME_MAX_NS
#define TIME_MIN_NS NUM_TIME_MIN_NS
#define DUR_MAX_NS NUM_DUR_MAX_NS

bool get_us(ctx &c, const slot &s, const char *key, bool optional, int64_t absent_value,
            int64_t *ret)
{
    if (!s.present) {
        if (!optional)
            return fail(c, DECODE_INVALID, "missing \"%s\"", key);
        *ret = absent_value;
        return true;
    }
    if (s.type != od::json_type::number)
        return fail(c, DECODE_INVALID, "\"%s\" must be a number", key);
    int r = num_us_to_ns(s.p, s.n, ret);
    if (r < 0)
        return fail(c, DECODE_INVALID, "\"%s\" is out of range", key);
    if (*ret >= TIME_MAX_NS || *ret <= TIME_MIN_NS)
        return fail(c, DECODE_INVALID, "\"%s\" is out of range (-2^60 < t < 2^62 ns)", key);
    return true;
}

/* An integer >= 0; absent gives -1 if optional, else an error. */
bool get_count(ctx &c, const slot &s, const char *key, bool optional, int64_t *ret)
{
    if (!s.present) {
        if (!optional)
            return fail(c, DECODE_INVALID, "missing \"%s\"", key);
        *ret = -1;
        return true;
    }
    int64_t v;
    if (s.type != od::json_type::number || num_parse_i64(s.p, s.n, &v) < 0 || v < 0)
        return fail(c, DECODE_INVALID, "\"%s\" must be an integer >= 0", key);
    *ret = v;
    return true;
}

bool get_percent(ctx &c, const slot &s, const char *key, double *ret)
{
    if (!s.present) {
        *ret = -1;
        return true;
    }
    if (s.type != od::json_type::number || !(s.d >= 0))
        return fail(c, DECODE_INVALID, "\"%s\" must be a number >= 0", key);
    *ret = s.d;
    return true;
}

/* pid and tid: a number's token or a string's text; anything else counts as absent. */
void get_id(const slot &s, struct record_text *ret)
{
    if (s.present && (s.type == od::json_type::number || s.type == od::json_type::string)) {
        ret->ptr = s.p;
        ret->len = s.n;
    }
}

/* A link id: an integer >= 0 as core/num reads it, else -1 (decode.c's rule). */
int64_t link_id(const slot &l)
{
    int64_t v;
    if (!l.present || l.type != od::json_type::number || num_parse_i64(l.p, l.n, &v) < 0 || v < 0)
        return -1;
    return v;
}

/* A phase's time: a number >= 0 of µs as core/num reads it, in ns, else -1 (decode.c's rule). */
int64_t phase_ns(const slot &l)
{
    int64_t ns;
    if (!l.present || l.type != od::json_type::number || num_us_to_ns(l.p, l.n, &ns) < 0 ||
        ns < 0)
        return -1;
    return ns;
}

bool build_trace(ctx &c, const slot *s, struct record *r)
{
    const slot &ph = s[F_PH];
    if (ph.type != od::json_type::string || ph.n != 1)
        return fail(c, DECODE_INVALID, "\"ph\" must be a one-letter string");
    r->kind = RECORD_TRACE;
    r->ph = ph.p[0];
    if (r->ph == 'X' || r->ph == 'M') {
        if (!need_string(c, s[F_NAME], "name", &r->name))
            return false;
    } else if (s[F_NAME].present && s[F_NAME].type == od::json_type::string) {
        r->name.ptr = s[F_NAME].p;
        r->name.len = s[F_NAME].n;
    }
    if (!get_us(c, s[F_TS], "ts", r->ph == 'M', INT64_MIN, &r->ts_ns))
        return false;
    if (r->ph == 'X') {
        if (!get_us(c, s[F_DUR], "dur", false, 0, &r->dur_ns))
            return false;
        if (r->dur_ns < 0)
            return fail(c, DECODE_INVALID, "\"dur\" must be >= 0");
        if (r->dur_ns >= DUR_MAX_NS)
            return fail(c, DECODE_INVALID, "\"dur\" is out of range (< 3 * 2^60 ns)");
    } else if (s[F_DUR].present && s[F_DUR].type == od::json_type::number) {
        /* Only X promises a duration; elsewhere take one if it makes sense, never reject. */
        int64_t dur;
        if (num_us_to_ns(s[F_DUR].p, s[F_DUR].n, &dur) == 0 && dur >= 0 && dur < DUR_MAX_NS)
            r->dur_ns = dur;
    }
    /* A span whose end would pass the largest time (INT64_MAX ns) ends there: every analysis
     * adds ts and dur, and the sum must not overflow. */
    if (r->ts_ns > 0 && r->dur_ns > INT64_MAX - r->ts_ns)
        r->dur_ns = INT64_MAX - r->ts_ns;
    if (s[F_CAT].present && s[F_CAT].type == od::json_type::string) {
        r->cat.ptr = s[F_CAT].p;
        r->cat.len = s[F_CAT].n;
    }
    get_id(s[F_PID], &r->pid);
    get_id(s[F_TID], &r->tid);
    r->correlation = link_id(s[F_ARGS_CORRELATION]);
    r->external_id = link_id(s[F_ARGS_EXTERNAL_ID]);
    return true;
}

bool build_step(ctx &c, const slot *s, struct record *r)
{
    r->kind = RECORD_STEP;
    int64_t end;
    if (!get_count(c, s[F_STEP], "step", false, &r->step) ||
        !get_us(c, s[F_BEGIN_US], "begin_us", false, 0, &r->ts_ns) ||
        !get_us(c, s[F_END_US], "end_us", false, 0, &end) ||
        !get_count(c, s[F_SAMPLES], "samples", true, &r->samples))
        return false;
    if (end < r->ts_ns)
        return fail(c, DECODE_INVALID, "\"end_us\" must be >= \"begin_us\"");
    if (r->ts_ns < 0 && end > INT64_MAX + r->ts_ns)
        return fail(c, DECODE_INVALID, "\"end_us\" - \"begin_us\" is out of range");
    r->dur_ns = end - r->ts_ns;
    const slot &ph = s[F_PHASES];
    if (ph.present) {
        if (ph.type != od::json_type::object || ph.bad)
            return fail(c, DECODE_INVALID,
                        "\"phases\" must be an object of durations >= 0");
        r->phases.ptr = ph.p;
        r->phases.len = ph.n;
        r->phase_ns = {phase_ns(s[F_PHASE_DATALOADER]), phase_ns(s[F_PHASE_FORWARD]),
                       phase_ns(s[F_PHASE_BACKWARD])};
    }
    return true;
}

bool build_queue(ctx &c, const slot *s, struct record *r)
{
    r->kind = RECORD_QUEUE;
    return need_string(c, s[F_NAME], "name", &r->name) &&
           get_count(c, s[F_SIZE], "size", false, &r->size) &&
           get_count(c, s[F_CAPACITY], "capacity", true, &r->capacity) &&
           get_count(c, s[F_STEP], "step", true, &r->step) &&
           get_us(c, s[F_TS_US], "ts_us", true, INT64_MIN, &r->ts_ns);
}

bool build_pipeline(ctx &c, const slot *s, struct record *r)
{
    r->kind = RECORD_PIPELINE;
    if (!s[F_OPS].present || s[F_OPS].type != od::json_type::array)
        return fail(c, DECODE_INVALID, "\"ops\" must be an array");
    return true;
}

bool build_host(ctx &c, const slot *s, struct record *r)
{
    r->kind = RECORD_HOST;
    return get_us(c, s[F_TS_US], "ts_us", true, INT64_MIN, &r->ts_ns) &&
           get_percent(c, s[F_CPU_PERCENT], "cpu_percent", &r->cpu_percent) &&
           get_percent(c, s[F_SYS_CPU_PERCENT], "sys_cpu_percent", &r->sys_cpu_percent) &&
           get_count(c, s[F_RSS_BYTES], "rss_bytes", true, &r->rss_bytes);
}

inline bool text_is(const slot &s, const char *lit)
{
    size_t n = strlen(lit);
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

/* {"type":"capture"}: the capture id in step, the state in name, the reason in cat. */
bool build_capture(ctx &c, const slot *s, struct record *r)
{
    if (!get_count(c, s[F_ID], "id", false, &r->step))
        return false;
    const slot &st = s[F_STATE];
    if (!st.present || st.type != od::json_type::string ||
        !(text_is(st, "armed") || text_is(st, "recording") || text_is(st, "done") ||
          text_is(st, "failed")))
        return fail(c, DECODE_INVALID,
                    "\"state\" must be \"armed\", \"recording\", \"done\" or \"failed\"");
    r->name = {st.p, st.n};
    const slot &why = s[F_REASON];
    if (why.present && why.type == od::json_type::string)
        r->cat = {why.p, why.n};
    else if (why.present && why.type != od::json_type::null)
        return fail(c, DECODE_INVALID, "\"reason\" must be a string");
    return true;
}

int decode_record(oracle_decoder *d, const char *line, size_t len, struct json_arena *a,
                  struct record *ret, char *msg)
{
    ctx c{nullptr, a, msg, DECODE_MALFORMED, true};
    slot s[F_RECORD_COUNT] = {};
    if (!scan_line(c, d->parser, line, len, s, record_key))
        return c.status;

    *ret = record{};
    ret->raw = line;
    ret->raw_len = len;
    ret->ts_ns = INT64_MIN;
    ret->step = -1;
    ret->samples = -1;
    ret->capacity = -1;
    ret->cpu_percent = -1;
    ret->sys_cpu_percent = -1;
    ret->rss_bytes = -1;
    ret->correlation = -1;
    ret->external_id = -1;
    ret->phase_ns = {-1, -1, -1};
    bool ok;
    if (s[F_PH].present) {
        ok = build_trace(c, s, ret);
    } else if (s[F_TYPE].present && s[F_TYPE].type == od::json_type::string) {
        const slot &t = s[F_TYPE];
        if (text_is(t, "step"))
            ok = build_step(c, s, ret);
        else if (text_is(t, "queue"))
            ok = build_queue(c, s, ret);
        else if (text_is(t, "pipeline"))
            ok = build_pipeline(c, s, ret);
        else if (text_is(t, "host"))
            ok = build_host(c, s, ret);
        else if (text_is(t, "bye"))
            return DECODE_BYE;
        else if (text_is(t, "capture"))
            return build_capture(c, s, ret) ? DECODE_CAPTURE : c.status;
        else
            ok = fail(c, DECODE_UNKNOWN, "unknown \"type\"");
    } else {
        ok = fail(c, DECODE_UNKNOWN, "neither \"ph\" nor a known \"type\"");
    }
    return ok ? DECODE_OK : c.status;
}

/* A hello string: absent gives "", present must be a string of at most RECORD_NAME_MAX bytes,
 * copied NUL-terminated into the arena. */
bool hello_string(ctx &c, const slot &s, const char *key, bool required, bool no_controls,
                  const char **ret)
{
    if (!s.present) {
        if (required)
            return fail(c, DECODE_BAD_HELLO, "missing \"%s\"", key);
        *ret = "";
        return true;
    }
    if (s.type != od::json_type::string)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" must be a string", key);
    if (s.n > RECORD_NAME_MAX)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" is longer than %d bytes", key,
                    RECORD_NAME_MAX);
    for (size_t i = 0; i < s.n; i++) {
        unsigned char ch = (unsigned char)s.p[i];
        if (ch == 0 || (no_controls && (ch < 0x20 || ch == 0x7f)))
            return fail(c, DECODE_BAD_HELLO, "\"%s\" contains a control character", key);
    }
    char *dst = arena_put(c.a, s.p, s.n, true);
    if (!dst)
        return fail(c, DECODE_NOSPACE, "arena full");
    *ret = dst;
    return true;
}

bool hello_int(ctx &c, const slot &s, const char *key, int64_t min, int64_t *ret)
{
    if (!s.present)
        return true;
    int64_t v;
    if (s.type != od::json_type::number || num_parse_i64(s.p, s.n, &v) < 0 || v < min)
        return fail(c, DECODE_BAD_HELLO, "\"%s\" must be an integer >= %lld", key,
                    (long long)min);
    *ret = v;
    return true;
}

int decode_hello(oracle_decoder *d, const char *line, size_t len, struct json_arena *a,
                 struct record_hello *ret, char *msg)
{
    ctx c{nullptr, a, msg, DECODE_BAD_HELLO};
    slot s[H_COUNT] = {};
    if (!scan_line(c, d->parser, line, len, s, hello_key)) {
        if (c.status != DECODE_NOSPACE)
            c.status = DECODE_BAD_HELLO;
        return c.status;
    }
    struct record_hello h = {};
    h.raw = line;
    h.raw_len = len;
    h.rank = 0;
    h.world_size = 1;
    h.pid = -1;
    if (!s[H_HELLO].present || s[H_HELLO].type != od::json_type::string ||
        !text_is(s[H_HELLO], "stepscope/1")) {
        fail(c, DECODE_BAD_HELLO, "\"hello\" must be \"stepscope/1\"");
        return c.status;
    }
    int64_t seq = -1;
    bool ok = hello_string(c, s[H_JOB], "job", true, true, &h.job) &&
              hello_string(c, s[H_RUN], "run", false, false, &h.run) &&
              hello_string(c, s[H_STREAM], "stream", false, false, &h.stream) &&
              hello_string(c, s[H_HOST], "host", false, false, &h.host) &&
              hello_string(c, s[H_FRAMEWORK], "framework", false, false, &h.framework) &&
              hello_string(c, s[H_FRAMEWORK_VERSION], "framework_version", false, false,
                           &h.framework_version) &&
              hello_string(c, s[H_CLOCK], "clock", false, false, &h.clock) &&
              hello_int(c, s[H_RANK], "rank", 0, &h.rank) &&
              hello_int(c, s[H_WORLD_SIZE], "world_size", 1, &h.world_size) &&
              hello_int(c, s[H_PID], "pid", 0, &h.pid) &&
              hello_int(c, s[H_SEQ], "seq", 0, &seq);
    if (!ok)
        return c.status;
    if (h.job[0] == '\0') {
        fail(c, DECODE_BAD_HELLO, "\"job\" must not be empty");
        return c.status;
    }
    if (h.world_size <= h.rank) {
        fail(c, DECODE_BAD_HELLO, "\"world_size\" must be > \"rank\"");
        return c.status;
    }
    if (seq >= 0) {
        h.has_seq = true;
        h.seq = (uint64_t)seq;
    }
    *ret = h;
    return DECODE_OK;
}

} /* namespace */

extern "C" {

struct oracle_decoder *oracle_decoder_new(size_t max_line)
{
    try {
        return new (std::nothrow) oracle_decoder(max_line);
    } catch (...) {
        return nullptr;
    }
}

void oracle_decoder_free(struct oracle_decoder *d)
{
    delete d;
}

int oracle_decode_record(struct oracle_decoder *d, const char *line, size_t len,
                          struct json_arena *a, struct record *ret, char *msg)
{
    size_t mark = a->used;
    int r;
    try {
        r = decode_record(d, line, len, a, ret, msg);
    } catch (...) {
        snprintf(msg, DECODE_MSG_MAX, "internal decoder error");
        r = DECODE_MALFORMED;
    }
    if (r != DECODE_OK && r != DECODE_CAPTURE)
        a->used = mark;
    return r;
}

int oracle_decode_hello(struct oracle_decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record_hello *ret, char *msg)
{
    size_t mark = a->used;
    int r;
    try {
        r = decode_hello(d, line, len, a, ret, msg);
    } catch (...) {
        snprintf(msg, DECODE_MSG_MAX, "internal decoder error");
        r = DECODE_BAD_HELLO;
    }
    if (r != DECODE_OK)
        a->used = mark;
    return r;
}

/* Added for the oracle: simdjson's strict DOM parser (stage 2 checks the whole structure). */
bool oracle_dom_structure_error(const char *line, size_t len)
{
    try {
        static simdjson::dom::parser dom;
        simdjson::dom::element e;
        return dom.parse(line, len, false).get(e) == simdjson::TAPE_ERROR;
    } catch (...) {
        return false;
    }
}

} /* extern "C" */
