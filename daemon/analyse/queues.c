/* SPDX-License-Identifier: MIT */
/*
 * Data queues and pipeline: queue-depth statistics per step, MindInsight's data-queue verdict
 * (data processing / transmission / neither) and its dataset-pipeline bottleneck rules, each
 * result carrying the numbers that triggered it. It sits between the store (queue samples and
 * pipeline topology as the collectors sent them) and the web routes queues, pipeline and
 * helper; no I/O.
 *
 * Results are codes plus evidence, and the sentence is a static string: the API and the helper
 * decide how to word and localise them, and a test can compare numbers instead of prose.
 */
#include "analyse_queues.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stable merge of a[0..na) and b[0..nb) into out. */
static void merge(const struct analyse_queue_sample *a, size_t na,
                  const struct analyse_queue_sample *b, size_t nb, struct analyse_queue_sample *out)
{
    size_t i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        out[k++] = b[j].step < a[i].step ? b[j++] : a[i++];
    while (i < na)
        out[k++] = a[i++];
    while (j < nb)
        out[k++] = b[j++];
}

int analyse_queue_sort(struct analyse_queue_sample *s, size_t n)
{
    if (n < 2)
        return 0;
    struct analyse_queue_sample *tmp = malloc(n * sizeof *tmp);
    if (!tmp)
        return -ENOMEM;
    /* Bottom-up merge sort, ping-ponging between s and tmp. */
    struct analyse_queue_sample *src = s, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            merge(src + lo, mid - lo, src + mid, hi - mid, dst + lo);
        }
        struct analyse_queue_sample *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != s)
        memcpy(s, src, n * sizeof *s);
    free(tmp);
    return 0;
}

void analyse_queue_stats(const struct analyse_queue_sample *s, size_t n,
                         struct analyse_queue_stats *ret)
{
    struct analyse_queue_stats st = {0};
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].size == 0)
            st.n_empty++;
        if (s[i].capacity >= 0 && s[i].size == s[i].capacity)
            st.n_full++;
        if (i == 0 || s[i].size > st.max_size)
            st.max_size = s[i].size;
        sum += (double)s[i].size;
    }
    st.n_samples = n;
    if (n > 0) {
        st.empty_ratio = (double)st.n_empty / (double)n;
        st.full_ratio = (double)st.n_full / (double)n;
        st.avg_size = sum / (double)n;
    }
    *ret = st;
}

void analyse_queue_time_stats(const struct analyse_queue_time *t, size_t n,
                              struct analyse_queue_time_stats *ret)
{
    struct analyse_queue_time_stats st = {{0}, {0}};
    double sum[ANALYSE_QUEUE_TIME_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)t[i].kind >= ANALYSE_QUEUE_TIME_COUNT)
            continue;
        st.n[t[i].kind]++;
        sum[t[i].kind] += (double)t[i].dur_ns;
    }
    for (size_t k = 0; k < ANALYSE_QUEUE_TIME_COUNT; k++)
        st.avg_ns[k] = st.n[k] ? sum[k] / (double)st.n[k] : 0.0;
    *ret = st;
}

void analyse_queue_verdict(const struct analyse_queue_stats *host,
                           const struct analyse_queue_stats *device, double threshold,
                           struct analyse_queue_verdict *ret)
{
    struct analyse_queue_verdict v = {0};
    v.threshold = threshold;
    v.has_host = host && host->n_samples > 0;
    v.has_device = device && device->n_samples > 0;
    v.code = "";
    v.message = "No host queue samples: no data-queue verdict.";
    if (v.has_device) {
        v.device_empty = device->n_empty;
        v.device_total = device->n_samples;
    }
    if (!v.has_host) {
        *ret = v;
        return;
    }
    v.host_empty = host->n_empty;
    v.host_full = host->n_full;
    v.host_total = host->n_samples;
    v.host_empty_pct = 100.0 * (double)v.host_empty / (double)v.host_total;
    v.empty_rate_pct = (int)ceil(v.host_empty_pct);
    /* MindInsight compares counts, empty > total * threshold, strictly. */
    if ((double)v.host_empty > (double)v.host_total * threshold) {
        v.status = ANALYSE_QUEUE_STATUS_DATA_PROCESS;
        v.code = "data_process";
        v.message = "The host queue was empty in more steps than the threshold allows: data "
                    "processing is the bottleneck; see the pipeline operators.";
    } else if (v.has_device && v.device_empty > 0) {
        v.status = ANALYSE_QUEUE_STATUS_TRANSMISSION;
        v.code = "data_transmission";
        v.message = "The host queue keeps up but the device queue ran empty: the transfer from "
                    "host to device is the bottleneck.";
    } else {
        /* MindInsight's catch-all keeps its code (a MindSpore job's answer stays the peer's),
         * but the sentence says what was measured: a job without a device queue (any torch
         * job) has only its host queue to speak of. */
        v.status = ANALYSE_QUEUE_STATUS_DEVICE_QUEUE;
        v.code = "device_queue_warning";
        v.message = v.has_device
                        ? "Neither queue runs empty often; the data-processing optimisation "
                          "suggestions may still help."
                        : "The host queue is rarely empty: data loading keeps up (no device-side "
                          "queue was recorded).";
    }
    *ret = v;
}

