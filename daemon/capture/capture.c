/* SPDX-License-Identifier: MIT */
/*
 * The capture registry and request parser (contract in capture.h). Captures are few (people ask
 * for them), so they live in one growable array under one mutex and are found by a linear scan;
 * each holds its ranks' parts in a small array of its own.
 */
#include "capture.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/json.h"
#include "../../lib/util.h"
#include "../sessions/sessions.h"

static const char *const state_names[CAPTURE_STATE_COUNT] = {
    "pending", "armed", "recording", "done", "failed", "expired", "cancelled",
};

/* What a client may be asked to record. */
static const char *const what_names[] = {
    "cpu", "cuda", "device", "shapes", "stack", "memory", "flops", "modules",
};

const char *capture_state_name(int state)
{
    return state >= 0 && state < CAPTURE_STATE_COUNT ? state_names[state] : NULL;
}

int capture_state_parse(const char *s, size_t n)
{
    for (int i = 0; i < CAPTURE_STATE_COUNT; i++)
        if (strlen(state_names[i]) == n && memcmp(state_names[i], s, n) == 0)
            return i;
    return -1;
}

/* ---- parsing ---- */

enum body_id {
    B_RANKS, B_START, B_STEPS, B_WHAT, B_START_STEP, B_STOP_STEP, B_EVERY, B_REPEAT, B_COUNT
};

static const struct json_key body_keys[] = {
    {"ranks", B_RANKS, 0},           {"start", B_START, 0},
    {"steps", B_STEPS, 0},           {"what", B_WHAT, 0},
    {"start_step", B_START_STEP, 0}, {"stop_step", B_STOP_STEP, 0},
    {"every", B_EVERY, 0},           {"repeat", B_REPEAT, 0},
};

/* A JSON number token that is a plain non-negative integer <= max. */
static bool token_uint(const char *p, size_t n, int64_t max, int64_t *ret)
{
    if (n == 0 || n > 18)
        return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    if (v > max)
        return false;
    *ret = v;
    return true;
}

static int bad(char *err, const char *field, const char *why)
{
    snprintf(err, CAPTURE_ERR_MAX, "%s: %s", field, why);
    return -EINVAL;
}

static bool slot_uint(const struct json_slot *s, int64_t max, int64_t *ret)
{
    return s->type == JSON_NUMBER && token_uint(s->p, s->n, max, ret);
}

static int parse_ranks(const struct json_slot *s, struct capture_spec *ret, char *err)
{
    ret->all_ranks = s->type == JSON_ABSENT || s->type == JSON_NULL;
    ret->n_ranks = 0;
    if (ret->all_ranks)
        return 0;
    if (s->type != JSON_ARRAY)
        return bad(err, "ranks", "must be an array of ranks (integers >= 0) or null for all");
    struct json_reader rd;
    json_reader_init(&rd, s->p, s->n);
    (void)json_array_begin(&rd);
    while (json_element(&rd)) {
        const char *tok;
        size_t tn;
        int64_t v;
        if (json_peek(&rd) != JSON_NUMBER || !json_read_number_text(&rd, &tok, &tn) ||
            !token_uint(tok, tn, INT32_MAX, &v))
            return bad(err, "ranks", "must be an array of ranks (integers >= 0) or null for all");
        bool dup = false;
        for (size_t i = 0; i < ret->n_ranks; i++)
            dup |= ret->ranks[i] == v;
        if (dup)
            continue;
        if (ret->n_ranks == CAPTURE_RANKS_MAX)
            return bad(err, "ranks", "too many ranks (at most 1024)");
        ret->ranks[ret->n_ranks++] = v;
    }
    if (rd.bad)
        return bad(err, "ranks", "must be an array of ranks (integers >= 0) or null for all");
    if (ret->n_ranks == 0)
        return bad(err, "ranks", "must not be empty (null means all ranks)");
    return 0;
}

static int parse_what(const struct json_slot *s, struct capture_spec *ret, char *err)
{
    static const char msg[] = "must be an array of: cpu, cuda, device, shapes, stack, memory, "
                              "flops, modules";
    if (s->type == JSON_ABSENT) {
        snprintf(ret->what, sizeof ret->what, "cpu");
        return 0;
    }
    if (s->type != JSON_ARRAY)
        return bad(err, "what", msg);
    size_t len = 0;
    unsigned seen = 0;
    ret->what[0] = '\0';
    struct json_reader rd;
    json_reader_init(&rd, s->p, s->n);
    (void)json_array_begin(&rd);
    while (json_element(&rd)) {
        char name[16];
        size_t nl;
        if (json_peek(&rd) != JSON_STRING || !json_read_string(&rd, name, sizeof name, &nl))
            return bad(err, "what", msg);
        size_t k = 0, n_names = sizeof what_names / sizeof what_names[0];
        while (k < n_names && !(nl == strlen(what_names[k]) && memcmp(name, what_names[k], nl) == 0))
            k++;
        if (k == n_names)
            return bad(err, "what", msg);
        if (seen & (1u << k))
            continue;
        seen |= 1u << k;
        len += (size_t)snprintf(ret->what + len, sizeof ret->what - len, "%s%s", len ? "," : "",
                                what_names[k]);
    }
    if (rd.bad)
        return bad(err, "what", msg);
    if (len == 0)
        return bad(err, "what", "must not be empty");
    return 0;
}

