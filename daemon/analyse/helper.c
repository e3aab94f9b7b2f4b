/* SPDX-License-Identifier: MIT */
/*
 * Helper: the rule table that turns the other analyses' numbers into suggestions. The caller
 * gathers the evidence (step-trace and breakdown averages, queue statistics, CPU utilisation,
 * pipeline ops, per-rank statistics) into struct analyse_helper_input; every rule reads only
 * its own evidence and stays silent when that evidence is missing, so a job without a data
 * queue never hears about one. It feeds the web route helper; no I/O.
 *
 * Rules run in a fixed order (the table in docs/ANALYSIS.md) and emit in that order, so two
 * runs on the same evidence give the same list. Wording is the peers' own where they have one
 * (MindInsight's proposer, torch-tb-profiler's data.py, TF's input pipeline analysis), each
 * suggestion citing its source.
 */
#include "analyse_helper.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const analyse_helper_severity_names[3] = {"info", "warning", "critical"};

const char *const analyse_framework_names[ANALYSE_FW_COUNT] = {"other", "torch", "paddle",
                                                               "mindspore"};

enum analyse_framework analyse_framework_of(const char *name)
{
    if (!name)
        return ANALYSE_FW_OTHER;
    if (!strcasecmp(name, "torch") || !strcasecmp(name, "pytorch"))
        return ANALYSE_FW_TORCH;
    if (!strcasecmp(name, "paddle") || !strcasecmp(name, "paddlepaddle"))
        return ANALYSE_FW_PADDLE;
    if (!strcasecmp(name, "mindspore"))
        return ANALYSE_FW_MINDSPORE;
    return ANALYSE_FW_OTHER;
}

void analyse_helper_rules_default(struct analyse_helper_rules *ret)
{
    *ret = (struct analyse_helper_rules){
        .step_interval_ms = 0.5,
        .step_interval_ratio = 0.05,
        .queue_empty_ratio = ANALYSE_QUEUE_EMPTY_THRESHOLD,
        .cpu_pct = 80,
        .pipe_high = ANALYSE_PIPE_HIGH,
        .pipe_low = ANALYSE_PIPE_LOW,
        .pipe_diff = ANALYSE_PIPE_DIFF,
        .mindinsight_gate = true,
        .dataloader_ratio = 0.05,
        .communication_ratio = 0.1,
        .gpu_util = 0.5,
        .input_high_pct = 20,
        .input_moderate_pct = 5,
        .all_other_pct = 3,
        .straggler_ratio = ANALYSE_STRAGGLER_RATIO,
        .cluster_interval_ratio = 0.2,
    };
}

void analyse_helper_input_init(struct analyse_helper_input *ret)
{
    *ret = (struct analyse_helper_input){
        .framework = ANALYSE_FW_OTHER,
        .st_interval_ns = NAN,
        .st_fp_bp_ns = NAN,
        .st_tail_ns = NAN,
        .st_total_ns = NAN,
        .bd_total_ns = NAN,
        .host_cpu_pct = NAN,
        .input_pct = NAN,
        .all_other_pct = NAN,
    };
    for (int i = 0; i < ANALYSE_BD_COUNT; i++)
        ret->bd_avg_ns[i] = NAN;
}

/* ===== Overrides =========================================================================== */

#define RULE(f) {#f, offsetof(struct analyse_helper_rules, f)}
static const struct {
    const char *name;
    size_t off;
} rule_keys[] = {
    RULE(step_interval_ms),  RULE(step_interval_ratio), RULE(queue_empty_ratio), RULE(cpu_pct),
    RULE(pipe_high),         RULE(pipe_low),          RULE(pipe_diff),
    RULE(dataloader_ratio),  RULE(communication_ratio), RULE(gpu_util),
    RULE(input_high_pct),    RULE(input_moderate_pct), RULE(all_other_pct),
    RULE(straggler_ratio),   RULE(cluster_interval_ratio),
};
#undef RULE

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static bool word_eq(const char *w, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(w, lit, n) == 0;
}

/* Parses one non-comment line [p, e) into *rules. Returns 0 or -EINVAL. */
static int parse_line(const char *p, const char *e, struct analyse_helper_rules *rules)
{
    const char *eq = memchr(p, '=', (size_t)(e - p));
    if (!eq)
        return -EINVAL;
    const char *k = p, *ke = eq;
    while (ke > k && is_blank(ke[-1]))
        ke--;
    const char *v = eq + 1, *ve = e;
    while (v < ve && is_blank(*v))
        v++;
    while (ve > v && is_blank(ve[-1]))
        ve--;
    size_t kn = (size_t)(ke - k), vn = (size_t)(ve - v);
    if (kn == 0 || vn == 0 || vn >= 64)
        return -EINVAL;
    if (word_eq(k, kn, "mindinsight_gate")) {
        if (word_eq(v, vn, "1") || word_eq(v, vn, "true"))
            rules->mindinsight_gate = true;
        else if (word_eq(v, vn, "0") || word_eq(v, vn, "false"))
            rules->mindinsight_gate = false;
        else
            return -EINVAL;
        return 0;
    }
    for (size_t i = 0; i < sizeof rule_keys / sizeof rule_keys[0]; i++) {
        if (!word_eq(k, kn, rule_keys[i].name))
            continue;
        char buf[64];
        memcpy(buf, v, vn);
        buf[vn] = '\0';
        char *end;
        double d = strtod(buf, &end);
        if (*end != '\0' || !isfinite(d) || d < 0)
            return -EINVAL;
        memcpy((char *)rules + rule_keys[i].off, &d, sizeof d);
        return 0;
    }
    return -EINVAL;
}

