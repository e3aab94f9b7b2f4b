/* SPDX-License-Identifier: MIT */
/*
 * routes_summary: /api/v1/jobs/{job}/summary/{kind} and /benchmark, paddle.profiler's summary
 * tables and benchmark timer (analyse_summary.h, analyse_benchmark.h), and /memory,
 * torch-tb-profiler's memory view (analyse_memview.h). The live snapshot keeps aggregates, not the
 * spans these tables need (merged intervals per event type, nesting), so a handler reads the
 * rank's spans from the store with store_event_iter_*(), as the timeline export does: each
 * stored line is decoded by the record decoder (core/decode.h), its X spans are copied up to
 * max_spans (each distinct (cat, name) once, into an arena, classified once), and what lies
 * beyond is counted and reported as cut.
 * The same read keeps Paddle's ExtraInfo records and memory events (docs/PROTOCOL.md 9): the
 * device summary's CPU figures are those of the windows in range (else the live snapshot's
 * host-record means), the memory summary is computed from the events (analyse_memsum.h).
 *
 * An analysis runs on a thread of its own while its connection is parked (web__conn_park(),
 * answer.h): an HTTP worker would otherwise be held for its time, and with it every connection
 * that worker had accepted (a /health among them). When it is done the thread wakes the
 * connection and the server calls the access handler again, which asks
 * web__analysis_answer() for the answer. Bounds (issue 18; docs/RELIABILITY.md): at most
 * analyses_max (http_threads - 1) run at once, the next answers 503 busy; one still reading the
 * store http_analysis_timeout_ms after it began stops and answers 503 deadline; one whose client
 * hung up stops (its socket is peeked every SPANS_CHECK lines) and is not answered; web_stop()
 * stops them all the same way and waits for them. What is read is capped by ?max_spans=
 * (reported as spans_cut), and the tables are O(n log n) in it. Memory: the running analyses
 * together hold at most http_analysis_max_bytes (estimated). Before it reads, an analysis
 * reserves what it would hold with every one of the rank's events a span of a distinct name
 * (forecast(): the spans, the intern table, analyse_summary_bytes(), a rendered row each); more
 * than the budget alone answers 413 analysis_too_large at once; while the others' charges leave
 * too little it waits for them (until its deadline: then 503 busy). While it reads and before
 * it renders, what it actually holds is charged on top when larger (names, rows), and a charge
 * past the budget then stops it the same way (413 alone, else 503 busy).
 */
#include "routes.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "../../lib/clock.h"
#include "../../lib/json.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../analyse/analyse_stepops.h"
#include "../core/decode.h"
#include "summary.h"

#define ARENA_CHUNK (1u << 20)
#define SPANS_CHECK 4096 /* lines read between two looks at the clock and the client */
#define WEB_SUMMARY_ROW_BYTES 256 /* an answer's table row at its largest (JSON, the buffer's
                                      doubling included): a charge before rendering */

/* The bounds of one analysis: its deadline, its client's socket, its memory charge. */
struct budget {
    struct web *w;
    struct web_conn *c;
    int64_t deadline_ns;
    uint64_t charged;   /* in w->analyses_bytes; given back when the analysis ends */
    uint64_t refused;   /* the charge refused (bytes), for the message */
};

/* -ETIMEDOUT past the deadline, -ECONNABORTED when the client has closed its end (a peek reads
 * the end of the stream or an error) or the server is stopping, else 0. */
static int budget_check(const struct budget *bg)
{
    if (!bg)
        return 0;
    if (atomic_load_explicit(&bg->w->analyses_stopping, memory_order_relaxed))
        return -ECONNABORTED;
    if (clock_mono_ns() > bg->deadline_ns)
        return -ETIMEDOUT;
    int fd = web__conn_fd(bg->c);
    if (fd >= 0) {
        char b;
        ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return -ECONNABORTED;
    }
    return 0;
}

/* Raises the analysis's charge to bytes (it never lowers). Returns 0, -E2BIG when the charge
 * alone passes the budget, -EBUSY when it passes it with the other analyses' charges. */
static int budget_charge(struct budget *bg, uint64_t bytes)
{
    if (!bg || bytes <= bg->charged)
        return 0;
    struct web *w = bg->w;
    uint64_t add = bytes - bg->charged;
    uint64_t before = atomic_fetch_add_explicit(&w->analyses_bytes, add, memory_order_relaxed);
    if (before + add <= w->analysis_max_bytes) {
        bg->charged = bytes;
        return 0;
    }
    atomic_fetch_sub_explicit(&w->analyses_bytes, add, memory_order_relaxed);
    bg->refused = bytes;
    return bytes > w->analysis_max_bytes ? -E2BIG : -EBUSY;
}

/* Reserves bytes before the analysis begins, waiting while the other analyses' charges leave too
 * little (woken when one ends, and every 50 ms for budget_check()). Returns 0, -E2BIG (more
 * than the whole budget), -EBUSY (still too little at the deadline), or budget_check()'s. */
static int budget_reserve(struct budget *bg, uint64_t bytes)
{
    struct web *w = bg->w;
    int r = budget_charge(bg, bytes);
    if (r != -EBUSY)
        return r;
    pthread_mutex_lock(&w->analyses_lock);
    while ((r = budget_charge(bg, bytes)) == -EBUSY) {
        int c = budget_check(bg);
        if (c < 0) {
            r = c == -ETIMEDOUT ? -EBUSY : c;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 50 * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&w->analyses_cond, &w->analyses_lock, &ts);
    }
    pthread_mutex_unlock(&w->analyses_lock);
    return r;
}

static void budget_release(struct budget *bg)
{
    atomic_fetch_sub_explicit(&bg->w->analyses_bytes, bg->charged, memory_order_relaxed);
    bg->charged = 0;
}

/* Takes an analysis slot: 0, or -1 with the answer (503 busy) in a. */
static int slot_take(struct web *w, struct web_answer *a)
{
    if (atomic_fetch_add_explicit(&w->analyses_active, 1,
                                  memory_order_relaxed) >= w->analyses_max) {
        atomic_fetch_sub_explicit(&w->analyses_active, 1, memory_order_relaxed);
        STATS_ADD(w->stats, http_analyses_refused, 1);
        web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy",
                                   "every analysis worker is busy (http_threads - 1 at once); "
                                   "retry");
        return -1;
    }
    return 0;
}

static void slot_put(struct web *w)
{
    atomic_fetch_sub_explicit(&w->analyses_active, 1, memory_order_relaxed);
}

/* The answer to a failed analysis: a hung-up client gets none (the connection is closed), a
 * deadline 503, past the memory budget 413 (alone) or 503 busy (with the others), the rest
 * web__store_error(). */
static int send_failure(struct web *w, struct web_answer *a, int r, uint64_t refused,
                        const char *what)
{
    if (r == -E2BIG || r == -EBUSY) {
        STATS_ADD(w->stats, http_analyses_over_budget, 1);
        char msg[256];
        unsigned long long mib = (unsigned long long)((refused + (1u << 20) - 1) >> 20),
                           max = (unsigned long long)(w->analysis_max_bytes >> 20);
        if (r == -E2BIG) {
            snprintf(msg, sizeof msg,
                     "the analysis would hold about %llu MiB, more than http_analysis_max_bytes "
                     "(%llu MiB); narrow ?steps= or lower ?max_spans=", mib, max);
            return web__error(a, WEB_HTTP_CONTENT_TOO_LARGE, "analysis_too_large", msg);
        }
        snprintf(msg, sizeof msg,
                 "the running analyses hold http_analysis_max_bytes (%llu MiB) with this one's "
                 "%llu MiB; retry", max, mib);
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy", msg);
    }
    if (r == -ECONNABORTED) {
        STATS_ADD(w->stats, http_analyses_abandoned, 1);
        web__answer_done(a);
        a->status = 0;
        a->how = WEB_ANSWER_CLOSE;
        return 0;
    }
    if (r == -ETIMEDOUT) {
        STATS_ADD(w->stats, http_analyses_timed_out, 1);
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the analysis ran past http_analysis_timeout_ms (%lld ms); narrow ?steps= or "
                 "lower ?max_spans=",
                 (long long)(w->analysis_timeout_ns / 1000000));
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "deadline", msg);
    }
    return web__store_error(a, r, what);
}

static int bad(struct web_answer *a, const char *msg)
{
    return web__error(a, WEB_HTTP_BAD_REQUEST, "bad_request", msg);
}

/* Names and cats of the spans read, in 1 MiB chunks. */
struct arena {
    char **chunks;
    size_t n_chunks;
    char *cur;
    size_t left;
};

static const char *arena_dup(struct arena *a, const char *s, size_t n)
{
    if (n > a->left) {
        size_t size = n > ARENA_CHUNK ? n : ARENA_CHUNK;
        char **cs = realloc(a->chunks, (a->n_chunks + 1) * sizeof *cs);
        if (!cs)
            return NULL;
        a->chunks = cs;
        char *c = malloc(size);
        if (!c)
            return NULL;
        a->chunks[a->n_chunks++] = c;
        a->cur = c;
        a->left = size;
    }
    char *p = a->cur;
    memcpy(p, s, n);
    a->cur += n;
    a->left -= n;
    return p;
}

static void arena_free(struct arena *a)
{
    for (size_t i = 0; i < a->n_chunks; i++)
        free(a->chunks[i]);
    free(a->chunks);
}

/* A pid or tid as a number: its leading integer ("29559(Python)" and "29559(C++)" are one
 * thread, as in Paddle's own trees), else a hash of the text. */
static int64_t id_of(struct record_text t)
{
    size_t n = record_id_len(t);
    if (n > 0) {
        int64_t v = 0;
        for (size_t i = t.ptr[0] == '-' ? 1 : 0; i < n; i++)
            v = v * 10 + (t.ptr[i] - '0');
        return t.ptr[0] == '-' ? -v : v;
    }
    /* Not FNV's own offset basis but the one these ids were first made with: ids are answers. */
    return (int64_t)(util_hash(UINT64_C(1469598103934665603), t.ptr, t.len) >> 1);
}

/* One distinct (cat, name): its text, copied once into the arena, and its role. Names repeat
 * (every call of an operator), so this saves both the copies and the rule matching. */
struct intern {
    const char *name, *cat;
    size_t name_len, cat_len;
    uint64_t hash;
    enum analyse_role role;
};

