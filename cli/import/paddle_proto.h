/* SPDX-License-Identifier: MIT */
/*
 * pdproto: Paddle's protobuf export (`paddle.profiler.export_protobuf`, `Profiler.export(path,
 * format="pb")`: a `.paddle_trace.pb` file holding one NodeTreesProto, Paddle's
 * paddle/fluid/platform/profiler/dump/nodetree.proto) turned into protocol lines: the same
 * Chrome-trace events Paddle's export_chrome_tracing writes for the same nodes, with times
 * exact to the ns (the file holds start_ns and end_ns); each host event's memory nodes follow it
 * as "[memory]" events naming it ("owner", "owner_ts"), and the file's ExtraInfo CPU figures
 * come last as an "ExtraInfo" record over the window (docs/PROTOCOL.md 9).
 *
 * A small hand-written reader of the protobuf wire format: varints (at most 10 bytes, no
 * overflow), length-delimited fields inside their parent's bounds, fixed64 and fixed32 skipped
 * where nothing needs them; groups, field number 0 and known fields of the wrong wire type are
 * errors, unknown fields are skipped. Every problem is reported with the byte offset of the
 * field at fault and the path to it. Pure: bytes in, lines out, no I/O.
 */
#ifndef STEPSCOPE_IMPORT_PDPROTO_H
#define STEPSCOPE_IMPORT_PDPROTO_H

#include <stddef.h>
#include <stdint.h>

#include "sbuf.h"

#define PDPROTO_ERR_MAX 256             /* longest error message, NUL included */
#define PDPROTO_BYTES_MAX (1ull << 30)  /* a file and its converted lines */

struct pdproto_info {
    char version[64];        /* NodeTreesProto.version ("1.0.2"), cut to fit */
    uint64_t n_events;       /* lines written */
    uint64_t n_threads;      /* thread trees */
    uint64_t n_skipped;      /* operator-supplement nodes: read, not sent */
};

/* Converts the file's bytes buf[0, len) into '\n'-terminated lines appended to out. Returns 0,
 * or -EINVAL (not a valid export: err says where and why, as "byte N: path: reason"),
 * -EMSGSIZE (out would pass its cap) or -ENOMEM, with err set. */
int pdproto_convert(const uint8_t *buf, size_t len, struct sbuf *out, struct pdproto_info *info,
                    char err[PDPROTO_ERR_MAX]);

#endif
