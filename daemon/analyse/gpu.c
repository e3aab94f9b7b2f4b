/* SPDX-License-Identifier: MIT */
/*
 * gpu: GPU time as Holistic Trace Analysis 0.5.0 computes it (analyse_gpu.h): kernel types by
 * name, the device events HTA keeps (those a host span launched before the last profiler step),
 * and the temporal breakdown of a rank. Written from HTA's documented definitions and checked
 * against HTA itself on the same traces (tests/integ/test_gpu.py); no HTA code is copied.
 */
#include "analyse_gpu.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


const char *const analyse_gpu_ktype_names[ANALYSE_GPU_KTYPE_COUNT] = {
    "computation", "communication", "memory", "other",
};

static bool starts(const char *s, size_t n, const char *p)
{
    size_t m = strlen(p);
    return n >= m && memcmp(s, p, m) == 0;
}

/* Whether p occurs in s[from, n). */
static bool holds(const char *s, size_t n, size_t from, const char *p)
{
    size_t m = strlen(p);
    for (size_t i = from; i + m <= n; i++)
        if (memcmp(s + i, p, m) == 0)
            return true;
    return false;
}

enum analyse_gpu_ktype analyse_gpu_kernel_type(const char *name, size_t len)
{
    if (starts(name, len, "nccl") && holds(name, len, 4, "Kernel"))
        return ANALYSE_GPU_COMMUNICATION;
    if (starts(name, len, "Memcpy") || starts(name, len, "Memset") || starts(name, len, "dma"))
        return ANALYSE_GPU_MEMORY;
    if (holds(name, len, 0, "Memcpy") || holds(name, len, 0, "Sync"))
        return ANALYSE_GPU_OTHER;
    return ANALYSE_GPU_COMPUTATION;
}

static bool is_device(const struct analyse_span *s)
{
    return s->role == ANALYSE_ROLE_KERNEL || s->role == ANALYSE_ROLE_MEMCPY ||
           s->role == ANALYSE_ROLE_MEMSET;
}

static bool is_step(const struct analyse_span *s)
{
    return s->role == ANALYSE_ROLE_STEP ||
           (s->role == ANALYSE_ROLE_GPU_ANNOTATION &&
            starts(s->name, s->name_len, "ProfilerStep#"));
}

static int64_t floor_us(int64_t ns)
{
    int64_t r = ns % 1000;
    return ns - (r < 0 ? r + 1000 : r);
}

/* A span's start and end as HTA reads them (opts->round_us: start up, end down to a microsecond). */
static int64_t start_of(const struct analyse_span *s, const struct analyse_gpu_opts *o)
{
    if (!o->round_us)
        return s->ts_ns;
    int64_t f = floor_us(s->ts_ns);
    return f == s->ts_ns ? f : f + 1000;
}

static int64_t end_of(const struct analyse_span *s, const struct analyse_gpu_opts *o)
{
    return o->round_us ? floor_us(s->ts_ns + s->dur_ns) : s->ts_ns + s->dur_ns;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

struct iv {
    int64_t start, end;
};

static int cmp_iv(const void *a, const void *b)
{
    const struct iv *x = a, *y = b;
    if (x->start != y->start)
        return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

/* Merges v[0, n) as HTA merges kernels, in place: sorted by start, an interval starting after
 * every earlier end opens a group, which lasts from its first start to its latest end. Returns
 * the number of groups, now v[0, groups). */
static size_t merge_groups(struct iv *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_iv);
    size_t g = 0, i = 0;
    while (i < n) {
        struct iv grp = v[i];
        for (i++; i < n && v[i].start <= grp.end; i++)
            if (v[i].end > grp.end)
                grp.end = v[i].end;
        v[g++] = grp;
    }
    return g;
}

/* The length of v[0, n) merged as HTA merges kernels (reorders v). */
static int64_t merged_ns(struct iv *v, size_t n)
{
    int64_t total = 0;
    size_t g = merge_groups(v, n);
    for (size_t i = 0; i < g; i++)
        total += v[i].end - v[i].start;
    return total;
}

static int cmp_name(const void *a, const void *b)
{
    const struct analyse_span *x = *(const struct analyse_span *const *)a;
    const struct analyse_span *y = *(const struct analyse_span *const *)b;
    size_t m = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = m ? memcmp(x->name, y->name, m) : 0;
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* HTA's cut: the distinct step names and the latest step start (or end). */
static int step_cut(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                    struct analyse_gpu_filter *f)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += is_step(&spans[i]);
    if (k == 0)
        return 0;
    const struct analyse_span **v = malloc(k * sizeof *v);
    if (!v)
        return -ENOMEM;
    k = 0;
    int64_t last_start = INT64_MIN, last_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (!is_step(&spans[i]))
            continue;
        v[k++] = &spans[i];
        if (start_of(&spans[i], o) > last_start)
            last_start = start_of(&spans[i], o);
        if (end_of(&spans[i], o) > last_end)
            last_end = end_of(&spans[i], o);
    }
    qsort(v, k, sizeof *v, cmp_name);
    f->n_step_names = 1;
    for (size_t i = 1; i < k; i++)
        f->n_step_names += cmp_name(&v[i - 1], &v[i]) != 0;
    free(v);
    f->filtered = f->n_step_names >= 2;
    f->cut_ns = o->include_last_step ? last_end : last_start;
    return 0;
}