struct spans {
    struct analyse_span *v;
    size_t n, cap, max;
    int64_t cut, bad;
    struct arena names;
    struct intern *ent;  /* the distinct (cat, name)s, [used] of [cap_ent] */
    size_t used, cap_ent;
    uint32_t *tab;       /* open addressing over ent: index + 1, 0 = empty (4 bytes a slot, not
                            an entry's 56: at 1 M names the table was 117 MB) */
    size_t n_tab;
    bool opview;                     /* tb-profiler's operator view: also each span's links
                                        (correlation, External id), its type to the plugin, and
                                        an operator's input shape and call stack (opv) */
    struct analyse_opv_event *opv;   /* with opview: [n], opv[i] is v[i]'s (span set after the
                                        read: v moves while it grows) */
    bool aicpu;                      /* read only AI CPU tasks (spans with args.dispatch_time_us) */
    struct analyse_aicpu_task *task; /* with aicpu: [n], task[i] is v[i]'s */
    bool tb;                         /* read for torch-tb-profiler's kernel and communication
                                        tables: only kernels, runtime calls and host operators,
                                        with their links and Kineto args */
    struct analyse_tbk_args *targ;   /* with tb: [n], targ[i] is v[i]'s */
    /* Paddle's profiler windows (not with aicpu; docs/PROTOCOL.md 9): their ExtraInfo records
     * and their memory events (at most max; past it counted in cut). */
    struct extra *extra;
    size_t n_extra, cap_extra;
    struct analyse_mem_event *mem;
    size_t n_mem, cap_mem;
    /* /memory (not with aicpu): the memory events of every profiler (Kineto's and Paddle's
     * "[memory]") and the collector's allocator samples ("[memory stats]"), at most max; past it
     * counted in cut. Paddle's are kept here, not in mem. */
    bool memview;
    struct analyse_mv_event *mv;
    size_t n_mv, cap_mv;
    size_t (*work_bytes)(size_t n); /* what the analysis of n spans will hold beyond them */
    /* A ranged diff's read (diff_side()): the lines the store's window rule puts in [win_lo,
     * win_hi] (ts <= win_hi and ts + dur >= win_lo, or no ts) are read as always; of the others
     * only the step and kernel spans are kept (a kernel belongs to the step of its launch,
     * wherever it runs, and the steps in range are all of them), the other X spans are counted
     * in skipped, most of them from the store's scan of the line alone, not decoded. A read
     * whose spans would pass max answers -EAGAIN (the whole read's cut is then needed). */
    bool window;
    int64_t win_lo, win_hi;
    size_t skipped;
};

/* One window's ExtraInfo: its time range and Paddle's CPU utilisations (fractions, < 0: none). */
struct extra {
    int64_t start, end;
    double cpu, sys;
};

static int paddle_record(struct spans *s, const struct record *rec);
static int memview_record(struct spans *s, const struct record *rec, int kind);

/* What a read holds, and what the analysis of its spans will add: its charge. */
static uint64_t spans_bytes(const struct spans *s)
{
    uint64_t b = (uint64_t)s->cap * sizeof *s->v + (uint64_t)s->n_tab * sizeof *s->tab +
                 (uint64_t)s->cap_ent * sizeof *s->ent +
                 (uint64_t)s->names.n_chunks * ARENA_CHUNK +
                 (uint64_t)s->cap_extra * sizeof *s->extra + (uint64_t)s->cap_mem * sizeof *s->mem +
                 (uint64_t)s->cap_mv * sizeof *s->mv;
    if (s->aicpu)
        b += (uint64_t)s->cap * sizeof *s->task;
    if (s->opview)
        b += (uint64_t)s->cap * sizeof *s->opv;
    if (s->tb)
        b += (uint64_t)s->cap * sizeof *s->targ;
    if (s->work_bytes)
        b += s->work_bytes(s->n);
    return b;
}

/* Doubles the room of v (4096 at first) and of the arrays kept beside it, [cap] each: task
 * (aicpu), opv (opview), targ (tb). 0, or -ENOMEM with cap unchanged (an array already grown
 * keeps its new room, freed with the rest). */
static int spans_grow(struct spans *s)
{
    size_t cap = s->cap ? s->cap * 2 : 4096;
    void *p = realloc(s->v, cap * sizeof *s->v);
    if (!p)
        return -ENOMEM;
    s->v = p;
    if (s->aicpu) {
        if (!(p = realloc(s->task, cap * sizeof *s->task)))
            return -ENOMEM;
        s->task = p;
    }
    if (s->opview) {
        if (!(p = realloc(s->opv, cap * sizeof *s->opv)))
            return -ENOMEM;
        s->opv = p;
    }
    if (s->tb) {
        if (!(p = realloc(s->targ, cap * sizeof *s->targ)))
            return -ENOMEM;
        s->targ = p;
    }
    s->cap = cap;
    return 0;
}

/* The benchmark's and the AI CPU tables' work: a few words per span. */
static size_t small_work_bytes(size_t n)
{
    return 65536 + n * 4 * sizeof(int64_t);
}

/* What read_spans()'s arrays reach for n spans of n distinct names (the names' text aside),
 * plus work_bytes(n) and rows rendered rows: an analysis's reservation. */
static uint64_t forecast(size_t n, bool aicpu, bool opview, size_t (*work_bytes)(size_t),
                         size_t rows)
{
    uint64_t cap = 4096, tab = 1024;
    while (cap < n)
        cap *= 2;
    while (tab < 2 * ((uint64_t)n + 1))
        tab *= 2;
    uint64_t b = cap * sizeof(struct analyse_span) + tab * sizeof(uint32_t) +
                 tab / 2 * sizeof(struct intern) + (uint64_t)work_bytes(n) +
                 (uint64_t)rows * WEB_SUMMARY_ROW_BYTES;
    if (aicpu)
        b += cap * sizeof(struct analyse_aicpu_task);
    if (opview)
        b += cap * sizeof(struct analyse_opv_event);
    return b;
}

static void spans_free(struct spans *s)
{
    free(s->v);
    free(s->opv);
    free(s->task);
    free(s->targ);
    free(s->extra);
    free(s->mem);
    free(s->mv);
    free(s->tab);
    free(s->ent);
    arena_free(&s->names);
}

static uint64_t text_hash(struct record_text cat, struct record_text name)
{
    uint64_t h = util_hash(UTIL_HASH_SEED, cat.ptr, cat.len);
    h = util_hash(h, "\xff", 1); /* a byte no UTF-8 text holds, between the two */
    return util_hash(h, name.ptr, name.len);
}

static int intern_grow(struct spans *s)
{
    size_t n = s->n_tab ? s->n_tab * 2 : 1024;
    if (n / 2 > UINT32_MAX)
        return -ENOMEM;
    uint32_t *t = calloc(n, sizeof *t);
    struct intern *e = realloc(s->ent, n / 2 * sizeof *e);
    if (!t || !e) {
        free(t);
        if (e)
            s->ent = e;
        return -ENOMEM;
    }
    s->ent = e;
    s->cap_ent = n / 2;
    for (size_t i = 0; i < s->used; i++) {
        size_t k = e[i].hash & (n - 1);
        while (t[k])
            k = (k + 1) & (n - 1);
        t[k] = (uint32_t)(i + 1);
    }
    free(s->tab);
    s->tab = t;
    s->n_tab = n;
    return 0;
}

/* The interned (cat, name) of a record, classified on first sight; NULL on OOM. The pointer
 * holds until the next call. */
static const struct intern *intern_get(struct spans *s, struct record_text cat,
                                       struct record_text name)
{
    if (2 * (s->used + 1) > s->n_tab && intern_grow(s) < 0)
        return NULL;
    uint64_t h = text_hash(cat, name);
    size_t k = h & (s->n_tab - 1);
    for (; s->tab[k]; k = (k + 1) & (s->n_tab - 1)) {
        const struct intern *e = &s->ent[s->tab[k] - 1];
        if (e->hash == h && e->name_len == name.len && e->cat_len == cat.len &&
            memcmp(e->name, name.ptr, name.len) == 0 &&
            (cat.len == 0 || memcmp(e->cat, cat.ptr, cat.len) == 0)) /* no cat: ptr may be NULL */
            return e;
    }
    const char *n = arena_dup(&s->names, name.ptr, name.len);
    const char *c = cat.len ? arena_dup(&s->names, cat.ptr, cat.len) : "";
    if (!n || !c)
        return NULL;
    struct analyse_span probe = {.name = n, .name_len = name.len, .cat = c, .cat_len = cat.len};
    struct intern *e = &s->ent[s->used];
    *e = (struct intern){.name = n, .cat = c, .name_len = name.len, .cat_len = cat.len,
                         .hash = h, .role = analyse_role_of(&probe, NULL)};
    s->tab[k] = (uint32_t)(++s->used);
    return e;
}

/* The members of a stored line's "args" the operator view reads: "Input Dims" (else
 * "Input dims") as compact JSON text, "Call stack", and whether "Python module id" is there.
 * Texts go into the arena. Returns 0 or -ENOMEM; a line that is not as expected reads as
 * having none of them. */
static int opv_args(struct spans *s, const char *line, size_t len, bool op, bool *module,
                    struct analyse_opv_event *e)
{
    struct json_reader r;
    char key[24];
    json_reader_init(&r, line, len);
    if (!json_object_begin(&r))
        return 0;
    while (json_member(&r, key, sizeof key)) {
        if (strcmp(key, "args") != 0) {
            json_skip(&r);
            continue;
        }
        if (!json_object_begin(&r))
            return 0;
        bool dims = false;
        while (json_member(&r, key, sizeof key)) {
            bool upper = strcmp(key, "Input Dims") == 0;
            if (op && (upper || (!dims && strcmp(key, "Input dims") == 0)) &&
                json_peek(&r) == JSON_ARRAY) {
                while (r.p < r.end && (*r.p == ' ' || *r.p == '\t' || *r.p == '\n' || *r.p == '\r'))
                    r.p++;
                const char *p0 = r.p;
                if (!json_skip(&r))
                    return 0;
                /* Compact: the blanks outside strings go (the text is a key and an answer). */
                char *c = malloc((size_t)(r.p - p0) + 1);
                if (!c)
                    return -ENOMEM;
                size_t n = 0;
                bool str = false;
                for (const char *q = p0; q < r.p; q++) {
                    if (*q == '"' && (q == p0 || q[-1] != '\\'))
                        str = !str;
                    if (str || (*q != ' ' && *q != '\t' && *q != '\n' && *q != '\r'))
                        c[n++] = *q;
                }
                e->shape = n ? arena_dup(&s->names, c, n) : NULL;
                e->shape_len = n;
                free(c);
                if (n && !e->shape)
                    return -ENOMEM;
                dims = dims || upper;
            } else if (op && strcmp(key, "Call stack") == 0 && json_peek(&r) == JSON_STRING) {
                size_t n = 0;
                const char *p0 = r.p;
                if (!json_read_string(&r, NULL, 0, &n))
                    return 0;
                if (n == 0)
                    continue;
                char *c = malloc(n + 1);
                if (!c)
                    return -ENOMEM;
                r.p = p0;
                json_read_string(&r, c, n + 1, NULL);
                e->stack = arena_dup(&s->names, c, n);
                e->stack_len = n;
                free(c);
                if (!e->stack)
                    return -ENOMEM;
            } else {
                if (strcmp(key, "Python module id") == 0)
                    *module = true;
                if (!json_skip(&r))
                    return 0;
            }
        }
        return 0;
    }
    return 0;
}

