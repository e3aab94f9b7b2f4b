/* SPDX-License-Identifier: MIT */
/*
 * Differential fuzz target: the record decoder (daemon/core/decode.c on lib/json's hand-written
 * scanner, born as ingest's jscan) against the simdjson 3.0.1 decoder it replaced (oracle_simdjson.cc, compiled into this
 * target only). The input is split at '\n'; every line, placed as lbuf leaves it (NUL, then
 * exactly LBUF_PADDING readable bytes, so ASan sees any over-read), goes through both record
 * decoders and both hello decoders, and the two must agree on the result code and, on success,
 * on every field: kind, ph, ts, dur, step, samples, size, capacity, CPU figures, RSS, the args
 * links (correlation, External id: first occurrence, numbers only), the typed phases (dataloader,
 * forward, backward: likewise, names compared unescaped), the bytes of
 * name, cat, pid, tid and phases, where each of those points (into the line at the same offset,
 * or into the arena), how much arena each used, and every hello field.
 *
 * Two documented classes are exempt, where simdjson is wrong and the new decoder follows RFC 8259
 * and IEEE 754 instead.
 *
 * 1. Swallowed structure errors. simdjson 3.0.1 On-Demand's object and array iterators drop an
 *    error found while advancing past a value (object_iterator::operator++ discards the error of
 *    skip_child()/has_next_field(), and the range-for loop just ends), and
 *    the old decoder took the resulting "no current location" for the end of the document. So a
 *    ':' after a value followed by brackets that happen to balance, as in
 *    {"ph":"i","ts":2,"zz":"a":[]]}, was accepted, and such lines were stored verbatim.
 *    jscan rejects them as malformed. Exempt: the oracle accepts (any non-MALFORMED answer), the
 *    new decoder says MALFORMED, and simdjson's own strict DOM parser reports TAPE_ERROR
 *    (a structure error) for the line with its numbers zeroed (structure_error()); then only
 *    that much is checked.
 *
 * 2. Long numbers as doubles. simdjson 3.0.1's get_double() misreads some numbers with more
 *    than 19 significant digits (its overflow check counts the digits of 0.xxx wrongly:
 *    0.1000000000000000055511151231257827021181583404541015625000000000001 gives 1.75e-48) and
 *    rejects every number with more than 19 exponent digits, even 0e0000000000000000000001
 *    (which is 0). The decoder only uses doubles for "cpu_percent" and "sys_cpu_percent", and
 *    jscan reads them with strtod, correctly rounded (a result too big for a double is still
 *    malformed, as before). Exempt: some such key in the line is followed by a number of more
 *    than 19 significant or exponent digits; then the two figures, and a result that differs
 *    between OK, INVALID and MALFORMED, are not compared (tests/unit/test_ingest.c pins the
 *    correct figures for such numbers).
 *
 * At exit the target prints how many lines fell in each class.
 */
#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/lbuf.h"
#include "../../daemon/core/decode.h"
#include "oracle_simdjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_LINE 8192

static struct decoder *dec;
static struct oracle_decoder *ora;
static char arena_new[2 * MAX_LINE + 64];
static char arena_old[2 * MAX_LINE + 64];
static unsigned long n_lines, n_swallowed, n_long_double; /* lines seen, exempt (1), (2) */

static void print_counts(void)
{
    fprintf(stderr, "fuzz_jscan: %lu lines compared, %lu exempt as swallowed structure errors, "
            "%lu as long CPU numbers\n", n_lines, n_swallowed, n_long_double);
}

static void disagree(const char *what, const char *line, size_t len)
{
    fprintf(stderr, "fuzz_jscan: decoders disagree on %s for line (%zu bytes): ", what, len);
    fwrite(line, 1, len, stderr);
    fputc('\n', stderr);
    abort();
}

#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond))                                                                               \
            disagree(what, line, len);                                                             \
    } while (0)

/* Same bytes, and the same place: into the line at the same offset, or both into their arenas. */
static bool same_text(struct record_text x, const char *arena_x, struct record_text y,
                      const char *arena_y, const char *line, size_t len)
{
    if (x.len != y.len || (x.len > 0 && memcmp(x.ptr, y.ptr, x.len) != 0))
        return false;
    if (x.len == 0)
        return true;
    bool x_in = x.ptr >= line && x.ptr <= line + len;
    bool y_in = y.ptr >= line && y.ptr <= line + len;
    if (x_in != y_in)
        return false;
    if (x_in)
        return x.ptr == y.ptr;
    return x.ptr - arena_x == y.ptr - arena_y;
}

static bool same_double(double x, double y)
{
    return memcmp(&x, &y, sizeof x) == 0;
}

/* Whether the JSON number at p is one simdjson 3.0.1's get_double() gets wrong: more than 19
 * significant digits in its mantissa (leading zeros excluded), or more than 19 digits in its
 * exponent (it answers NUMBER_ERROR even for 0e0000000000000000000001 or 1e-99999999999999999999,
 * which are 0). */