static bool before_cut(int64_t ts, const struct analyse_gpu_filter *f, const struct analyse_gpu_opts *o)
{
    return o->include_last_step ? ts <= f->cut_ns : ts < f->cut_ns;
}

/* A kept device event: its interval as HTA reads it and its kernel type. */
struct kev {
    struct iv iv;
    enum analyse_gpu_ktype type;
    size_t span; /* its index in the spans */
};

/* The device events HTA keeps (analyse_gpu_filter), in span order: *ret (free()) and *ret_n. */
static int kept_events(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                       struct analyse_gpu_filter *f, struct kev **ret, size_t *ret_n)
{
    memset(f, 0, sizeof *f);
    *ret = NULL;
    *ret_n = 0;
    if (step_cut(spans, n, o, f) < 0)
        return -ENOMEM;
    /* The correlations of the host spans before the cut, sorted. */
    size_t n_corr = 0;
    for (size_t i = 0; i < n; i++) {
        f->n_device += is_device(&spans[i]);
        n_corr += !is_device(&spans[i]) && spans[i].correlation >= 0;
    }
    int64_t *corr = malloc((n_corr ? n_corr : 1) * sizeof *corr);
    struct kev *v = malloc((f->n_device ? f->n_device : 1) * sizeof *v);
    if (!corr || !v) {
        free(corr);
        free(v);
        return -ENOMEM;
    }
    n_corr = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_device(&spans[i]) && spans[i].correlation >= 0 &&
            before_cut(start_of(&spans[i], o), f, o))
            corr[n_corr++] = spans[i].correlation;
    qsort(corr, n_corr, sizeof *corr, cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        if (!is_device(s))
            continue;
        struct iv e = {start_of(s, o), end_of(s, o)};
        if (f->filtered) {
            bool keep = s->correlation >= 0
                            ? bsearch(&s->correlation, corr, n_corr, sizeof *corr, cmp_i64) != NULL
                            : before_cut(e.start, f, o);
            if (!keep)
                continue;
        }
        v[k++] = (struct kev){e, analyse_gpu_kernel_type(s->name, s->name_len), i};
    }
    free(corr);
    f->n_kept = k;
    *ret = v;
    *ret_n = k;
    return 0;
}

int analyse_gpu_temporal(const struct analyse_span *spans, size_t n,
                         const struct analyse_gpu_opts *o, struct analyse_gpu_temporal *ret)
{
    memset(ret, 0, sizeof *ret);
    struct kev *ev;
    size_t k;
    if (kept_events(spans, n, o, &ret->filter, &ev, &k) < 0)
        return -ENOMEM;
    size_t m = k ? k : 1;
    struct iv *all = malloc(m * sizeof *all), *comp = malloc(m * sizeof *comp);
    if (!all || !comp) {
        free(ev);
        free(all);
        free(comp);
        return -ENOMEM;
    }
    size_t c = 0;
    for (size_t i = 0; i < k; i++) {
        if (i == 0 || ev[i].iv.start < ret->start_ns)
            ret->start_ns = ev[i].iv.start;
        if (i == 0 || ev[i].iv.end > ret->end_ns)
            ret->end_ns = ev[i].iv.end;
        all[i] = ev[i].iv;
        if (ev[i].type == ANALYSE_GPU_COMPUTATION)
            comp[c++] = ev[i].iv;
    }
    if (k > 0) {
        ret->kernel_ns = ret->end_ns - ret->start_ns;
        ret->idle_ns = ret->kernel_ns - merged_ns(all, k);
        ret->compute_ns = merged_ns(comp, c);
        ret->non_compute_ns = ret->kernel_ns - ret->compute_ns - ret->idle_ns;
    }
    free(ev);
    free(all);
    free(comp);
    return 0;
}

