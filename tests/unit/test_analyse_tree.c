/* SPDX-License-Identifier: MIT */
/*
 * Tests of analyse's operator tree (tree.c) on small hand-built traces whose figures are worked
 * out in the comments with Paddle's rules (profiler_statistic.py: HostStatisticNode,
 * EventSummary.OperatorItem). Real runs: tests/frameworks/test_paddle_summary.py (Paddle's own
 * summary) and tests/integ/test_tree.py (torch's key_averages()).
 */
#include "analyse_roles.h"
#include "analyse_steptrace.h"
#include "analyse_tree.h"

#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static struct analyse_span mk(int64_t ts, int64_t dur, int64_t tid, const char *cat,
                              const char *name, int64_t corr)
{
    struct analyse_span s = {
        .ts_ns = ts, .dur_ns = dur, .name = name, .name_len = strlen(name), .cat = cat,
        .cat_len = strlen(cat), .pid = 1, .tid = tid, .correlation = corr, .external_id = -1,
    };
    s.role = analyse_role_of(&s, NULL);
    return s;
}

static bool named(const struct analyse_tree_node *x, const char *name)
{
    return x->name_len == strlen(name) && memcmp(x->name, name, x->name_len) == 0;
}

/* Two steps on one thread, kernels on device pid 0:
 *   step 1 [0, 1000): matmul [100, 600) { infer_shape [110, 150), compute [160, 560)
 *                       { cudaLaunchKernel [200, 220) corr 7 -> gemm [300, 500) } ,
 *                       cudaMemcpyAsync [570, 590) corr 8 -> Memcpy HtoD [600, 650) }
 *                     relu [700, 800) (nested in nothing) { relu (nested operator) [710, 790) }
 *   step 2 [1000, 2000): matmul [1100, 1400) { compute [1110, 1390)
 *                       { cudaLaunchKernel [1200, 1210) corr 9 -> gemm [1300, 1400) } }
 *   a kernel with a correlation nobody launched (corr 99), and one without any. */
static size_t trace(struct analyse_span *s)
{
    size_t n = 0;
    s[n++] = mk(0, 1000, 1, "ProfileStep", "ProfileStep#1", -1);
    s[n++] = mk(100, 500, 1, "Operator", "matmul dygraph", -1);
    s[n++] = mk(110, 40, 1, "OperatorInner", "infer_shape", -1);
    s[n++] = mk(160, 400, 1, "OperatorInner", "compute", -1);
    s[n++] = mk(200, 20, 1, "CudaRuntime", "cudaLaunchKernel", 7);
    s[n++] = mk(300, 200, 0, "Kernel", "gemm", 7);
    s[n++] = mk(570, 20, 1, "CudaRuntime", "cudaMemcpyAsync", 8);
    s[n++] = mk(600, 50, 0, "Memcpy", "Memcpy HtoD", 8);
    s[n++] = mk(700, 100, 1, "Operator", "relu dygraph", -1);
    s[n++] = mk(710, 80, 1, "Operator", "relu dygraph", -1);
    s[n++] = mk(1000, 1000, 1, "ProfileStep", "ProfileStep#2", -1);
    s[n++] = mk(1100, 300, 1, "Operator", "matmul dygraph[0.300 us]", -1);
    s[n++] = mk(1110, 280, 1, "OperatorInner", "compute", -1);
    s[n++] = mk(1200, 10, 1, "CudaRuntime", "cudaLaunchKernel", 9);
    s[n++] = mk(1300, 100, 0, "Kernel", "gemm", 9);
    s[n++] = mk(1500, 30, 0, "Kernel", "orphan", 99);
    s[n++] = mk(1600, 30, 0, "Kernel", "nolink", -1);
    return n;
}

