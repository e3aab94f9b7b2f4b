/* SPDX-License-Identifier: MIT */
/*
 * pdproto: Paddle's protobuf export to protocol lines (contract in paddle_proto.h).
 *
 * Field numbers (nodetree.proto, checked against files Paddle 3.3.1 writes):
 *   NodeTreesProto:        1 version (string), 2 span_indx, 3 thread_trees, 4 extra_info,
 *                          5 device_property
 *   ThreadNodeTreeProto:   1 thread_id, 2 host_nodes
 *   HostTraceEventNode:    1 id, 2 parentid (-1: the helper root), 3 host_trace_event,
 *                          4 runtime_nodes, 5 mem_nodes, 6 op_supplement_nodes
 *   HostTraceEventProto:   1 name, 2 type, 3 start_ns, 4 end_ns, 5 process_id, 6 thread_id
 *   CudaRuntimeNode:       1 runtime_trace_event, 2 device_nodes
 *   CudaRuntimeTraceEvent: 1 name, 2 start_ns, 3 end_ns, 4 process_id, 5 thread_id,
 *                          6 correlation_id, 7 callback_id
 *   DeviceTraceEventNode:  1 device_event
 *   DeviceTraceEventProto: 1 name, 2 type, 3 start_ns, 4 end_ns, 5 device_id, 6 context_id,
 *                          7 stream_id, 8 correlation_id, 9..11 kernel/memcpy/memset info
 *   ExtraInfoMap:          1 key, 2 value
 * Events are laid out as ChromeTracingLogger writes them: host events on tid "<tid>(Python)"
 * for the Python-side types and "<tid>(C++)" for the others, cat the type's name; runtime
 * events on "<tid>(C++)" with their correlation id; device events on pid device, tid stream.
 */
#include "paddle_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "num.h"
#include "trace_scan.h"

enum wire { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* TracerEventType, in Paddle's order (paddle.profiler.TracerEventType). */
static const char *const type_names[] = {
    "Operator",     "Dataloader", "ProfileStep",   "CudaRuntime",   "Kernel",
    "Memcpy",       "Memset",     "UserDefined",   "OperatorInner", "Forward",
    "Backward",     "Optimization", "Communication", "PythonOp",    "PythonUserDefined",
    "DygraphKernelLaunch", "StaticKernelLaunch",
};
#define TYPE_COUNT (sizeof type_names / sizeof type_names[0])

/* The types ChromeTracingLogger puts on the "(Python)" thread. */
static bool python_side(uint64_t type)
{
    return type == 1 || type == 2 || type == 9 || type == 10 || type == 11 || type == 13 ||
           type == 14;
}

/* A run of fields: buf[pos, end), absolute offsets into the file. */
struct rd {
    size_t pos, end;
};

struct ctx {
    const uint8_t *buf;
    struct sbuf *out;
    struct pdproto_info *info;
    char *err;
    int rc;
    /* The window of the host events logged (for the ExtraInfo line) and the first one's pid. */
    bool any;
    uint64_t first_ns, end_ns, pid;
    struct rd extra_cpu, extra_sys; /* ExtraInfo values; end 0: absent */
};

struct fld {
    uint32_t num;
    int wt;
    uint64_t v;      /* varint or fixed value */
    size_t at;       /* offset of the field's key */
    struct rd sub;   /* WT_LEN: its bytes */
};

static int fail(struct ctx *c, size_t at, const char *path, const char *fmt, ...) SS_PRINTF(4, 5);

static int fail(struct ctx *c, size_t at, const char *path, const char *fmt, ...)
{
    int n = snprintf(c->err, PDPROTO_ERR_MAX, "byte %zu: %s: ", at, path);
    if (n >= 0 && n < PDPROTO_ERR_MAX) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, PDPROTO_ERR_MAX - (size_t)n, fmt, ap);
        va_end(ap);
    }
    c->rc = -EINVAL;
    return -EINVAL;
}

