/* SPDX-License-Identifier: MIT */
/*
 * The JSON scanner (contract in json.h): a recursive-descent pass for the top-level
 * object, which fills slots, and one iterative loop (a 64-bit stack of "object or array" bits,
 * since the depth limit is 64) that validates every other value without recursion.
 *
 * Every helper takes a pointer into the line and returns the pointer past what it consumed, or
 * NULL with the reason in s->why. The line's NUL terminator is what stops every loop: it is not
 * whitespace, not a valid byte in a string, not part of a number or literal, so no helper runs
 * past line[len] except the 8-byte loads of string bodies, which stay inside the padding.
 *
 * Matches simdjson 3.0.1 (the previous decoder, still the oracle of tests/fuzz/fuzz_jscan.c) on
 * what it accepts, including its handling of \u escapes: a high surrogate must be followed by
 * \u and a low surrogate, and a lone low surrogate is an error. Numbers converted to double use
 * strtod (the daemon never calls setlocale, so the decimal point is '.'), which rounds correctly
 * where simdjson 3.0.1's get_double() does not (inputs with more than 19 significant digits).
 */
#include "json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbuf.h"
#include "util.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* string_end() loads 16 bytes at a time (8 without SSE2) and find_key() JSON_KEY_MAX + 1 bytes
 * from inside the line; the JSON_PADDING bytes after every line keep both inside readable
 * memory. */
_Static_assert(JSON_PADDING >= JSON_KEY_MAX + 1 && JSON_PADDING >= 16,
               "JSON_PADDING too small for the scanner");
_Static_assert(LBUF_PADDING >= JSON_PADDING, "lbuf's padding too small for the JSON scanner");

struct scan {
    const char *why;         /* the reason for the last NULL return */
    uint32_t seen;           /* bit id: the key with that id was seen, its slot filled */
    int status;              /* JSON_MALFORMED, or _NOSPACE when the arena ran out */
    struct json_arena *a;
};

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static const char *fail(struct scan *s, const char *why)
{
    s->why = why;
    return NULL;
}

static inline bool is_digit(char c)
{
    return (unsigned char)(c - '0') < 10;
}

static inline const char *skip_blanks(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

/* Four hex digits at p, or -1. */
static inline int32_t hex4(const char *p)
{
    int a = util_hexval((unsigned char)p[0]), b = util_hexval((unsigned char)p[1]);
    int c = util_hexval((unsigned char)p[2]), d = util_hexval((unsigned char)p[3]);
    if ((a | b | c | d) < 0)
        return -1;
    return (a << 12) | (b << 8) | (c << 4) | d;
}

/* Validates the escape at p ('\\') and returns the pointer past it; *ret_cp gets the code point
 * (or the byte for a one-letter escape). */
static const char *escape(struct scan *s, const char *p, uint32_t *ret_cp)
{
    switch (p[1]) {
    case '"':
    case '\\':
    case '/':
        *ret_cp = (unsigned char)p[1];
        return p + 2;
    case 'b':
        *ret_cp = '\b';
        return p + 2;
    case 'f':
        *ret_cp = '\f';
        return p + 2;
    case 'n':
        *ret_cp = '\n';
        return p + 2;
    case 'r':
        *ret_cp = '\r';
        return p + 2;
    case 't':
        *ret_cp = '\t';
        return p + 2;
    case 'u':
        break;
    default:
        return fail(s, "bad escape");
    }
    int32_t cp = hex4(p + 2);
    if (cp < 0)
        return fail(s, "bad \\u escape");
    p += 6;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(s, "lone low surrogate");
    if (cp >= 0xd800 && cp <= 0xdbff) {
        if (p[0] != '\\' || p[1] != 'u')
            return fail(s, "lone high surrogate");
        int32_t lo = hex4(p + 2);
        if (lo < 0xdc00 || lo > 0xdfff)
            return fail(s, "lone high surrogate");
        cp = (((cp - 0xd800) << 10) | (lo - 0xdc00)) + 0x10000;
        p += 6;
    }
    *ret_cp = (uint32_t)cp;
    return p;
}

/* Validates the UTF-8 sequence starting at p (a byte >= 0x80) and returns the pointer past it:
 * no overlongs, no surrogates, nothing above U+10FFFF. */
static const char *utf8_seq(struct scan *s, const char *p)
{
    const unsigned char *u = (const unsigned char *)p;
    unsigned c = u[0];
    if (c < 0xc2)
        return fail(s, "invalid UTF-8");
    if (c < 0xe0) {
        if ((u[1] & 0xc0) != 0x80)
            return fail(s, "invalid UTF-8");
        return p + 2;
    }
    if (c < 0xf0) {
        unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        if (u[1] < lo || u[1] > hi || (u[2] & 0xc0) != 0x80)
            return fail(s, "invalid UTF-8");
        return p + 3;
    }
    if (c < 0xf5) {
        unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        if (u[1] < lo || u[1] > hi || (u[2] & 0xc0) != 0x80 || (u[3] & 0xc0) != 0x80)
            return fail(s, "invalid UTF-8");
        return p + 4;
    }
    return fail(s, "invalid UTF-8");
}

#if !defined(__SSE2__)
/* Bytes of w that need a closer look in a string body: '"', '\\', < 0x20 or >= 0x80. The lowest
 * set bit is exact (the borrows of these tricks only run upward from a byte that is flagged). */
static inline uint64_t special_bytes(uint64_t w)
{
    uint64_t q = w ^ (ONES * '"');
    uint64_t b = w ^ (ONES * '\\');
    q = (q - ONES) & ~q;
    b = (b - ONES) & ~b;
    uint64_t c = (w - ONES * 0x20) & ~w;
    return (q | b | c | w) & HIGHS;
}
#endif

#if defined(__SSE2__)
/* The bytes of p[0, 16) that need a closer look in a string body, as bits: '"', '\\', and (one
 * signed compare) both < 0x20 and >= 0x80. */
static inline unsigned special16(const char *p)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                          _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
                             _mm_cmplt_epi8(x, _mm_set1_epi8(0x20)));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* p is just past an opening quote. Returns the pointer to the closing quote of a valid string;
 * *has_escape is set if the body holds a backslash. */