/* A boundary of a merged group in the kernel-type sweep. */
struct edge {
    int64_t t;
    int d; /* +bit at a start, -bit at an end */
};

static int cmp_edge(const void *a, const void *b)
{
    const struct edge *x = a, *y = b;
    if (x->t != y->t)
        return (x->t > y->t) - (x->t < y->t);
    return (x->d > y->d) - (x->d < y->d); /* ends first: no zero-length overlap */
}

int analyse_gpu_kernel_types(const struct analyse_span *spans, size_t n,
                             const struct analyse_gpu_opts *o, struct analyse_gpu_ktypes *ret)
{
    memset(ret, 0, sizeof *ret);
    struct kev *ev;
    size_t k;
    if (kept_events(spans, n, o, &ret->filter, &ev, &k) < 0)
        return -ENOMEM;
    static const enum analyse_gpu_ktype order[] = {
        ANALYSE_GPU_COMPUTATION, ANALYSE_GPU_COMMUNICATION, ANALYSE_GPU_MEMORY,
    };
    size_t n_types = o->include_memory ? 3 : 2;
    struct iv *v = malloc((k ? k : 1) * sizeof *v);
    struct edge *e = malloc((k ? 2 * k : 1) * sizeof *e);
    if (!v || !e) {
        free(ev);
        free(v);
        free(e);
        return -ENOMEM;
    }
    size_t ne = 0;
    for (size_t b = 0; b < n_types; b++) {
        size_t m = 0;
        for (size_t i = 0; i < k; i++)
            if (ev[i].type == order[b])
                v[m++] = ev[i].iv;
        size_t g = merge_groups(v, m);
        for (size_t i = 0; i < g; i++) {
            ret->group_ns[b] += v[i].end - v[i].start;
            e[ne++] = (struct edge){v[i].start, 1 << b};
            e[ne++] = (struct edge){v[i].end, -(1 << b)};
        }
    }
    qsort(e, ne, sizeof *e, cmp_edge);
    int running = 0;
    for (size_t i = 0; i + 1 < ne; i++) {
        running += e[i].d;
        if (running > 0 && running < ANALYSE_GPU_MASKS)
            ret->ns[running] += e[i + 1].t - e[i].t;
    }
    free(ev);
    free(v);
    free(e);
    return 0;
}

const char *analyse_gpu_mask_name(unsigned mask, char *buf, size_t size)
{
    static const char *const names[] = {"COMPUTATION", "COMMUNICATION", "MEMORY"};
    size_t len = 0;
    if (size == 0)
        return buf;
    buf[0] = '\0';
    for (unsigned b = 0; b < 3; b++) {
        if (!(mask & (1u << b)))
            continue;
        const char *parts[] = {len ? " overlapping " : "", names[b]};
        for (size_t p = 0; p < 2; p++) {
            size_t m = strlen(parts[p]);
            if (len + m >= size)
                m = size - 1 - len;
            memcpy(buf + len, parts[p], m);
            len += m;
            buf[len] = '\0';
        }
    }
    return buf;
}

static bool named(const struct analyse_span *s, const char *name)
{
    return s->name_len == strlen(name) && memcmp(s->name, name, s->name_len) == 0;
}

static bool launches(const struct analyse_span *s, bool memory)
{
    return named(s, "cudaLaunchKernel") || named(s, "cudaLaunchKernelExC") ||
           (memory && (named(s, "cudaMemcpyAsync") || named(s, "cudaMemsetAsync")));
}

static int cmp_launch(const void *a, const void *b)
{
    const struct analyse_gpu_launch *x = a, *y = b;
    if (x->correlation != y->correlation)
        return (x->correlation > y->correlation) - (x->correlation < y->correlation);
    if (x->gpu_ts_ns != y->gpu_ts_ns)
        return (x->gpu_ts_ns > y->gpu_ts_ns) - (x->gpu_ts_ns < y->gpu_ts_ns);
    return (x->cpu_ts_ns > y->cpu_ts_ns) - (x->cpu_ts_ns < y->cpu_ts_ns);
}