static void sub_path(char dst[PDPROTO_ERR_MAX], const char *fmt, ...) SS_PRINTF(2, 3);

/* dst = a field's path below its parent's, cut to fit. */
static void sub_path(char dst[PDPROTO_ERR_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, PDPROTO_ERR_MAX, fmt, ap);
    va_end(ap);
}

static int rd_varint(struct ctx *c, struct rd *r, const char *path, uint64_t *ret)
{
    size_t at = r->pos;
    uint64_t v = 0;
    for (int i = 0;; i++) {
        if (r->pos >= r->end)
            return fail(c, at, path, "truncated varint");
        uint8_t b = c->buf[r->pos++];
        if (i == 9 && b > 1) /* the 10th byte holds bit 63 only, and ends the varint */
            return fail(c, at, path, "varint longer than 64 bits");
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *ret = v;
            return 0;
        }
    }
}

/* Reads the next field of r. Returns 1 with *f, 0 at the end of r, or -EINVAL. */
static int rd_field(struct ctx *c, struct rd *r, const char *path, struct fld *f)
{
    if (r->pos >= r->end)
        return 0;
    f->at = r->pos;
    uint64_t key;
    if (rd_varint(c, r, path, &key) < 0)
        return -EINVAL;
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
        return fail(c, f->at, path, "invalid field number %llu", (unsigned long long)(key >> 3));
    f->num = (uint32_t)(key >> 3);
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case WT_VARINT:
        return rd_varint(c, r, path, &f->v) < 0 ? -EINVAL : 1;
    case WT_I64:
    case WT_I32: {
        size_t n = f->wt == WT_I64 ? 8 : 4;
        if (r->end - r->pos < n)
            return fail(c, f->at, path, "field %u: truncated fixed%zu", f->num, n * 8);
        f->v = 0;
        for (size_t i = 0; i < n; i++)
            f->v |= (uint64_t)c->buf[r->pos + i] << (8 * i);
        r->pos += n;
        return 1;
    }
    case WT_LEN: {
        uint64_t n;
        if (rd_varint(c, r, path, &n) < 0)
            return -EINVAL;
        if (n > r->end - r->pos)
            return fail(c, f->at, path, "field %u: length %llu runs past the end of its message (%zu bytes left)",
                        f->num, (unsigned long long)n, r->end - r->pos);
        f->sub.pos = r->pos;
        f->sub.end = r->pos + (size_t)n;
        r->pos += (size_t)n;
        return 1;
    }
    case 3:
    case 4:
        return fail(c, f->at, path, "field %u: groups (wire type %d) are not used by this format",
                    f->num, f->wt);
    default:
        return fail(c, f->at, path, "field %u: invalid wire type %d", f->num, f->wt);
    }
}

static int want(struct ctx *c, const struct fld *f, int wt, const char *path, const char *name)
{
    if (f->wt != wt)
        return fail(c, f->at, path, "%s (field %u) has wire type %d, expected %d", name, f->num,
                    f->wt, wt);
    return 0;
}

/* The fields an event message carries (host, runtime and device events share this shape). */
struct event {
    bool has_name, has_type, has_start, has_end, has_pid, has_tid;
    struct rd name;
    uint64_t type, start, end, pid, tid, corr, device, context, stream;
    size_t at;
};

/* Field numbers of one event message kind; 0 for none. */
struct layout {
    const char *what;
    uint32_t name, type, start, end, pid, tid, corr, device, context, stream;
};

static const struct layout host_layout = {"host_trace_event", 1, 2, 3, 4, 5, 6, 0, 0, 0, 0};
static const struct layout runtime_layout = {"runtime_trace_event", 1, 0, 2, 3, 4, 5, 6, 0, 0, 0};
static const struct layout device_layout = {"device_event", 1, 2, 3, 4, 0, 0, 8, 5, 6, 7};