/* Whether text[0, len) holds needle (memmem() is a GNU extension). */
static bool has_text(const char *text, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = text, *end = text + len; (size_t)(end - p) >= n;) {
        const char *q = memchr(p, needle[0], (size_t)(end - p) - n + 1);
        if (!q)
            return false;
        if (memcmp(q, needle, n) == 0)
            return true;
        p = q + 1;
    }
    return false;
}

/* The operator view's event of the span just read (s->v[s->n - 1]). Returns 0 or -ENOMEM. */
static int opv_event(struct spans *s, const struct record *rec, const char *line, size_t len)
{
    struct analyse_span *sp = &s->v[s->n - 1];
    sp->correlation = rec->correlation;
    sp->external_id = rec->external_id;
    struct analyse_opv_event *e = &s->opv[s->n - 1];
    *e = (struct analyse_opv_event){0};
    bool module = false;
    bool is_op = (sp->cat_len == 6 && strncasecmp(sp->cat, "cpu_op", 6) == 0) ||
                 (sp->cat_len == 8 && strncasecmp(sp->cat, "operator", 8) == 0);
    bool is_pyf = sp->cat_len == 15 && strncasecmp(sp->cat, "python_function", 15) == 0;
    /* A Python frame matters only as a module (args "Python module id"): most lines of a
     * with_stack trace are frames, so those without the key's text are not scanned (Kineto
     * writes keys unescaped). */
    if (is_pyf && !has_text(line, len, "\"Python module id\""))
        is_pyf = false;
    if (is_op || is_pyf) {
        int r = opv_args(s, line, len, is_op, &module, e);
        if (r < 0)
            return r;
    }
    e->type = analyse_opv_type_of(sp, module);
    e->kernel = e->type == ANALYSE_OPV_DEVICE && sp->cat_len == 6 &&
                strncasecmp(sp->cat, "kernel", 6) == 0;
    return 0;
}

/* The spans torch-tb-profiler's tables read: kernels, runtime calls, host operators. */
static bool tb_role(enum analyse_role role)
{
    return role == ANALYSE_ROLE_KERNEL || (ANALYSE_ROLE_BIT(role) & ANALYSE_ROLES_HOST);
}

/* A span's Kineto args as the tables read them: a kernel's launch figures, a communication
 * operator's input bytes (a second pass over the line, only for those two roles). */
static void tb_args(enum analyse_role role, const char *line, size_t len,
                    struct analyse_tbk_args *ret)
{
    *ret = (struct analyse_tbk_args){.blocks_per_sm = -1, .occupancy_pct = -1, .regs = -1,
                                     .smem = -1, .input_bytes = -1};
    if (role != ANALYSE_ROLE_KERNEL && role != ANALYSE_ROLE_COMMUNICATION)
        return;
    struct decode_trace_args a;
    if (decode_args_read(line, len, &a) < 0)
        return;
    ret->blocks_per_sm = a.blocks_per_sm;
    ret->occupancy_pct = a.occupancy_pct;
    ret->regs = a.regs;
    ret->smem = a.smem;
    memcpy(ret->grid, a.grid, sizeof ret->grid);
    memcpy(ret->block, a.block, sizeof ret->block);
    ret->n_grid = a.n_grid;
    ret->n_block = a.n_block;
    if (a.n_dims == 0)
        return;
    /* torch-tb-profiler: per "Input Dims" entry, its element count times the bytes of the
     * "Input type" at the same position (an unknown type, or none, counts 0). */
    int64_t bytes = 0;
    for (size_t i = 0; i < a.n_dims; i++) {
        int64_t each = i < a.n_types ? analyse_tbk_type_bytes(a.type[i], strlen(a.type[i])) : 0;
        if (a.elems[i] > 0 && each > 0)
            bytes = a.elems[i] > (INT64_MAX - bytes) / each ? INT64_MAX : bytes + a.elems[i] * each;
    }
    ret->input_bytes = bytes;
}

/* A windowed read: whether the store's line lies outside the window (its own rule, from the
 * line's ts and dur as the store scanned them). */
static bool window_outside(const struct spans *s, const struct store_event *ev)
{
    if (ev->ts_ns == INT64_MIN || ev->ph == 'M')
        return false;
    int64_t end = ev->dur_ns > 0 && ev->ts_ns > INT64_MAX - ev->dur_ns ? INT64_MAX
                                                                      : ev->ts_ns + ev->dur_ns;
    return ev->ts_ns > s->win_hi || end < s->win_lo;
}

/* A windowed read: one more X span counted, not kept. 0, or -EAGAIN past max. */
static int window_skip(struct spans *s)
{
    if (s->n + s->skipped >= s->max)
        return -EAGAIN;
    s->skipped++;
    return 0;
}

/* The text of a JSON string as the store's scan gives it (with its quotes), when the decoder
 * gives the same (no escape in it). */
static bool plain_text(const char *p, size_t len, struct record_text *ret)
{
    if (!p || len < 2 || p[0] != '"' || p[len - 1] != '"' || memchr(p + 1, '\\', len - 2))
        return false;
    *ret = (struct record_text){p + 1, len - 2};
    return true;
}

/* A windowed read, a line outside the window, from the store's scan of it: 1 when it is done
 * with (another phase than X: no span; an X span neither a step nor a kernel: counted), 0 when
 * it must be decoded (a step or a kernel, or a line the scan cannot tell: it is then read as
 * always, and kept only if a step or a kernel), -ENOMEM, -EAGAIN. A stored line was decoded when
 * it was stored, so the scan's X span is the decoder's. */
static int window_line(struct spans *s, const struct store_event *ev)
{
    if (ev->ph != 'X')
        return ev->ph ? 1 : 0;
    struct record_text name, cat = {NULL, 0};
    if (!plain_text(ev->name, ev->name_len, &name) || name.len == 0 ||
        (ev->cat && !plain_text(ev->cat, ev->cat_len, &cat)))
        return 0;
    const struct intern *in = intern_get(s, cat, name);
    if (!in)
        return -ENOMEM;
    if (in->role == ANALYSE_ROLE_STEP || in->role == ANALYSE_ROLE_KERNEL)
        return 0;
    int r = window_skip(s);
    return r < 0 ? r : 1;
}

/* Reads the X spans of job's rank into *s, charging bg as it grows. Returns 0, -ENOENT, -ENOMEM,
 * -EIO, budget_check()'s -ETIMEDOUT / -ECONNABORTED or budget_charge()'s -E2BIG / -EBUSY; with
 * s->window also -EAGAIN (window_skip()). */
static int read_spans(struct web *w, int64_t job_id, int64_t rank, struct spans *s,
                      struct budget *bg)
{
    struct store_event_iter *it = NULL;
    int r = store_event_iter_new(w->store, job_id, rank, INT64_MIN, INT64_MAX, &it);
    if (r < 0)
        return r;
    struct line_decoder *dec = line_decoder_new(w->max_line_bytes);
    if (!dec) {
        store_event_iter_free(it);
        return -ENOMEM;
    }
    struct store_event ev;
    uint64_t lines = 0;
    while ((r = store_event_iter_next(it, &ev)) == 1) {
        if (++lines % SPANS_CHECK == 0 &&
            ((r = budget_check(bg)) < 0 || (r = budget_charge(bg, spans_bytes(s))) < 0))
            break;
        bool out = s->window && window_outside(s, &ev);
        if (out && (r = window_line(s, &ev)) != 0) {
            if (r < 0)
                break;
            continue;
        }
        struct record rec;
        if (decode_line(dec, ev.line, ev.len, &rec) < 0) {
            s->bad++;
            continue;
        }
        if (!s->aicpu && !s->tb && rec.kind == RECORD_TRACE && rec.ph != 'X' &&
            (r = paddle_record(s, &rec)) != 0) {
            if (r < 0)
                break;
            continue;
        }
        if (rec.kind != RECORD_TRACE || rec.ph != 'X' || rec.name.len == 0 || rec.dur_ns < 0 ||
            rec.ts_ns == INT64_MIN || (s->aicpu && rec.dispatch_ns < 0))
            continue;
        /* A span reaching past the end of time ends there. */
        if (rec.ts_ns > 0 && rec.dur_ns > INT64_MAX - rec.ts_ns)
            rec.dur_ns = INT64_MAX - rec.ts_ns;
        /* The tables' read keeps only the roles it needs: their names first. */
        const struct intern *in = s->tb ? intern_get(s, rec.cat, rec.name) : NULL;
        if (s->tb && (!in || !tb_role(in->role))) {
            if (!in) {
                r = -ENOMEM;
                break;
            }
            continue;
        }
        if (out) { /* outside the window: a step or a kernel is kept, another span counted */
            if (!in && !(in = intern_get(s, rec.cat, rec.name))) {
                r = -ENOMEM;
                break;
            }
            if (in->role != ANALYSE_ROLE_STEP && in->role != ANALYSE_ROLE_KERNEL) {
                if ((r = window_skip(s)) < 0)
                    break;
                continue;
            }
        }
        if (s->window && s->n + s->skipped >= s->max) {
            r = -EAGAIN;
            break;
        }
        if (s->n >= s->max) {
            s->cut++;
            continue;
        }
        if (s->n == s->cap && (r = spans_grow(s)) < 0)
            break;
        if (!in && !(in = intern_get(s, rec.cat, rec.name))) {
            r = -ENOMEM;
            break;
        }
        s->v[s->n++] = (struct analyse_span){.ts_ns = rec.ts_ns, .dur_ns = rec.dur_ns,
                                             .name = in->name, .name_len = in->name_len,
                                             .cat = in->cat, .cat_len = in->cat_len,
                                             .pid = id_of(rec.pid), .tid = id_of(rec.tid),
                                             .correlation = rec.correlation,
                                             .external_id = rec.external_id,
                                             .role = in->role};
        if (s->opview && (r = opv_event(s, &rec, ev.line, ev.len)) < 0)
            break;
        if (s->tb)
            tb_args(in->role, ev.line, ev.len, &s->targ[s->n - 1]);
        if (s->aicpu)
            s->task[s->n - 1] = (struct analyse_aicpu_task){
                .name = in->name, .name_len = in->name_len, .total_ns = rec.dur_ns,
                .dispatch_ns = rec.dispatch_ns, .exec_ns = rec.exec_ns};
    }
    line_decoder_free(dec);
    store_event_iter_free(it);
    for (size_t i = 0; s->opview && i < s->n; i++)
        s->opv[i].span = &s->v[i];
    if (r >= 0)
        r = budget_charge(bg, spans_bytes(s));
    return r < 0 ? r : 0;
}

/* The name of a memory event's device, as torch-tb-profiler names them: Kineto's Device Type 0
 * "CPU", 1 "GPU<id>" (others "Device<type>:<id>"); Paddle's place "Place(cpu)" "CPU",
 * "Place(gpu:N)" "GPU<N>", any other the text between the parentheses. Into buf; returns its
 * length, 0 when the event names none. */