static int parse_window(const struct json_slot *s, struct capture_spec *ret, char *err);

/* every and repeat, once steps is known. */
static int parse_series(const struct json_slot *s, struct capture_spec *ret, char *err)
{
    ret->repeat = 1;
    if (s[B_REPEAT].type != JSON_ABSENT &&
        (!slot_uint(&s[B_REPEAT], CAPTURE_REPEAT_MAX, &ret->repeat) || ret->repeat < 1))
        return bad(err, "repeat",
                   "must be an integer in 1..100 (windows; there is no \"until cancelled\")");
    ret->every = ret->steps;
    if (s[B_EVERY].type != JSON_ABSENT &&
        (!slot_uint(&s[B_EVERY], CAPTURE_EVERY_MAX, &ret->every) || ret->every < 1))
        return bad(err, "every", "must be an integer in 1..1000000 (steps)");
    if (ret->every < ret->steps) {
        snprintf(err, CAPTURE_ERR_MAX,
                 "every: must be at least steps (%lld): a window starts after the previous one "
                 "ended",
                 (long long)ret->steps);
        return -EINVAL;
    }
    return 0;
}

static int parse_slots(const struct json_slot *s, struct capture_spec *ret, char *err)
{
    int r = parse_window(s, ret, err);
    return r < 0 ? r : parse_series(s, ret, err);
}

static int parse_window(const struct json_slot *s, struct capture_spec *ret, char *err)
{
    int r = parse_ranks(&s[B_RANKS], ret, err);
    if (r == 0)
        r = parse_what(&s[B_WHAT], ret, err);
    if (r < 0)
        return r;
    if (s[B_START_STEP].type != JSON_ABSENT || s[B_STOP_STEP].type != JSON_ABSENT) {
        /* MindSpore's dynamic profiler form: steps start_step..stop_step, inclusive. */
        int64_t a, b;
        if (s[B_START].type != JSON_ABSENT || s[B_STEPS].type != JSON_ABSENT)
            return bad(err, "start_step", "give either start_step and stop_step, or start and steps");
        if (!slot_uint(&s[B_START_STEP], INT64_MAX / 2, &a))
            return bad(err, "start_step", "must be an integer >= 0");
        if (!slot_uint(&s[B_STOP_STEP], INT64_MAX / 2, &b) || b < a)
            return bad(err, "stop_step", "must be an integer >= start_step");
        if (b - a + 1 > CAPTURE_STEPS_MAX)
            return bad(err, "stop_step", "at most 1000 steps from start_step");
        ret->start_step = a;
        ret->steps = b - a + 1;
        return 0;
    }
    ret->start_step = -1;
    const struct json_slot *st = &s[B_START];
    if (st->type == JSON_STRING) {
        if (st->n != 4 || memcmp(st->p, "next", 4) != 0)
            return bad(err, "start", "must be \"next\" or a step number (integer >= 0)");
    } else if (st->type != JSON_ABSENT && !slot_uint(st, INT64_MAX / 2, &ret->start_step)) {
        return bad(err, "start", "must be \"next\" or a step number (integer >= 0)");
    }
    ret->steps = 1;
    if (s[B_STEPS].type != JSON_ABSENT &&
        (!slot_uint(&s[B_STEPS], CAPTURE_STEPS_MAX, &ret->steps) || ret->steps < 1))
        return bad(err, "steps", "must be an integer in 1..1000");
    return 0;
}

int capture_parse(const char *body, size_t len, struct capture_spec *ret, char *err)
{
    if (len > CAPTURE_BODY_MAX) {
        snprintf(err, CAPTURE_ERR_MAX, "body: longer than %d bytes", CAPTURE_BODY_MAX);
        return -EMSGSIZE;
    }
    /* Escaped strings are unescaped into the arena, which never needs more than len + 16 bytes. */
    char *buf = NULL;
    struct json_arena a = {malloc(len + 16), 0, len + 16};
    int r = -ENOMEM;
    if (!a.data)
        goto out;
    struct json_keys keys;
    json_keys_init(&keys, body_keys, sizeof body_keys / sizeof body_keys[0]);
    struct json_slot s[B_COUNT];
    char msg[JSON_MSG_MAX];
    int jr = json_scan_copy(body, len, &keys, s, &a, msg, &buf);
    if (jr != JSON_OK) {
        r = jr == JSON_NOSPACE ? -ENOMEM : -EINVAL;
        snprintf(err, CAPTURE_ERR_MAX, "body: not a JSON object: %s", msg);
        goto out;
    }
    r = parse_slots(s, ret, err);
out:
    free(buf);
    free(a.data);
    return r;
}