int analyse_helper_rules_parse(const char *text, size_t len, struct analyse_helper_rules *rules,
                               size_t *bad_line)
{
    if (!rules || (!text && len > 0))
        return -EINVAL;
    /* Work on a copy so that a bad line leaves the caller's rules as they were. */
    struct analyse_helper_rules tmp = *rules;
    const char *p = text, *end = text + len;
    size_t line = 0;
    while (p && p < end) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl ? nl : end;
        const char *q = p;
        while (q < e && is_blank(*q))
            q++;
        if (q < e && *q != '#' && parse_line(q, e, &tmp) < 0) {
            if (bad_line)
                *bad_line = line;
            return -EINVAL;
        }
        p = nl ? nl + 1 : end;
    }
    *rules = tmp;
    return 0;
}

/* ===== Suggestions ========================================================================= */

struct out {
    struct analyse_helper_suggestion *s;
    size_t n, cap;
};

/* Appends a suggestion and returns it, or NULL on OOM. */
static struct analyse_helper_suggestion *add(struct out *o, const char *code,
                                             enum analyse_helper_severity sev, const char *title,
                                             const char *source, const char *view, int64_t subject)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 8;
        struct analyse_helper_suggestion *s = realloc(o->s, cap * sizeof *s);
        if (!s)
            return NULL;
        o->s = s;
        o->cap = cap;
    }
    struct analyse_helper_suggestion *g = &o->s[o->n++];
    memset(g, 0, sizeof *g);
    g->code = code;
    g->severity = sev;
    g->title = title;
    g->source = source;
    g->view = view;
    g->subject = subject;
    return g;
}

static void evidence(struct analyse_helper_suggestion *g, const char *name, double value,
                     const char *op, double threshold)
{
    if (g->n_evidence < ANALYSE_HELPER_EVIDENCE_MAX)
        g->evidence[g->n_evidence++] =
            (struct analyse_helper_evidence){.name = name, .value = value, .op = op,
                                             .threshold = threshold};
}

__attribute__((format(printf, 2, 3))) static void say(struct analyse_helper_suggestion *g,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(g->message, sizeof g->message, fmt, ap);
    va_end(ap);
}

/* Python's round(): half to even, which rint() does in the default rounding mode. */
static double round_half_even(double x)
{
    return rint(x);
}

/* What MindInsight's rules carry to its post-filter. */
struct mi_state {
    size_t first;                   /* o->n before the first MindInsight suggestion */
    bool interval_fired;            /* step_interval_long */
    bool pipe_general;              /* pipeline_bottleneck */
    bool have_minddata;             /* queue, CPU or pipeline evidence at all */
    struct analyse_queue_verdict v; /* the data-queue verdict */
};

/* step_trace-iter_interval. */
static int mi_step_interval(const struct analyse_helper_input *in,
                            const struct analyse_helper_rules *ru, struct out *o,
                            struct mi_state *st)
{
    if (isnan(in->st_interval_ns))
        return 0;
    double ms = in->st_interval_ns / 1e6;
    /* MindInsight's absolute 0.5 ms, and (ours) a share of the step worth acting on: a
     * 1.28 ms interval in a 215 ms step is 0.6 % of it. Without a step total the share is
     * unknown and the peer's rule alone decides. */
    bool has_total = !isnan(in->st_total_ns) && in->st_total_ns > 0;
    double share = has_total ? in->st_interval_ns / in->st_total_ns : NAN;
    if (!(ms > ru->step_interval_ms && (!has_total || share >= ru->step_interval_ratio)))
        return 0;
    struct analyse_helper_suggestion *g =
        add(o, "step_interval_long", ANALYSE_HELPER_WARNING, "Long step interval",
            "MindInsight step_trace-iter_interval", "step-trace", -1);
    if (!g)
        return -ENOMEM;
    evidence(g, "interval_ms", ms, ">", ru->step_interval_ms);
    if (has_total)
        evidence(g, "interval_share", share, ">=", ru->step_interval_ratio);
    say(g,
        "After the graph mode and dataset sink mode are enabled, if the average step "
        "interval is greater than %g ms, the process from data processing to "
        "computational graph execution can be optimized. The average step interval is "
        "%.4f ms.",
        ru->step_interval_ms, ms);
    st->interval_fired = true;
    return 0;
}

/* minddata_device_queue_rate and device_queue_warning: the data-queue verdict. */
static int mi_queues(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                     struct out *o, struct mi_state *st)
{
    const struct analyse_queue_stats *hq = in->host_queue, *dq = in->device_queue;
    bool has_host = hq && hq->n_samples > 0, has_dev = dq && dq->n_samples > 0;
    struct analyse_queue_verdict *v = &st->v;
    analyse_queue_verdict(has_host ? hq : NULL, has_dev ? dq : NULL, ru->queue_empty_ratio, v);
    if (has_host || has_dev)
        st->have_minddata = true;
    struct analyse_helper_suggestion *g;
    if (v->status == ANALYSE_QUEUE_STATUS_DATA_PROCESS) {
        g = add(o, "queue_host_empty", ANALYSE_HELPER_WARNING, "Host queue often empty",
                "MindInsight minddata_device_queue_rate", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "host_empty_ratio", (double)v->host_empty / (double)v->host_total, ">",
                 ru->queue_empty_ratio);
        evidence(g, "host_empty", (double)v->host_empty, "=", 0);
        evidence(g, "host_total", (double)v->host_total, "=", 0);
        say(g,
            "The ratio of empty queues on a host is %d%%, and the threshold is %g%%. The data "
            "processing stage can be optimized.",
            v->empty_rate_pct, ru->queue_empty_ratio * 100);
    } else if (v->status == ANALYSE_QUEUE_STATUS_TRANSMISSION) {
        g = add(o, "queue_device_empty", ANALYSE_HELPER_WARNING, "Chip queue empty",
                "MindInsight minddata_device_queue_rate", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "device_empty", (double)v->device_empty, ">", 0);
        evidence(g, "device_total", (double)v->device_total, "=", 0);
        evidence(g, "host_empty_ratio", (double)v->host_empty / (double)v->host_total, "<=",
                 ru->queue_empty_ratio);
        say(g,
            "The ratio of empty queues on a host is %d%%, and the threshold is %g%%. There are "
            "empty queues on a chip (%zu/%zu). The data transmission stage can be optimized.",
            v->empty_rate_pct, ru->queue_empty_ratio * 100, v->device_empty, v->device_total);
    } else if (v->status == ANALYSE_QUEUE_STATUS_DEVICE_QUEUE) {
        g = add(o, "queue_ok", ANALYSE_HELPER_INFO, "Data queues not empty",
                "MindInsight device_queue_warning", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "host_empty_ratio", (double)v->host_empty / (double)v->host_total, "<=",
                 ru->queue_empty_ratio);
        say(g, "You can optimize the script based on the data processing performance "
               "optimization suggestions.");
    }
    return 0;
}