static size_t mv_device(const struct record *rec, char *buf, size_t size)
{
    int n = 0;
    if (rec->mem_device_type == 0)
        n = snprintf(buf, size, "CPU");
    else if (rec->mem_device_type == 1 && rec->mem_device_id != INT64_MIN)
        n = snprintf(buf, size, "GPU%" PRId64, rec->mem_device_id);
    else if (rec->mem_device_type > 1 && rec->mem_device_id != INT64_MIN)
        n = snprintf(buf, size, "Device%" PRId64 ":%" PRId64, rec->mem_device_type,
                     rec->mem_device_id);
    else if (rec->mem_place.len > 7 && memcmp(rec->mem_place.ptr, "Place(", 6) == 0 &&
             rec->mem_place.ptr[rec->mem_place.len - 1] == ')') {
        const char *p = rec->mem_place.ptr + 6;
        size_t len = rec->mem_place.len - 7;
        if (len == 3 && memcmp(p, "cpu", 3) == 0)
            n = snprintf(buf, size, "CPU");
        else if (len > 4 && memcmp(p, "gpu:", 4) == 0)
            n = snprintf(buf, size, "GPU%.*s", (int)(len - 4), p + 4);
        else
            n = snprintf(buf, size, "%.*s", (int)len, p);
    }
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Keeps a memory event or allocator sample for /memory (docs/PROTOCOL.md 9 and 10); kind is
 * Paddle's event type (-1: not Paddle's). Paddle's ReservedAllocate / ReservedFree move only
 * the reserved curve: their bytes are no allocation. Returns 1 when rec was one (taken, or
 * counted as cut), 0 when it is not, -ENOMEM. */
static int memview_record(struct spans *s, const struct record *rec, int kind)
{
    bool stats = rec->ph == 'C' && rec->name.len == 14 &&
                 memcmp(rec->name.ptr, "[memory stats]", 14) == 0;
    bool mem = (rec->ph == 'i' || rec->ph == 'I') && rec->name.len == 8 &&
               memcmp(rec->name.ptr, "[memory]", 8) == 0;
    if ((!stats && !mem) || rec->ts_ns == INT64_MIN)
        return 0;
    char name[64];
    size_t len = mv_device(rec, name, sizeof name);
    if (len == 0)
        return 0;
    if (s->n_mv >= s->max) {
        s->cut++;
        return 1;
    }
    void *v = s->mv;
    int g = util_grow(&v, &s->cap_mv, s->n_mv + 1, sizeof *s->mv);
    s->mv = v;
    if (g < 0)
        return g;
    /* Devices are few: the previous event's name is most often this one's. */
    const char *dev = NULL;
    if (s->n_mv > 0 && s->mv[s->n_mv - 1].device_len == len &&
        memcmp(s->mv[s->n_mv - 1].device, name, len) == 0)
        dev = s->mv[s->n_mv - 1].device;
    else if (!(dev = arena_dup(&s->names, name, len)))
        return -ENOMEM;
    int64_t bytes = rec->mem_bytes;
    if (stats || kind == 2 || kind == 3)
        bytes = INT64_MIN;
    s->mv[s->n_mv++] = (struct analyse_mv_event){
        .pid = id_of(rec->pid), .tid = id_of(rec->tid), .ts_ns = rec->ts_ns, .device = dev,
        .device_len = len, .source = stats ? ANALYSE_MV_ALLOCATOR : ANALYSE_MV_TRACE,
        .bytes = bytes, .allocated = rec->mem_allocated, .reserved = rec->mem_reserved,
        .peak_allocated = stats ? rec->mem_peak_allocated : -1,
        .peak_reserved = rec->mem_peak_reserved, .step = stats ? rec->step : -1};
    return 1;
}

/* Keeps a Paddle ExtraInfo record or memory event (docs/PROTOCOL.md 9) of a read. Returns 1 when
 * rec was one (taken, or counted as cut), 0 when it is not, -ENOMEM. */
static int paddle_record(struct spans *s, const struct record *rec)
{
    if (rec->ph == 'M' && (rec->util_cpu >= 0 || rec->util_sys_cpu >= 0) &&
        rec->ts_ns != INT64_MIN) {
        if (s->n_extra == s->cap_extra) {
            size_t cap = s->cap_extra ? s->cap_extra * 2 : 8;
            struct extra *v = realloc(s->extra, cap * sizeof *v);
            if (!v)
                return -ENOMEM;
            s->extra = v;
            s->cap_extra = cap;
        }
        int64_t end = rec->ts_ns > 0 && rec->dur_ns > INT64_MAX - rec->ts_ns ? INT64_MAX
                                                                              : rec->ts_ns + rec->dur_ns;
        s->extra[s->n_extra++] = (struct extra){rec->ts_ns, end, rec->util_cpu, rec->util_sys_cpu};
        return 1;
    }
    static const char *const kinds[] = {"Allocate", "Free", "ReservedAllocate", "ReservedFree"};
    int kind = -1;
    for (int k = 0; k < 4; k++)
        if (rec->cat.len == strlen(kinds[k]) && memcmp(rec->cat.ptr, kinds[k], rec->cat.len) == 0)
            kind = k;
    if (s->memview)
        return memview_record(s, rec, kind);
    if ((rec->ph != 'i' && rec->ph != 'I') || rec->mem_bytes == INT64_MIN ||
        rec->ts_ns == INT64_MIN || kind < 0)
        return 0;
    if (s->n_mem >= s->max) {
        s->cut++;
        return 1;
    }
    if (s->n_mem == s->cap_mem) {
        size_t cap = s->cap_mem ? s->cap_mem * 2 : 1024;
        struct analyse_mem_event *v = realloc(s->mem, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->mem = v;
        s->cap_mem = cap;
    }
    const char *place = arena_dup(&s->names, rec->mem_place.ptr, rec->mem_place.len);
    const char *owner = arena_dup(&s->names, rec->mem_owner.ptr, rec->mem_owner.len);
    if ((!place && rec->mem_place.len) || (!owner && rec->mem_owner.len))
        return -ENOMEM;
    s->mem[s->n_mem++] = (struct analyse_mem_event){
        .pid = id_of(rec->pid), .tid = id_of(rec->tid), .ts_ns = rec->ts_ns,
        .owner_ns = rec->mem_owner.len ? rec->mem_owner_ns : INT64_MIN, .owner = owner,
        .owner_len = rec->mem_owner.len, .place = place, .place_len = rec->mem_place.len,
        .kind = (enum analyse_mem_kind)kind, .bytes = rec->mem_bytes,
        .peak_allocated = rec->mem_peak_allocated, .peak_reserved = rec->mem_peak_reserved};
    return 1;
}

/* ?steps=A-B or ?steps=N into [*first, *last]; absent: no bound. Returns 0 or -1 (answered). */
static int param_steps(const struct web_req *q, struct web_answer *a, int64_t *first, int64_t *last)
{
    char buf[48];
    size_t len;
    *first = ANALYSE_ST_ALL_FIRST;
    *last = ANALYSE_ST_ALL_LAST;
    int r = web__param_str(q, a, "steps", buf, sizeof buf, &len);
    if (r <= 0)
        return r;
    if (web__parse_steps(buf, len, first, last) < 0) {
        bad(a, "steps: A-B (0 <= A <= B) or N");
        return -1;
    }
    return 0;
}

/* The device summary's CPU figures: Paddle's own for its profiler windows (the ExtraInfo records
 * whose window meets the summary's; their mean when several), else the live snapshot's
 * host-record means (NaN when there are none either). */
static void host_cpu(struct web *w, int64_t job_id, int64_t rank, const struct spans *sp,
                     struct web_summary_doc *d)
{
    d->cpu_pct = d->sys_cpu_pct = NAN;
    const struct analyse_summary *s = d->sum;
    double cpu = 0, sys = 0;
    int64_t n_cpu = 0, n_sys = 0;
    for (size_t i = 0; i < sp->n_extra; i++) {
        const struct extra *x = &sp->extra[i];
        if (s->window_start_ns != s->window_end_ns &&
            (x->end < s->window_start_ns || x->start > s->window_end_ns))
            continue;
        d->n_windows++;
        if (x->cpu >= 0) {
            cpu += x->cpu;
            n_cpu++;
        }
        if (x->sys >= 0) {
            sys += x->sys;
            n_sys++;
        }
    }
    if (d->n_windows > 0) {
        /* Paddle prints format_ratio(float(value)): value * 100 to two decimals. */
        d->cpu_source = "paddle";
        if (n_cpu > 0)
            d->cpu_pct = cpu / (double)n_cpu * 100;
        if (n_sys > 0)
            d->sys_cpu_pct = sys / (double)n_sys * 100;
        return;
    }
    const struct live_snapshot *snap = NULL;
    if (!w->live || live_snapshot_get(w->live, job_id, &snap) < 0)
        return;
    struct live_host_row h;
    if (live_query_host(snap, rank, &h) == 0) {
        d->cpu_pct = h.cpu_pct;
        d->sys_cpu_pct = h.sys_cpu_pct;
        d->n_host_samples = h.n_cpu > h.n_sys_cpu ? h.n_cpu : h.n_sys_cpu;
        if (d->n_host_samples > 0)
            d->cpu_source = "host";
    }
    live_snapshot_put(snap);
}

/* Step records of one rank for the benchmark. */
struct bench_scan {
    int64_t rank, first, last;
    struct analyse_bench_step *v;
    size_t n, cap;
    int err;
};

static int bench_push(struct bench_scan *s, struct analyse_bench_step st)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 1024;
        struct analyse_bench_step *v = realloc(s->v, cap * sizeof *v);
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = st;
    return 0;
}

static int on_bench_step(void *ud, int64_t rank, const struct record *rec)
{
    struct bench_scan *s = ud;
    if (rank != s->rank || rec->step < s->first || rec->step > s->last)
        return 0;
    s->err = bench_push(s, (struct analyse_bench_step){rec->step, rec->dur_ns,
                                                       rec->phase_ns.dataloader_ns,
                                                       rec->samples});
    return s->err < 0;
}