START_TEST(test_tree_operators)
{
    struct analyse_span s[32];
    size_t n = trace(s);
    struct analyse_tree *t = NULL;
    ck_assert_int_eq(analyse_tree_operators(s, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                            NULL, &t),
                     0);
    ck_assert_uint_eq(t->n_steps, 2);
    ck_assert_uint_eq(t->n_device, 5);
    ck_assert_uint_eq(t->n_linked, 3);
    /* matmul (800) first, then relu (100 + 80 = 180) */
    ck_assert_uint_eq(t->n, 6);
    const struct analyse_tree_node *m = &t->nodes[0];
    ck_assert(named(m, "matmul dygraph") && m->kind == ANALYSE_TREE_OPERATOR);
    ck_assert_uint_eq(m->parent, ANALYSE_TREE_ROOT);
    ck_assert_int_eq(m->calls, 2);
    ck_assert_int_eq(m->total_ns, 800);
    /* self: 500 - 40 - 400 - 20 (the memcpy call is its own child) + 300 - 280 */
    ck_assert_int_eq(m->self_ns, 40 + 20);
    ck_assert_int_eq(m->min_ns, 300);
    ck_assert_int_eq(m->max_ns, 500);
    /* device: 200 + 50 then 100; self: the memcpy its own runtime child launched */
    ck_assert_int_eq(m->device_ns, 350);
    ck_assert_int_eq(m->self_device_ns, 50);
    ck_assert_int_eq(m->device_min_ns, 100);
    ck_assert_int_eq(m->device_max_ns, 250);
    /* inner rows in first-appearance order, then the operator's own device row */
    const struct analyse_tree_node *is = &t->nodes[1], *c = &t->nodes[2], *g = &t->nodes[3],
                                   *mc = &t->nodes[4];
    ck_assert(named(is, "infer_shape") && is->kind == ANALYSE_TREE_INNER && is->parent == 0);
    ck_assert_int_eq(is->depth, 1);
    ck_assert_int_eq(is->calls, 1);
    ck_assert_int_eq(is->self_ns, 40);
    ck_assert_double_eq_tol(is->ratio, 40.0 / 800, 1e-12);
    ck_assert(named(c, "compute") && c->kind == ANALYSE_TREE_INNER && c->parent == 0);
    ck_assert_int_eq(c->calls, 2);
    ck_assert_int_eq(c->total_ns, 680);
    ck_assert_int_eq(c->self_ns, 680 - 30);
    ck_assert_int_eq(c->device_ns, 300);
    ck_assert_int_eq(c->self_device_ns, 300);
    ck_assert_double_eq_tol(c->device_ratio, 300.0 / 350, 1e-12);
    ck_assert(named(g, "gemm") && g->kind == ANALYSE_TREE_DEVICE && g->parent == 2);
    ck_assert_int_eq(g->depth, 2);
    ck_assert_int_eq(g->calls, 2);
    ck_assert_int_eq(g->device_ns, 300);
    ck_assert_int_eq(g->device_min_ns, 100);
    ck_assert_int_eq(g->device_max_ns, 200);
    ck_assert_int_eq(g->total_ns, 0);
    ck_assert(named(mc, "Memcpy HtoD") && mc->kind == ANALYSE_TREE_DEVICE && mc->parent == 0);
    /* relu: both calls, the nested one too; no inner row (an operator is not an inner call) */
    const struct analyse_tree_node *r = &t->nodes[5];
    ck_assert(named(r, "relu dygraph") && r->parent == ANALYSE_TREE_ROOT);
    ck_assert_int_eq(r->calls, 2);
    ck_assert_int_eq(r->total_ns, 180);
    ck_assert_int_eq(r->self_ns, 20 + 80);
    ck_assert_double_eq_tol(m->ratio, 800.0 / 980, 1e-12);
    ck_assert_double_eq_tol(m->device_ratio, 1.0, 1e-12);
    /* ids: distinct, and the same node keeps its id in another window */
    uint64_t gemm_id = g->id;
    for (size_t i = 0; i < t->n; i++)
        for (size_t j = i + 1; j < t->n; j++)
            ck_assert(t->nodes[i].id != t->nodes[j].id);
    analyse_tree_free(t);

    ck_assert_int_eq(analyse_tree_operators(s, n, 2, 2, NULL, &t), 0);
    ck_assert_uint_eq(t->n_steps, 1);
    ck_assert_uint_eq(t->n, 3); /* matmul { compute { gemm } } */
    ck_assert_int_eq(t->nodes[0].total_ns, 300);
    ck_assert(named(&t->nodes[2], "gemm") && t->nodes[2].id == gemm_id);
    analyse_tree_free(t);

    ck_assert_int_eq(analyse_tree_operators(s, n, 5, 9, NULL, &t), -ENOENT);
    ck_assert_int_eq(analyse_tree_operators(NULL, 1, 0, 1, NULL, &t), -EINVAL);
    ck_assert_int_eq(analyse_tree_operators(s, 0, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                            NULL, &t),
                     0);
    ck_assert_uint_eq(t->n, 0);
    analyse_tree_free(t);
}
END_TEST

/* torch-tb-profiler's module view on one thread, one step:
 *   nn.Module: Net_0 [0, 1000) {
 *     aten::linear [10, 100) { cudaLaunchKernel [20, 30) corr 1 -> k1 (40 ns) }
 *     nn.Module: Linear_0 [100, 400) { aten::addmm [110, 300) { cudaLaunchKernel [120, 130)
 *                                         corr 2 -> k2 (60 ns) }
 *                                    Optimizer.step#SGD.step [300, 350) (no operator) }
 *     cudaLaunchKernel [450, 460) corr 3 -> k3 (10 ns) (under the module itself: not linked by
 *                                                         tb-profiler's External id)
 *     aten::relu [500, 1100) (ends past the module: left out, as tb-profiler does)
 *     nn.Module: Linear_0 [600, 700) }
 *   a python_function that is no module [0, 1000) and a second call of Net_0 [2000, 2100). */