/* ---- the registry ---- */

struct capture_part {
    int64_t rank;
    int64_t updated_ns;
    int64_t session_id; /* the session the request went to; 0: not sent */
    int64_t waits_ns;   /* while pending: when its wait began (made, sent, its session ended, or
                           loaded at start-up); capture_reg_expire() counts from here */
    int64_t first_step; /* the step it starts at on this rank: the capture's start_step, else what
                           the client reported with "recording", else, for a later window of a
                           series, window 0's plus every steps per window; -1: not known yet */
    enum capture_state state;
    bool tell_cancel;   /* cancelled after the request went to session_id: tell that client */
    char reason[CAPTURE_REASON_MAX + 1];
};

struct capture {
    int64_t id, job_id, created_ns, start_step, steps;
    int64_t series, window, every, repeat; /* capture.h, struct capture_view */
    bool all_ranks;
    bool dirty; /* not yet handed to the store since it changed */
    char what[CAPTURE_WHAT_MAX];
    struct capture_part *parts;
    size_t n_parts, cap_parts;
};

struct capture_reg {
    pthread_mutex_t mu;
    struct capture **caps; /* by id, ascending */
    size_t n_caps, cap_caps;
    int64_t next_id;
    size_t max_all;            /* captures kept in all (capture_reg_new()) */
    int64_t *forgotten;        /* ids forgotten, not yet handed to the store (capture_reg_collect) */
    size_t n_forgotten, cap_forgotten;
    struct sessions *sessions; /* the daemon's open sessions (borrowed) */
};

struct capture_reg *capture_reg_new(struct sessions *sessions, size_t max_all)
{
    struct capture_reg *reg = calloc(1, sizeof *reg);
    if (!reg)
        return NULL;
    pthread_mutex_init(&reg->mu, NULL);
    reg->sessions = sessions;
    reg->next_id = 1;
    reg->max_all = max_all ? max_all : CAPTURE_MAX;
    return reg;
}

void capture_reg_free(struct capture_reg *reg)
{
    if (!reg)
        return;
    for (size_t i = 0; i < reg->n_caps; i++) {
        free(reg->caps[i]->parts);
        free(reg->caps[i]);
    }
    free(reg->caps);
    free(reg->forgotten);
    pthread_mutex_destroy(&reg->mu);
    free(reg);
}

void capture_reg_drop_job(struct capture_reg *reg, int64_t job_id)
{
    pthread_mutex_lock(&reg->mu);
    size_t k = 0;
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *c = reg->caps[i];
        if (c->job_id == job_id) {
            free(c->parts);
            free(c);
        } else {
            reg->caps[k++] = c; /* keeps the id order */
        }
    }
    reg->n_caps = k;
    pthread_mutex_unlock(&reg->mu);
}

static struct capture *find(struct capture_reg *reg, int64_t id)
{
    for (size_t i = 0; i < reg->n_caps; i++)
        if (reg->caps[i]->id == id)
            return reg->caps[i];
    return NULL;
}

static struct capture_part *find_part(const struct capture *c, int64_t rank)
{
    for (size_t i = 0; i < c->n_parts; i++)
        if (c->parts[i].rank == rank)
            return &c->parts[i];
    return NULL;
}

static struct capture_part *add_part(struct capture *c, int64_t rank, int64_t now_ns)
{
    if (c->n_parts == c->cap_parts) {
        size_t cap = c->cap_parts ? 2 * c->cap_parts : 4;
        struct capture_part *p = realloc(c->parts, cap * sizeof *p);
        if (!p)
            return NULL;
        c->parts = p;
        c->cap_parts = cap;
    }
    struct capture_part *p = &c->parts[c->n_parts++];
    *p = (struct capture_part){.rank = rank,
                               .updated_ns = now_ns,
                               .waits_ns = now_ns,
                               .first_step = c->start_step,
                               .state = CAPTURE_PENDING};
    return p;
}