static int cmp_span_ts(const void *a, const void *b)
{
    const struct analyse_span *x = *(const struct analyse_span *const *)a;
    const struct analyse_span *y = *(const struct analyse_span *const *)b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* Benchmark steps from ProfileStep spans: batch = the step span, reader = the union of the
 * Dataloader spans that start inside it. */
static int bench_from_spans(const struct spans *sp, struct bench_scan *s)
{
    const struct analyse_span **steps = malloc((sp->n + 1) * sizeof *steps);
    const struct analyse_span **dl = malloc((sp->n + 1) * sizeof *dl);
    int64_t *ds = malloc((sp->n + 1) * sizeof *ds), *de = malloc((sp->n + 1) * sizeof *de);
    int r = 0;
    if (!steps || !dl || !ds || !de) {
        r = -ENOMEM;
        goto out;
    }
    size_t ns = 0, nd = 0;
    for (size_t i = 0; i < sp->n; i++) {
        enum analyse_sum_type t = analyse_sum_type_of(&sp->v[i]);
        if (t == ANALYSE_SUM_PROFILE_STEP)
            steps[ns++] = &sp->v[i];
        else if (t == ANALYSE_SUM_DATALOADER)
            dl[nd++] = &sp->v[i];
    }
    qsort(steps, ns, sizeof *steps, cmp_span_ts);
    qsort(dl, nd, sizeof *dl, cmp_span_ts);
    size_t j = 0;
    for (size_t i = 0; i < ns && r == 0; i++) {
        const struct analyse_span *st = steps[i];
        int64_t num = analyse_sum_step_number(st->name, st->name_len);
        if (num < s->first || num > s->last)
            continue;
        while (j < nd && dl[j]->ts_ns < st->ts_ns)
            j++;
        size_t k = 0;
        for (size_t x = j; x < nd && dl[x]->ts_ns < st->ts_ns + st->dur_ns; x++, k++) {
            ds[k] = dl[x]->ts_ns;
            de[k] = dl[x]->ts_ns + dl[x]->dur_ns;
        }
        int64_t reader = nd > 0 ? analyse_sum_union_ns(ds, de, k) : -1;
        if (reader < -1) {
            r = -ENOMEM;
            break;
        }
        r = bench_push(s, (struct analyse_bench_step){num, st->dur_ns, reader, -1});
    }
out:
    free(steps);
    free(dl);
    free(ds);
    free(de);
    return r;
}

enum web_tb_table {
    WEB_TB_NONE,
    WEB_TB_KERNELS, /* /kernels/details */
    WEB_TB_COMM,    /* /comm-ops */
};

/* One analysis, run on a thread of its own while its connection is suspended. */
struct web_analysis {
    struct web_analysis *next;      /* w->analyses */
    struct web *w;
    struct web_conn *c;             /* parked while the analysis runs */
    bool bench;
    bool memory;                    /* /memory (run_memory()) */
    char device[64];                /* /memory's ?device= ("" all) */
    size_t points;                  /* /memory's ?points= */
    enum web_memory_table table;    /* /memory's ?table= */
    bool tree;                      /* /tree: tree_kind's hierarchy */
    enum web_tree_kind tree_kind;
    bool opview;                    /* /operator-view (else a summary or the benchmark) */
    enum analyse_opv_group group;   /* opview: ?group_by= */
    char name[512], shape[2048];    /* opview: ?name=, ?input_shape= ("": none) */
    int64_t offset, limit;          /* opview: the page */
    struct web_diff_steps *diff;    /* a diff with step ranges (then job, kind, rank unused) */
    enum web_tb_table tb;           /* torch-tb-profiler's tables (not bench, not a summary) */
    enum analyse_tbk_group tbk_group; /* WEB_TB_KERNELS */
    enum analyse_tbc_link link;     /* WEB_TB_COMM */
    int64_t *ranks;                 /* WEB_TB_COMM: the job's ranks, read one after another */
    size_t n_ranks;
    struct store_job job;
    int64_t events;                 /* the rank's stored events: the reservation's spans */
    enum web_summary_kind kind;
    int64_t rank, first, last, skip;
    size_t max_spans;
    enum web_format fmt;
    char unit[4];
    struct budget bg;
    bool keep;                      /* its 200 answer may be kept under from (cache.h) */
    struct web_cache_from from;
    int r;                          /* 0: b is the answer; else send_failure()'s, or -ENOENT */
    const char *not_found;          /* with -ENOENT: the message */
    struct sbuf b;
    bool done;                      /* under w->analyses_lock */
};

static int run_benchmark(struct web_analysis *a)
{
    struct web *w = a->w;
    struct bench_scan s = {.rank = a->rank, .first = a->first, .last = a->last};
    struct web_bench_doc d = {.rank = a->rank, .source = "records"};
    int64_t n = store_query_steps(w->store, a->job.id, on_bench_step, &s);
    int r = n < 0 ? (int)n : s.err;
    if (r == 0 && s.n == 0) {
        d.source = "spans";
        struct spans sp = {.max = a->max_spans, .work_bytes = small_work_bytes};
        r = read_spans(w, a->job.id, a->rank, &sp, &a->bg);
        if (r == 0)
            r = bench_from_spans(&sp, &s);
        spans_free(&sp);
    }
    /* Default warm-up: Paddle's 10 for step records (the whole run, as its timer sees it); none
     * for ProfileStep spans, a profiler window whose scheduler left its warm-up out already. */
    int64_t skip = a->skip >= 0                         ? a->skip
                   : strcmp(d.source, "records") == 0 ? ANALYSE_BENCH_SKIP_DEFAULT
                                                      : 0;
    if (r == 0)
        r = analyse_benchmark_compute(s.v, s.n, (size_t)skip, &d.bench);
    free(s.v);
    if (r == 0)
        web__render_benchmark(&a->b, &d, a->fmt);
    return r;
}

/* MindInsight's AI CPU tables from the rank's AI CPU tasks. */
static int run_aicpu(struct web_analysis *a)
{
    struct spans sp = {.max = a->max_spans, .aicpu = true, .work_bytes = small_work_bytes};
    struct web_summary_doc d = {.kind = a->kind, .rank = a->rank, .max_spans = a->max_spans,
                                .time_unit = a->unit};
    int r = read_spans(a->w, a->job.id, a->rank, &sp, &a->bg);
    if (r == 0)
        r = analyse_aicpu_compute(sp.task, sp.n, &d.aicpu);
    if (r == 0) {
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        web__render_summary(&a->b, &d, a->fmt);
    }
    analyse_aicpu_free(d.aicpu);
    spans_free(&sp);
    return r;
}

/* /memory: the memory view of the rank (analyse_memview.h). */
static int run_memory(struct web_analysis *a)
{
    struct spans sp = {.max = a->max_spans, .memview = true,
                       .work_bytes = analyse_memview_bytes};
    struct web_memory_doc d = {.rank = a->rank, .max_points = a->points, .table = a->table,
                               .device = a->device};
    int r = read_spans(a->w, a->job.id, a->rank, &sp, &a->bg);
    if (r == 0 && a->device[0]) { /* ?device=: that device's events only */
        size_t k = 0, len = strlen(a->device);
        for (size_t i = 0; i < sp.n_mv; i++)
            if (sp.mv[i].device_len == len && memcmp(sp.mv[i].device, a->device, len) == 0)
                sp.mv[k++] = sp.mv[i];
        /* A device the rank's memory events never name (a typo, the CPU of a GPU-only trace) is
         * a 404 as a rank it lacks is; a rank with no memory event yet answers empty. */
        if (k == 0 && sp.n_mv > 0) {
            a->not_found = "device: this rank has no memory events on that device "
                           "(without ?device= the answer lists its devices)";
            r = -ENOENT;
        }
        sp.n_mv = k;
    }
    if (r == 0)
        r = analyse_memview_compute(sp.v, sp.n, sp.mv, sp.n_mv, a->points, &d.mv);
    if (r == 0 && (r = budget_check(&a->bg)) == 0)
        r = budget_charge(&a->bg, spans_bytes(&sp) + (uint64_t)WEB_SUMMARY_ROW_BYTES *
                                                          (d.mv->n_rows + d.mv->n_points));
    if (r == 0) {
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        web__render_memory(&a->b, &d, a->fmt);
    }
    analyse_memview_free(d.mv);
    spans_free(&sp);
    return r;
}

/* The rows of the table a kind's answer renders (the others are a few lines); s NULL: 1 when
 * it renders one, else 0. */
static size_t rendered_rows(enum web_summary_kind kind, const struct analyse_summary *s)
{
    switch (kind) {
    case WEB_SUMMARY_OPERATOR:
        return s ? s->n_ops : 1;
    case WEB_SUMMARY_KERNEL:
        return s ? s->n_kernels : 1;
    case WEB_SUMMARY_MEMORY_MANIPULATION:
        return s ? s->n_memory : 1;
    case WEB_SUMMARY_USER_DEFINED:
        return s ? s->n_user : 1;
    case WEB_SUMMARY_DEVICE:
        return s ? s->n_gpus : 1;
    default:
        return 0;
    }
}

static int run_summary(struct web_analysis *a)
{
    struct web *w = a->w;
    if (a->kind == WEB_SUMMARY_AICPU)
        return run_aicpu(a);
    struct spans sp = {.max = a->max_spans, .work_bytes = analyse_summary_bytes};
    struct web_summary_doc d = {.kind = a->kind, .rank = a->rank, .max_spans = a->max_spans,
                                .time_unit = a->unit};
    int r = read_spans(w, a->job.id, a->rank, &sp, &a->bg);
    /* A server stopping stops the computation too (web_stop() sets analyses_stopping). */
    if (r == 0 && (r = analyse_summary_compute_until(sp.v, sp.n, a->first, a->last,
                                                     &w->analyses_stopping, &d.sum)) == -ECANCELED)
        r = -ECONNABORTED;
    /* The deadline again after the computation, and the answer's rows charged before it is
     * rendered. */
    if (r == 0 && (r = budget_check(&a->bg)) == 0)
        r = budget_charge(&a->bg, spans_bytes(&sp) + (uint64_t)WEB_SUMMARY_ROW_BYTES *
                                                          rendered_rows(a->kind, d.sum));
    if (r == -ENOENT)
        a->not_found = "steps: no ProfileStep span in range on this rank";
    if (r == 0) {
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        if (a->kind == WEB_SUMMARY_DEVICE)
            host_cpu(w, a->job.id, a->rank, &sp, &d);
        if (a->kind == WEB_SUMMARY_MEMORY)
            r = analyse_memsum_compute(sp.v, sp.n, sp.mem, sp.n_mem, d.sum->window_start_ns,
                                       d.sum->window_end_ns, &d.mem);
        if (r == 0)
            web__render_summary(&a->b, &d, a->fmt);
    }
    analyse_memsum_free(d.mem);
    analyse_summary_free(d.sum);
    spans_free(&sp);
    return r;
}

/* What rendering n tree nodes may hold: two table rows a node (a node has a dozen figures), but
 * never more than the answer may be (max_response_bytes caps the document). */
static uint64_t tree_render_bytes(const struct web *w, size_t n)
{
    uint64_t b = (uint64_t)2 * WEB_SUMMARY_ROW_BYTES * n;
    return w->max_response_bytes && b > w->max_response_bytes ? w->max_response_bytes : b;
}

/* /tree: the hierarchy of the rank's stored spans. */
static int run_tree(struct web_analysis *a)
{
    struct web *w = a->w;
    struct spans sp = {.max = a->max_spans, .work_bytes = analyse_tree_bytes};
    struct web_tree_doc d = {.kind = a->tree_kind, .rank = a->rank, .max_spans = a->max_spans};
    int r = read_spans(w, a->job.id, a->rank, &sp, &a->bg);
    if (r == 0 && (r = (a->tree_kind == WEB_TREE_MODULE ? analyse_tree_modules
                                                        : analyse_tree_operators)(
                       sp.v, sp.n, a->first, a->last, &w->analyses_stopping, &d.tree)) ==
                      -ECANCELED)
        r = -ECONNABORTED;
    if (r == 0 && (r = budget_check(&a->bg)) == 0)
        r = budget_charge(&a->bg, spans_bytes(&sp) +
                                      tree_render_bytes(w, d.tree->n));
    if (r == -ENOENT)
        a->not_found = "steps: no ProfileStep span in range on this rank";
    if (r == 0) {
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        web__render_tree(&a->b, &d, a->fmt);
    }
    analyse_tree_free(d.tree);
    spans_free(&sp);
    return r;
}

/* torch-tb-profiler's operator view from the rank's spans and their args. */
static int run_opview(struct web_analysis *a)
{
    struct web *w = a->w;
    struct spans sp = {.max = a->max_spans, .opview = true, .work_bytes = analyse_opview_bytes};
    struct web_opview_doc d = {.rank = a->rank, .group = a->group,
                               .name = a->name[0] ? a->name : NULL,
                               .shape = a->shape[0] ? a->shape : NULL, .offset = a->offset,
                               .limit = a->limit, .max_spans = a->max_spans};
    struct analyse_opview *v = NULL;
    int r = read_spans(w, a->job.id, a->rank, &sp, &a->bg);
    if (r == 0 && (r = analyse_opview_compute(sp.opv, sp.n, a->group, &w->analyses_stopping,
                                              &v)) == -ECANCELED)
        r = -ECONNABORTED;
    if (r == 0 && (r = budget_check(&a->bg)) == 0)
        r = budget_charge(&a->bg, spans_bytes(&sp) + (uint64_t)WEB_SUMMARY_ROW_BYTES * v->n_rows);
    if (r == 0) {
        d.v = v;
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        web__render_opview(&a->b, &d, a->fmt);
    }
    analyse_opview_free(v);
    spans_free(&sp);
    return r;
}

/* The rank's steps as live defines them (live_query_rank_steps()): a rank whose stored spans hold
 * no step span gets its captured steps' records, as live lists them, appended to s as step spans
 * (their names are rs's). Returns 0 (none: nothing added) or -ENOMEM. */
static int rank_steps(struct web *w, int64_t job_id, int64_t rank, struct spans *s,
                      struct live_record_steps *rs)
{
    const struct live_snapshot *snap = NULL;
    if (!w->live || live_snapshot_get(w->live, job_id, &snap) < 0)
        return 0;
    int r = live_query_rank_steps(snap, rank, INT64_MIN, &s->v, &s->n, rs);
    live_snapshot_put(snap);
    if (rs->n > 0)
        s->cap = s->n;
    return r;
}

/* The time live's step spans numbered [first, last] of a rank cover, from the earliest begin to
 * the latest end, into *lo and *hi: the window a ranged diff reads the rank's spans in (a hint:
 * window_holds() checks it against the spans read). false when live lists none (then the rank
 * is read whole). */
static bool step_window(struct web *w, int64_t job_id, int64_t rank, int64_t first, int64_t last,
                        int64_t *lo, int64_t *hi)
{
    const struct live_snapshot *snap = NULL;
    if (!w->live || live_snapshot_get(w->live, job_id, &snap) < 0)
        return false;
    struct live_step_row *rows = NULL;
    size_t n = 0, total = 0;
    bool found = false;
    if (live_query_steps(snap, rank, false, 0, SIZE_MAX, &rows, &n, &total) == 0)
        for (size_t i = 0; i < n; i++) {
            if (rows[i].from_record || rows[i].step < first || rows[i].step > last)
                continue;
            if (!found || rows[i].start_ns < *lo)
                *lo = rows[i].start_ns;
            if (!found || rows[i].end_ns > *hi)
                *hi = rows[i].end_ns;
            found = true;
        }
    free(rows);
    live_snapshot_put(snap);
    return found;
}

/* Whether a windowed read holds all that analyse_stepops_compute() takes of the rank: it kept
 * every step span (and the rank has one: else its step records count, and it is read whole),
 * so the steps in range are all there; each of them lies in the window, so every span that
 * starts in one was read whole; every kernel was kept. */
static bool window_holds(const struct spans *s, int64_t first, int64_t last)
{
    bool any = false;
    for (size_t i = 0; i < s->n; i++) {
        const struct analyse_span *v = &s->v[i];
        if (v->role != ANALYSE_ROLE_STEP)
            continue;
        any = true;
        int64_t num = analyse_sum_step_number(v->name, v->name_len);
        if (num < 0 || num < first || num > last)
            continue;
        if (v->ts_ns < s->win_lo || v->ts_ns + v->dur_ns > s->win_hi)
            return false;
    }
    return any;
}

/* One side of a ranged diff (i: 0 base, 1 exp): its operator and kernel tables over its ranks'
 * stored spans in its step range (analyse_stepops.h; the ranks' rows merged by name), and its
 * breakdown's mean step over the range. Sets *ops and *kernels (free them either way). Returns
 * 0, -ENOENT (no step span in range on any of its ranks), read_spans()'s errors or -ENOMEM. */
static int diff_side(struct web_analysis *an, int i, struct web_diff_side *out,
                     struct analyse_op_table **ops, struct analyse_op_table **kernels)
{
    struct web *w = an->w;
    const struct web_diff_steps *d = an->diff;
    size_t n = d->n_ranks[i];
    struct analyse_op_table **t = calloc(2 * (n ? n : 1), sizeof *t); /* per rank: ops, kernels */
    if (!t)
        return -ENOMEM;
    *out = (struct web_diff_side){.job = d->job[i].name, .job_id = d->job[i].id,
                                  .rank = d->rank[i], .ranged = true, .first = d->first[i],
                                  .last = d->last[i], .first_step = -1, .last_step = -1};
    int r = 0;
    for (size_t k = 0; k < n && r == 0; k++) {
        struct spans sp = {.max = an->max_spans, .work_bytes = analyse_stepops_bytes};
        struct analyse_stepops *so = NULL;
        struct live_record_steps rs = {0};
        /* Only the steps' time decoded whole (most of a long run lies outside it); a window
         * that does not hold the range, or a read past max_spans, is read again whole. */
        sp.window = d->events >= 0 && (uint64_t)d->events <= an->max_spans &&
                    step_window(w, d->job[i].id, d->ranks[i][k], d->first[i], d->last[i],
                                &sp.win_lo, &sp.win_hi);
        r = read_spans(w, d->job[i].id, d->ranks[i][k], &sp, &an->bg);
        if (sp.window &&
            (r == -EAGAIN || (r == 0 && !window_holds(&sp, d->first[i], d->last[i])))) {
            spans_free(&sp);
            sp = (struct spans){.max = an->max_spans, .work_bytes = analyse_stepops_bytes};
            r = read_spans(w, d->job[i].id, d->ranks[i][k], &sp, &an->bg);
        }
        if (r == 0 && sp.window)
            log_debug("diff: job %" PRId64 " rank %" PRId64 ": steps' window [%" PRId64
                      ", %" PRId64 "] ns: %zu spans kept, %zu others counted",
                      d->job[i].id, d->ranks[i][k], sp.win_lo, sp.win_hi, sp.n, sp.skipped);
        else if (r == 0)
            log_debug("diff: job %" PRId64 " rank %" PRId64 ": read whole, %zu spans",
                      d->job[i].id, d->ranks[i][k], sp.n);
        if (r == 0)
            r = rank_steps(w, d->job[i].id, d->ranks[i][k], &sp, &rs);
        if (r == 0)
            r = analyse_stepops_compute(sp.v, sp.n, d->first[i], d->last[i], &so);
        if (r == 0 && rs.n > 0) { /* the records bound the steps; they are no stored span */
            uintptr_t lo = (uintptr_t)rs.names, hi = (uintptr_t)(rs.names + rs.n);
            size_t m = 0;
            for (size_t j = 0; j < so->n_ops; j++)
                if ((uintptr_t)so->ops[j].name < lo || (uintptr_t)so->ops[j].name >= hi)
                    so->ops[m++] = so->ops[j];
            so->n_ops = m;
        }
        live_record_steps_done(&rs);
        if (r == 0) {
            out->range_steps += so->n_steps;
            if (out->first_step < 0 || so->first_step < out->first_step)
                out->first_step = so->first_step;
            if (so->last_step > out->last_step)
                out->last_step = so->last_step;
            r = analyse_ops_from_parts(so->ops, so->n_ops, ANALYSE_OP_GROUP_NAME, &t[2 * k]);
            if (r == 0)
                r = analyse_ops_from_parts(so->kernels, so->n_kernels, ANALYSE_OP_GROUP_NAME,
                                           &t[2 * k + 1]);
        } else if (r == -ENOENT) {
            r = 0; /* no step of the range on this rank */
        }
        out->spans_read += (int64_t)(sp.n + sp.skipped);
        out->spans_cut += sp.cut;
        analyse_stepops_free(so);
        spans_free(&sp);
        if (r == 0)
            r = budget_check(&an->bg);
    }
    if (r == 0 && out->range_steps == 0)
        r = -ENOENT;
    /* The ranks' rows merged by name (one rank: its tables as they are). */
    for (int kind = 0; kind < 2 && r == 0; kind++) {
        struct analyse_op_table **dst = kind ? kernels : ops;
        size_t rows = 0;
        for (size_t k = 0; k < n; k++)
            rows += t[2 * k + kind] ? t[2 * k + kind]->n_rows : 0;
        struct analyse_op_part *parts = malloc((rows ? rows : 1) * sizeof *parts);
        if (!parts) {
            r = -ENOMEM;
            break;
        }
        size_t m = 0;
        for (size_t k = 0; k < n; k++)
            for (size_t j = 0; t[2 * k + kind] && j < t[2 * k + kind]->n_rows; j++) {
                const struct analyse_op_row *row = &t[2 * k + kind]->rows[j];
                parts[m++] = (struct analyse_op_part){
                    .name = row->name, .name_len = strlen(row->name),
                    .role = ANALYSE_ROLE_HOST_OP, .calls = row->calls,
                    .total_ns = row->total_ns, .self_ns = row->self_ns, .min_ns = row->min_ns,
                    .max_ns = row->max_ns};
            }
        r = analyse_ops_from_parts(parts, m, ANALYSE_OP_GROUP_NAME, dst);
        free(parts);
    }
    for (size_t k = 0; k < 2 * n; k++)
        analyse_op_table_free(t[k]);
    free(t);
    if (r < 0)
        return r;
    /* The step time over the range: the breakdown's steps in it (live's, as /breakdown). */
    const struct live_snapshot *snap = NULL;
    struct live_breakdown_view v = {.rank = d->rank[i] < 0 ? 0 : d->rank[i]};
    if (w->live && live_snapshot_get(w->live, d->job[i].id, &snap) == 0) {
        int e = live_query_breakdown(snap, d->rank[i], 0, &v);
        if (e == -ENOMEM)
            r = e;
    }
    web__diff_bd(&v, true, d->first[i], d->last[i], &out->bd);
    live_breakdown_view_done(&v);
    live_snapshot_put(snap);
    return r;
}

static int run_diff(struct web_analysis *an)
{
    struct web_diff_side side[2];
    struct analyse_op_table *t[4] = {0};
    int r = 0;
    for (int i = 0; i < 2 && r == 0; i++) {
        r = diff_side(an, i, &side[i], &t[2 * i], &t[2 * i + 1]);
        side[i].ops = t[2 * i];
        side[i].kernels = t[2 * i + 1];
        if (r == -ENOENT)
            an->not_found = i ? "exp_steps: no ProfilerStep span in range on the ranks read"
                              : "base_steps: no ProfilerStep span in range on the ranks read";
    }
    if (r == 0) {
        size_t rows = 0;
        for (int k = 0; k < 4; k++)
            rows += t[k]->n_rows;
        if ((r = budget_check(&an->bg)) == 0)
            r = budget_charge(&an->bg, (uint64_t)WEB_SUMMARY_ROW_BYTES * rows);
    }
    if (r == 0)
        r = web__diff_answer(&an->b, an->fmt, &side[0], &side[1]);
    for (int k = 0; k < 4; k++)
        analyse_op_table_free(t[k]);
    return r;
}

/* What the tables hold beyond the spans: a few words per span (the link's sort and stack, the
 * rows). */
static size_t tb_work_bytes(size_t n)
{
    return 65536 + n * (sizeof(struct analyse_tbk_args) + 8 * sizeof(int64_t) +
                        sizeof(struct analyse_tbk_row));
}

/* torch-tb-profiler's kernel view of one rank. */
static int run_tb_kernels(struct web_analysis *a)
{
    struct spans sp = {.max = a->max_spans, .tb = true, .work_bytes = tb_work_bytes};
    struct web_tbk_doc d = {.rank = a->rank, .group = a->tbk_group};
    struct analyse_tbk *t = NULL;
    int r = read_spans(a->w, a->job.id, a->rank, &sp, &a->bg);
    if (r == 0)
        r = analyse_tbk_compute(sp.v, sp.targ, sp.n, a->tbk_group, &t);
    if (r == 0 && (r = budget_check(&a->bg)) == 0)
        r = budget_charge(&a->bg, spans_bytes(&sp) + (uint64_t)WEB_SUMMARY_ROW_BYTES * t->n_rows);
    if (r == 0) {
        d.t = t;
        d.n_read = sp.n;
        d.spans_cut = sp.cut;
        d.lines_bad = sp.bad;
        web__render_tbk(&a->b, &d, a->fmt);
    }
    analyse_tbk_free(t);
    spans_free(&sp);
    return r;
}

/* Its communication-operator table: each rank read in turn (only its calls kept), then aligned. */
static int run_tb_comm(struct web_analysis *a)
{
    struct analyse_tbc_rank *calls = calloc(a->n_ranks ? a->n_ranks : 1, sizeof *calls);
    struct web_tbc_doc d = {.link = a->link, .rank = a->rank, .ranks = a->ranks,
                            .n_ranks = a->n_ranks};
    struct analyse_tbc *t = NULL;
    int r = calls ? 0 : -ENOMEM;
    for (size_t i = 0; r == 0 && i < a->n_ranks; i++) {
        struct spans sp = {.max = a->max_spans, .tb = true, .work_bytes = tb_work_bytes};
        r = read_spans(a->w, a->job.id, a->ranks[i], &sp, &a->bg);
        if (r == 0)
            r = analyse_tbc_calls(sp.v, sp.targ, sp.n, a->link, a->ranks[i], &calls[i]);
        d.n_read += sp.n;
        d.spans_cut += sp.cut;
        d.lines_bad += sp.bad;
        spans_free(&sp);
    }
    if (r == 0)
        r = analyse_tbc_table(calls, a->n_ranks, &t);
    if (r == 0 && (r = budget_check(&a->bg)) == 0) {
        d.t = t;
        web__render_tbc(&a->b, &d, a->fmt);
    }
    analyse_tbc_free(t);
    for (size_t i = 0; calls && i < a->n_ranks; i++)
        analyse_tbc_rank_done(&calls[i]);
    free(calls);
    return r;
}

/* The analysis thread: computes and renders, gives the slot back, then wakes the connection
 * (under the lock, so web__analyses_stop() cannot let the server stop before the wake); the
 * server then calls the access handler again, which takes the answer (web__analysis_answer()). */
static void *analysis_main(void *arg)
{
    struct web_analysis *a = arg;
    struct web *w = a->w;
    size_t n = a->events < 0 ? 0 : (uint64_t)a->events < a->max_spans ? (size_t)a->events
                                                                        : a->max_spans;
    bool tables = a->tb || a->tree || a->opview || a->diff ||
                  (!a->bench && rendered_rows(a->kind, NULL) > 0);
    bool summary = !a->bench && !a->memory && !a->tree && !a->opview && !a->diff && !a->tb &&
                   a->kind != WEB_SUMMARY_AICPU;
    a->r = budget_reserve(&a->bg,
                          forecast(n, !a->bench && !a->memory && !a->tree && !a->opview &&
                                          !a->diff && !a->tb && !summary,
                                   a->opview,
                                   a->tb       ? tb_work_bytes
                                   : a->memory ? analyse_memview_bytes
                                   : a->tree   ? analyse_tree_bytes
                                   : a->opview ? analyse_opview_bytes
                                   : a->diff   ? analyse_stepops_bytes
                                   : summary   ? analyse_summary_bytes
                                               : small_work_bytes,
                                   a->tree ? tree_render_bytes(w, n) / WEB_SUMMARY_ROW_BYTES
                                   : tables || a->memory ? n : 0));
    if (a->r == 0)
        a->r = a->tb == WEB_TB_KERNELS ? run_tb_kernels(a)
               : a->tb == WEB_TB_COMM  ? run_tb_comm(a)
               : a->bench              ? run_benchmark(a)
               : a->memory             ? run_memory(a)
               : a->tree               ? run_tree(a)
               : a->opview             ? run_opview(a)
               : a->diff               ? run_diff(a)
                                       : run_summary(a);
    budget_release(&a->bg);
    slot_put(w);
    pthread_mutex_lock(&w->analyses_lock);
    web__conn_wake(a->c);
    a->done = true;
    pthread_cond_broadcast(&w->analyses_cond);
    pthread_mutex_unlock(&w->analyses_lock);
    return NULL;
}

int web__analyses_init(struct web *w)
{
    if (pthread_mutex_init(&w->analyses_lock, NULL) != 0)
        return -ENOMEM;
    if (pthread_cond_init(&w->analyses_cond, NULL) != 0) {
        pthread_mutex_destroy(&w->analyses_lock);
        return -ENOMEM;
    }
    w->analyses_ready = true;
    return 0;
}

void web__analyses_stop(struct web *w)
{
    if (!w->analyses_ready)
        return;
    atomic_store_explicit(&w->analyses_stopping, true, memory_order_relaxed);
    pthread_mutex_lock(&w->analyses_lock);
    for (;;) {
        bool running = false;
        for (struct web_analysis *a = w->analyses; a; a = a->next)
            running |= !a->done;
        if (!running)
            break;
        pthread_cond_wait(&w->analyses_cond, &w->analyses_lock);
    }
    pthread_mutex_unlock(&w->analyses_lock);
}

static void diff_steps_free(struct web_diff_steps *d)
{
    if (!d)
        return;
    free(d->ranks[0]);
    free(d->ranks[1]);
    free(d);
}

static void analysis_free(struct web_analysis *a)
{
    free(a->ranks);
    sbuf_done(&a->b);
    diff_steps_free(a->diff);
    free(a);
}

void web__analyses_free(struct web *w)
{
    if (!w->analyses_ready)
        return;
    while (w->analyses) {
        struct web_analysis *a = w->analyses;
        w->analyses = a->next;
        analysis_free(a);
    }
    pthread_cond_destroy(&w->analyses_cond);
    pthread_mutex_destroy(&w->analyses_lock);
    w->analyses_ready = false;
}

int web__analysis_answer(struct web *w, const struct web_req *q, struct web_answer *a)
{
    struct web_conn *c = web__req_conn(q);
    pthread_mutex_lock(&w->analyses_lock);
    struct web_analysis **p = &w->analyses;
    while (*p && ((*p)->c != c || !(*p)->done))
        p = &(*p)->next;
    struct web_analysis *an = *p;
    if (an)
        *p = an->next;
    pthread_mutex_unlock(&w->analyses_lock);
    if (!an)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL);
    if (an->r == 0) {
        web__doc_fmt(w, a, &an->b, an->fmt);
        a->keep = an->keep;
        a->job_id = an->from.job_id;
        a->serial = an->from.serial;
        a->stored = an->from.stored;
        a->commits = an->from.commits;
    } else if (an->r == -ENOENT && an->not_found)
        web__error(a, WEB_HTTP_NOT_FOUND, "not_found", an->not_found);
    else
        send_failure(w, a, an->r, an->bg.refused,
                     an->tb       ? "tables"
                     : an->opview ? "operator-view"
                     : an->bench  ? "benchmark"
                     : an->memory ? "memory"
                     : an->tree   ? "tree"
                     : an->diff   ? "diff"
                                  : "summary");
    analysis_free(an);
    return 0;
}

