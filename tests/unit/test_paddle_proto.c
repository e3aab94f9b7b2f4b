/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of pdproto, the reader of Paddle's protobuf export: a NodeTreesProto built here
 * field by field becomes the expected protocol lines (host events with their Python/C++ thread,
 * runtime and device events, memory nodes after their host event naming it, the ExtraInfo CPU
 * figures last, the helper root skipped, unknown fields skipped), and every kind
 * of damage is refused with the byte offset and path of the field at fault.
 */
#include "import/paddle_proto.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message under construction. */
struct msg {
    uint8_t b[4096];
    size_t n;
};

static void put_varint(struct msg *m, uint64_t v)
{
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        m->b[m->n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
}

static void put_int(struct msg *m, unsigned field, uint64_t v)
{
    put_varint(m, (uint64_t)field << 3);
    put_varint(m, v);
}

static void put_bytes(struct msg *m, unsigned field, const void *p, size_t n)
{
    put_varint(m, (uint64_t)field << 3 | 2);
    put_varint(m, n);
    memcpy(m->b + m->n, p, n);
    m->n += n;
}

static void put_str(struct msg *m, unsigned field, const char *s)
{
    put_bytes(m, field, s, strlen(s));
}

static void put_msg(struct msg *m, unsigned field, const struct msg *sub)
{
    put_bytes(m, field, sub->b, sub->n);
}

static struct msg host_event(const char *name, uint64_t type, uint64_t start, uint64_t end)
{
    struct msg e = {.n = 0};
    put_str(&e, 1, name);
    put_int(&e, 2, type);
    put_int(&e, 3, start);
    put_int(&e, 4, end);
    put_int(&e, 5, 77);
    put_int(&e, 6, 78);
    return e;
}

static struct msg host_node(int64_t id, int64_t parent, const struct msg *ev)
{
    struct msg n = {.n = 0};
    put_int(&n, 1, (uint64_t)id);
    put_int(&n, 2, (uint64_t)parent);
    put_msg(&n, 3, ev);
    return n;
}

/* A file of one thread: the root, a ProfileStep, an operator with a runtime node holding one
 * kernel, and a memory node (skipped); extra info and an unknown field of each wire type. */
static struct msg sample(void)
{
    struct msg f = {.n = 0}, tree = {.n = 0}, ev, node;
    put_str(&f, 1, "1.0.2");
    put_int(&f, 2, 0);
    put_int(&tree, 1, 78);
    ev = host_event("root node", 7, 0, UINT64_MAX);
    node = host_node(0, -1, &ev);
    put_msg(&tree, 2, &node);
    ev = host_event("ProfileStep#2", 2, 1000000001, 1000500000);
    node = host_node(1, 0, &ev);
    put_msg(&tree, 2, &node);
    ev = host_event("matmul \"dygraph\"", 0, 1000000100, 1000000300);
    node = host_node(2, 1, &ev);
    struct msg rt = {.n = 0}, rte = {.n = 0}, dev = {.n = 0}, deve = {.n = 0}, mem = {.n = 0};
    put_str(&rte, 1, "cudaLaunchKernel");
    put_int(&rte, 2, 1000000150);
    put_int(&rte, 3, 1000000160);
    put_int(&rte, 4, 77);
    put_int(&rte, 5, 78);
    put_int(&rte, 6, 9);
    put_int(&rte, 7, 211);
    put_msg(&rt, 1, &rte);
    put_str(&deve, 1, "gemm");
    put_int(&deve, 2, 4);
    put_int(&deve, 3, 1000000200);
    put_int(&deve, 4, 1000000250);
    put_int(&deve, 5, 0);
    put_int(&deve, 6, 1);
    put_int(&deve, 7, 7);
    put_int(&deve, 8, 9);
    put_msg(&dev, 1, &deve);
    put_msg(&rt, 2, &dev);
    put_msg(&node, 4, &rt);
    struct msg meme = {.n = 0};
    put_int(&meme, 1, 1000000200);
    put_int(&meme, 2, 1); /* Free */
    put_int(&meme, 3, 94);
    put_int(&meme, 4, 77);
    put_int(&meme, 5, 78);
    put_int(&meme, 6, (uint64_t)-1280);
    put_str(&meme, 7, "Place(cpu)");
    put_int(&meme, 8, 10);
    put_int(&meme, 9, 20);
    put_int(&meme, 10, 30);
    put_int(&meme, 11, 40);
    put_msg(&mem, 1, &meme);
    put_msg(&node, 5, &mem);
    struct msg sup = {.n = 0};
    put_int(&sup, 1, 5);
    put_msg(&node, 6, &sup);
    put_msg(&tree, 2, &node);
    put_msg(&f, 3, &tree);
    struct msg kv = {.n = 0};
    put_str(&kv, 1, "78");
    put_str(&kv, 2, "MainThread");
    put_msg(&f, 4, &kv);
    struct msg cpu = {.n = 0};
    put_str(&cpu, 1, "Process Cpu Utilization");
    put_str(&cpu, 2, "1.500000");
    put_msg(&f, 4, &cpu);
    /* unknown fields: fixed64, fixed32, varint, bytes */
    put_varint(&f, 99u << 3 | 1);
    for (int i = 0; i < 8; i++)
        f.b[f.n++] = 0xff;
    put_varint(&f, 98u << 3 | 5);
    for (int i = 0; i < 4; i++)
        f.b[f.n++] = 0xff;
    put_int(&f, 97, 12345);
    put_str(&f, 96, "later");
    return f;
}

static const char *sample_lines =
    "{\"ph\":\"X\",\"cat\":\"ProfileStep\",\"name\":\"ProfileStep#2\",\"pid\":77,\"tid\":\"78(Python)\","
    "\"ts\":1000000.001,\"dur\":499.999}\n"
    "{\"ph\":\"X\",\"cat\":\"Operator\",\"name\":\"matmul \\\"dygraph\\\"\",\"pid\":77,\"tid\":\"78(C++)\","
    "\"ts\":1000000.1,\"dur\":0.2}\n"
    "{\"ph\":\"X\",\"cat\":\"CudaRuntime\",\"name\":\"cudaLaunchKernel\",\"pid\":77,\"tid\":\"78(C++)\","
    "\"ts\":1000000.15,\"dur\":0.01,\"args\":{\"correlation id\":9}}\n"
    "{\"ph\":\"X\",\"cat\":\"Kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":1000000.2,"
    "\"dur\":0.05,\"args\":{\"device\":0,\"context\":1,\"stream\":7,\"correlation id\":9}}\n"
    "{\"ph\":\"i\",\"cat\":\"Free\",\"name\":\"[memory]\",\"pid\":77,\"tid\":\"78(C++)\","
    "\"ts\":1000000.2,\"s\":\"t\",\"owner\":\"matmul \\\"dygraph\\\"\",\"owner_ts\":1000000.1,"
    "\"args\":{\"place\":\"Place(cpu)\",\"addr\":\"94\",\"increase_bytes\":-1280,"
    "\"current_allocated\":10,\"current_reserved\":20,\"peak_allocated\":30,\"peak_reserved\":40}}\n"
    "{\"ph\":\"M\",\"name\":\"ExtraInfo\",\"pid\":77,\"tid\":0,\"ts\":1000000.001,\"dur\":499.999,"
    "\"args\":{\"Process Cpu Utilization\":\"1.500000\"}}\n";

static int convert(const struct msg *m, struct sbuf *out, struct pdproto_info *info, char *err)
{
    sbuf_init(out, 1u << 20);
    return pdproto_convert(m->b, m->n, out, info, err);
}

START_TEST(test_pdproto_sample)
{
    struct msg m = sample();
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    ck_assert_int_eq(convert(&m, &out, &info, err), 0);
    ck_assert_str_eq(out.data, sample_lines);
    ck_assert_str_eq(info.version, "1.0.2");
    ck_assert_int_eq(info.n_events, 6);
    ck_assert_int_eq(info.n_threads, 1);
    ck_assert_int_eq(info.n_skipped, 1);
    sbuf_done(&out);
}
END_TEST

/* Every proper prefix of the sample is refused (a cut inside a field, or a file that ends
 * before its version when the cut is at 0), never read past. */
START_TEST(test_pdproto_every_truncation)
{
    struct msg m = sample();
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    size_t cut = (size_t)_i;
    if (cut >= m.n)
        return;
    uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any read past the end */
    memcpy(copy, m.b, cut);
    sbuf_init(&out, 1u << 20);
    int r = pdproto_convert(copy, cut, &out, &info, err);
    /* A cut between two top-level fields is a shorter valid file only when the version and
     * everything up to the cut are complete: the thread tree is one field, so that is
     * before it or after it. */
    if (r == 0)
        ck_assert_msg(out.len == 0 || strncmp(out.data, sample_lines, out.len) == 0, "%zu: %s",
                      cut, out.data);
    else
        ck_assert_msg(r == -EINVAL && strncmp(err, "byte ", 5) == 0, "%zu: %d %s", cut, r, err);
    free(copy);
    sbuf_done(&out);
}
END_TEST

static const struct {
    const char *what;
    size_t len;
    const char *bytes;
    const char *err; /* expected error text */
} bad[] = {
    {"empty", 0, "", "byte 0: NodeTreesProto: empty file"},
    {"no version", 2, "\x10\x01", "byte 2: NodeTreesProto: no version (field 1): not a Paddle protobuf export"},
    {"field 0", 2, "\x00\x01", "byte 0: NodeTreesProto: invalid field number 0"},
    {"group", 1, "\x0b", "byte 0: NodeTreesProto: field 1: groups (wire type 3) are not used by this format"},
    {"wire type 7", 1, "\x0f", "byte 0: NodeTreesProto: field 1: invalid wire type 7"},
    {"version as varint", 2, "\x08\x01", "byte 0: NodeTreesProto: version (field 1) has wire type 0, expected 2"},
    {"length past the end", 3, "\x0a\x05" "a", "byte 0: NodeTreesProto: field 1: length 5 runs past the end of its message (1 bytes left)"},
    {"truncated varint", 5, "\x0a\x01\x31\x10\x80", "byte 4: NodeTreesProto: truncated varint"},
    {"varint past 64 bits", 14, "\x0a\x01\x31\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02",
     "byte 4: NodeTreesProto: varint longer than 64 bits"},
    {"11-byte varint", 15, "\x0a\x01\x31\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x00",
     "byte 4: NodeTreesProto: varint longer than 64 bits"},
    {"truncated fixed64", 6, "\x0a\x01\x31\x19\x00\x00", "byte 3: NodeTreesProto: field 3: truncated fixed64"},
    {"host node without event", 7, "\x0a\x01\x31\x1a\x02\x12\x00",
     "byte 7: thread_trees[0].host_nodes[0]: host node without its host_trace_event"},
    {"host event without name", 11, "\x0a\x01\x31\x1a\x06\x12\x04\x1a\x02\x18\x05",
     "byte 9: thread_trees[0].host_nodes[0].host_trace_event: host_trace_event has no name"},
    {"thread id as bytes", 7, "\x0a\x01\x31\x1a\x02\x0a\x00",
     "byte 5: thread_trees[0]: thread_id (field 1) has wire type 2, expected 0"},
    {"extra info without value", 7, "\x0a\x01\x31\x22\x02\x0a\x00",
     "byte 7: extra_info[0]: entry without its value"},
};

START_TEST(test_pdproto_refuses)
{
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    size_t n = bad[_i].len;
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, bad[_i].bytes, n);
    sbuf_init(&out, 1u << 20);
    ck_assert_int_eq(pdproto_convert(copy, n, &out, &info, err), -EINVAL);
    ck_assert_msg(strcmp(err, bad[_i].err) == 0, "%s: got \"%s\"", bad[_i].what, err);
    free(copy);
    sbuf_done(&out);
}
END_TEST