/* minddata_cpu_utilization. */
static int mi_cpu(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                  struct out *o, struct mi_state *st)
{
    if (isnan(in->host_cpu_pct))
        return 0;
    st->have_minddata = true;
    /* MindInsight compares 100 - round(mean idle), which is round(mean use) under Python's
     * half-to-even rounding. */
    double pct = round_half_even(in->host_cpu_pct);
    if (!(pct > ru->cpu_pct))
        return 0;
    struct analyse_helper_suggestion *g =
        add(o, "cpu_high", ANALYSE_HELPER_WARNING, "High CPU utilisation",
            "MindInsight minddata_cpu_utilization", "queues", -1);
    if (!g)
        return -ENOMEM;
    evidence(g, "cpu_pct", pct, ">", ru->cpu_pct);
    say(g,
        "The average CPU usage of the entire system is %g%%, which may affect the data "
        "processing performance.",
        pct);
    return 0;
}

/* The pipeline proposals, one per kind: the first names every flagged op, the others the ops
 * with that advice. */
static const struct pipe_kind {
    enum analyse_pipe_advice advice;
    const char *code, *source, *pre, *post; /* message = pre ops post */
} pipe_kinds[] = {
    {ANALYSE_PIPE_ADVICE_GENERAL, "pipeline_bottleneck",
     "MindInsight minddata_pipeline-general",
     "The ", " operator in the pipeline may have performance bottlenecks."},
    {ANALYSE_PIPE_ADVICE_DATASET_OP, "pipeline_dataset_op",
     "MindInsight minddata_pipeline-dataset_op",
     "For operator ",
     ", you can try to increase or decrease the num_parallel_workers parameter."},
    {ANALYSE_PIPE_ADVICE_GENERATOR_OP, "pipeline_generator_op",
     "MindInsight minddata_pipeline-generator_op",
     "For operator ",
     ", you can try to increase or decrease the num_parallel_workers "
     "parameter, optimize the training script, or replace it with MindRecordDataset."},
    {ANALYSE_PIPE_ADVICE_MAP_OP, "pipeline_map_op", "MindInsight minddata_pipeline-map_op",
     "For operator ",
     ", you can try to increase or decrease the num_parallel_workers "
     "parameter. If the Python operator is used, you can optimize the training "
     "script."},
    {ANALYSE_PIPE_ADVICE_BATCH_OP, "pipeline_batch_op",
     "MindInsight minddata_pipeline-batch_op",
     "For operator ", ", you can increase the prefetch_size value."},
};

/* The proposal of pipe_kinds[k] over findings f[0..nf), if some finding has its advice. */
static int pipe_proposal(const struct analyse_helper_input *in, const struct analyse_pipe_finding *f,
                         size_t nf, size_t k, struct out *o, struct mi_state *st)
{
    /* "OpType_id/OpType_id", flagged ops in reversed order as MindInsight lists them. */
    char ops[256] = "";
    size_t len = 0, n_ops = 0;
    double worst = 0, thr = 0;
    for (size_t j = nf; j-- > 0;) {
        if (k > 0 && f[j].advice != pipe_kinds[k].advice)
            continue;
        const struct analyse_pipe_op *op = &in->pipe_ops[f[j].op];
        int w = snprintf(ops + len, sizeof ops - len, "%s%s_%lld", n_ops ? "/" : "",
                         op->op_type ? op->op_type : "Op", (long long)op->op_id);
        if (w > 0 && (size_t)w < sizeof ops - len)
            len += (size_t)w;
        if (n_ops++ == 0) {
            worst = f[j].usage;
            thr = f[j].threshold;
        }
    }
    if (n_ops == 0)
        return 0;
    struct analyse_helper_suggestion *g =
        add(o, pipe_kinds[k].code, ANALYSE_HELPER_WARNING,
            k == 0 ? "Dataset pipeline bottleneck" : "Dataset operator tuning",
            pipe_kinds[k].source, "pipeline", -1);
    if (!g)
        return -ENOMEM;
    evidence(g, "flagged_ops", (double)n_ops, ">", 0);
    evidence(g, "queue_usage", worst, "=", thr);
    say(g, "%s%s%s", pipe_kinds[k].pre, ops, pipe_kinds[k].post);
    if (k == 0)
        st->pipe_general = true;
    return 0;
}