/* A host span before the cut, by correlation. */
struct hspan {
    int64_t correlation;
    size_t span;
};

static int cmp_hspan(const void *a, const void *b)
{
    const struct hspan *x = a, *y = b;
    if (x->correlation != y->correlation)
        return (x->correlation > y->correlation) - (x->correlation < y->correlation);
    return (x->span > y->span) - (x->span < y->span);
}

int analyse_gpu_launches(const struct analyse_span *spans, size_t n,
                         const struct analyse_gpu_opts *o, int64_t runtime_cutoff_ns,
                         int64_t delay_cutoff_ns, struct analyse_gpu_launch **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    struct analyse_gpu_filter f;
    struct kev *ev;
    size_t k;
    if (kept_events(spans, n, o, &f, &ev, &k) < 0)
        return -ENOMEM;
    /* The host spans before the cut that carry a correlation, and the launching correlations. */
    size_t nh = 0, nl = 0;
    for (size_t i = 0; i < n; i++)
        if (!is_device(&spans[i]) && spans[i].correlation >= 0) {
            nh++;
            nl += launches(&spans[i], o->include_memory);
        }
    struct hspan *h = malloc((nh ? nh : 1) * sizeof *h);
    int64_t *lc = malloc((nl ? nl : 1) * sizeof *lc);
    if (!h || !lc) {
        free(ev);
        free(h);
        free(lc);
        return -ENOMEM;
    }
    nh = nl = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        if (is_device(s) || s->correlation < 0)
            continue;
        if (launches(s, o->include_memory))
            lc[nl++] = s->correlation;
        if (!f.filtered || before_cut(start_of(s, o), &f, o))
            h[nh++] = (struct hspan){s->correlation, i};
    }
    qsort(h, nh, sizeof *h, cmp_hspan);
    qsort(lc, nl, sizeof *lc, cmp_i64);
    /* Pairs: each kept device event with a launching correlation, with every host span of it. */
    size_t np = 0, cap = 0;
    struct analyse_gpu_launch *out = NULL;
    int err = 0;
    for (size_t j = 0; j < k && !err; j++) {
        const struct analyse_span *d = &spans[ev[j].span];
        if (d->correlation < 0 || !bsearch(&d->correlation, lc, nl, sizeof *lc, cmp_i64))
            continue;
        size_t lo = 0, hi = nh;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (h[mid].correlation < d->correlation)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t m = lo; m < nh && h[m].correlation == d->correlation; m++) {
            if (np == cap) {
                size_t nc = cap ? 2 * cap : 256;
                struct analyse_gpu_launch *v = realloc(out, nc * sizeof *v);
                if (!v) {
                    err = -ENOMEM;
                    break;
                }
                out = v;
                cap = nc;
            }
            const struct analyse_span *c = &spans[h[m].span];
            struct analyse_gpu_launch *r = &out[np++];
            r->correlation = d->correlation;
            r->cpu_ts_ns = start_of(c, o);
            r->cpu_dur_ns = end_of(c, o) - r->cpu_ts_ns;
            r->gpu_ts_ns = ev[j].iv.start;
            r->gpu_dur_ns = ev[j].iv.end - ev[j].iv.start;
            int64_t delay = r->gpu_ts_ns - r->cpu_ts_ns - r->cpu_dur_ns;
            r->delay_ns = delay > 0 ? delay : 0;
            r->runtime = c->name;
            r->runtime_len = c->name_len;
            r->kernel = d->name;
            r->kernel_len = d->name_len;
            r->is_short = r->cpu_dur_ns <= runtime_cutoff_ns && r->gpu_dur_ns < r->cpu_dur_ns;
            r->runtime_outlier = r->cpu_dur_ns > runtime_cutoff_ns;
            r->delay_outlier = r->delay_ns > delay_cutoff_ns;
        }
    }
    free(ev);
    free(h);
    free(lc);
    if (err) {
        free(out);
        return err;
    }
    if (np)
        qsort(out, np, sizeof *out, cmp_launch);
    *ret = out;
    *ret_n = np;
    return 0;
}

const char *const analyse_gpu_idle_names[ANALYSE_GPU_IDLE_COUNT] = {
    "host_wait", "kernel_wait", "other",
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* pandas' linear quantile of sorted v[0, n), n > 0. */
static double quantile(const double *v, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return v[n - 1];
    return v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo);
}