static bool long_number(const char *p)
{
    size_t n = 0, n_exp = 0;
    bool leading = true, in_exp = false;
    for (; *p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' ||
           (*p >= '0' && *p <= '9');
         p++) {
        if (*p == 'e' || *p == 'E')
            in_exp = true;
        if (*p < '0' || *p > '9')
            continue;
        if (in_exp) {
            n_exp++;
        } else if (!(leading && *p == '0')) {
            leading = false;
            n++;
        }
    }
    return n > 19 || n_exp > 19;
}

/* Exemption 2: some "cpu_percent" or "sys_cpu_percent" in the line (checked loosely: anywhere,
 * any depth) is followed by such a number. */
static bool long_cpu_number(const char *line)
{
    static const char *keys[] = {"\"cpu_percent\"", "\"sys_cpu_percent\""};
    for (size_t k = 0; k < 2; k++) {
        for (const char *p = line; (p = strstr(p, keys[k])) != NULL; p++) {
            const char *v = p + strlen(keys[k]);
            while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r' || *v == ':')
                v++;
            if (long_number(v))
                return true;
        }
    }
    return false;
}

/* Whether simdjson's DOM parser finds a structure error in line[0, len) once every number token
 * outside strings is replaced by "0" and blanks: the DOM parser stops at the first error in
 * document order, and a number it cannot represent (170000000000000000031) would hide a later
 * structure error. The replacement keeps a valid line valid, so a TAPE_ERROR proves the line is
 * not JSON. */
static bool structure_error(const char *line, size_t len)
{
    char *c = malloc(len + 1 + LBUF_PADDING);
    assert(c);
    memcpy(c, line, len);
    memset(c + len, 0, 1 + LBUF_PADDING);
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (in_string) {
            if (c[i] == '\\')
                i++;
            else if (c[i] == '"')
                in_string = false;
        } else if (c[i] == '"') {
            in_string = true;
        } else if (c[i] == '-' || (c[i] >= '0' && c[i] <= '9')) {
            c[i] = '0';
            while (i + 1 < len && strchr("0123456789.eE+-", c[i + 1]) && c[i + 1] != '\0')
                c[++i] = ' ';
        }
    }
    bool r = oracle_dom_structure_error(c, len);
    free(c);
    return r;
}

/* Exemption 1 for the line, given both decoders' record answers. */
static bool swallowed_error(const char *line, size_t len, int code_new, int code_old)
{
    return code_new == DECODE_MALFORMED && code_old != DECODE_MALFORMED &&
           code_old != DECODE_NOSPACE && structure_error(line, len);
}

static void compare_record(const char *line, size_t len, bool exempt, bool *ret_swallowed)
{
    struct json_arena an = {arena_new, 0, sizeof arena_new};
    struct json_arena ao = {arena_old, 0, sizeof arena_old};
    char msg_new[DECODE_MSG_MAX], msg_old[DECODE_MSG_MAX];
    struct record rn, ro;
    memset(&rn, 0xa5, sizeof rn);
    memset(&ro, 0xa5, sizeof ro);
    int cn = decode_record(dec, line, len, &an, &rn, msg_new);
    int co = oracle_decode_record(ora, line, len, &ao, &ro, msg_old);
    assert(memchr(msg_new, '\0', sizeof msg_new) || cn == DECODE_OK);
    *ret_swallowed = swallowed_error(line, len, cn, co);
    if (*ret_swallowed) {
        n_swallowed++;
        return;
    }
    if (exempt)
        n_long_double++;
    if (exempt && cn != co) {
        /* Only the CPU figures may have moved the answer. */
        CHECK(cn != DECODE_NOSPACE && co != DECODE_NOSPACE, "record code (exempt)");
        return;
    }
    if (cn != co) {
        fprintf(stderr, "new %d (%s), simdjson %d (%s)\n", cn,
                cn == DECODE_OK ? "" : msg_new, co, co == DECODE_OK ? "" : msg_old);
        disagree("the record result", line, len);
    }
    CHECK(an.used == ao.used, "arena use");
    if (cn != DECODE_OK)
        return;
    CHECK(rn.kind == ro.kind, "kind");
    CHECK(rn.raw == ro.raw && rn.raw_len == ro.raw_len, "raw");
    CHECK(rn.seq == ro.seq, "seq");
    CHECK(rn.ph == ro.ph, "ph");
    CHECK(rn.ts_ns == ro.ts_ns, "ts_ns");
    CHECK(rn.dur_ns == ro.dur_ns, "dur_ns");
    CHECK(same_text(rn.name, arena_new, ro.name, arena_old, line, len), "name");
    CHECK(same_text(rn.cat, arena_new, ro.cat, arena_old, line, len), "cat");
    CHECK(same_text(rn.pid, arena_new, ro.pid, arena_old, line, len), "pid");
    CHECK(same_text(rn.tid, arena_new, ro.tid, arena_old, line, len), "tid");
    CHECK(same_text(rn.phases, arena_new, ro.phases, arena_old, line, len), "phases");
    CHECK(rn.phase_ns.dataloader_ns == ro.phase_ns.dataloader_ns &&
              rn.phase_ns.forward_ns == ro.phase_ns.forward_ns &&
              rn.phase_ns.backward_ns == ro.phase_ns.backward_ns,
          "phase_ns");
    CHECK(rn.step == ro.step, "step");
    CHECK(rn.samples == ro.samples, "samples");
    CHECK(rn.size == ro.size, "size");
    CHECK(rn.capacity == ro.capacity, "capacity");
    CHECK(rn.rss_bytes == ro.rss_bytes, "rss_bytes");
    CHECK(rn.correlation == ro.correlation, "correlation");
    CHECK(rn.external_id == ro.external_id, "external_id");
    if (!exempt) {
        CHECK(same_double(rn.cpu_percent, ro.cpu_percent), "cpu_percent");
        CHECK(same_double(rn.sys_cpu_percent, ro.sys_cpu_percent), "sys_cpu_percent");
    }
}