static int read_event(struct ctx *c, struct rd r, const struct layout *l, const char *path,
                      struct event *e)
{
    memset(e, 0, sizeof *e);
    e->at = r.pos;
    struct fld f;
    int k;
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        struct {
            uint32_t num;
            uint64_t *v;
            bool *has;
            const char *name;
        } ints[] = {{l->type, &e->type, &e->has_type, "type"},
                    {l->start, &e->start, &e->has_start, "start_ns"},
                    {l->end, &e->end, &e->has_end, "end_ns"},
                    {l->pid, &e->pid, &e->has_pid, "process_id"},
                    {l->tid, &e->tid, &e->has_tid, "thread_id"},
                    {l->corr, &e->corr, NULL, "correlation_id"},
                    {l->device, &e->device, &e->has_pid, "device_id"},
                    {l->context, &e->context, NULL, "context_id"},
                    {l->stream, &e->stream, &e->has_tid, "stream_id"}};
        if (f.num == l->name) {
            if (want(c, &f, WT_LEN, path, "name") < 0)
                return -EINVAL;
            e->name = f.sub;
            e->has_name = true;
            continue;
        }
        for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
            if (!ints[i].num || f.num != ints[i].num)
                continue;
            if (want(c, &f, WT_VARINT, path, ints[i].name) < 0)
                return -EINVAL;
            *ints[i].v = f.v;
            if (ints[i].has)
                *ints[i].has = true;
        }
    }
    if (k < 0)
        return -EINVAL;
    const char *missing = !e->has_name ? "name" : (l->type && !e->has_type) ? "type"
                          : !e->has_start ? "start_ns" : !e->has_end ? "end_ns"
                          : !e->has_pid ? (l->pid ? "process_id" : "device_id")
                          : !e->has_tid ? (l->tid ? "thread_id" : "stream_id") : NULL;
    if (missing)
        return fail(c, e->at, path, "%s has no %s", l->what, missing);
    return 0;
}

/* Ends a line appended to c->out since line0: counts it, or fails (out of memory, too long). */
static int emit_check(struct ctx *c, size_t line0, size_t at, const char *path)
{
    struct sbuf *o = c->out;
    if (o->error) {
        snprintf(c->err, PDPROTO_ERR_MAX, "%s",
                 o->error == -ENOMEM ? "out of memory" : "the converted events pass 1 GiB");
        c->rc = o->error;
        return o->error;
    }
    if (o->len - line0 - 1 > TSCAN_EVENT_BYTES_MAX)
        return fail(c, at, path, "the event is longer than the daemon's line limit");
    c->info->n_events++;
    return 0;
}

/* Writes one X event; tid_side "Python" or "C++" makes the tid "<tid>(<side>)", NULL a number. */
static int emit(struct ctx *c, const struct event *e, const char *path, const char *cat,
                uint64_t pid, const char *tid_side, uint64_t tid, const char *args)
{
    if (e->start >= (uint64_t)NUM_TIME_MAX_NS)
        return fail(c, e->at, path, "start_ns %llu is out of range", (unsigned long long)e->start);
    if (e->end < e->start)
        return fail(c, e->at, path, "end_ns %llu is before start_ns %llu",
                    (unsigned long long)e->end, (unsigned long long)e->start);
    if (e->end - e->start >= (uint64_t)NUM_DUR_MAX_NS)
        return fail(c, e->at, path, "duration %llu ns is out of range",
                    (unsigned long long)(e->end - e->start));
    struct sbuf *o = c->out;
    size_t line0 = o->len;
    sbuf_adds(o, "{\"ph\":\"X\",\"cat\":");
    sbuf_json_strz(o, cat);
    sbuf_adds(o, ",\"name\":");
    sbuf_json_str(o, (const char *)c->buf + e->name.pos, e->name.end - e->name.pos);
    sbuf_printf(o, ",\"pid\":%llu,\"tid\":", (unsigned long long)pid);
    if (tid_side)
        sbuf_printf(o, "\"%llu(%s)\"", (unsigned long long)tid, tid_side);
    else
        sbuf_printf(o, "%llu", (unsigned long long)tid);
    sbuf_adds(o, ",\"ts\":");
    sbuf_json_us(o, (int64_t)e->start);
    sbuf_adds(o, ",\"dur\":");
    sbuf_json_us(o, (int64_t)(e->end - e->start));
    if (args)
        sbuf_adds(o, args);
    sbuf_adds(o, "}\n");
    return emit_check(c, line0, e->at, path);
}