/* Starts an's analysis on a thread of its own and parks the connection (an is then the
 * thread's), or answers unavailable (the server is stopping) or busy and frees an. Returns 0. */
static int start(struct web *w, const struct web_req *q, struct web_analysis *an,
                 struct web_answer *a)
{
    if (atomic_load_explicit(&w->analyses_stopping, memory_order_relaxed) || !w->analyses_ready) {
        analysis_free(an);
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "the server is stopping");
    }
    if (slot_take(w, a) < 0) {
        analysis_free(an);
        return 0;
    }
    struct web_conn *c = web__req_conn(q);
    an->w = w;
    an->c = c;
    an->bg = (struct budget){.w = w, .c = c,
                             .deadline_ns = clock_mono_ns() + w->analysis_timeout_ns};
    sbuf_init(&an->b, w->max_response_bytes);
    /* Under the lock: the thread cannot wake the connection (its last step takes the lock)
     * before it is linked and parked. */
    pthread_mutex_lock(&w->analyses_lock);
    pthread_attr_t attr;
    pthread_t th;
    int e = pthread_attr_init(&attr);
    if (e == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        e = pthread_create(&th, &attr, analysis_main, an);
        pthread_attr_destroy(&attr);
    }
    if (e != 0) { /* no thread: answered at once, as a busy server */
        pthread_mutex_unlock(&w->analyses_lock);
        slot_put(w);
        analysis_free(an);
        STATS_ADD(w->stats, http_analyses_refused, 1);
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "busy",
                          "no thread for the analysis; retry");
    }
    an->next = w->analyses;
    w->analyses = an;
    web__conn_park(c);
    pthread_mutex_unlock(&w->analyses_lock);
    web__answer_done(a);
    a->how = WEB_ANSWER_PARKED;
    return 0;
}