double analyse_pipe_usage(const int64_t *sizes, size_t n, int64_t length)
{
    if (!sizes || n == 0 || length <= 0)
        return -1.0;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (double)sizes[i];
    return sum / (double)n / (double)length;
}

static double usage_of(const struct analyse_pipe_op *op)
{
    return op->usage < 0 ? 0.0 : op->usage;
}

static bool type_is(const struct analyse_pipe_op *op, const char *a, const char *b)
{
    return op->op_type && (strcmp(op->op_type, a) == 0 || strcmp(op->op_type, b) == 0);
}

/* The advice for a flagged op: by type first (a GeneratorOp is always a source, so
 * MindInsight's leaf-first order would never reach its generator advice), then source ops. */
static void advise(const struct analyse_pipe_op *op, struct analyse_pipe_finding *f)
{
    if (type_is(op, "GeneratorOp", "Generator")) {
        f->advice = ANALYSE_PIPE_ADVICE_GENERATOR_OP;
        f->code = "minddata_pipeline-generator_op";
        f->message = "This GeneratorOp may be the bottleneck: try to increase "
                     "num_parallel_workers, or replace it with MindRecordDataset.";
    } else if (type_is(op, "MapOp", "Map")) {
        f->advice = ANALYSE_PIPE_ADVICE_MAP_OP;
        f->code = "minddata_pipeline-map_op";
        f->message = "This MapOp may be the bottleneck: try to increase num_parallel_workers; "
                     "if it runs a Python operator, optimise the training script.";
    } else if (type_is(op, "BatchOp", "Batch")) {
        f->advice = ANALYSE_PIPE_ADVICE_BATCH_OP;
        f->code = "minddata_pipeline-batch_op";
        f->message = "This BatchOp may be the bottleneck: try to increase prefetch_size.";
    } else if (op->n_children == 0) {
        f->advice = ANALYSE_PIPE_ADVICE_DATASET_OP;
        f->code = "minddata_pipeline-dataset_op";
        f->message = "This dataset (source) operator may be the bottleneck: try to increase "
                     "num_parallel_workers.";
    } else {
        f->advice = ANALYSE_PIPE_ADVICE_GENERAL;
        f->code = "minddata_pipeline-general";
        f->message = "This pipeline operator may be the bottleneck: its input queue is much "
                     "fuller than its output queue.";
    }
}

static const struct analyse_pipe_op *find_op(const struct analyse_pipe_op *ops, size_t n,
                                             int64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i].op_id == id)
            return &ops[i];
    return NULL;
}

int analyse_pipe_bottlenecks(const struct analyse_pipe_op *ops, size_t n, double high, double low,
                             double diff, struct analyse_pipe_finding **ret_findings,
                             size_t *ret_n)
{
    if ((n > 0 && !ops) || !ret_findings || !ret_n)
        return -EINVAL;
    struct analyse_pipe_finding *f = NULL;
    if (n > 0) {
        f = calloc(n, sizeof *f);
        if (!f)
            return -ENOMEM;
    }
    size_t nf = 0, root = n, n_nonroot = 0;
    bool all_high = true;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_pipe_op *op = &ops[i];
        if (op->parent_id < 0) {
            root = i;
            continue;
        }
        n_nonroot++;
        double own = usage_of(op);
        if (own < high)
            all_high = false;
        if (op->n_children == 0 || !op->children)
            continue;
        double worst = -1.0;
        for (size_t c = 0; c < op->n_children; c++) {
            const struct analyse_pipe_op *child = find_op(ops, n, op->children[c]);
            double cu = child ? usage_of(child) : 0.0;
            if (cu - own > diff && cu > worst)
                worst = cu;
        }
        if (worst >= 0) {
            f[nf] = (struct analyse_pipe_finding){
                .op = i, .reason = ANALYSE_PIPE_CHILD_FULLER, .usage = own,
                .child_usage = worst, .threshold = diff};
            advise(op, &f[nf]);
            nf++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        const struct analyse_pipe_op *op = &ops[i];
        if (op->parent_id < 0 || (op->n_children > 0 && op->children))
            continue;
        if (usage_of(op) < low) {
            f[nf] = (struct analyse_pipe_finding){
                .op = i, .reason = ANALYSE_PIPE_LEAF_LOW, .usage = usage_of(op), .threshold = low};
            advise(op, &f[nf]);
            nf++;
        }
    }
    if (all_high && n_nonroot > 0 && root < n) {
        f[0] = (struct analyse_pipe_finding){.op = root,
                                             .reason = ANALYSE_PIPE_ALL_HIGH,
                                             .advice = ANALYSE_PIPE_ADVICE_CONSUMER,
                                             .usage = usage_of(&ops[root]),
                                             .threshold = high,
                                             .code = "minddata_pipeline-general",
                                             .message = "Every queue between pipeline operators "
                                                        "is nearly full: the pipeline keeps up "
                                                        "and its consumer (the transfer to the "
                                                        "device or training) is the bottleneck."};
        nf = 1;
    }
    if (nf == 0) {
        free(f);
        f = NULL;
    }
    *ret_findings = f;
    *ret_n = nf;
    return 0;
}