static bool same_cstr(const char *x, const char *y)
{
    return strcmp(x, y) == 0;
}

static void compare_hello(const char *line, size_t len, bool swallowed)
{
    struct json_arena an = {arena_new, 0, sizeof arena_new};
    struct json_arena ao = {arena_old, 0, sizeof arena_old};
    char msg_new[DECODE_MSG_MAX], msg_old[DECODE_MSG_MAX];
    struct record_hello hn, ho;
    int cn = decode_hello(dec, line, len, &an, &hn, msg_new);
    int co = oracle_decode_hello(ora, line, len, &ao, &ho, msg_old);
    if (swallowed) {
        CHECK(cn == DECODE_BAD_HELLO, "hello result (exempt)");
        return;
    }
    if (cn != co) {
        fprintf(stderr, "new %d (%s), simdjson %d (%s)\n", cn,
                cn == DECODE_OK ? "" : msg_new, co, co == DECODE_OK ? "" : msg_old);
        disagree("the hello result", line, len);
    }
    CHECK(an.used == ao.used, "hello arena use");
    if (cn != DECODE_OK)
        return;
    CHECK(same_cstr(hn.job, ho.job), "job");
    CHECK(same_cstr(hn.run, ho.run), "run");
    CHECK(same_cstr(hn.stream, ho.stream), "stream");
    CHECK(same_cstr(hn.host, ho.host), "host");
    CHECK(same_cstr(hn.framework, ho.framework), "framework");
    CHECK(same_cstr(hn.framework_version, ho.framework_version), "framework_version");
    CHECK(same_cstr(hn.clock, ho.clock), "clock");
    CHECK(hn.rank == ho.rank && hn.world_size == ho.world_size && hn.pid == ho.pid, "ints");
    CHECK(hn.has_seq == ho.has_seq && (!hn.has_seq || hn.seq == ho.seq), "seq");
    CHECK(hn.raw == ho.raw && hn.raw_len == ho.raw_len, "hello raw");
}

/* With a tiny arena the new decoder answers as with a big one, or NOSPACE leaving it unused. */
static void check_tiny_arena(const char *line, size_t len)
{
    char big[sizeof arena_new];
    struct json_arena a = {big, 0, sizeof big};
    char tiny[3];
    struct json_arena t = {tiny, 0, sizeof tiny};
    char msg[DECODE_MSG_MAX];
    struct record r;
    int res = decode_record(dec, line, len, &a, &r, msg);
    int rt = decode_record(dec, line, len, &t, &r, msg);
    if (!(rt == res || (rt == DECODE_NOSPACE && t.used == 0)))
        disagree("a tiny arena", line, len);
}

static void check_line(const char *data, size_t len)
{
    char *line = malloc(len + 1 + LBUF_PADDING);
    assert(line);
    memcpy(line, data, len);
    memset(line + len, 0, 1 + LBUF_PADDING);
    n_lines++;
    bool exempt = long_cpu_number(line), swallowed;
    compare_record(line, len, exempt, &swallowed);
    compare_hello(line, len, swallowed);
    check_tiny_arena(line, len);
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dec) {
        dec = decoder_new(MAX_LINE);
        ora = oracle_decoder_new(MAX_LINE);
        assert(dec && ora);
        atexit(print_counts);
    }
    while (size > 0) {
        const uint8_t *nl = memchr(data, '\n', size);
        size_t len = nl ? (size_t)(nl - data) : size;
        if (len <= MAX_LINE)
            check_line((const char *)data, len);
        if (!nl)
            break;
        size -= len + 1;
        data += len + 1;
    }
    return 0;
}