/* Times the daemon would refuse are refused here, with the event's offset. */
START_TEST(test_pdproto_time_checks)
{
    static const struct {
        uint64_t start, end;
        const char *err;
    } cases[] = {
        {5000, 4000, "end_ns 4000 is before start_ns 5000"},
        {UINT64_C(1) << 62, (UINT64_C(1) << 62) + 1, "start_ns 4611686018427387904 is out of range"},
        {0, UINT64_C(3) << 60, "duration 3458764513820540928 ns is out of range"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct msg f = {.n = 0}, tree = {.n = 0};
        put_str(&f, 1, "1.0.2");
        struct msg ev = host_event("op", 0, cases[i].start, cases[i].end);
        struct msg node = host_node(1, 0, &ev);
        put_msg(&tree, 2, &node);
        put_msg(&f, 3, &tree);
        struct sbuf out;
        struct pdproto_info info;
        char err[PDPROTO_ERR_MAX];
        ck_assert_int_eq(convert(&f, &out, &info, err), -EINVAL);
        const char *at = "byte 17: thread_trees[0].host_nodes[0].host_trace_event: ";
        ck_assert_msg(strstr(err, cases[i].err) && strncmp(err, at, strlen(at)) == 0, "%s", err);
        sbuf_done(&out);
    }
}
END_TEST

/* The output cap gives -EMSGSIZE, not a cut file. */
START_TEST(test_pdproto_output_cap)
{
    struct msg m = sample();
    struct sbuf out;
    struct pdproto_info info;
    char err[PDPROTO_ERR_MAX];
    sbuf_init(&out, 100);
    ck_assert_int_eq(pdproto_convert(m.b, m.n, &out, &info, err), -EMSGSIZE);
    ck_assert_str_eq(err, "the converted events pass 1 GiB");
    sbuf_done(&out);
}
END_TEST

Suite *pdproto_suite(void);

/* Run by test_paddle_times.c's main, with the pdtrace suite. */
Suite *pdproto_suite(void)
{
    Suite *s = suite_create("pdproto");
    TCase *tc = tcase_create("core");
    struct msg m = sample();
    tcase_add_test(tc, test_pdproto_sample);
    tcase_add_loop_test(tc, test_pdproto_every_truncation, 0, (int)m.n);
    tcase_add_loop_test(tc, test_pdproto_refuses, 0, (int)(sizeof bad / sizeof bad[0]));
    tcase_add_test(tc, test_pdproto_time_checks);
    tcase_add_test(tc, test_pdproto_output_cap);
    suite_add_tcase(s, tc);
    return s;
}