static const char *string_end_loop(struct scan *s, const char *p, bool *has_escape)
{
    for (;;) {
#if defined(__SSE2__)
        unsigned bits = special16(p); /* 16 bytes at a time */
        if (bits == 0) {
            p += 16;
            continue;
        }
        p += __builtin_ctz(bits);
#elif defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t m = special_bytes(w);
        if (m == 0) {
            p += 8;
            continue;
        }
        p += __builtin_ctzll(m) >> 3;
#endif
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p;
        if (c == '\\') {
            uint32_t cp;
            *has_escape = true;
            p = escape(s, p, &cp);
            if (!p)
                return NULL;
        } else if (c >= 0x80) {
            p = utf8_seq(s, p);
            if (!p)
                return NULL;
        } else if (c < 0x20) {
            return fail(s, c == 0 ? "unterminated string" : "control character in string");
        } else {
            p++; /* only without the word loop */
        }
    }
}

/* string_end_loop() with its usual case inline: a string (most are keys) that ends within 16
 * bytes with nothing to check on the way. */
static inline const char *string_end(struct scan *s, const char *p, bool *has_escape)
{
#if defined(__SSE2__)
    unsigned bits = special16(p);
    if (bits != 0 && p[__builtin_ctz(bits)] == '"')
        return p + __builtin_ctz(bits);
#endif
    return string_end_loop(s, p, has_escape);
}

/* Unescapes the valid string body [p, end) into dst (cap bytes); returns its length, or -1 if
 * it does not fit. */
static ptrdiff_t unescape(const char *p, const char *end, char *dst, size_t cap)
{
    struct scan ignore = {NULL, 0, 0, NULL};
    size_t n = 0;
    while (p < end) {
        const char *bs = memchr(p, '\\', (size_t)(end - p));
        size_t run = bs ? (size_t)(bs - p) : (size_t)(end - p);
        if (cap - n < run)
            return -1;
        memcpy(dst + n, p, run);
        n += run;
        p += run;
        if (!bs)
            break;
        uint32_t cp = 0;
        p = escape(&ignore, p, &cp); /* validated by string_end(): never NULL */
        unsigned char u[4];
        size_t k;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            k = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xc0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3f));
            k = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xe0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            u[2] = (unsigned char)(0x80 | (cp & 0x3f));
            k = 3;
        } else {
            u[0] = (unsigned char)(0xf0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
            u[3] = (unsigned char)(0x80 | (cp & 0x3f));
            k = 4;
        }
        if (cap - n < k)
            return -1;
        memcpy(dst + n, u, k);
        n += k;
    }
    return (ptrdiff_t)n;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at p; returns the pointer past it. */
