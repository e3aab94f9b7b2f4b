/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the importer's MindSpore file converters (msf_feed(), cli/import/mindspore_*.c:
 * the CSV reader, the JSON walker, every file kind). The first input byte picks the kind; the second
 * decides whether small lookup tables (step_trace_point_info, framework_raw, flops) and a
 * cpu_op_execute_timestamp file are fed first, so the joins and trace_view.json's alignment run
 * too, and (its bit 2) a pipeline-parallel ascend_cluster_analyse file, whose rows the step
 * trace's records then carry; the rest is the file (kind MSF_HCCL: hccl_raw, whose figures go
 * into the hello's "communication" object, checked to be one JSON object).
 *
 * Invariants: a feed returns 0 or -EINVAL/-EMSGSIZE with a NUL-terminated reason, and a line
 * and column only inside the input; the output is exactly n '\n'-terminated lines; and every
 * line is one the daemon takes: its own record decoder (daemon/ingest/decode.c) answers OK for
 * each (a converted file never makes the daemon reject a line).
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/import/mindspore_files.h"
#include "fuzz_lines.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1u << 20)

static struct decoder *dec;

static void feed_text(struct msf *m, enum msf_kind k, const char *text)
{
    size_t n = strlen(text);
    char *b = malloc(n + 1);
    assert(b);
    memcpy(b, text, n + 1);
    struct msf_err e;
    int r = msf_feed(m, k, b, n, &e);
    assert(r == 0);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dec) {
        dec = decoder_new(FUZZ_LINE_MAX_BYTES);
        assert(dec);
    }
    if (size < 2 || size > (1u << 16))
        return 0;
    enum msf_kind kind = (enum msf_kind)(data[0] % MSF_KIND_COUNT);
    struct msf *m = msf_new(OUT_MAX);
    assert(m);
    if (data[1] & 1) {
        feed_text(m, MSF_POINT_INFO, "{\"fp_start\": \"Default/a-op1\", \"bp_end\": [\"b\", \"c\"]}");
        feed_text(m, MSF_FRAMEWORK,
                  "task_id,stream_id,block_dim,full_kernel_name,op_name,kernel_name,kernel_type,"
                  "subgraph,op_info\n1,0,1,Default/a-op1,Default/a-op1,a-op1,A,Default,"
                  "\"{\"\"input_0\"\": {\"\"shape\"\": \"\"1\"\"}}\",7\n");
        feed_text(m, MSF_FLOPS, "full_kernel_name, MFLOPs(10^6 cube), GFLOPS(10^9 cube)\n"
                                "Default/a-op1, 1.5, 2e3\n");
        /* trace_view.json aligns on these (first start 1000 ns, last 2000 ns) */
        feed_text(m, MSF_CPU_OP_TS, "Default/a-op1;T;1000,0.001,0 2000,0.002,0\n");
    }
    if (data[1] & 2)
        feed_text(m, MSF_CLUSTER,
                  "computation,communication_alone_time,stage_time,receive_alone_time,"
                  "collective_communication_time\n1.5,2,3,4,5\n0.25,1,1,1,1\n");
    size_t n = size - 2;
    char *buf = malloc(n + 1);
    assert(buf);
    memcpy(buf, data + 2, n);
    buf[n] = '\0';
    struct msf_err e;
    int r = msf_feed(m, kind, buf, n, &e);
    assert(r == 0 || r == -EINVAL || r == -EMSGSIZE);
    if (r == 0) {
        r = msf_end(m, &e);
        assert(r == 0 || r == -EMSGSIZE);
    }
    if (r == 0) { /* the hello's "parallel" object: a JSON object, when there is one */
        char *par = NULL;
        int pr = msf_parallel_json(m, &par);
        assert(pr == 0 || pr == -ENOMEM);
        assert(!par || (par[0] == '{' && par[strlen(par) - 1] == '}'));
        free(par);
        /* the hello's "communication" object (hccl_raw): one valid JSON object, bounded */
        char *comm = NULL;
        pr = msf_communication_json(m, &comm);
        assert(pr == 0 || pr == -ENOMEM);
        if (comm) {
            struct json_reader j;
            json_reader_init(&j, comm, strlen(comm));
            assert(json_peek(&j) == JSON_OBJECT && json_skip(&j) && !j.bad &&
                   json_peek(&j) == JSON_ABSENT);
            assert(strlen(comm) <= 2 * MSF_COMM_MAX + 64);
        }
        free(comm);
    }
    if (r < 0) {
        assert(memchr(e.reason, '\0', sizeof e.reason) && e.reason[0]);
        uint64_t lines = 1;
        for (size_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
        assert(e.line <= lines);
    } else {
        size_t len;
        uint64_t nl;
        const char *out = msf_lines(m, &len, &nl);
        fuzz_check_lines(dec, out, len, nl);
        const char *fp = msf_fp_name(m), *bp = msf_bp_name(m);
        assert(!fp == !bp);
        assert(!fp || (strcmp(fp, bp) != 0 && strlen(fp) <= MSF_NAME_MAX));
    }
    free(buf);
    msf_free(m);
    return 0;
}