static struct capture *new_capture(struct capture_reg *reg, int64_t id)
{
    if (reg->n_caps >= reg->max_all)
        return NULL;
    if (reg->n_caps == reg->cap_caps) {
        size_t cap = reg->cap_caps ? 2 * reg->cap_caps : 16;
        struct capture **v = realloc(reg->caps, cap * sizeof *v);
        if (!v)
            return NULL;
        reg->caps = v;
        reg->cap_caps = cap;
    }
    struct capture *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->id = id;
    reg->caps[reg->n_caps++] = c;
    if (id >= reg->next_id)
        reg->next_id = id + 1;
    return c;
}

static void set_state(struct capture *c, struct capture_part *p, enum capture_state s,
                      const char *reason, size_t reason_len, int64_t now_ns)
{
    if (reason_len > CAPTURE_REASON_MAX) {
        /* Cut on a UTF-8 character boundary. */
        reason_len = CAPTURE_REASON_MAX;
        while (reason_len > 0 && ((unsigned char)reason[reason_len] & 0xC0) == 0x80)
            reason_len--;
    }
    memcpy(p->reason, reason, reason_len);
    p->reason[reason_len] = '\0';
    p->state = s;
    p->updated_ns = now_ns;
    c->dirty = true;
}

/* The capture's overall state: failed if a part failed, else done when every part is, else the
 * most advanced state of a running part, else expired when a part expired and none runs. */
static enum capture_state overall(const struct capture *c)
{
    bool all_done = c->n_parts > 0, expired = false, cancelled = false, running = false;
    enum capture_state most = CAPTURE_PENDING;
    for (size_t i = 0; i < c->n_parts; i++) {
        enum capture_state s = c->parts[i].state;
        if (s == CAPTURE_FAILED)
            return CAPTURE_FAILED;
        all_done &= s == CAPTURE_DONE;
        expired |= s == CAPTURE_EXPIRED;
        cancelled |= s == CAPTURE_CANCELLED;
        if (s < CAPTURE_DONE) {
            running = true;
            if (s > most)
                most = s;
        }
    }
    if (all_done)
        return CAPTURE_DONE;
    if (running)
        return most;
    return cancelled ? CAPTURE_CANCELLED : expired ? CAPTURE_EXPIRED : most;
}

static bool ended(const struct capture *c)
{
    return overall(c) >= CAPTURE_DONE;
}

/* A part of a later window of a series that starts at "next": it waits, unsent, until window 0's
 * part of the same rank reports the step it started at. */
static bool held(const struct capture *c, const struct capture_part *p)
{
    return c->window > 0 && p->first_step < 0;
}

/* Forgets the oldest capture that has ended, of job_id (any job: -1), and notes its id for the
 * store (capture_reg_collect). Returns 1, 0 when none has ended, or -ENOMEM (nothing forgotten). */
static int forget_oldest_ended(struct capture_reg *reg, int64_t job_id)
{
    size_t i = 0;
    while (i < reg->n_caps && !((job_id < 0 || reg->caps[i]->job_id == job_id) &&
                                ended(reg->caps[i])))
        i++;
    if (i == reg->n_caps)
        return 0;
    if (util_grow((void **)&reg->forgotten, &reg->cap_forgotten, reg->n_forgotten + 1,
                  sizeof *reg->forgotten) < 0)
        return -ENOMEM;
    struct capture *c = reg->caps[i];
    reg->forgotten[reg->n_forgotten++] = c->id;
    free(c->parts);
    free(c);
    memmove(&reg->caps[i], &reg->caps[i + 1], (reg->n_caps - i - 1) * sizeof *reg->caps);
    reg->n_caps--;
    return 1;
}

/* 0 when an open session could serve spec; else -EHOSTDOWN with the reason in err. */
static int check_served(const struct capture_reg *reg, int64_t job_id,
                        const struct capture_spec *spec, char *err)
{
    bool any = false;
    if (spec->all_ranks) {
        if (sessions_can_capture(reg->sessions, job_id, -1, &any))
            return 0;
    } else {
        for (size_t i = 0; i < spec->n_ranks; i++)
            if (sessions_can_capture(reg->sessions, job_id, spec->ranks[i], &any))
                return 0;
    }
    if (any)
        snprintf(err, CAPTURE_ERR_MAX,
                 "no connected session of %s can capture: its clients did not announce the "
                 "\"capture\" capability",
                 spec->all_ranks ? "this job" : "those ranks");
    else
        snprintf(err, CAPTURE_ERR_MAX,
                 "no session of %s is connected: captures need a running job (this one has "
                 "ended, or was imported)",
                 spec->all_ranks ? "this job" : "those ranks");
    return -EHOSTDOWN;
}

void capture_what_json(struct sbuf *b, const char *what)
{
    sbuf_addc(b, '[');
    for (const char *p = what; *p;) {
        size_t n = strcspn(p, ",");
        if (p != what)
            sbuf_addc(b, ',');
        sbuf_json_str(b, p, n);
        p += n + (p[n] == ',');
    }
    sbuf_addc(b, ']');
}