int web__route_summary(struct web *w, const struct web_req *q, const struct web_route *rt,
                       const struct store_job *job, const struct web_cache_from *from,
                       struct web_answer *a)
{
    enum web_summary_kind kind = WEB_SUMMARY_OVERVIEW;
    if (rt->id == WEB_ROUTE_SUMMARY && web__summary_kind_parse(rt->kind, &kind) < 0)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found",
                          "kind: overview, model, distributed, operator, kernel, memory, "
                          "user-defined, device or aicpu");
    int64_t rank, first = ANALYSE_ST_ALL_FIRST, last = ANALYSE_ST_ALL_LAST, max_spans, skip = 0;
    int64_t offset = 0, limit = 0;
    enum web_format fmt;
    char unit[4] = "ms";
    size_t len;
    bool opview = rt->id == WEB_ROUTE_OPERATOR_VIEW;
    enum analyse_opv_group group = ANALYSE_OPV_BY_NAME;
    char gname[24] = "name", name[512] = "", shape[2048] = "";
    if (opview) {
        if (web__param_format(q, a, false, &fmt) < 0 ||
            web__param_str(q, a, "group_by", gname, sizeof gname, &len) < 0 ||
            web__param_str(q, a, "name", name, sizeof name, &len) < 0 ||
            web__param_str(q, a, "input_shape", shape, sizeof shape, &len) < 0 ||
            web__param_i64(q, a, "offset", 0, INT64_MAX, 0, &offset) < 0 ||
            web__param_i64(q, a, "limit", 1, 100000, fmt == WEB_FORMAT_JSON ? 100 : 0, &limit) < 0)
            return 0;
        int g = 0;
        while (g < 4 && strcmp(gname, web__opview_group_names[g]) != 0)
            g++;
        if (g == 4)
            return bad(a, "group_by: name, input_shape, stack or input_shape_stack");
        group = (enum analyse_opv_group)g;
    }
    if (web__param_i64(q, a, "rank", 0, INT32_MAX, -1, &rank) < 0 || /* -1: the lowest */
        (!opview && param_steps(q, a, &first, &last) < 0) ||
        (!opview && web__param_format(q, a, rt->id != WEB_ROUTE_TREE, &fmt) < 0) ||
        web__param_i64(q, a, "max_spans", 1, WEB_SUMMARY_SPANS_MAX, WEB_SUMMARY_SPANS_DEFAULT,
                       &max_spans) < 0)
        return 0;
    int r = web__param_str(q, a, "time_unit", unit, sizeof unit, &len);
    if (r < 0)
        return 0;
    if (strcmp(unit, "s") != 0 && strcmp(unit, "ms") != 0 && strcmp(unit, "us") != 0 &&
        strcmp(unit, "ns") != 0)
        return bad(a, "time_unit: s, ms, us or ns");
    if (rt->id == WEB_ROUTE_BENCHMARK &&
        web__param_i64(q, a, "skip", 0, INT32_MAX, -1, &skip) < 0) /* -1: by source */
        return 0;
    char device[64] = "", table[16] = "operators";
    int64_t points = WEB_MEMORY_POINTS_DEFAULT;
    enum web_memory_table mtable = WEB_MEMORY_OPERATORS;
    if (rt->id == WEB_ROUTE_MEMORY) {
        if (web__param_str(q, a, "device", device, sizeof device, &len) < 0 ||
            web__param_i64(q, a, "points", ANALYSE_MV_POINTS_MIN, WEB_MEMORY_POINTS_MAX,
                           WEB_MEMORY_POINTS_DEFAULT, &points) < 0 ||
            web__param_str(q, a, "table", table, sizeof table, &len) < 0)
            return 0;
        if (strcmp(table, "curve") == 0)
            mtable = WEB_MEMORY_CURVE;
        else if (strcmp(table, "devices") == 0)
            mtable = WEB_MEMORY_DEVICES;
        else if (strcmp(table, "operators") != 0)
            return bad(a, "table: operators, curve or devices");
    }
    enum web_tree_kind tree_kind = WEB_TREE_OPERATOR;
    if (rt->id == WEB_ROUTE_TREE) {
        char tk[16];
        r = web__param_str(q, a, "kind", tk, sizeof tk, &len);
        if (r < 0)
            return 0;
        if (r > 0 && web__tree_kind_parse(tk, &tree_kind) < 0)
            return bad(a, "kind: operator or module");
    }
    struct store_rank *ranks = NULL;
    size_t n_ranks = 0;
    r = store_query_ranks(w->store, job->id, &ranks, &n_ranks);
    if (r < 0)
        return web__store_error(a, r, "store_query_ranks");
    if (rank < 0) /* no ?rank=: the job's lowest, as /breakdown and /helper */
        for (size_t i = 0; i < n_ranks; i++)
            if (rank < 0 || ranks[i].rank < rank)
                rank = ranks[i].rank;
    bool known = false;
    int64_t events = 0;
    for (size_t i = 0; i < n_ranks; i++)
        if (ranks[i].rank == rank) {
            known = true;
            events = ranks[i].events;
        }
    free(ranks);
    if (!known)
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    struct web_analysis *an = calloc(1, sizeof *an);
    if (!an)
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    *an = (struct web_analysis){.bench = rt->id == WEB_ROUTE_BENCHMARK,
                                .memory = rt->id == WEB_ROUTE_MEMORY,
                                .tree = rt->id == WEB_ROUTE_TREE, .tree_kind = tree_kind,
                                .points = (size_t)points, .table = mtable, .opview = opview,
                                .group = group, .offset = offset, .limit = limit,
                                .job = *job, .events = events, .kind = kind,
                                .rank = rank, .first = first, .last = last, .skip = skip,
                                .max_spans = (size_t)max_spans, .fmt = fmt,
                                .keep = from != NULL,
                                .from = from ? *from : (struct web_cache_from){0}};
    memcpy(an->unit, unit, sizeof an->unit);
    memcpy(an->device, device, sizeof an->device);
    memcpy(an->name, name, sizeof an->name);
    memcpy(an->shape, shape, sizeof an->shape);
    return start(w, q, an, a);
}