/* describe() of v[0, n) (sorts v). */
static void describe(double *v, size_t n, struct analyse_gpu_stats *st)
{
    st->count = n;
    if (n == 0) {
        st->mean = st->std = st->min = st->q25 = st->q50 = st->q75 = st->max = NAN;
        return;
    }
    qsort(v, n, sizeof *v, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    st->mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - st->mean) * (v[i] - st->mean);
    st->std = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
    st->min = v[0];
    st->max = v[n - 1];
    st->q25 = quantile(v, n, 0.25);
    st->q50 = quantile(v, n, 0.50);
    st->q75 = quantile(v, n, 0.75);
}

/* A kept device event on a known stream. */
struct sev {
    int64_t stream;
    struct iv iv;
    size_t span;
};

static int cmp_sev(const void *a, const void *b)
{
    const struct sev *x = a, *y = b;
    if (x->stream != y->stream)
        return (x->stream > y->stream) - (x->stream < y->stream);
    if (x->iv.start != y->iv.start)
        return (x->iv.start > y->iv.start) - (x->iv.start < y->iv.start);
    return (x->span > y->span) - (x->span < y->span);
}

/* The kept device events with a stream, by stream then start: *ret (free()), *ret_n. */
static int stream_events(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                         struct analyse_gpu_filter *f, struct sev **ret, size_t *ret_n)
{
    struct kev *ev;
    size_t k;
    *ret = NULL;
    *ret_n = 0;
    if (kept_events(spans, n, o, f, &ev, &k) < 0)
        return -ENOMEM;
    struct sev *v = malloc((k ? k : 1) * sizeof *v);
    if (!v) {
        free(ev);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < k; i++)
        if (spans[ev[i].span].tid >= 0)
            v[m++] = (struct sev){spans[ev[i].span].tid, ev[i].iv, ev[i].span};
    free(ev);
    qsort(v, m, sizeof *v, cmp_sev);
    *ret = v;
    *ret_n = m;
    return 0;
}

/* The host spans (before the cut when filtered) with a correlation, by correlation then span:
 * *ret (free()), *ret_n; launch_only: those analyse_gpu_is_launch() names. */
static int host_by_corr(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                        const struct analyse_gpu_filter *f, bool launch_only, struct hspan **ret,
                        size_t *ret_n)
{
    size_t nh = 0;
    for (size_t i = 0; i < n; i++)
        nh += !is_device(&spans[i]) && spans[i].correlation >= 0;
    struct hspan *h = malloc((nh ? nh : 1) * sizeof *h);
    if (!h)
        return -ENOMEM;
    nh = 0;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        if (is_device(s) || s->correlation < 0 || (launch_only && !analyse_gpu_is_launch(s)))
            continue;
        if (!f->filtered || before_cut(start_of(s, o), f, o))
            h[nh++] = (struct hspan){s->correlation, i};
    }
    qsort(h, nh, sizeof *h, cmp_hspan);
    *ret = h;
    *ret_n = nh;
    return 0;
}

/* The first of h[0, nh) with correlation c, or nh. */
static size_t hspan_find(const struct hspan *h, size_t nh, int64_t c)
{
    size_t lo = 0, hi = nh;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].correlation < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nh && h[lo].correlation == c ? lo : nh;
}