static const char *type_name(uint64_t type, char buf[48])
{
    if (type < TYPE_COUNT)
        return type_names[type];
    snprintf(buf, 48, "TracerEventType%llu", (unsigned long long)type);
    return buf;
}

static int device_node(struct ctx *c, struct rd r, const char *path)
{
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX], tb[48], args[160];
    bool seen = false;
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        if (f.num != 1)
            continue;
        if (want(c, &f, WT_LEN, path, "device_event") < 0)
            return -EINVAL;
        sub_path(sub, "%s.device_event", path);
        struct event e;
        if (read_event(c, f.sub, &device_layout, sub, &e) < 0)
            return -EINVAL;
        snprintf(args, sizeof args,
                 ",\"args\":{\"device\":%llu,\"context\":%llu,\"stream\":%llu,\"correlation id\":%llu}",
                 (unsigned long long)e.device, (unsigned long long)e.context,
                 (unsigned long long)e.stream, (unsigned long long)e.corr);
        if (emit(c, &e, sub, type_name(e.type, tb), e.device, NULL, e.stream, args) < 0)
            return c->rc;
        seen = true;
    }
    if (k < 0)
        return -EINVAL;
    return seen ? 0 : fail(c, r.pos, path, "device node without its device_event");
}

static int runtime_node(struct ctx *c, struct rd r, const char *path)
{
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX], args[64];
    uint64_t n_dev = 0;
    bool seen = false;
    /* The runtime event first, then its device nodes, as Paddle logs them. */
    struct rd all = r;
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        if (f.num != 1)
            continue;
        if (want(c, &f, WT_LEN, path, "runtime_trace_event") < 0)
            return -EINVAL;
        sub_path(sub, "%s.runtime_trace_event", path);
        struct event e;
        if (read_event(c, f.sub, &runtime_layout, sub, &e) < 0)
            return -EINVAL;
        snprintf(args, sizeof args, ",\"args\":{\"correlation id\":%llu}", (unsigned long long)e.corr);
        if (emit(c, &e, sub, "CudaRuntime", e.pid, "C++", e.tid, args) < 0)
            return c->rc;
        seen = true;
    }
    if (k < 0)
        return -EINVAL;
    if (!seen)
        return fail(c, all.pos, path, "runtime node without its runtime_trace_event");
    while ((k = rd_field(c, &all, path, &f)) == 1) {
        if (f.num != 2)
            continue;
        if (want(c, &f, WT_LEN, path, "device_nodes") < 0)
            return -EINVAL;
        sub_path(sub, "%s.device_nodes[%llu]", path, (unsigned long long)n_dev++);
        if (device_node(c, f.sub, sub) < 0)
            return c->rc;
    }
    return k < 0 ? -EINVAL : 0;
}

/* TracerMemEventType, in Paddle's order. */
static const char *const mem_type_names[] = {"Allocate", "Free", "ReservedAllocate", "ReservedFree"};

/* One memory node as Paddle's export_chrome_tracing writes it (an "i" event named "[memory]" on
 * the "(C++)" thread), with "owner"/"owner_ts" naming the host event it hangs on (the one being
 * logged; none for Paddle's root), docs/PROTOCOL.md 9. */