/* A copy of c, as the API shows it; false on OOM (*v then owns nothing). */
static bool view_of(const struct capture *c, struct capture_view *v)
{
    *v = (struct capture_view){.id = c->id, .job_id = c->job_id, .created_ns = c->created_ns,
                               .start_step = c->start_step, .steps = c->steps,
                               .series = c->series, .window = c->window, .every = c->every,
                               .repeat = c->repeat, .all_ranks = c->all_ranks,
                               .state = overall(c)};
    memcpy(v->what, c->what, sizeof v->what);
    if (c->n_parts == 0)
        return true;
    v->parts = malloc(c->n_parts * sizeof *v->parts);
    if (!v->parts)
        return false;
    for (size_t i = 0; i < c->n_parts; i++) {
        const struct capture_part *p = &c->parts[i];
        struct capture_view_part *q = &v->parts[i];
        q->rank = p->rank;
        q->updated_ns = p->updated_ns;
        q->state = p->state;
        q->first_step = p->first_step;
        memcpy(q->reason, p->reason, sizeof q->reason);
    }
    v->n_parts = c->n_parts;
    return true;
}

void capture_views_free(struct capture_view *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].parts);
    free(v);
}

int64_t capture_reg_add(struct capture_reg *reg, int64_t job_id, const struct capture_spec *spec,
                        const int64_t *known_ranks, size_t n_known, size_t max_open,
                        size_t max_kept, int64_t now_ns, struct capture_view **ret_view,
                        char *err)
{
    pthread_mutex_lock(&reg->mu);
    int64_t r = check_served(reg, job_id, spec, err);
    if (r < 0)
        goto out;
    size_t open = 0, kept = 0;
    for (size_t i = 0; i < reg->n_caps; i++) {
        if (reg->caps[i]->job_id == job_id) {
            kept++;
            open += !ended(reg->caps[i]);
        }
    }
    /* A series is spec->repeat captures, one per window, and counts as many against each cap. */
    size_t want = spec->repeat > 1 ? (size_t)spec->repeat : 1;
    const char *series = want > 1 ? " (a series takes one per window)" : "";
    if (max_open > 0 && open + want > max_open) {
        if (want == 1)
            snprintf(err, CAPTURE_ERR_MAX,
                     "this job has %zu captures that have not ended, the most capture_max_open "
                     "allows: wait for them to end or expire",
                     open);
        else
            snprintf(err, CAPTURE_ERR_MAX,
                     "this job has %zu captures that have not ended: %zu more is past the %zu "
                     "capture_max_open allows%s",
                     open, want, max_open, series);
        r = -EDQUOT;
        goto out;
    }
    if (max_kept > 0 && want > max_kept) {
        snprintf(err, CAPTURE_ERR_MAX, "asks %zu captures, past the %zu capture_max_kept allows%s",
                 want, max_kept, series);
        r = -EDQUOT;
        goto out;
    }
    /* Room for want more: the job's oldest ended captures go past max_kept, any job's past
     * max_all, so that old captures cannot refuse new ones for good. */
    int f = 1;
    while (max_kept > 0 && kept + want > max_kept && (f = forget_oldest_ended(reg, job_id)) > 0)
        kept--;
    if (f == 0) {
        snprintf(err, CAPTURE_ERR_MAX,
                 "this job keeps %zu captures, the most capture_max_kept allows, and too few "
                 "have ended for %zu more: wait for them to end or expire",
                 kept, want);
        r = -EDQUOT;
        goto out;
    }
    while (f > 0 && reg->n_caps + want > reg->max_all)
        f = forget_oldest_ended(reg, -1);
    if (f == 0) {
        snprintf(err, CAPTURE_ERR_MAX,
                 "the daemon keeps %zu captures, the most it holds, and too few have ended for "
                 "%zu more",
                 reg->n_caps, want);
        r = -ENOSPC;
        goto out;
    }
    r = f < 0 ? -ENOMEM : 0;
    size_t made = 0;
    int64_t first = reg->next_id;
    const int64_t *ranks = spec->all_ranks ? known_ranks : spec->ranks;
    size_t n = spec->all_ranks ? n_known : spec->n_ranks;
    for (; r == 0 && made < want; made++) {
        struct capture *c = new_capture(reg, reg->next_id);
        if (!c) {
            r = -ENOMEM;
            break;
        }
        int64_t w = (int64_t)made;
        c->job_id = job_id;
        c->created_ns = now_ns;
        c->start_step = spec->start_step < 0 ? -1 : spec->start_step + w * spec->every;
        c->steps = spec->steps;
        c->series = first;
        c->window = w;
        c->every = spec->every;
        c->repeat = (int64_t)want;
        c->all_ranks = spec->all_ranks;
        c->dirty = true;
        snprintf(c->what, sizeof c->what, "%s", spec->what);
        for (size_t i = 0; r == 0 && i < n; i++)
            if (!find_part(c, ranks[i]) && !add_part(c, ranks[i], now_ns))
                r = -ENOMEM;
    }
    if (r == 0 && ret_view) {
        *ret_view = malloc(sizeof **ret_view);
        if (!*ret_view || !view_of(find(reg, first), *ret_view)) {
            free(*ret_view);
            *ret_view = NULL;
            r = -ENOMEM;
        }
    }
    if (r == 0) {
        r = first;
        goto out;
    }
    /* Out of memory: forget the windows made (the last ones added). */
    while (reg->n_caps > 0 && reg->caps[reg->n_caps - 1]->id >= first) {
        struct capture *c = reg->caps[--reg->n_caps];
        free(c->parts);
        free(c);
    }
    reg->next_id = first;
out:
    pthread_mutex_unlock(&reg->mu);
    return r;
}

