/* SPDX-License-Identifier: MIT */
/*
 * decode_args: the Kineto args the kernel and communication tables read (decode.h:
 * decode_args_read()), with lib/json's reader over a stored line, on demand.
 */
#include "decode.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "../../lib/num.h"

static int64_t read_int(struct json_reader *r)
{
    const char *p;
    size_t n;
    int64_t v;
    if (json_peek(r) != JSON_NUMBER)
        return json_skip(r), -1;
    if (!json_read_number_text(r, &p, &n) || num_parse_i64(p, n, &v) < 0)
        return -1;
    return v;
}

static double read_num(struct json_reader *r)
{
    double d;
    if (json_peek(r) != JSON_NUMBER)
        return json_skip(r), -1;
    return json_read_double(r, &d) ? d : -1;
}

/* An array of up to 3 integers ("grid", "block"): how many were read. */
static uint8_t read_dim3(struct json_reader *r, int32_t out[3])
{
    if (json_peek(r) != JSON_ARRAY)
        return json_skip(r), 0;
    uint8_t n = 0;
    json_array_begin(r);
    while (json_element(r)) {
        int64_t v = read_int(r);
        if (n < 3 && v >= 0 && v <= INT32_MAX)
            out[n++] = (int32_t)v;
    }
    return n;
}

/* "Input Dims": per entry the product of its sizes. */
static void read_dims(struct json_reader *r, struct decode_trace_args *a)
{
    if (json_peek(r) != JSON_ARRAY) {
        json_skip(r);
        return;
    }
    json_array_begin(r);
    while (json_element(r)) {
        int64_t prod = 1;
        if (json_peek(r) != JSON_ARRAY) {
            json_skip(r);
            prod = -1;
        } else {
            json_array_begin(r);
            while (json_element(r)) {
                int64_t v = json_peek(r) == JSON_NUMBER ? read_int(r) : (json_skip(r), -1);
                if (v < 0 || prod < 0)
                    prod = -1;
                else if (v != 0 && prod > INT64_MAX / v)
                    prod = INT64_MAX;
                else
                    prod *= v;
            }
        }
        if (a->n_dims < DECODE_INPUTS_MAX)
            a->elems[a->n_dims++] = prod;
    }
}

static void read_types(struct json_reader *r, struct decode_trace_args *a)
{
    if (json_peek(r) != JSON_ARRAY) {
        json_skip(r);
        return;
    }
    json_array_begin(r);
    while (json_element(r)) {
        char *out = a->n_types < DECODE_INPUTS_MAX ? a->type[a->n_types] : NULL;
        if (json_peek(r) == JSON_STRING)
            json_read_string(r, out, DECODE_TYPE_MAX, NULL);
        else
            json_skip(r);
        if (out)
            a->n_types++;
    }
}

int decode_args_read(const char *line, size_t len, struct decode_trace_args *ret)
{
    memset(ret, 0, sizeof *ret);
    ret->blocks_per_sm = ret->occupancy_pct = -1;
    ret->regs = ret->smem = -1;
    struct json_reader r;
    json_reader_init(&r, line, len);
    if (!json_object_begin(&r))
        return -EINVAL;
    char key[40];
    while (json_member(&r, key, sizeof key)) {
        if (strcmp(key, "args") != 0 || json_peek(&r) != JSON_OBJECT) {
            if (!json_skip(&r))
                break;
            continue;
        }
        json_object_begin(&r);
        while (json_member(&r, key, sizeof key)) {
            if (strcmp(key, "blocks per SM") == 0)
                ret->blocks_per_sm = read_num(&r);
            else if (strcmp(key, "est. achieved occupancy %") == 0)
                ret->occupancy_pct = read_num(&r);
            else if (strcmp(key, "registers per thread") == 0)
                ret->regs = read_int(&r);
            else if (strcmp(key, "shared memory") == 0)
                ret->smem = read_int(&r);
            else if (strcmp(key, "grid") == 0)
                ret->n_grid = read_dim3(&r, ret->grid);
            else if (strcmp(key, "block") == 0)
                ret->n_block = read_dim3(&r, ret->block);
            else if (strcmp(key, "Input Dims") == 0)
                read_dims(&r, ret);
            else if (strcmp(key, "Input type") == 0)
                read_types(&r, ret);
            else if (!json_skip(&r))
                break;
            if (r.bad)
                break;
        }
        break;
    }
    return 0;
}