int analyse_gpu_idle(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                     int64_t consecutive_ns, struct analyse_gpu_filter *ret_filter,
                     struct analyse_gpu_idle **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    struct sev *ev;
    size_t k;
    if (stream_events(spans, n, o, ret_filter, &ev, &k) < 0)
        return -ENOMEM;
    struct hspan *h = NULL;
    size_t nh = 0, n_streams = 0;
    for (size_t i = 0; i < k; i++)
        n_streams += i == 0 || ev[i].stream != ev[i - 1].stream;
    struct analyse_gpu_idle *out = calloc(n_streams ? n_streams : 1, sizeof *out);
    double *iv = malloc((k ? k : 1) * sizeof *iv), *tmp = malloc((k ? k : 1) * sizeof *tmp);
    uint8_t *cat = malloc(k ? k : 1);
    if (!out || !iv || !tmp || !cat || host_by_corr(spans, n, o, ret_filter, false, &h, &nh) < 0) {
        free(ev);
        free(out);
        free(iv);
        free(tmp);
        free(cat);
        return -ENOMEM;
    }
    size_t s = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        struct analyse_gpu_idle *r = &out[s++];
        r->stream = ev[i].stream;
        for (; j < k && ev[j].stream == r->stream; j++) {
            if (j == i)
                continue;
            int64_t prev_end = ev[j - 1].iv.end;
            int64_t gap = ev[j].iv.start - prev_end;
            /* HTA's ts_runtime: the host span its correlation links (the last one in the trace
             * when several share it, as HTA's index assignment leaves it). */
            const struct analyse_span *d = &spans[ev[j].span];
            bool host_wait = false;
            size_t m = d->correlation >= 0 ? hspan_find(h, nh, d->correlation) : nh;
            if (m < nh) {
                while (m + 1 < nh && h[m + 1].correlation == d->correlation)
                    m++;
                host_wait = start_of(&spans[h[m].span], o) > prev_end;
            }
            enum analyse_gpu_idle_cat c = host_wait              ? ANALYSE_GPU_IDLE_HOST_WAIT
                                          : gap < consecutive_ns ? ANALYSE_GPU_IDLE_KERNEL_WAIT
                                                                 : ANALYSE_GPU_IDLE_OTHER;
            r->ns[c] += gap;
            iv[j] = (double)gap;
            cat[j] = (uint8_t)c;
        }
        r->n_events = j - i;
        for (unsigned c = 0; c < ANALYSE_GPU_IDLE_COUNT; c++) {
            size_t m = 0;
            for (size_t x = i + 1; x < j; x++)
                if (cat[x] == c)
                    tmp[m++] = iv[x];
            describe(tmp, m, &r->stats[c]);
        }
        i = j;
    }
    free(ev);
    free(h);
    free(iv);
    free(tmp);
    free(cat);
    *ret = out;
    *ret_n = s;
    return 0;
}