static const char *number_end(struct scan *s, const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        do
            p++;
        while (is_digit(*p));
    } else {
        return fail(s, "bad number");
    }
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return fail(s, "bad number");
        do
            p++;
        while (is_digit(*p));
    }
    if ((*p | 0x20) == 'e') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return fail(s, "bad number");
        do
            p++;
        while (is_digit(*p));
    }
    /* Like simdjson, a number glued to anything but a delimiter is one bad token. */
    if (*p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' &&
        *p != '\r' && *p != '\0')
        return fail(s, "bad number");
    return p;
}

/* A scalar at p (not a container); returns the pointer past it. */
static inline const char *scalar_end(struct scan *s, const char *p)
{
    switch (*p) {
    case '"': {
        bool esc = false;
        p = string_end(s, p + 1, &esc);
        return p ? p + 1 : NULL;
    }
    case 't':
        return memcmp(p, "true", 4) == 0 ? p + 4 : fail(s, "bad literal");
    case 'f':
        return memcmp(p, "false", 5) == 0 ? p + 5 : fail(s, "bad literal");
    case 'n':
        return memcmp(p, "null", 4) == 0 ? p + 4 : fail(s, "bad literal");
    default:
        if (*p == '-' || is_digit(*p))
            return number_end(s, p);
        return fail(s, *p == '\0' ? "unexpected end" : "unexpected character");
    }
}

/* The container ('{' or '[') at p, at nesting depth depth (the line's object is depth 0);
 * returns the pointer past its closing bracket. Iterative: bit i of stack says whether the
 * container i levels below the current one's top is an object. */
static const char *container_end(struct scan *s, const char *p, int depth)
{
    uint64_t stack = 0;
    int level = -1; /* index of the innermost open container; depth + level is its depth */
    bool in_object;

open:
    if (depth + level + 1 >= JSON_DEPTH_MAX)
        return fail(s, "nested deeper than 64");
    level++;
    in_object = *p == '{';
    stack = (stack << 1) | (in_object ? 1u : 0u);
    p = skip_blanks(p + 1);
    if (*p == (in_object ? '}' : ']')) {
        p++;
        goto closed;
    }
    if (!in_object)
        goto value;
key:
    if (*p != '"')
        return fail(s, "expected a key");
    {
        bool esc = false;
        p = string_end(s, p + 1, &esc);
        if (!p)
            return NULL;
    }
    p = skip_blanks(p + 1);
    if (*p != ':')
        return fail(s, "expected ':'");
    p = skip_blanks(p + 1);
value:
    if (*p == '{' || *p == '[')
        goto open;
    p = scalar_end(s, p);
    if (!p)
        return NULL;
next:
    p = skip_blanks(p);
    if (*p == ',') {
        p = skip_blanks(p + 1);
        if (in_object)
            goto key;
        goto value;
    }
    if (*p != (in_object ? '}' : ']'))
        return fail(s, in_object ? "expected ',' or '}'" : "expected ',' or ']'");
    p++;
closed:
    stack >>= 1;
    if (level-- == 0)
        return p;
    in_object = stack & 1;
    goto next;
}

/* Any value at p, at depth depth. */
static inline const char *value_end(struct scan *s, const char *p, int depth)
{
    if (*p == '{' || *p == '[')
        return container_end(s, p, depth);
    return scalar_end(s, p);
}

/* Whether k[0, n) (with at least JSON_KEY_MAX + 1 readable bytes at k) equals the zero-padded
 * key w: whole words, the last one masked, instead of a call to memcmp. */
static inline bool key_eq(const char *k, size_t n, const uint64_t *w)
{
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (size_t i = 0; i * 8 < n; i++) {
        uint64_t x;
        memcpy(&x, k + i * 8, 8);
        size_t left = n - i * 8;
        if (left < 8)
            x &= (UINT64_C(1) << (left * 8)) - 1;
        if (x != w[i])
            return false;
    }
    return true;
#else
    return memcmp(k, w, n) == 0;
#endif
}