int capture_reg_load(struct capture_reg *reg, const struct record_capture *rc)
{
    pthread_mutex_lock(&reg->mu);
    int r = -EINVAL;
    if (rc->id > 0 && !find(reg, rc->id)) {
        struct capture *c = new_capture(reg, rc->id);
        r = -ENOMEM;
        if (c) {
            c->job_id = rc->job_id;
            c->created_ns = rc->created_ns;
            c->start_step = rc->start_step;
            c->steps = rc->steps;
            /* A row from before series (schema 5 and older): a capture made alone. */
            c->series = rc->series > 0 ? rc->series : rc->id;
            c->window = rc->window > 0 ? rc->window : 0;
            c->every = rc->every > 0 ? rc->every : rc->steps;
            c->repeat = rc->repeat > 0 ? rc->repeat : 1;
            c->all_ranks = rc->all_ranks;
            snprintf(c->what, sizeof c->what, "%s", rc->what);
            r = 0;
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return r;
}

int capture_reg_load_rank(struct capture_reg *reg, const struct record_capture_rank *rr,
                          int64_t now_ns)
{
    pthread_mutex_lock(&reg->mu);
    int r = -EINVAL;
    struct capture *c = find(reg, rr->capture_id);
    int s = capture_state_parse(rr->state, strlen(rr->state));
    if (c && s >= 0 && !find_part(c, rr->rank)) {
        struct capture_part *p = add_part(c, rr->rank, rr->updated_ns);
        r = -ENOMEM;
        if (p) {
            p->state = (enum capture_state)s;
            p->waits_ns = now_ns;
            if (rr->first_step >= 0) /* a row from before schema 7 has -1: keep the start */
                p->first_step = rr->first_step;
            snprintf(p->reason, sizeof p->reason, "%s", rr->reason);
            r = 0;
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return r;
}

int capture_reg_views(struct capture_reg *reg, int64_t job_id, int64_t id,
                      struct capture_view **ret, size_t *ret_n)
{
    *ret = NULL;
    *ret_n = 0;
    pthread_mutex_lock(&reg->mu);
    int r = 0;
    size_t n = 0;
    for (size_t i = 0; i < reg->n_caps; i++)
        n += reg->caps[i]->job_id == job_id && (id < 0 || reg->caps[i]->id == id);
    if (id >= 0 && n == 0) {
        r = -ENOENT;
        goto out;
    }
    struct capture_view *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) {
        r = -ENOMEM;
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < reg->n_caps && r == 0; i++) {
        const struct capture *c = reg->caps[i];
        if (c->job_id != job_id || (id >= 0 && c->id != id))
            continue;
        if (!view_of(c, &v[k]))
            r = -ENOMEM;
        else
            k++;
    }
    if (r < 0) {
        capture_views_free(v, k);
        goto out;
    }
    *ret = v;
    *ret_n = n;
out:
    pthread_mutex_unlock(&reg->mu);
    return r;
}

/* An all-ranks capture takes in a newly seen rank until one of its parts has started recording
 * (a part that failed or expired before that, such as a rank that cannot capture, does not
 * count). */
static bool takes_new_ranks(struct capture_reg *reg, const struct capture *c, int64_t rank)
{
    if (!c->all_ranks)
        return false;
    /* A later window of a series that starts at "next" counts from window 0's step: a rank
     * joins it only if it is in window 0. */
    if (c->window > 0 && c->start_step < 0) {
        const struct capture *w0 = find(reg, c->series);
        if (!w0 || !find_part(w0, rank))
            return false;
    }
    for (size_t i = 0; i < c->n_parts; i++)
        if (c->parts[i].state == CAPTURE_RECORDING || c->parts[i].state == CAPTURE_DONE)
            return false;
    return true;
}

static int send_line(struct sbuf *b, capture_send_fn send, void *ud)
{
    size_t n = 0;
    char *p = sbuf_steal(b, &n);
    int r = p ? send(ud, p, n) : -ENOMEM;
    free(p);
    return r;
}

static int send_request(const struct capture *c, const struct capture_part *p,
                        capture_send_fn send, void *ud)
{
    struct sbuf b;
    sbuf_init(&b, 4096);
    sbuf_printf(&b, "{\"capture\":{\"id\":%lld,\"start_step\":", (long long)c->id);
    if (p->first_step < 0)
        sbuf_adds(&b, "null");
    else
        sbuf_printf(&b, "%lld", (long long)p->first_step);
    sbuf_printf(&b, ",\"steps\":%lld,\"what\":", (long long)c->steps);
    capture_what_json(&b, c->what);
    sbuf_adds(&b, "}}\n");
    return send_line(&b, send, ud);
}

static int send_cancel(const struct capture *c, capture_send_fn send, void *ud)
{
    struct sbuf b;
    sbuf_init(&b, 64);
    sbuf_printf(&b, "{\"capture_cancel\":{\"id\":%lld}}\n", (long long)c->id);
    return send_line(&b, send, ud);
}

void capture_reg_offer(struct capture_reg *reg, int64_t job_id, int64_t rank, int64_t session_id,
                       bool can_capture, capture_send_fn send, void *ud, int64_t now_ns)
{
    static const char cannot[] = "client cannot capture";
    pthread_mutex_lock(&reg->mu);
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *c = reg->caps[i];
        if (c->job_id != job_id)
            continue;
        struct capture_part *p = find_part(c, rank);
        if (!p && takes_new_ranks(reg, c, rank)) {
            p = add_part(c, rank, now_ns);
            c->dirty = true;
        }
        if (p && p->tell_cancel && p->session_id == session_id && send_cancel(c, send, ud) == 0)
            p->tell_cancel = false;
        if (!p || p->state != CAPTURE_PENDING || p->session_id == session_id || held(c, p))
            continue;
        if (!can_capture) {
            set_state(c, p, CAPTURE_FAILED, cannot, sizeof cannot - 1, now_ns);
            continue;
        }
        if (send_request(c, p, send, ud) == 0) {
            p->session_id = session_id;
            p->waits_ns = now_ns;
        }
    }
    pthread_mutex_unlock(&reg->mu);
}

static const char no_start[] = "window 0 of the series ended on this rank before it started";

/* The later windows of c's series that wait for rank's window 0 (held()): with start (>= 0) they
 * get their steps; with start < 0 they fail, with the reason why. */
static void resolve_held(struct capture_reg *reg, const struct capture *c, int64_t rank,
                         int64_t start, const char *why, int64_t now_ns)
{
    if (c->window != 0 || c->start_step >= 0)
        return; /* only window 0 of a series that starts at "next" places the others */
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *w = reg->caps[i];
        struct capture_part *p = w->series == c->series && w->window > 0 && w->id != c->id
                                     ? find_part(w, rank)
                                     : NULL;
        if (!p || !held(w, p) || p->state != CAPTURE_PENDING)
            continue;
        if (start >= 0) {
            p->first_step = start + w->window * w->every;
            p->waits_ns = now_ns;
            w->dirty = true;
        } else {
            set_state(w, p, CAPTURE_FAILED, why, strlen(why), now_ns);
        }
    }
}

int capture_reg_report(struct capture_reg *reg, int64_t job_id, int64_t rank, int64_t id,
                       enum capture_state state, int64_t step, const char *reason,
                       size_t reason_len, int64_t now_ns)
{
    static const char no_step[] =
        "window 0 of the series started at a step the client did not report (its \"recording\" "
        "gave no \"step\"): it cannot repeat a capture that starts at \"next\"";
    pthread_mutex_lock(&reg->mu);
    int r = -ENOENT;
    struct capture *c = find(reg, id);
    struct capture_part *p = c && c->job_id == job_id ? find_part(c, rank) : NULL;
    if (p) {
        r = -EALREADY;
        if (p->state < CAPTURE_DONE) {
            enum capture_state was = p->state;
            set_state(c, p, state, reason, reason_len, now_ns);
            if (state == CAPTURE_RECORDING && step >= 0 && p->first_step < 0)
                p->first_step = step;
            if (state == CAPTURE_RECORDING)
                resolve_held(reg, c, rank, step, no_step, now_ns);
            else if (state >= CAPTURE_DONE && was < CAPTURE_RECORDING)
                resolve_held(reg, c, rank, -1, no_start, now_ns);
            r = 0;
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return r;
}

int capture_reg_cancel(struct capture_reg *reg, int64_t job_id, int64_t series, int64_t now_ns)
{
    static const char why[] = "cancelled";
    pthread_mutex_lock(&reg->mu);
    const struct capture *one = find(reg, series);
    int r = -ENOENT;
    if (one && one->job_id == job_id) {
        int64_t sid = one->series;
        r = 0;
        for (size_t i = 0; i < reg->n_caps; i++) {
            struct capture *c = reg->caps[i];
            if (c->job_id != job_id || c->series != sid)
                continue;
            for (size_t k = 0; k < c->n_parts; k++) {
                struct capture_part *p = &c->parts[k];
                if (p->state != CAPTURE_PENDING && p->state != CAPTURE_ARMED)
                    continue;
                p->tell_cancel = p->session_id != 0;
                set_state(c, p, CAPTURE_CANCELLED, why, sizeof why - 1, now_ns);
                r++;
            }
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return r;
}

void capture_reg_session_closed(struct capture_reg *reg, int64_t session_id, int64_t now_ns)
{
    static const char gone[] = "client disconnected";
    pthread_mutex_lock(&reg->mu);
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *c = reg->caps[i];
        for (size_t k = 0; k < c->n_parts; k++) {
            struct capture_part *p = &c->parts[k];
            if (p->session_id == session_id)
                p->tell_cancel = false; /* the client that had it is gone */
            if (p->session_id != session_id || p->state >= CAPTURE_DONE)
                continue;
            if (p->state == CAPTURE_PENDING) {
                /* Sent but not armed: offer it to the next session, which has the whole
                 * expiry window to come. */
                p->session_id = 0;
                p->waits_ns = now_ns;
            } else {
                set_state(c, p, CAPTURE_FAILED, gone, sizeof gone - 1, now_ns);
                resolve_held(reg, c, p->rank, -1, no_start, now_ns);
            }
        }
    }
    pthread_mutex_unlock(&reg->mu);
}

size_t capture_reg_expire(struct capture_reg *reg, int64_t now_ns, int64_t expire_ns)
{
    size_t n = 0;
    pthread_mutex_lock(&reg->mu);
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *c = reg->caps[i];
        for (size_t k = 0; k < c->n_parts; k++) {
            struct capture_part *p = &c->parts[k];
            if (p->state != CAPTURE_PENDING || held(c, p) || now_ns - p->waits_ns < expire_ns)
                continue;
            char why[CAPTURE_REASON_MAX];
            long long s = (long long)(expire_ns / 1000000000);
            int w = p->session_id != 0
                        ? snprintf(why, sizeof why,
                                   "the client did not arm it within %lld s of the request", s)
                        : snprintf(why, sizeof why,
                                   "no session of rank %lld took it within %lld s (the run "
                                   "ended, or the rank is not connected)",
                                   (long long)p->rank, s);
            set_state(c, p, CAPTURE_EXPIRED, why, w > 0 ? (size_t)w : 0, now_ns);
            resolve_held(reg, c, p->rank, -1, no_start, now_ns);
            n++;
        }
    }
    pthread_mutex_unlock(&reg->mu);
    return n;
}

void capture_reg_collect(struct capture_reg *reg,
                         int (*on_capture)(void *ud, const struct record_capture *c),
                         int (*on_rank)(void *ud, const struct record_capture_rank *r),
                         int (*on_forget)(void *ud, int64_t capture_id), void *ud)
{
    pthread_mutex_lock(&reg->mu);
    for (size_t i = 0; i < reg->n_caps; i++) {
        struct capture *c = reg->caps[i];
        if (!c->dirty)
            continue;
        struct record_capture row = {c->id,     c->job_id,    c->created_ns, c->start_step,
                                     c->steps,  c->series,    c->window,     c->every,
                                     c->repeat, c->all_ranks, c->what};
        bool ok = on_capture(ud, &row) == 0;
        for (size_t k = 0; ok && k < c->n_parts; k++) {
            const struct capture_part *p = &c->parts[k];
            struct record_capture_rank rr = {c->id, p->rank, p->updated_ns, p->first_step,
                                             state_names[p->state], p->reason};
            ok = on_rank(ud, &rr) == 0;
        }
        c->dirty = !ok;
    }
    size_t k = 0;
    while (k < reg->n_forgotten && on_forget(ud, reg->forgotten[k]) == 0)
        k++;
    if (k > 0) {
        memmove(reg->forgotten, reg->forgotten + k,
                (reg->n_forgotten - k) * sizeof *reg->forgotten);
        reg->n_forgotten -= k;
    }
    pthread_mutex_unlock(&reg->mu);
}