bool analyse_gpu_is_launch(const struct analyse_span *s)
{
    static const char *const names[] = {
        "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cudaMemcpyAsync",
        "cudaMemsetAsync", "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync",
        "hipMemcpyAsync", "hipMemcpyWithStream",
        "runFunction - job_prep_and_submit_for_execution",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (named(s, names[i]))
            return true;
    return false;
}

/* A change of a stream's queue: +1 at a launch, -1 at the device event's start. */
struct qev {
    int64_t stream;
    int64_t ts;
    int d;
    size_t seq; /* the order of making: at one instant launches first, then this */
};

static int cmp_qev(const void *a, const void *b)
{
    const struct qev *x = a, *y = b;
    if (x->stream != y->stream)
        return (x->stream > y->stream) - (x->stream < y->stream);
    if (x->ts != y->ts)
        return (x->ts > y->ts) - (x->ts < y->ts);
    if (x->d != y->d)
        return (x->d < y->d) - (x->d > y->d);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Downsamples p[0, n) into out (see analyse_gpu_queues()); returns the points kept. */
static size_t downsample(const struct analyse_gpu_qpoint *p, size_t n, size_t max_points,
                         struct analyse_gpu_qpoint *out)
{
    if (n <= max_points) {
        memcpy(out, p, n * sizeof *p);
        return n;
    }
    size_t k = 0, runs = (max_points - 2) / 2, inner = n - 2;
    out[k++] = p[0];
    for (size_t b = 0; b < runs; b++) {
        size_t lo = 1 + b * inner / runs, hi = 1 + (b + 1) * inner / runs;
        if (lo >= hi)
            continue;
        size_t mn = lo, mx = lo;
        for (size_t i = lo + 1; i < hi; i++) {
            if (p[i].len < p[mn].len)
                mn = i;
            if (p[i].len > p[mx].len)
                mx = i;
        }
        out[k++] = p[mn < mx ? mn : mx];
        if (mn != mx)
            out[k++] = p[mn < mx ? mx : mn];
    }
    out[k++] = p[n - 1];
    return k;
}

void analyse_gpu_queues_done(struct analyse_gpu_queues *q)
{
    free(q->streams);
    free(q->points);
    memset(q, 0, sizeof *q);
}

int analyse_gpu_queues(const struct analyse_span *spans, size_t n, const struct analyse_gpu_opts *o,
                       int64_t max_queue, size_t max_points, struct analyse_gpu_queues *ret)
{
    memset(ret, 0, sizeof *ret);
    if (max_points < 4)
        max_points = 4;
    struct sev *ev;
    size_t k;
    if (stream_events(spans, n, o, &ret->filter, &ev, &k) < 0)
        return -ENOMEM;
    struct hspan *h = NULL;
    size_t nh = 0;
    if (host_by_corr(spans, n, o, &ret->filter, true, &h, &nh) < 0) {
        free(ev);
        return -ENOMEM;
    }
    /* The trace's span as HTA measures it: the latest start - the earliest, of the spans kept. */
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        const struct analyse_span *s = &spans[i];
        if (is_device(s) || (ret->filter.filtered && !before_cut(start_of(s, o), &ret->filter, o)))
            continue;
        t0 = start_of(s, o) < t0 ? start_of(s, o) : t0;
        t1 = start_of(s, o) > t1 ? start_of(s, o) : t1;
    }
    for (size_t i = 0; i < k; i++) {
        t0 = ev[i].iv.start < t0 ? ev[i].iv.start : t0;
        t1 = ev[i].iv.start > t1 ? ev[i].iv.start : t1;
    }
    ret->trace_ns = t1 >= t0 ? t1 - t0 : 0;
    /* The changes: per device event with a launch, +1 per launching span and -1 at its start. */
    size_t nq = 0;
    for (size_t i = 0; i < k; i++) {
        int64_t c = spans[ev[i].span].correlation;
        size_t m = c >= 0 ? hspan_find(h, nh, c) : nh;
        if (m == nh)
            continue;
        nq++;
        for (; m < nh && h[m].correlation == c; m++)
            nq++;
    }
    struct qev *q = malloc((nq ? nq : 1) * sizeof *q);
    if (!q) {
        free(ev);
        free(h);
        return -ENOMEM;
    }
    nq = 0;
    for (size_t i = 0; i < k; i++) {
        int64_t c = spans[ev[i].span].correlation;
        size_t m = c >= 0 ? hspan_find(h, nh, c) : nh;
        if (m == nh)
            continue;
        for (; m < nh && h[m].correlation == c; m++)
            q[nq] = (struct qev){ev[i].stream, start_of(&spans[h[m].span], o), 1, nq}, nq++;
        q[nq] = (struct qev){ev[i].stream, ev[i].iv.start, -1, nq}, nq++;
    }
    free(ev);
    free(h);
    qsort(q, nq, sizeof *q, cmp_qev);
    size_t n_streams = 0;
    for (size_t i = 0; i < nq; i++)
        n_streams += i == 0 || q[i].stream != q[i - 1].stream;
    struct analyse_gpu_qpoint *all = malloc((nq ? nq : 1) * sizeof *all);
    double *lens = malloc((nq ? nq : 1) * sizeof *lens);
    ret->streams = calloc(n_streams ? n_streams : 1, sizeof *ret->streams);
    ret->points = malloc((nq ? nq : 1) * sizeof *ret->points);
    if (!all || !lens || !ret->streams || !ret->points) {
        free(q);
        free(all);
        free(lens);
        analyse_gpu_queues_done(ret);
        return -ENOMEM;
    }
    size_t kept = 0;
    for (size_t i = 0; i < nq;) {
        struct analyse_gpu_queue *s = &ret->streams[ret->n_streams++];
        s->stream = q[i].stream;
        int64_t len = 0;
        size_t j = i;
        for (; j < nq && q[j].stream == s->stream; j++) {
            len += q[j].d;
            all[j - i] = (struct analyse_gpu_qpoint){q[j].ts, len};
            lens[j - i] = (double)len;
            if (j > i && all[j - i - 1].len >= max_queue)
                s->full_ns += q[j].ts - all[j - i - 1].ts_ns;
        }
        s->n_points = j - i;
        describe(lens, s->n_points, &s->stats);
        s->points = ret->points + kept;
        s->n_kept = downsample(all, s->n_points, max_points, s->points);
        kept += s->n_kept;
        i = j;
    }
    free(q);
    free(all);
    free(lens);
    return 0;
}

/* ---- HTA's per-kernel table ---- */

struct named_dur {
    const char *name;
    size_t len;
    double us;
};

static int cmp_named_dur(const void *a, const void *b)
{
    const struct named_dur *x = a, *y = b;
    int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int cmp_metric_sum(const void *a, const void *b)
{
    const struct analyse_gpu_kmetric *x = a, *y = b;
    if (x->sum_us != y->sum_us)
        return x->sum_us > y->sum_us ? -1 : 1;
    int c = memcmp(x->name, y->name, x->name_len < y->name_len ? x->name_len : y->name_len);
    return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* pandas' agg(["sum", "max", "min", "mean", "std"]) of v[0, n), n > 0 (std: ddof 1, NaN -> 0
 * as HTA fills it). */
static void agg(const double *v, size_t n, struct analyse_gpu_kmetric *m)
{
    double sum = 0, mx = v[0], mn = v[0];
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        mx = v[i] > mx ? v[i] : mx;
        mn = v[i] < mn ? v[i] : mn;
    }
    double mean = sum / (double)n, ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    m->sum_us = sum;
    m->max_us = mx;
    m->min_us = mn;
    m->mean_us = mean;
    m->std_us = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

int analyse_gpu_kernel_metrics(const struct analyse_span *spans, size_t n,
                               const struct analyse_gpu_opts *o, size_t num_kernels,
                               double duration_ratio, struct analyse_gpu_kmetric **ret,
                               size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    struct analyse_gpu_filter f;
    struct kev *ev;
    size_t k;
    if (kept_events(spans, n, o, &f, &ev, &k) < 0)
        return -ENOMEM;
    size_t m = k ? k : 1;
    struct named_dur *d = malloc(m * sizeof *d);
    double *vals = malloc(m * sizeof *vals), *cum = malloc(m * sizeof *cum);
    struct analyse_gpu_kmetric *out = malloc(m * sizeof *out);
    int r = d && vals && cum && out ? 0 : -ENOMEM;
    size_t n_out = 0;
    static const enum analyse_gpu_ktype types[] = {ANALYSE_GPU_COMPUTATION,
                                                   ANALYSE_GPU_COMMUNICATION, ANALYSE_GPU_MEMORY};
    for (size_t t = 0; r == 0 && t < (o->include_memory ? 3u : 2u); t++) {
        size_t nd = 0;
        for (size_t i = 0; i < k; i++)
            if (ev[i].type == types[t])
                d[nd++] = (struct named_dur){spans[ev[i].span].name, spans[ev[i].span].name_len,
                                             (double)(ev[i].iv.end - ev[i].iv.start) / 1000};
        qsort(d, nd, sizeof *d, cmp_named_dur);
        size_t first = n_out;
        for (size_t i = 0; i < nd;) { /* a row per name */
            size_t j = i, c = 0;
            while (j < nd && cmp_named_dur(&d[i], &d[j]) == 0)
                vals[c++] = d[j++].us;
            struct analyse_gpu_kmetric *row = &out[n_out++];
            agg(vals, c, row);
            row->type = types[t];
            row->name = d[i].name;
            row->name_len = d[i].len;
            i = j;
        }
        size_t rows = n_out - first;
        struct analyse_gpu_kmetric *v = &out[first];
        qsort(v, rows, sizeof *v, cmp_metric_sum);
        if (rows <= num_kernels)
            continue;
        /* HTA's folding into "others" and its re-aggregation over the sums. */
        double run = 0;
        for (size_t i = 0; i < rows; i++)
            cum[i] = run += v[i].sum_us;
        memcpy(vals, cum, rows * sizeof *vals);
        qsort(vals, rows, sizeof *vals, cmp_double);
        double q = quantile(vals, rows, duration_ratio);
        size_t kept = 0, n_oth = 0;
        for (size_t i = 0; i < rows; i++) {
            /* HTA's "never kept" mask is sum < 0, so a name whose (rounded) durations sum
             * below 0 is kept whatever its place. */
            if (v[i].sum_us >= 0 && (cum[i] > q || i >= num_kernels)) {
                vals[n_oth++] = v[i].sum_us;
                continue;
            }
            struct analyse_gpu_kmetric x = v[i];
            x.max_us = x.min_us = x.mean_us = x.sum_us;
            x.std_us = 0;
            v[kept++] = x;
        }
        if (n_oth > 0) {
            struct analyse_gpu_kmetric *oth = &v[kept++];
            agg(vals, n_oth, oth);
            oth->type = types[t];
            oth->name = NULL;
            oth->name_len = 0;
        }
        n_out = first + kept;
    }
    free(ev);
    free(d);
    free(vals);
    free(cum);
    if (r < 0) {
        free(out);
        return r;
    }
    *ret = out;
    *ret_n = n_out;
    return 0;
}