/* The known key k[0, n), or NULL; k has at least JSON_KEY_MAX + 1 readable bytes (a key inside
 * the line is followed by its quote, the rest of the line, its NUL and the padding). */
static inline const struct json_key *find_key(const struct json_keys *keys, const char *k,
                                               size_t n)
{
    if (n > JSON_KEY_MAX)
        return NULL;
    for (unsigned i = keys->start[n]; i < keys->start[n + 1]; i++) {
        if (key_eq(k, n, keys->word[i]))
            return &keys->key[i];
    }
    return NULL;
}

/* The known key that the member name k[0, end) (escaped when esc) names in keys, or NULL. */
static inline const struct json_key *known_key(const struct json_keys *keys, const char *k,
                                               const char *end, bool esc)
{
    if (!esc)
        return find_key(keys, k, (size_t)(end - k));
    char buf[JSON_KEY_MAX + 1] = {0};
    ptrdiff_t m = unescape(k, end, buf, JSON_KEY_MAX);
    return m >= 0 ? find_key(keys, buf, (size_t)m) : NULL;
}

/* The member at p (its key's opening quote): *ret_key is the known key of keys it names (NULL:
 * none). Returns the pointer to its value. */
static const char *member(struct scan *s, const char *p, const struct json_keys *keys,
                          const struct json_key **ret_key)
{
    if (*p != '"')
        return fail(s, "expected a key");
    const char *k = p + 1;
    bool esc = false;
    p = string_end(s, k, &esc);
    if (!p)
        return NULL;
    *ret_key = known_key(keys, k, p, esc);
    p = skip_blanks(p + 1);
    if (*p != ':')
        return fail(s, "expected ':'");
    return skip_blanks(p + 1);
}

/* Sub keys' slots are filled only under an object of their key: none seen yet. */
static inline void subs_absent(const struct json_keys *sub, struct json_slot *slots)
{
    for (uint32_t m = sub->ids; m != 0; m &= m - 1)
        slots[__builtin_ctz(m)].type = JSON_ABSENT;
}

/* An object of durations (JSON_F_DURATIONS) at p, a value of the line's object (depth 1). With
 * sub (JSON_F_SUBKEYS), its members that are numbers fill their slots (first occurrence). */
static const char *durations_end(struct scan *s, const char *p, bool *bad,
                                 const struct json_keys *sub, struct json_slot *slots)
{
    p = skip_blanks(p + 1);
    if (*p == '}')
        return p + 1;
    static const struct json_keys none; /* no key */
    if (sub)
        subs_absent(sub, slots);
    for (;;) {
        const struct json_key *key;
        p = member(s, p, sub ? sub : &none, &key);
        if (!p)
            return NULL;
        if (!is_digit(*p)) {
            *bad = true; /* a string, a negative number, anything else */
        } else if (key && !(s->seen & (UINT32_C(1) << key->id))) {
            s->seen |= UINT32_C(1) << key->id;
            struct json_slot *slot = &slots[key->id];
            slot->type = JSON_NUMBER;
            slot->bad = false;
            slot->p = p;
            p = scalar_end(s, p);
            if (!p)
                return NULL;
            slot->n = (size_t)(p - slot->p);
            goto next;
        }
        p = value_end(s, p, 2);
        if (!p)
            return NULL;
    next:
        p = skip_blanks(p);
        if (*p == '}')
            return p + 1;
        if (*p != ',')
            return fail(s, "expected ',' or '}'");
        p = skip_blanks(p + 1);
    }
}

