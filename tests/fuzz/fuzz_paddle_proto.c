/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the reader of Paddle's protobuf export (cli/import/paddle_proto.c). The
 * input is the file's bytes, given to the reader in an allocation of exactly its size (ASan sees
 * any read past the end). Invariants:
 *   - the result is 0, -EINVAL or -EMSGSIZE (the output cap, kept small here);
 *   - a refusal says where: "byte N: <path>: <reason>" with N at most the input's size;
 *   - an accepted file gives info.n_events lines, each a record the daemon's own decoder takes
 *     (fuzz_lines.h), and converting it again gives the same bytes.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/import/paddle_proto.h"
#include "fuzz_lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_CAP (4u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct decoder *dec;
    if (!dec) {
        dec = decoder_new(FUZZ_LINE_MAX_BYTES);
        assert(dec);
    }
    uint8_t *copy = malloc(size ? size : 1);
    assert(copy);
    memcpy(copy, data, size);
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    sbuf_init(&out, OUT_CAP);
    int r = pdproto_convert(copy, size, &out, &info, err);
    assert(r == 0 || r == -EINVAL || r == -EMSGSIZE);
    assert(memchr(err, '\0', sizeof err));
    if (r == -EINVAL) {
        unsigned long long at;
        int used = 0;
        assert(sscanf(err, "byte %llu: %n", &at, &used) == 1 && used > 0 && at <= size);
        assert(strstr(err + used, ": "));
    } else if (r == 0) {
        assert(memchr(info.version, '\0', sizeof info.version));
        fuzz_check_lines(dec, out.data ? out.data : "", out.len, info.n_events);
        struct sbuf again;
        struct pdproto_info info2;
        sbuf_init(&again, OUT_CAP);
        assert(pdproto_convert(copy, size, &again, &info2, err) == 0);
        assert(again.len == out.len && (!out.len || memcmp(again.data, out.data, out.len) == 0));
        assert(info2.n_events == info.n_events && info2.n_skipped == info.n_skipped);
        sbuf_done(&again);
    }
    sbuf_done(&out);
    free(copy);
    return 0;
}