/* minddata_pipeline-*: the dataset pipeline's bottlenecks. */
static int mi_pipeline(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                       struct out *o, struct mi_state *st)
{
    if (!in->pipe_ops || in->n_pipe_ops == 0)
        return 0;
    st->have_minddata = true;
    struct analyse_pipe_finding *f = NULL;
    size_t nf = 0;
    int r = analyse_pipe_bottlenecks(in->pipe_ops, in->n_pipe_ops, ru->pipe_high, ru->pipe_low,
                                     ru->pipe_diff, &f, &nf);
    if (r < 0)
        return r;
    /* MindInsight drops every pipeline proposal when the root is flagged (all queues full:
     * the pipeline keeps up). */
    if (nf > 0 && f[0].reason != ANALYSE_PIPE_ALL_HIGH)
        for (size_t k = 0; k < sizeof pipe_kinds / sizeof pipe_kinds[0] && r == 0; k++)
            r = pipe_proposal(in, f, nf, k, o, st);
    free(f);
    return r;
}

/* MindInsight's post-filter (show_result_condition): without a long step interval and a
 * pipeline bottleneck, all of its suggestions are hidden; with a host queue that is not often
 * empty, the pipeline proposals are. Applied only when there is MindData evidence at all, so a
 * job without a data pipeline still hears about its step interval. */
static void mi_gate(const struct analyse_helper_rules *ru, const struct mi_state *st,
                    struct out *o)
{
    if (!ru->mindinsight_gate || !st->have_minddata)
        return;
    if (!st->interval_fired || !st->pipe_general) {
        o->n = st->first;
    } else if (st->v.status != ANALYSE_QUEUE_STATUS_NONE &&
               !(st->v.empty_rate_pct > ru->queue_empty_ratio * 100)) {
        size_t w = st->first;
        for (size_t i = st->first; i < o->n; i++)
            if (strncmp(o->s[i].code, "pipeline_", 9) != 0)
                o->s[w++] = o->s[i];
        o->n = w;
    }
}

/* MindInsight's step interval, queue, CPU and pipeline rules (mindinsight.md §4.1), in the
 * proposer's order, then its post-filter. */
static int rules_mindinsight(const struct analyse_helper_input *in,
                             const struct analyse_helper_rules *ru, struct out *o)
{
    struct mi_state st = { .first = o->n };
    int r;
    if ((r = mi_step_interval(in, ru, o, &st)) < 0 || (r = mi_queues(in, ru, o, &st)) < 0 ||
        (r = mi_cpu(in, ru, o, &st)) < 0 || (r = mi_pipeline(in, ru, o, &st)) < 0)
        return r;
    mi_gate(ru, &st, o);
    return 0;
}

/* torch-tb-profiler's data.py::analyze (peers.md §1.4). */
static int rules_tb(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                    struct out *o)
{
    struct analyse_helper_suggestion *g;
    double total = in->bd_total_ns;
    if (in->has_breakdown && total > 0) {
        double dl = in->bd_avg_ns[ANALYSE_BD_DATALOADER];
        if (!isnan(dl) && dl / total > ru->dataloader_ratio) {
            g = add(o, "dataloader_high", ANALYSE_HELPER_WARNING, "Input data loading is slow",
                    "torch-tb-profiler DataLoader", "timeline", -1);
            if (!g)
                return -ENOMEM;
            evidence(g, "dataloader_ratio", dl / total, ">", ru->dataloader_ratio);
            say(g,
                "This run has high time cost on input data loading. %.1f%% of the step time is "
                "in DataLoader. You could try to set num_workers on DataLoader's construction "
                "and enable multi-processes on data loading.",
                100 * dl / total);
        }
        double cm = in->bd_avg_ns[ANALYSE_BD_COMMUNICATION];
        if (!isnan(cm) && cm / total > ru->communication_ratio) {
            g = add(o, "communication_high", ANALYSE_HELPER_WARNING, "Communication is slow",
                    "torch-tb-profiler Communication", "timeline", -1);
            if (!g)
                return -ENOMEM;
            evidence(g, "communication_ratio", cm / total, ">", ru->communication_ratio);
            say(g,
                "This run has high time cost on communication. %.1f%% of the step time is in "
                "communication. You could try Gradient Compression or Gradient Accumulation or "
                "increase the batch size.",
                100 * cm / total);
        }
    }
    for (size_t i = 0; in->gpus && i < in->n_gpus; i++) {
        double u = in->gpus[i].utilization;
        if (isnan(u) || !(u < ru->gpu_util))
            continue;
        g = add(o, "gpu_util_low", ANALYSE_HELPER_WARNING, "Low GPU utilisation",
                "torch-tb-profiler Low GPU util", "kernels", in->gpus[i].pid);
        if (!g)
            return -ENOMEM;
        evidence(g, "gpu_utilization", u, "<", ru->gpu_util);
        say(g,
            "GPU %lld has low utilization (%.1f%%). You could try to increase batch size to "
            "improve. Note: Increasing batch size may affect the speed and stability of model "
            "convergence.",
            (long long)in->gpus[i].pid, 100 * u);
    }
    return 0;
}

/* TF's input-bound classes (peers.md §4.2); the "device" class (not input-bound) is no
 * suggestion. */