/* The value of a known key at p: fills *slot and returns the pointer past the value. */
static const char *fill_slot(struct scan *s, const char *p, struct json_slot *slot,
                             unsigned flags)
{
    const char *start = p;
    slot->bad = false;
    switch (*p) {
    case '"': {
        bool esc = false;
        const char *end = string_end(s, p + 1, &esc);
        if (!end)
            return NULL;
        slot->type = JSON_STRING;
        if (!esc) {
            slot->p = p + 1;
            slot->n = (size_t)(end - p - 1);
            return end + 1;
        }
        struct json_arena *a = s->a;
        ptrdiff_t n = unescape(p + 1, end, a->data + a->used, a->cap - a->used);
        if (n < 0) {
            s->status = JSON_NOSPACE;
            return fail(s, "arena full");
        }
        slot->p = a->data + a->used;
        slot->n = (size_t)n;
        a->used += (size_t)n;
        return end + 1;
    }
    case '{':
        slot->type = JSON_OBJECT;
        p = (flags & JSON_F_DURATIONS) ? durations_end(s, p, &slot->bad, NULL, NULL)
                                        : container_end(s, p, 1);
        break;
    case '[':
        slot->type = JSON_ARRAY;
        p = container_end(s, p, 1);
        break;
    case 't':
    case 'f':
        slot->type = JSON_BOOL;
        p = scalar_end(s, p);
        break;
    case 'n':
        slot->type = JSON_NULL;
        p = scalar_end(s, p);
        break;
    default:
        slot->type = JSON_NUMBER;
        p = scalar_end(s, p); /* a number, or an error */
        if (p && (flags & JSON_F_DOUBLE)) {
            slot->d = strtod(start, NULL);
            if (isinf(slot->d))
                return fail(s, "number out of range");
        }
        break;
    }
    if (p) {
        slot->p = start;
        slot->n = (size_t)(p - start);
    }
    return p;
}

void json_keys_init(struct json_keys *ret, const struct json_key *list, size_t n)
{
    memset(ret, 0, sizeof *ret);
    size_t k = 0;
    for (size_t len = 0; len <= JSON_KEY_MAX; len++) {
        ret->start[len] = (uint8_t)k;
        for (size_t i = 0; i < n; i++) {
            if (strlen(list[i].name) == len) {
                ret->key[k] = list[i];
                memcpy(ret->word[k], list[i].name, len);
                k++;
            }
        }
    }
    ret->start[JSON_KEY_MAX + 1] = (uint8_t)k;
    for (size_t i = 0; i < n; i++)
        ret->ids |= UINT32_C(1) << list[i].id;
}

void json_keys_sub(struct json_keys *ret, unsigned id, const struct json_keys *sub)
{
    ret->sub[id] = sub;
}


/* The object at p, at depth depth (the line's object is depth 0), whose known members (keys)
 * fill slots. */
static const char *object_end(struct scan *s, const char *p, const struct json_keys *keys,
                              struct json_slot *slots, int depth)
{
    if (depth >= JSON_DEPTH_MAX)
        return fail(s, "nested deeper than 64");
    p = skip_blanks(p + 1);
    if (*p == '}')
        return p + 1;
    for (;;) {
        /* member(), written out: fewer instructions per member, measured (parse_bench). */
        if (*p != '"')
            return fail(s, "expected a key");
        const char *k = p + 1;
        bool esc = false;
        p = string_end(s, k, &esc);
        if (!p)
            return NULL;
        size_t n = (size_t)(p - k);
        const struct json_key *key;
        if (esc) {
            char buf[JSON_KEY_MAX + 1] = {0};
            ptrdiff_t m = unescape(k, p, buf, JSON_KEY_MAX);
            key = m >= 0 ? find_key(keys, buf, (size_t)m) : NULL;
        } else {
            key = find_key(keys, k, n);
        }
        p = skip_blanks(p + 1);
        if (*p != ':')
            return fail(s, "expected ':'");
        p = skip_blanks(p + 1);
        if (key && !(s->seen & (UINT32_C(1) << key->id))) {
            s->seen |= UINT32_C(1) << key->id;
            struct json_slot *slot = &slots[key->id];
            if ((key->flags & JSON_F_SUBKEYS) && *p == '{') {
                /* Its members are scanned (and validated) once, filling the sub keys' slots. */
                const char *start = p;
                slot->type = JSON_OBJECT;
                slot->bad = false;
                const struct json_keys *sub = keys->sub[key->id];
                if (key->flags & JSON_F_DURATIONS) {
                    p = durations_end(s, p, &slot->bad, sub, slots);
                } else {
                    subs_absent(sub, slots);
                    p = object_end(s, p, sub, slots, depth + 1);
                }
                if (p) {
                    slot->p = start;
                    slot->n = (size_t)(p - start);
                }
            } else {
                p = fill_slot(s, p, slot, key->flags);
            }
        } else {
            p = value_end(s, p, depth + 1);
        }
        if (!p)
            return NULL;
        p = skip_blanks(p);
        if (*p == '}')
            return p + 1;
        if (*p != ',')
            return fail(s, "expected ',' or '}'");
        p = skip_blanks(p + 1);
    }
}