static size_t modules_trace(struct analyse_span *s)
{
    size_t n = 0;
    s[n++] = mk(0, 3000, 1, "user_annotation", "ProfilerStep#1", -1);
    s[n++] = mk(0, 1000, 1, "python_function", "nn.Module: Net_0", -1);
    s[n++] = mk(0, 1000, 1, "python_function", "train.py(3): step", -1);
    s[n++] = mk(10, 90, 1, "cpu_op", "aten::linear", -1);
    s[n++] = mk(20, 10, 1, "cuda_runtime", "cudaLaunchKernel", 1);
    s[n++] = mk(40, 40, 0, "kernel", "k1", 1);
    s[n++] = mk(100, 300, 1, "python_function", "nn.Module: Linear_0", -1);
    s[n++] = mk(110, 190, 1, "cpu_op", "aten::addmm", -1);
    s[n++] = mk(120, 10, 1, "cuda_runtime", "cudaLaunchKernel", 2);
    s[n++] = mk(150, 60, 0, "kernel", "k2", 2);
    s[n++] = mk(300, 50, 1, "cpu_op", "Optimizer.step#SGD.step", -1);
    s[n++] = mk(450, 10, 1, "cuda_runtime", "cudaLaunchKernel", 3);
    s[n++] = mk(470, 10, 0, "kernel", "k3", 3);
    s[n++] = mk(500, 600, 1, "cpu_op", "aten::relu", -1);
    s[n++] = mk(600, 100, 1, "python_function", "nn.Module: Linear_0", -1);
    s[n++] = mk(2000, 100, 1, "python_function", "nn.Module: Net_0", -1);
    return n;
}

START_TEST(test_tree_modules)
{
    struct analyse_span s[32];
    size_t n = modules_trace(s);
    struct analyse_tree *t = NULL;
    ck_assert_int_eq(analyse_tree_modules(s, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST, NULL,
                                          &t),
                     0);
    ck_assert_uint_eq(t->n_module_spans, 4);
    ck_assert_uint_eq(t->n_device, 3);
    ck_assert_uint_eq(t->n_linked, 2); /* k3's runtime call sits right under a module */
    ck_assert_uint_eq(t->n, 2);
    const struct analyse_tree_node *net = &t->nodes[0], *lin = &t->nodes[1];
    ck_assert(named(net, "Net_0") && net->kind == ANALYSE_TREE_MODULE);
    ck_assert_int_eq(net->calls, 2);
    ck_assert_int_eq(net->operators, 1); /* aten::linear; relu is left out */
    ck_assert_int_eq(net->total_ns, 1100);
    /* self: 1000 - 90 - 300 - 100 (the runtime call is no node), + 100 */
    ck_assert_int_eq(net->self_ns, 510 + 100);
    ck_assert_int_eq(net->device_ns, 40 + 60);
    ck_assert_int_eq(net->self_device_ns, 40);
    ck_assert(named(lin, "Linear_0") && lin->parent == 0 && lin->depth == 1);
    ck_assert_int_eq(lin->calls, 2);
    ck_assert_int_eq(lin->operators, 1); /* the optimizer step is no operator to tb-profiler */
    ck_assert_int_eq(lin->total_ns, 400);
    ck_assert_int_eq(lin->self_ns, 300 - 190 - 50 + 100);
    ck_assert_int_eq(lin->device_ns, 60);
    ck_assert_int_eq(lin->self_device_ns, 60);
    ck_assert_double_eq_tol(lin->ratio, 400.0 / 1100, 1e-12);
    analyse_tree_free(t);
}
END_TEST

/* A stop requested before the computation ends it with -ECANCELED. */
START_TEST(test_tree_stop)
{
    struct analyse_span s[32];
    size_t n = trace(s);
    _Atomic bool stop = true;
    struct analyse_tree *t = NULL;
    ck_assert_int_eq(analyse_tree_operators(s, n, ANALYSE_ST_ALL_FIRST, ANALYSE_ST_ALL_LAST,
                                            &stop, &t),
                     -ECANCELED);
    ck_assert_ptr_null(t);
    ck_assert(analyse_tree_bytes(1000) > 1000 * sizeof(struct analyse_tree_node));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("analyse_tree");
    TCase *tc = tcase_create("tree");
    tcase_add_test(tc, test_tree_operators);
    tcase_add_test(tc, test_tree_stop);
    tcase_add_test(tc, test_tree_modules);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