static int rules_tf(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                    struct out *o)
{
    struct analyse_helper_suggestion *g;
    double x = in->input_pct;
    if (!isnan(x) && x >= ru->input_high_pct) {
        g = add(o, "input_bound_high", ANALYSE_HELPER_CRITICAL, "Highly input-bound",
                "TF input pipeline analysis (host)", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "input_pct", x, ">=", ru->input_high_pct);
        say(g,
            "Your program is HIGHLY input-bound because %.1f%% of the total step time sampled is "
            "waiting for input. Therefore, you should first focus on reducing the input time.",
            x);
    } else if (!isnan(x) && x >= ru->input_moderate_pct) {
        g = add(o, "input_bound_moderate", ANALYSE_HELPER_WARNING, "Moderately input-bound",
                "TF input pipeline analysis (both)", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "input_pct", x, ">=", ru->input_moderate_pct);
        say(g,
            "Your program is MODERATELY input-bound because %.1f%% of the total step time "
            "sampled is waiting for input. Therefore, you would need to reduce both the input "
            "time and other time.",
            x);
    } else if (!isnan(x) && !isnan(in->all_other_pct) && in->all_other_pct >= ru->all_other_pct) {
        g = add(o, "input_bound_potential", ANALYSE_HELPER_INFO, "Potentially input-bound",
                "TF input pipeline analysis (both)", "queues", -1);
        if (!g)
            return -ENOMEM;
        evidence(g, "input_pct", x, "<", ru->input_moderate_pct);
        evidence(g, "all_other_pct", in->all_other_pct, ">=", ru->all_other_pct);
        say(g,
            "Your program is POTENTIALLY input-bound because %.1f%% of the total step time "
            "sampled is spent on 'All Others' time (which could be due to I/O or Python "
            "execution or both).",
            in->all_other_pct);
    }
    return 0;
}

/* Stragglers (rank mean step > mean of ranks * (1 + ratio)) and MindInsight's cluster step
 * interval rule (mindinsight.md §4.3: the rank with the largest interval / avg - 1 > 0.2). */
static int rules_ranks(const struct analyse_helper_input *in, const struct analyse_helper_rules *ru,
                       bool mindinsight, struct out *o)
{
    const struct analyse_ranks *rk = in->ranks;
    if (!rk || rk->n_ranks < 2)
        return 0;
    struct analyse_helper_suggestion *g;
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < rk->n_ranks; i++)
        if (rk->rows[i].stat[ANALYSE_RANK_STEP].count) {
            sum += rk->rows[i].stat[ANALYSE_RANK_STEP].mean_ns;
            n++;
        }
    if (n >= 2 && sum > 0) {
        double avg = sum / (double)n, thr = avg * (1 + ru->straggler_ratio);
        for (size_t i = 0; i < rk->n_ranks; i++) {
            const struct analyse_rank_row *row = &rk->rows[i];
            double m = row->stat[ANALYSE_RANK_STEP].mean_ns;
            if (!row->stat[ANALYSE_RANK_STEP].count || !(m > thr))
                continue;
            g = add(o, "rank_straggler", ANALYSE_HELPER_WARNING, "Straggler rank",
                    "stepscope (issue 3: rank > mean + 20 %)", "ranks", row->rank);
            if (!g)
                return -ENOMEM;
            evidence(g, "rank_mean_step_ms", m / 1e6, ">", thr / 1e6);
            evidence(g, "ranks_mean_step_ms", avg / 1e6, "=", 0);
            say(g,
                "Rank %lld is a straggler: its mean step time is %.4f ms, %.2f%% above the mean "
                "of all ranks (%.4f ms; threshold +%g%%).",
                (long long)row->rank, m / 1e6, 100 * (m / avg - 1), avg / 1e6,
                100 * ru->straggler_ratio);
        }
    }
    /* the cluster step-interval rule is MindInsight's; a cluster job's is rules_cluster()'s */
    if (!mindinsight || in->cluster)
        return 0;
    sum = 0;
    n = 0;
    for (size_t i = 0; i < rk->n_ranks; i++)
        if (rk->rows[i].stat[ANALYSE_RANK_INTERVAL].count) {
            sum += rk->rows[i].stat[ANALYSE_RANK_INTERVAL].mean_ns;
            n++;
        }
    if (n >= 2 && sum > 0) {
        double avg = sum / (double)n, best = 0;
        size_t at = 0;
        bool found = false;
        for (size_t i = 0; i < rk->n_ranks; i++) {
            const struct analyse_rank_row *row = &rk->rows[i];
            if (!row->stat[ANALYSE_RANK_INTERVAL].count)
                continue;
            double ex = row->stat[ANALYSE_RANK_INTERVAL].mean_ns / avg - 1;
            if (ex > ru->cluster_interval_ratio && (!found || ex > best)) {
                best = ex;
                at = i;
                found = true;
            }
        }
        if (found) {
            const struct analyse_rank_row *row = &rk->rows[at];
            double val = row->stat[ANALYSE_RANK_INTERVAL].mean_ns / 1e6;
            g = add(o, "rank_step_interval_high", ANALYSE_HELPER_WARNING,
                    "Step interval of a rank is high", "MindInsight cluster-propose step_interval",
                    "ranks", row->rank);
            if (!g)
                return -ENOMEM;
            evidence(g, "interval_excess_ratio", best, ">", ru->cluster_interval_ratio);
            evidence(g, "interval_ms", val, "=", 0);
            say(g,
                "The step interval of the device %lld is %.4f ms, which is %.2f%% higher than "
                "the average.",
                (long long)row->rank, val, 100 * best);
        }
    }
    return 0;
}

/* ===== MindInsight's cluster proposals (mindinsight.md §4.3, parallel_proposer.py) ========= */

/* Its fixed thresholds (step_interval's is cluster_interval_ratio). */
#define CL_FLOPS_PER_SECOND_RATIO 0.2
#define CL_COMMUNICATION_RATE 0.1 /* data, model, between- and within-stage */
#define CL_STAGE_FLOPS_RATIO 0.2
#define CL_RANK_LINK_RATIO 0.2 /* cluster_link: (mean bandwidth - a link's) / mean > 0.2 */