int json_scan_object(const char *line, size_t len, const struct json_keys *keys,
                     struct json_slot *slots, struct json_arena *a, char *msg)
{
    struct scan s = {NULL, 0, JSON_MALFORMED, a};
    const char *end = line + len;
    const char *p = skip_blanks(line);
    if (*p != '{') {
        snprintf(msg, JSON_MSG_MAX, "%s",
                 p == end ? "not valid JSON: empty line" : "not a JSON object");
        return JSON_MALFORMED;
    }
    p = object_end(&s, p, keys, slots, 0);
    if (p) {
        p = skip_blanks(p);
        if (p != end)
            p = fail(&s, *p == '\0' ? "NUL byte" : "trailing content");
    }
    if (!p) {
        if (s.status == JSON_NOSPACE)
            snprintf(msg, JSON_MSG_MAX, "%s", s.why);
        else
            snprintf(msg, JSON_MSG_MAX, "not valid JSON: %s", s.why);
        return s.status;
    }
    for (uint32_t m = keys->ids & ~s.seen; m != 0; m &= m - 1)
        slots[__builtin_ctz(m)].type = JSON_ABSENT;
    return JSON_OK;
}

int json_scan_copy(const char *text, size_t len, const struct json_keys *keys,
                   struct json_slot *slots, struct json_arena *a, char *msg, char **copy)
{
    *copy = malloc(len + 1 + JSON_PADDING);
    if (!*copy) {
        snprintf(msg, JSON_MSG_MAX, "out of memory");
        return JSON_NOSPACE;
    }
    memcpy(*copy, text, len);
    memset(*copy + len, 0, 1 + JSON_PADDING);
    return json_scan_object(*copy, len, keys, slots, a, msg);
}

/* ---- the reader: a cursor over text without padding ---- */

void json_reader_init(struct json_reader *r, const char *text, size_t len)
{
    r->p = text;
    r->end = text + len;
    r->bad = false;
}

static bool reader_fail(struct json_reader *r)
{
    r->bad = true;
    r->p = r->end;
    return false;
}

static void reader_blanks(struct json_reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

enum json_type json_peek(struct json_reader *r)
{
    reader_blanks(r);
    if (r->p >= r->end)
        return JSON_ABSENT;
    switch (*r->p) {
    case '"':
        return JSON_STRING;
    case '{':
        return JSON_OBJECT;
    case '[':
        return JSON_ARRAY;
    case 't':
    case 'f':
        return JSON_BOOL;
    case 'n':
        return JSON_NULL;
    default:
        return *r->p == '-' || is_digit(*r->p) ? JSON_NUMBER : JSON_ABSENT;
    }
}

/* Consumes c (after blanks) if it is next. */
static bool reader_eat(struct json_reader *r, char c)
{
    reader_blanks(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return false;
}

bool json_object_begin(struct json_reader *r)
{
    return reader_eat(r, '{') || reader_fail(r);
}

bool json_array_begin(struct json_reader *r)
{
    return reader_eat(r, '[') || reader_fail(r);
}

/* Whether the escapes of the string body b[0, n) are whole (so unescape() reads inside it). */
static bool escapes_whole(const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != '\\')
            continue;
        if (i + 1 >= n)
            return false;
        if (b[i + 1] != 'u') {
            if (!strchr("\"\\/bfnrt", b[i + 1]) || b[i + 1] == '\0')
                return false;
            i++;
            continue;
        }
        if (i + 6 > n)
            return false;
        int32_t cp = hex4(b + i + 2);
        if (cp < 0 || (cp >= 0xdc00 && cp <= 0xdfff))
            return false;
        i += 5;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            if (i + 7 > n || b[i + 1] != '\\' || b[i + 2] != 'u')
                return false;
            int32_t lo = hex4(b + i + 3);
            if (lo < 0xdc00 || lo > 0xdfff)
                return false;
            i += 6;
        }
    }
    return true;
}