static int mem_node(struct ctx *c, struct rd r, const char *path, const struct event *owner)
{
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX];
    bool seen = false;
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        if (f.num != 1)
            continue;
        if (want(c, &f, WT_LEN, path, "mem_event") < 0)
            return -EINVAL;
        sub_path(sub, "%s.mem_event", path);
        static const char *const names[] = {NULL, "timestamp_ns", "type", "addr", "process_id",
                                            "thread_id", "increase_bytes", "place",
                                            "current_allocated", "current_reserved",
                                            "peak_allocated", "peak_reserved"};
        uint64_t v[12] = {0};
        bool has[12] = {false};
        struct rd place = {0, 0};
        struct rd m = f.sub;
        struct fld g;
        while ((k = rd_field(c, &m, sub, &g)) == 1) {
            if (g.num < 1 || g.num > 11)
                continue;
            if (want(c, &g, g.num == 7 ? WT_LEN : WT_VARINT, sub, names[g.num]) < 0)
                return -EINVAL;
            if (g.num == 7)
                place = g.sub;
            else
                v[g.num] = g.v;
            has[g.num] = true;
        }
        if (k < 0)
            return -EINVAL;
        for (int i = 1; i <= 7; i++)
            if (!has[i])
                return fail(c, f.sub.pos, sub, "mem_event has no %s", names[i]);
        if (v[1] >= (uint64_t)NUM_TIME_MAX_NS)
            return fail(c, f.sub.pos, sub, "timestamp_ns %llu is out of range",
                        (unsigned long long)v[1]);
        char tb[48];
        const char *type = v[2] < 4 ? mem_type_names[v[2]] : tb;
        if (v[2] >= 4)
            snprintf(tb, sizeof tb, "TracerMemEventType%llu", (unsigned long long)v[2]);
        struct sbuf *o = c->out;
        size_t line0 = o->len;
        sbuf_adds(o, "{\"ph\":\"i\",\"cat\":");
        sbuf_json_strz(o, type);
        sbuf_printf(o, ",\"name\":\"[memory]\",\"pid\":%llu,\"tid\":\"%llu(C++)\",\"ts\":",
                    (unsigned long long)v[4], (unsigned long long)v[5]);
        sbuf_json_us(o, (int64_t)v[1]);
        sbuf_adds(o, ",\"s\":\"t\"");
        if (owner) {
            sbuf_adds(o, ",\"owner\":");
            sbuf_json_str(o, (const char *)c->buf + owner->name.pos, owner->name.end - owner->name.pos);
            sbuf_adds(o, ",\"owner_ts\":");
            sbuf_json_us(o, (int64_t)owner->start);
        }
        sbuf_adds(o, ",\"args\":{\"place\":");
        sbuf_json_str(o, (const char *)c->buf + place.pos, place.end - place.pos);
        sbuf_printf(o, ",\"addr\":\"%llu\",\"increase_bytes\":%lld",
                    (unsigned long long)v[3], (long long)(int64_t)v[6]);
        for (int i = 8; i <= 11; i++)
            if (has[i])
                sbuf_printf(o, ",\"%s\":%llu", names[i], (unsigned long long)v[i]);
        sbuf_adds(o, "}}\n");
        if (emit_check(c, line0, f.at, sub) < 0)
            return c->rc;
        seen = true;
    }
    if (k < 0)
        return -EINVAL;
    return seen ? 0 : fail(c, r.pos, path, "mem node without its mem_event");
}

