/* SPDX-License-Identifier: MIT */
/*
 * oracle_simdjson: the previous ingest line decoder (simdjson 3.0.1 On-Demand), kept only as the
 * reference that tests/fuzz/fuzz_jscan.c compares daemon/ingest/decode.c against. Same contracts
 * as decoder_new(), decode_record() and decode_hello() in
 * daemon/core/decode.h, under other names so that both decoders link into one binary.
 */
#ifndef STEPSCOPE_ORACLE_SIMDJSON_H
#define STEPSCOPE_ORACLE_SIMDJSON_H

#ifdef __cplusplus
extern "C" {
#endif

#include <stdbool.h>
#include <stddef.h>

#include "../../daemon/core/record.h"
#include "../../daemon/core/decode.h"

struct oracle_decoder;

/* As decoder_new() / decoder_free(). */
struct oracle_decoder *oracle_decoder_new(size_t max_line);
void oracle_decoder_free(struct oracle_decoder *d);

/* As decode_record(). */
int oracle_decode_record(struct oracle_decoder *d, const char *line, size_t len,
                         struct json_arena *a, struct record *ret, char *msg);

/* As decode_hello(). */
int oracle_decode_hello(struct oracle_decoder *d, const char *line, size_t len,
                        struct json_arena *a, struct record_hello *ret, char *msg);

/* Whether simdjson's DOM parser, which validates the structure fully, rejects line[0, len)
 * (same buffer rules) as TAPE_ERROR: misplaced or missing ',' ':' '}' ']'. */
bool oracle_dom_structure_error(const char *line, size_t len);

#ifdef __cplusplus
}
#endif

#endif