/* Python's round(x, d). */
static double round_dp(double x, int d)
{
    double k = pow(10, d);
    return round_half_even(x * k) / k;
}

/* The ranks lacking a figure (offset into struct analyse_helper_cl_rank) as "0, 3"; false
 * when every rank has it. */
static bool cl_missing(const struct analyse_helper_cluster *c, size_t off, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < c->n; i++) {
        double v;
        memcpy(&v, (const char *)&c->ranks[i] + off, sizeof v);
        if (isnan(v) && len < cap)
            len += (size_t)snprintf(buf + len, cap - len, "%s%lld", len ? ", " : "",
                                    (long long)c->ranks[i].rank);
    }
    return len > 0;
}

static int cl_skipped(struct out *o, const char *what, const char *file, const char *ranks)
{
    struct analyse_helper_suggestion *g =
        add(o, "cluster_proposal_skipped", ANALYSE_HELPER_INFO, "Cluster proposal skipped",
            "MindInsight cluster-propose", "cluster", -1);
    if (!g)
        return -ENOMEM;
    say(g, "Please collect all device files: %s is not analysed, rank(s) %s have no %s.", what,
        ranks, file);
    return 0;
}

#define CL_OFF(f) offsetof(struct analyse_helper_cl_rank, f)

static double cl_get(const struct analyse_helper_cl_rank *r, size_t off)
{
    double v;
    memcpy(&v, (const char *)r + off, sizeof v);
    return v;
}

/* MindInsight's outlier: the rank whose figure at off exceeds the ranks' mean by the largest
 * share of it (high: v / mean - 1; else (mean - v) / mean), when that is > ratio. */
static bool cl_outlier(const struct analyse_helper_cluster *c, size_t off, bool high,
                       double ratio, size_t *at, double *best)
{
    double sum = 0;
    for (size_t i = 0; i < c->n; i++)
        sum += cl_get(&c->ranks[i], off);
    double avg = sum / (double)c->n;
    bool found = false;
    for (size_t i = 0; avg > 0 && i < c->n; i++) {
        double v = cl_get(&c->ranks[i], off), ex = high ? v / avg - 1 : (avg - v) / avg;
        if (ex > ratio && (!found || ex > *best)) {
            *best = ex;
            *at = i;
            found = true;
        }
    }
    return found;
}

/* step_interval (high) and flops_per_second (low). */
static int cl_rank_rule(const struct analyse_helper_cluster *c, struct out *o, bool interval,
                        double ratio)
{
    char miss[256];
    size_t off = interval ? CL_OFF(interval_ns) : CL_OFF(flops_per_second_g);
    if (cl_missing(c, off, miss, sizeof miss))
        return cl_skipped(o, interval ? "step_interval" : "flops_per_second",
                          interval ? "step_trace_raw" : "flops_summary", miss);
    size_t at = 0;
    double best = 0;
    if (!cl_outlier(c, off, interval, ratio, &at, &best))
        return 0;
    const struct analyse_helper_cl_rank *r = &c->ranks[at];
    double val = round_dp(interval ? r->interval_ns / 1e6 : r->flops_per_second_g, 4);
    double pct = round_dp(100 * best, 2);
    struct analyse_helper_suggestion *g =
        interval ? add(o, "cluster_step_interval", ANALYSE_HELPER_WARNING,
                       "Step interval of a rank is high",
                       "MindInsight cluster-propose step_interval", "cluster", r->rank)
                 : add(o, "cluster_flops_per_second", ANALYSE_HELPER_WARNING,
                       "FLOPS of a rank is low", "MindInsight cluster-propose flops_per_second",
                       "cluster", r->rank);
    if (!g)
        return -ENOMEM;
    evidence(g, interval ? "interval_ms" : "flops_per_second_g", val, "=", 0);
    evidence(g, "percent", pct, ">", 100 * ratio);
    if (interval)
        say(g, "The step interval of the device %lld is %.4f ms, which is %.2f%% higher than "
               "the average.", (long long)r->rank, val, pct);
    else
        say(g, "The FLOPS of the device %lld is %.4f G/s, which is %.2f%% lower than the "
               "average.", (long long)r->rank, val, pct);
    return 0;
}

/* cluster_link (MindInsight's _rank_link_analyze): per link type, over the links every rank's
 * average row reports (a link reported by two ranks counts twice) except a rank's link to
 * itself, the link whose bandwidth is below the type's mean by the largest share of it, when
 * that is > CL_RANK_LINK_RATIO; one suggestion per such type, in the order the types first
 * appear (ranks in order, each rank's links in its file's order; a tie keeps the first). */
static int cl_link_type(struct out *o, const struct analyse_comm_link *const *v, size_t n,
                        const char *type)
{
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i]->type, type) == 0) {
            sum += (double)v[i]->bw_bytes_per_s;
            k++;
        }
    double avg = sum / (double)k, best = 0;
    const struct analyse_comm_link *at = NULL;
    for (size_t i = 0; avg > 0 && i < n; i++) {
        double p = (avg - (double)v[i]->bw_bytes_per_s) / avg;
        if (strcmp(v[i]->type, type) == 0 && p > CL_RANK_LINK_RATIO && (!at || p > best)) {
            best = p;
            at = v[i];
        }
    }
    if (!at)
        return 0;
    double pct = round_dp(100 * best, 2);
    struct analyse_helper_suggestion *g =
        add(o, "cluster_link", ANALYSE_HELPER_WARNING, "Bandwidth of a link is low",
            "MindInsight cluster-propose cluster_link", "cluster-links", -1);
    if (!g)
        return -ENOMEM;
    evidence(g, "src_rank", (double)at->src, "=", 0);
    evidence(g, "dst_rank", (double)at->dst, "=", 0);
    evidence(g, "band_width_bytes_per_s", (double)at->bw_bytes_per_s, "=", 0);
    evidence(g, "percent", pct, ">", 100 * CL_RANK_LINK_RATIO);
    say(g, "The bandwidth of the %s link %lld-%lld is %lld B/s, which is %.2f%% lower than the "
           "average of the %s links (%.0f B/s).",
        at->type, (long long)at->src, (long long)at->dst, (long long)at->bw_bytes_per_s, pct,
        at->type, avg);
    return 0;
}