static int host_node(struct ctx *c, struct rd r, const char *path)
{
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX], tb[48];
    bool root = false, has_event = false;
    struct rd ev = {0, 0}, all = r;
    /* Pass 1: check every field, find the event and whether this is the helper root. */
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        switch (f.num) {
        case 1:
            if (want(c, &f, WT_VARINT, path, "id") < 0)
                return -EINVAL;
            break;
        case 2:
            if (want(c, &f, WT_VARINT, path, "parentid") < 0)
                return -EINVAL;
            root = f.v == UINT64_MAX; /* int64 -1 */
            break;
        case 3:
            if (want(c, &f, WT_LEN, path, "host_trace_event") < 0)
                return -EINVAL;
            ev = f.sub;
            has_event = true;
            break;
        case 4:
            if (want(c, &f, WT_LEN, path, "runtime_nodes") < 0)
                return -EINVAL;
            break;
        case 5:
            if (want(c, &f, WT_LEN, path, "mem_nodes") < 0)
                return -EINVAL;
            break;
        case 6:
            if (want(c, &f, WT_LEN, path, "op_supplement_nodes") < 0)
                return -EINVAL;
            c->info->n_skipped++;
            break;
        default:
            break;
        }
    }
    if (k < 0)
        return -EINVAL;
    if (!has_event)
        return fail(c, all.pos, path, "host node without its host_trace_event");
    sub_path(sub, "%s.host_trace_event", path);
    struct event e;
    if (read_event(c, ev, &host_layout, sub, &e) < 0)
        return -EINVAL;
    /* The root is Paddle's helper node (name "root node", end_ns -1): never logged. */
    if (!root && emit(c, &e, sub, type_name(e.type, tb), e.pid,
                      python_side(e.type) ? "Python" : "C++", e.tid, NULL) < 0)
        return c->rc;
    if (!root) {
        if (!c->any || e.start < c->first_ns)
            c->first_ns = e.start;
        if (!c->any || e.end > c->end_ns)
            c->end_ns = e.end;
        if (!c->any)
            c->pid = e.pid;
        c->any = true;
    }
    /* Its runtime nodes, then its memory nodes, as Paddle logs them. */
    uint64_t n_rt = 0, n_mem = 0;
    struct rd again = all;
    while ((k = rd_field(c, &all, path, &f)) == 1) {
        if (f.num != 4)
            continue;
        sub_path(sub, "%s.runtime_nodes[%llu]", path, (unsigned long long)n_rt++);
        if (runtime_node(c, f.sub, sub) < 0)
            return c->rc;
    }
    if (k < 0)
        return -EINVAL;
    while ((k = rd_field(c, &again, path, &f)) == 1) {
        if (f.num != 5)
            continue;
        sub_path(sub, "%s.mem_nodes[%llu]", path, (unsigned long long)n_mem++);
        if (mem_node(c, f.sub, sub, root ? NULL : &e) < 0)
            return c->rc;
    }
    return k < 0 ? -EINVAL : 0;
}

static int thread_tree(struct ctx *c, struct rd r, const char *path)
{
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX];
    uint64_t n = 0;
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        if (f.num == 1 && want(c, &f, WT_VARINT, path, "thread_id") < 0)
            return -EINVAL;
        if (f.num != 2)
            continue;
        if (want(c, &f, WT_LEN, path, "host_nodes") < 0)
            return -EINVAL;
        sub_path(sub, "%s.host_nodes[%llu]", path, (unsigned long long)n++);
        if (host_node(c, f.sub, sub) < 0)
            return c->rc;
    }
    return k < 0 ? -EINVAL : 0;
}

static bool rd_is(const struct ctx *c, struct rd r, const char *lit)
{
    size_t n = strlen(lit);
    return r.end - r.pos == n && memcmp(c->buf + r.pos, lit, n) == 0;
}

static int extra_info(struct ctx *c, struct rd r, const char *path)
{
    struct fld f;
    int k;
    unsigned seen = 0;
    struct rd key = {0, 0}, value = {0, 0};
    while ((k = rd_field(c, &r, path, &f)) == 1) {
        if (f.num != 1 && f.num != 2)
            continue;
        if (want(c, &f, WT_LEN, path, f.num == 1 ? "key" : "value") < 0)
            return -EINVAL;
        seen |= f.num;
        if (f.num == 1)
            key = f.sub;
        else
            value = f.sub;
    }
    if (k < 0)
        return -EINVAL;
    if (seen != 3)
        return fail(c, r.pos, path, "entry without its %s", seen & 1 ? "value" : "key");
    if (rd_is(c, key, "Process Cpu Utilization"))
        c->extra_cpu = value;
    else if (rd_is(c, key, "System Cpu Utilization"))
        c->extra_sys = value;
    return 0;
}

