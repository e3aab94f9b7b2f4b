/* SPDX-License-Identifier: MIT */
/*
 * parse_bench: how many Chrome-trace events a second one core frames and decodes, the ingest hot
 * path without the socket. It builds N (default 2,000,000) realistic ~240-byte Kineto-like "X"
 * events, varied so that no two lines are alike, pushes them through core/lbuf in 64 KiB reads as
 * a connection would, decodes every line with the ingest decoder, and prints
 * events_per_s=<N> (plus bytes_per_s and ns_per_event) on stdout. Exit status 1 if any line failed
 * to decode. Usage: parse_bench [n_events]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/clock.h"
#include "../../lib/lbuf.h"
#include "../../daemon/core/decode.h"

#define READ_BYTES 65536

static const char *kernels[] = {
    "void at::native::vectorized_elementwise_kernel<4>",
    "volta_sgemm_128x64_nn",
    "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int=512>",
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "void at::native::reduce_kernel<512, 1>",
};

int main(int argc, char **argv)
{
    size_t n_events = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    size_t cap = n_events * 300 + 1;
    char *text = malloc(cap);
    if (!text)
        return 1;
    size_t len = 0;
    for (size_t i = 0; i < n_events; i++) {
        int n = snprintf(text + len, cap - len,
                         "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":%zu,"
                         "\"ts\":%" PRIu64 ".%03zu,\"dur\":%zu.%zu,\"args\":{\"stream\":%zu,"
                         "\"correlation\":%zu,\"grid\":[%zu,1,1],\"block\":[128,1,1]}}\n",
                         kernels[i % 5], 7 + i % 4, (uint64_t)1700000000000000 + i * 13,
                         i % 1000, 1 + i % 97, i % 10, 7 + i % 3, 12345 + i, 80 + i % 40);
        len += (size_t)n;
    }

    struct decoder *dec = decoder_new(1 << 20);
    struct lbuf b;
    static char arena_buf[1 << 21];
    struct json_arena arena = {arena_buf, 0, sizeof arena_buf};
    if (!dec || lbuf_init(&b, 1 << 20) < 0)
        return 1;
    size_t n_ok = 0, n_bad = 0;
    int64_t sum = 0;
    int64_t t0 = clock_mono_ns();
    for (size_t off = 0; off < len;) {
        size_t room;
        char *space = lbuf_space(&b, &room);
        size_t n = len - off;
        if (n > room)
            n = room;
        if (n > READ_BYTES)
            n = READ_BYTES;
        memcpy(space, text + off, n); /* stands in for the kernel's copy in read() */
        lbuf_commit(&b, n);
        off += n;
        char *line;
        size_t ll;
        int r;
        while ((r = lbuf_next(&b, &line, &ll)) != 0) {
            struct record rec;
            char msg[DECODE_MSG_MAX];
            if (r > 0 &&
                decode_record(dec, line, ll, &arena, &rec, msg) == DECODE_OK) {
                n_ok++;
                sum += rec.ts_ns + rec.dur_ns;
            } else {
                n_bad++;
            }
        }
        arena.used = 0;
    }
    int64_t dt = clock_mono_ns() - t0;
    double s = (double)dt / 1e9;
    printf("events=%zu bad=%zu bytes=%zu avg_event_bytes=%zu\n", n_ok, n_bad, len,
           len / (n_events ? n_events : 1));
    printf("events_per_s=%.0f\nbytes_per_s=%.0f\nns_per_event=%.1f\n", (double)n_ok / s,
           (double)len / s, (double)dt / (double)(n_ok ? n_ok : 1));
    fprintf(stderr, "checksum %" PRId64 "\n", sum);
    lbuf_done(&b);
    decoder_free(dec);
    free(text);
    return n_bad == 0 ? 0 : 1;
}