static int cl_link(const struct analyse_helper_cluster *c, struct out *o)
{
    char miss[256];
    size_t len = 0;
    miss[0] = '\0';
    for (size_t i = 0; i < c->n; i++)
        if (!c->ranks[i].has_links && len < sizeof miss)
            len += (size_t)snprintf(miss + len, sizeof miss - len, "%s%lld", len ? ", " : "",
                                    (long long)c->ranks[i].rank);
    if (len)
        return cl_skipped(o, "cluster_link", "hccl_raw", miss);
    /* the links between two ranks, in MindInsight's order */
    const struct analyse_comm_link **v = malloc((c->n_links ? c->n_links : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        for (size_t k = 0; k < c->n_links; k++)
            if (c->links[k].rank == c->ranks[i].rank && c->links[k].src != c->links[k].dst)
                v[n++] = &c->links[k];
    int r = 0;
    for (size_t i = 0; i < n && r >= 0; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = strcmp(v[k]->type, v[i]->type) == 0;
        if (!seen)
            r = cl_link_type(o, v, n, v[i]->type);
    }
    free(v);
    return r;
}

/* A rate rule: part / whole > CL_COMMUNICATION_RATE, as {val: rate * 100, threshold: 10}.
 * Returns 1 and *ret (the caller says why), 0 when it does not fire, -ENOMEM. */
static int cl_rate(struct out *o, const char *code, const char *title, const char *source,
                   double part, double whole, struct analyse_helper_suggestion **ret, double *val)
{
    if (!(whole > 0) || !(part / whole > CL_COMMUNICATION_RATE))
        return 0;
    *val = round_dp(100 * part / whole, 2);
    *ret = add(o, code, ANALYSE_HELPER_WARNING, title, source, "cluster", -1);
    if (!*ret)
        return -ENOMEM;
    evidence(*ret, "rate_pct", *val, ">", 100 * CL_COMMUNICATION_RATE);
    return 1;
}

static int cl_parallel_strategy(const struct analyse_helper_cluster *c, struct out *o)
{
    char miss[256];
    const char *what = c->mode == ANALYSE_CL_DATA    ? "data_parallel_communication_rate"
                       : c->mode == ANALYSE_CL_MODEL ? "model_parallel_communication_rate"
                                                     : "pipeline-parallel communication rates";
    if (cl_missing(c, CL_OFF(computation_ns), miss, sizeof miss) ||
        cl_missing(c, CL_OFF(comm_alone_ns), miss, sizeof miss) ||
        (c->mode == ANALYSE_CL_PIPELINE &&
         (cl_missing(c, CL_OFF(receive_alone_ns), miss, sizeof miss) ||
          cl_missing(c, CL_OFF(collective_ns), miss, sizeof miss))))
        return cl_skipped(o, what,
                          c->mode == ANALYSE_CL_DATA ? "step_trace_raw" : "ascend_cluster_analyse",
                          miss);
    double comp = 0, comm = 0, recv = 0, val = 0;
    for (size_t i = 0; i < c->n; i++) {
        comp += c->ranks[i].computation_ns;
        comm += c->ranks[i].comm_alone_ns;
        recv += c->ranks[i].receive_alone_ns;
    }
    struct analyse_helper_suggestion *g = NULL;
    int r;
    const double thr = 100 * CL_COMMUNICATION_RATE;
    if (c->mode != ANALYSE_CL_PIPELINE) {
        bool data = c->mode == ANALYSE_CL_DATA;
        r = cl_rate(o,
                    data ? "cluster_data_parallel_communication_rate"
                         : "cluster_model_parallel_communication_rate",
                    data ? "Data-parallel communication is high"
                         : "Model-parallel communication is high",
                    data ? "MindInsight cluster-propose data_parallel_communication_rate"
                         : "MindInsight cluster-propose model_parallel_communication_rate",
                    comm, comp + comm, &g, &val);
        if (r > 0)
            say(g, "The communication time not overlapped by computation%s is %.2f%% of "
                   "computation and communication, above %g%%: %s.",
                data ? " (the tail, after BP)" : "", val, thr,
                data ? "try all_reduce_fusion_config to fuse the gradients' AllReduce"
                     : "try another operator sharding strategy");
        return r < 0 ? r : 0;
    }
    r = cl_rate(o, "cluster_pipeline_between_stage_communication_rate",
                "Pipeline-parallel communication between stages is high",
                "MindInsight cluster-propose pipeline_parallel_communication_rate", recv,
                comp + comm, &g, &val);
    if (r < 0)
        return r;
    if (r > 0)
        say(g, "The receive time not overlapped by computation (between stages) is %.2f%% of "
               "computation and communication, above %g%%: balance the stages' computation.",
            val, thr);
    /* within a stage: the stage with the largest rate */
    double best = -1, best_part = 0, best_whole = 0;
    int64_t best_stage = 0;
    for (int64_t s = 1; s <= c->stages; s++) {
        double part = 0, whole = 0;
        for (size_t i = 0; i < c->n; i++)
            if (c->ranks[i].stage == s) {
                part += c->ranks[i].collective_ns;
                whole += c->ranks[i].computation_ns + c->ranks[i].comm_alone_ns;
            }
        if (whole > 0 && part / whole > best) {
            best = part / whole;
            best_stage = s;
            best_part = part;
            best_whole = whole;
        }
    }
    if (best_stage == 0)
        return 0;
    r = cl_rate(o, "cluster_pipeline_within_stage_communication_rate",
                "Pipeline-parallel communication within a stage is high",
                "MindInsight cluster-propose pipeline_parallel_communication_rate", best_part,
                best_whole, &g, &val);
    if (r > 0) {
        evidence(g, "stage", (double)best_stage, "=", 0);
        say(g, "In stage %lld the collective communication time not overlapped by computation "
               "is %.2f%% of computation and communication, above %g%%: try another operator "
               "sharding strategy within the stage.", (long long)best_stage, val, thr);
    }
    return r < 0 ? r : 0;
}

/* The mean FLOPs of stage s's ranks; false when it has none. */
static bool cl_stage_mean(const struct analyse_helper_cluster *c, int64_t s, double *mean)
{
    double f = 0;
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++)
        if (c->ranks[i].stage == s) {
            f += c->ranks[i].flops_m;
            k++;
        }
    *mean = k ? f / (double)k : 0;
    return k > 0;
}

static int cl_stage_flops(const struct analyse_helper_cluster *c, struct out *o)
{
    char miss[256];
    if (c->mode != ANALYSE_CL_PIPELINE)
        return 0;
    if (cl_missing(c, CL_OFF(flops_m), miss, sizeof miss))
        return cl_skipped(o, "pipeline_parallel_flops", "flops_summary", miss);
    /* each stage's average FLOPs per rank, and their average */
    double sum = 0, m;
    int64_t n_st = 0;
    for (int64_t s = 1; s <= c->stages; s++)
        if (cl_stage_mean(c, s, &m)) {
            sum += m;
            n_st++;
        }
    if (n_st == 0 || !(sum > 0))
        return 0;
    double avg = sum / (double)n_st, best = 0, best_val = 0;
    int64_t best_stage = 0;
    for (int64_t s = 1; s <= c->stages; s++)
        if (cl_stage_mean(c, s, &m) && m / avg - 1 > CL_STAGE_FLOPS_RATIO &&
            (best_stage == 0 || m / avg - 1 > best)) {
            best = m / avg - 1;
            best_val = m;
            best_stage = s;
        }
    if (best_stage == 0)
        return 0;
    double val = round_dp(best_val, 4), pct = round_dp(100 * best, 2);
    struct analyse_helper_suggestion *g =
        add(o, "cluster_pipeline_stage_flops", ANALYSE_HELPER_WARNING,
            "FLOPs of a pipeline stage is high", "MindInsight cluster-propose pipeline_parallel_flops",
            "cluster", -1);
    if (!g)
        return -ENOMEM;
    evidence(g, "stage", (double)best_stage, "=", 0);
    evidence(g, "flops_m", val, "=", 0);
    evidence(g, "percent", pct, ">", 100 * CL_STAGE_FLOPS_RATIO);
    say(g, "The average FLOPs per device of stage %lld is %.4f M, which is %.2f%% higher than "
           "the average of the stages: move layers to the other stages.",
        (long long)best_stage, val, pct);
    return 0;
}

static int rules_cluster(const struct analyse_helper_input *in,
                         const struct analyse_helper_rules *ru, struct out *o)
{
    const struct analyse_helper_cluster *c = in->cluster;
    if (!c || c->n == 0)
        return 0;
    int r = cl_rank_rule(c, o, true, ru->cluster_interval_ratio);
    if (r >= 0)
        r = cl_rank_rule(c, o, false, CL_FLOPS_PER_SECOND_RATIO);
    if (r >= 0)
        r = cl_link(c, o);
    if (r >= 0)
        r = cl_parallel_strategy(c, o);
    if (r >= 0)
        r = cl_stage_flops(c, o);
    return r;
}

void analyse_helper_result_free(struct analyse_helper_result *result)
{
    if (!result)
        return;
    free(result->s);
    free(result);
}

int analyse_helper_run(const struct analyse_helper_input *in, const struct analyse_helper_rules *rules,
                       struct analyse_helper_result **ret_result)
{
    if (!in || !rules || !ret_result)
        return -EINVAL;
    struct out o = {0};
    /* Each peer's rules for its own framework; a job that names none hears from every family,
     * each rule still needing its own evidence. */
    bool ms = in->framework == ANALYSE_FW_MINDSPORE || in->framework == ANALYSE_FW_OTHER;
    bool tb = in->framework == ANALYSE_FW_TORCH || in->framework == ANALYSE_FW_OTHER;
    int r = ms ? rules_mindinsight(in, rules, &o) : 0;
    if (r >= 0 && tb)
        r = rules_tb(in, rules, &o);
    if (r >= 0)
        r = rules_tf(in, rules, &o);
    if (r >= 0)
        r = rules_ranks(in, rules, ms, &o);
    if (r >= 0)
        r = rules_cluster(in, rules, &o);
    struct analyse_helper_result *res = r >= 0 ? calloc(1, sizeof *res) : NULL;
    if (!res) {
        free(o.s);
        return r < 0 ? r : -ENOMEM;
    }
    res->n = o.n;
    res->s = o.s;
    *ret_result = res;
    return 0;
}