int web__route_diff_steps(struct web *w, const struct web_req *q, struct web_diff_steps *d,
                          struct web_answer *a)
{
    struct web_diff_steps *own = malloc(sizeof *own);
    struct web_analysis *an = calloc(1, sizeof *an);
    if (!own || !an) {
        free(own);
        free(an);
        free(d->ranks[0]);
        free(d->ranks[1]);
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    }
    *own = *d;
    *an = (struct web_analysis){.diff = own, .events = d->events, .max_spans = d->max_spans,
                                .fmt = d->fmt};
    if (atomic_load_explicit(&w->analyses_stopping, memory_order_relaxed) || !w->analyses_ready) {
        analysis_free(an);
        return web__error(a, WEB_HTTP_SERVICE_UNAVAILABLE, "unavailable",
                          "the server is stopping");
    }
    return start(w, q, an, a);
}

/* ?NAME= one of words[0, n) (absent: words[0]) into *ret; -1 answered (400 msg). */
static int param_word(const struct web_req *q, struct web_answer *a, const char *name,
                      const char *const *words, int n, const char *msg, int *ret)
{
    char buf[24];
    size_t len;
    *ret = 0;
    int r = web__param_str(q, a, name, buf, sizeof buf, &len);
    if (r <= 0)
        return r;
    for (int i = 0; i < n; i++)
        if (strcmp(buf, words[i]) == 0) {
            *ret = i;
            return 0;
        }
    bad(a, msg);
    return -1;
}

int web__route_tbprof(struct web *w, const struct web_req *q, const struct web_route *rt,
                      const struct store_job *job, const struct web_cache_from *from,
                      struct web_answer *a)
{
    static const char *const groups[] = {"name", "operator"};
    static const char *const links[] = {"launch", "external_id"};
    bool comm = rt->id == WEB_ROUTE_COMM_OPS;
    int64_t rank, max_spans;
    int group = 0, link = 0;
    enum web_format fmt;
    if (web__param_i64(q, a, "rank", 0, INT32_MAX, -1, &rank) < 0 || /* -1: every / the lowest */
        web__param_format(q, a, false, &fmt) < 0 ||
        web__param_i64(q, a, "max_spans", 1, WEB_SUMMARY_SPANS_MAX, WEB_SUMMARY_SPANS_DEFAULT,
                       &max_spans) < 0 ||
        (!comm && param_word(q, a, "group", groups, 2, "group: name or operator", &group) < 0) ||
        (comm && param_word(q, a, "link", links, 2, "link: launch or external_id", &link) < 0))
        return 0;
    struct store_rank *ranks = NULL;
    size_t n_ranks = 0;
    int r = store_query_ranks(w->store, job->id, &ranks, &n_ranks);
    if (r < 0)
        return web__store_error(a, r, "store_query_ranks");
    struct web_analysis *an = calloc(1, sizeof *an);
    int64_t *ids = calloc(n_ranks ? n_ranks : 1, sizeof *ids);
    if (!an || !ids) {
        free(ranks);
        free(an);
        free(ids);
        return web__error(a, WEB_HTTP_INTERNAL_SERVER_ERROR, "internal", "out of memory");
    }
    if (!comm && rank < 0) /* the kernel view of one rank: without ?rank=, the job's lowest */
        for (size_t i = 0; i < n_ranks; i++)
            if (rank < 0 || ranks[i].rank < rank)
                rank = ranks[i].rank;
    bool known = comm && rank < 0;
    int64_t events = 0;
    for (size_t i = 0; i < n_ranks; i++) {
        ids[i] = ranks[i].rank;
        if (ranks[i].rank == rank)
            known = true;
        /* read one rank at a time: the reservation is the largest one's */
        if ((comm || ranks[i].rank == rank) && ranks[i].events > events)
            events = ranks[i].events;
    }
    free(ranks);
    if (!known) {
        free(an);
        free(ids);
        return web__error(a, WEB_HTTP_NOT_FOUND, "not_found", "rank: no such rank");
    }
    *an = (struct web_analysis){.tb = comm ? WEB_TB_COMM : WEB_TB_KERNELS, .job = *job,
                                .events = events, .rank = rank, .max_spans = (size_t)max_spans,
                                .fmt = fmt, .tbk_group = (enum analyse_tbk_group)group,
                                .link = (enum analyse_tbc_link)link, .ranks = ids,
                                .n_ranks = n_ranks, .keep = from != NULL,
                                .from = from ? *from : (struct web_cache_from){0}};
    return start(w, q, an, a);
}