/* The window's ExtraInfo record (docs/PROTOCOL.md 9), after every event. */
static int extra_line(struct ctx *c, size_t at)
{
    if (!c->any || (!c->extra_cpu.end && !c->extra_sys.end))
        return 0;
    struct sbuf *o = c->out;
    size_t line0 = o->len;
    sbuf_printf(o, "{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"pid\":%llu,\"tid\":0,\"ts\":",
                (unsigned long long)c->pid);
    sbuf_json_us(o, (int64_t)c->first_ns);
    sbuf_adds(o, ",\"dur\":");
    sbuf_json_us(o, (int64_t)(c->end_ns - c->first_ns));
    sbuf_adds(o, ",\"args\":{");
    if (c->extra_cpu.end) {
        sbuf_adds(o, "\"Process Cpu Utilization\":");
        sbuf_json_str(o, (const char *)c->buf + c->extra_cpu.pos, c->extra_cpu.end - c->extra_cpu.pos);
    }
    if (c->extra_sys.end) {
        sbuf_adds(o, c->extra_cpu.end ? ",\"System Cpu Utilization\":" : "\"System Cpu Utilization\":");
        sbuf_json_str(o, (const char *)c->buf + c->extra_sys.pos, c->extra_sys.end - c->extra_sys.pos);
    }
    sbuf_adds(o, "}}\n");
    return emit_check(c, line0, at, "extra_info");
}

int pdproto_convert(const uint8_t *buf, size_t len, struct sbuf *out, struct pdproto_info *info,
                    char err[PDPROTO_ERR_MAX])
{
    struct ctx c = {.buf = buf, .out = out, .info = info, .err = err, .rc = 0};
    struct rd r = {0, len};
    struct fld f;
    int k;
    char sub[PDPROTO_ERR_MAX];
    bool has_version = false;
    uint64_t n_extra = 0;
    memset(info, 0, sizeof *info);
    err[0] = '\0';
    if (len == 0)
        return fail(&c, 0, "NodeTreesProto", "empty file");
    while ((k = rd_field(&c, &r, "NodeTreesProto", &f)) == 1) {
        switch (f.num) {
        case 1: {
            if (want(&c, &f, WT_LEN, "NodeTreesProto", "version") < 0)
                return -EINVAL;
            size_t n = f.sub.end - f.sub.pos;
            if (n >= sizeof info->version)
                n = sizeof info->version - 1;
            for (size_t i = 0; i < n; i++) {
                uint8_t ch = buf[f.sub.pos + i];
                if (ch < 0x20 || ch > 0x7e)
                    return fail(&c, f.at, "NodeTreesProto", "version is not printable text");
                info->version[i] = (char)ch;
            }
            info->version[n] = '\0';
            has_version = true;
            break;
        }
        case 2:
            if (want(&c, &f, WT_VARINT, "NodeTreesProto", "span_indx") < 0)
                return -EINVAL;
            break;
        case 3:
            if (want(&c, &f, WT_LEN, "NodeTreesProto", "thread_trees") < 0)
                return -EINVAL;
            sub_path(sub, "thread_trees[%llu]", (unsigned long long)info->n_threads++);
            if (thread_tree(&c, f.sub, sub) < 0)
                return c.rc;
            break;
        case 4:
            if (want(&c, &f, WT_LEN, "NodeTreesProto", "extra_info") < 0)
                return -EINVAL;
            sub_path(sub, "extra_info[%llu]", (unsigned long long)n_extra++);
            if (extra_info(&c, f.sub, sub) < 0)
                return -EINVAL;
            break;
        case 5:
            if (want(&c, &f, WT_LEN, "NodeTreesProto", "device_property") < 0)
                return -EINVAL;
            break;
        default:
            break;
        }
    }
    if (k < 0)
        return -EINVAL;
    if (!has_version)
        return fail(&c, len, "NodeTreesProto", "no version (field 1): not a Paddle protobuf export");
    return extra_line(&c, len) < 0 ? c.rc : 0;
}