bool json_read_string(struct json_reader *r, char *out, size_t cap, size_t *ret_len)
{
    if (!reader_eat(r, '"'))
        return reader_fail(r);
    const char *b = r->p;
    bool esc = false;
    while (r->p < r->end && *r->p != '"') {
        if (*r->p == '\\') {
            esc = true;
            r->p++;
        }
        r->p++;
    }
    if (r->p >= r->end)
        return reader_fail(r);
    size_t n = (size_t)(r->p - b);
    r->p++;
    if (!out && !ret_len)
        return true;
    char stack[256];
    char *tmp = NULL;
    const char *text = b;
    if (esc) {
        if (!escapes_whole(b, n))
            return reader_fail(r);
        /* Unescaping never lengthens. */
        tmp = n <= sizeof stack ? stack : malloc(n);
        if (!tmp)
            return reader_fail(r);
        n = (size_t)unescape(b, b + n, tmp, n);
        text = tmp;
    }
    if (ret_len)
        *ret_len = n;
    if (out && cap > 0) {
        size_t k = n < cap - 1 ? n : cap - 1;
        memcpy(out, text, k);
        out[k] = '\0';
    }
    if (tmp != stack)
        free(tmp);
    return true;
}

bool json_member(struct json_reader *r, char *key, size_t cap)
{
    (void)reader_eat(r, ',');
    if (reader_eat(r, '}'))
        return false;
    return (json_read_string(r, key, cap, NULL) && reader_eat(r, ':')) || reader_fail(r);
}

bool json_element(struct json_reader *r)
{
    (void)reader_eat(r, ',');
    if (reader_eat(r, ']'))
        return false;
    return r->p < r->end || reader_fail(r);
}

bool json_read_double(struct json_reader *r, double *ret)
{
    reader_blanks(r);
    char buf[64];
    size_t n = 0;
    while (r->p < r->end && n + 1 < sizeof buf && *r->p && strchr("+-0123456789.eE", *r->p))
        buf[n++] = *r->p++;
    buf[n] = '\0';
    char *e;
    double v = strtod(buf, &e);
    if (n == 0 || *e != '\0' || !isfinite(v))
        return reader_fail(r);
    *ret = v;
    return true;
}

bool json_read_number_text(struct json_reader *r, const char **ret_p, size_t *ret_n)
{
    reader_blanks(r);
    const char *b = r->p;
    while (r->p < r->end && *r->p && strchr("+-0123456789.eE", *r->p))
        r->p++;
    if (r->p == b)
        return reader_fail(r);
    *ret_p = b;
    *ret_n = (size_t)(r->p - b);
    return true;
}

static bool skip_value(struct json_reader *r, int depth)
{
    if (depth > JSON_DEPTH_MAX)
        return reader_fail(r);
    switch (json_peek(r)) {
    case JSON_STRING:
        return json_read_string(r, NULL, 0, NULL);
    case JSON_NUMBER: {
        const char *t;
        size_t n;
        return json_read_number_text(r, &t, &n);
    }
    case JSON_BOOL:
    case JSON_NULL: {
        const char *w = *r->p == 't' ? "true" : *r->p == 'f' ? "false" : "null";
        size_t l = strlen(w);
        if ((size_t)(r->end - r->p) < l || memcmp(r->p, w, l) != 0)
            return reader_fail(r);
        r->p += l;
        return true;
    }
    case JSON_OBJECT:
        r->p++;
        while (json_member(r, NULL, 0))
            if (!skip_value(r, depth + 1))
                return false;
        return !r->bad;
    case JSON_ARRAY:
        r->p++;
        while (json_element(r))
            if (!skip_value(r, depth + 1))
                return false;
        return !r->bad;
    default:
        return reader_fail(r);
    }
}

bool json_skip(struct json_reader *r)
{
    return skip_value(r, 0);
}

bool json_array_has_string(const char *text, size_t len, const char *word)
{
    struct json_reader r;
    json_reader_init(&r, text, len);
    size_t wn = strlen(word);
    if (!json_array_begin(&r))
        return false;
    while (json_element(&r)) {
        if (json_peek(&r) != JSON_STRING) {
            if (!json_skip(&r))
                return false;
            continue;
        }
        char buf[64];
        size_t n;
        if (!json_read_string(&r, buf, sizeof buf, &n))
            return false;
        if (n == wn && wn < sizeof buf && memcmp(buf, word, wn) == 0)
            return true;
    }
    return false;
}
