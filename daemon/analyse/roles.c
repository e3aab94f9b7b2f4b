/* SPDX-License-Identifier: MIT */
/*
 * Roles: what each span is (step, kernel, runtime call, ...), decided once from its cat and name
 * by an ordered rule table, so that every later analysis switches on an enum instead of strings.
 * The built-in table covers Kineto's current categories and its 2021 names, legacy torch traces
 * without cat, PaddlePaddle's TracerEventType categories and MindSpore's timeline names; users
 * put their own rules in front of it through analyse_rules_parse() (the config file's [roles]
 * text). Rules are data, not code, so the documentation in docs/ANALYSIS.md can list them as they
 * are and an override is a line of text rather than a patch.
 */
#include "analyse_roles.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const analyse_role_names[ANALYSE_ROLE_COUNT] = {
    "other",   "step",   "dataloader", "forward", "backward", "optimizer",      "communication",
    "host_op", "kernel", "memcpy",     "memset",  "runtime",  "user_annotation", "python",
    "gpu_annotation", "scope",
};

#define R(role_, cat_, name_, prefix_, suffix_, contains_)                                         \
    { .role = ANALYSE_ROLE_##role_, .cat = cat_, .name = name_, .prefix = prefix_, .suffix = suffix_, \
      .contains = contains_, .nocase = false }

/* Order matters: the first match wins. Device categories come first (a gpu_user_annotation named
 * ProfilerStep#N is the GPU mirror of a step, not a second step nor a host operator), then the
 * names torch gives its phases whatever their cat, then categories, then the cat-less names of
 * legacy torch and MindSpore traces. */
static const struct analyse_rule default_rules[] = {
    /* Kineto device side and runtime (ActivityType.h; 2021 names Kernel/Memcpy/Memset/Runtime). */
    R(GPU_ANNOTATION, "gpu_user_annotation", NULL, NULL, NULL, NULL),
    R(KERNEL, "kernel", NULL, NULL, NULL, NULL),
    R(MEMCPY, "gpu_memcpy|memcpy", NULL, NULL, NULL, NULL),
    R(MEMSET, "gpu_memset|memset", NULL, NULL, NULL, NULL),
    R(RUNTIME,
      "cuda_runtime|runtime|cuda_driver|mtia_runtime|glow_runtime|xpu_runtime|xpu_driver|"
      "privateuse1_runtime|privateuse1_driver|CudaRuntime|MluRuntime",
      NULL, NULL, NULL, NULL),
    R(PYTHON, "python_function|python", NULL, NULL, NULL, NULL),
    R(OTHER,
      "trace|cpu_instant_event|overhead|external_correlation|cuda_sync|cuda_event|cuda_profiler_range|"
      "mtia_ccp_events|mtia_insight|mtia_counters|xpu_scope_profiler|xpu_sync|hardware_counters|ac2g|"
      "fwdbwd|memory",
      NULL, NULL, NULL, NULL),
    /* torch names, in any host cat or none (torch-tb-profiler trace.py / event_parser.py). */
    R(STEP, NULL, NULL, "ProfilerStep#|ProfileStep#", NULL, NULL),
    R(DATALOADER, NULL, NULL, "enumerate(DataLoader)#", ".__next__", NULL),
    R(DATALOADER, NULL, NULL, "enumerate(DataPipe)#", NULL, NULL),
    R(OPTIMIZER, NULL, NULL, "Optimizer.step#|Optimizer.zero_grad#", NULL, NULL),
    R(BACKWARD, NULL, NULL, "autograd::engine::evaluate_function: ", NULL, NULL),
    R(COMMUNICATION, NULL, NULL, "nccl:|gloo:", NULL, NULL),
    R(COMMUNICATION, "collective_comm", NULL, NULL, NULL, NULL),
    /* PaddlePaddle TracerEventType categories. */
    R(STEP, "ProfileStep", NULL, NULL, NULL, NULL),
    R(DATALOADER, "Dataloader", NULL, NULL, NULL, NULL),
    R(FORWARD, "Forward", NULL, NULL, NULL, NULL),
    R(BACKWARD, "Backward", NULL, NULL, NULL, NULL),
    R(OPTIMIZER, "Optimization", NULL, NULL, NULL, NULL),
    R(COMMUNICATION, "Communication", NULL, NULL, NULL, NULL),
    R(USER_ANNOTATION, "user_annotation|UserDefined|PythonUserDefined", NULL, NULL, NULL, NULL),
    R(HOST_OP, "cpu_op|Operator|OperatorInner|PythonOp|hpu_op", NULL, NULL, NULL, NULL),
    /* MindSpore's "Scope Layer" process (the producers give its spans this cat). */
    R(SCOPE, "scope_layer", NULL, NULL, NULL, NULL),
    /* Cat-less spans: MindSpore timelines and legacy torch ("CPU functions") traces. */
    R(DATALOADER, "-", "GetNext|InitData|InitDataSetQueue", NULL, NULL, NULL),
    R(DATALOADER, "-", NULL, NULL, NULL, "/GetNext-op|/InitDataSetQueue-op"),
    R(COMMUNICATION, "-", NULL, NULL, NULL,
      "AllReduce-op|AllGather-op|ReduceScatter-op|Broadcast-op|AllToAll-op|Send-op|Receive-op"),
    R(KERNEL, "-", NULL, "void ", NULL, NULL),
    R(HOST_OP, "-", NULL, NULL, NULL, NULL),
};

static const struct analyse_rules default_table = {
    .n_rules = sizeof default_rules / sizeof default_rules[0],
    .rules = default_rules,
    .blob = NULL,
};

const struct analyse_rules *analyse_rules_default(void)
{
    return &default_table;
}

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static bool bytes_eq(const char *a, const char *b, size_t n, bool nocase)
{
    if (!nocase)
        return memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return false;
    return true;
}

enum match_kind {
    MATCH_EQUAL,
    MATCH_PREFIX,
    MATCH_SUFFIX,
    MATCH_CONTAINS,
};

/* Does s[0, len) match one alternative of alts ('|'-separated) in the given way? */
static bool match_any(const char *alts, const char *s, size_t len, enum match_kind kind, bool nocase)
{
    const char *a = alts;
    for (;;) {
        const char *bar = strchr(a, '|');
        size_t alen = bar ? (size_t)(bar - a) : strlen(a);
        bool hit = false;
        switch (kind) {
        case MATCH_EQUAL:
            hit = alen == len && bytes_eq(s, a, len, nocase);
            break;
        case MATCH_PREFIX:
            hit = alen <= len && bytes_eq(s, a, alen, nocase);
            break;
        case MATCH_SUFFIX:
            hit = alen <= len && bytes_eq(s + len - alen, a, alen, nocase);
            break;
        case MATCH_CONTAINS:
            for (size_t i = 0; !hit && i + alen <= len; i++)
                hit = bytes_eq(s + i, a, alen, nocase);
            break;
        }
        if (hit)
            return true;
        if (!bar)
            return false;
        a = bar + 1;
    }
}

static bool rule_matches(const struct analyse_rule *r, const struct analyse_span *sp)
{
    if (r->cat) {
        bool ok;
        if (sp->cat_len == 0)
            ok = match_any(r->cat, "-", 1, MATCH_EQUAL, false);
        else
            ok = match_any(r->cat, sp->cat, sp->cat_len, MATCH_EQUAL, true);
        if (!ok)
            return false;
    }
    const char *nm = sp->name ? sp->name : "";
    size_t len = sp->name ? sp->name_len : 0;
    if (r->name && !match_any(r->name, nm, len, MATCH_EQUAL, r->nocase))
        return false;
    if (r->prefix && !match_any(r->prefix, nm, len, MATCH_PREFIX, r->nocase))
        return false;
    if (r->suffix && !match_any(r->suffix, nm, len, MATCH_SUFFIX, r->nocase))
        return false;
    if (r->contains && !match_any(r->contains, nm, len, MATCH_CONTAINS, r->nocase))
        return false;
    return true;
}

static bool table_role(const struct analyse_rules *t, const struct analyse_span *sp, enum analyse_role *ret)
{
    for (size_t i = 0; i < t->n_rules; i++) {
        if (rule_matches(&t->rules[i], sp)) {
            *ret = t->rules[i].role;
            return true;
        }
    }
    return false;
}

enum analyse_role analyse_role_of(const struct analyse_span *span, const struct analyse_rules *user)
{
    enum analyse_role role = ANALYSE_ROLE_OTHER;
    if (user && table_role(user, span, &role))
        return role;
    if (table_role(&default_table, span, &role))
        return role;
    return ANALYSE_ROLE_OTHER;
}

void analyse_classify(struct analyse_span *spans, size_t n, const struct analyse_rules *user)
{
    for (size_t i = 0; i < n; i++)
        spans[i].role = analyse_role_of(&spans[i], user);
}

/* ---- parsing ---------------------------------------------------------------------------- */

void analyse_rules_free(struct analyse_rules *rules)
{
    if (!rules || rules == &default_table)
        return;
    free((void *)rules->rules); /* allocated non-const by analyse_rules_parse() */
    free(rules->blob);
    free(rules);
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static bool is_word(char c)
{
    return c != '\0' && !is_blank(c) && c != '=' && c != '"' && c != '\n';
}

/* Reads one value (bare word or quoted string) from line[*pos, len) into out (NUL-terminated).
 * Returns 0 or -EINVAL. out has room for len + 1 bytes. */
static int read_value(const char *line, size_t len, size_t *pos, char *out)
{
    size_t i = *pos, o = 0;
    if (i < len && line[i] == '"') {
        i++;
        for (;;) {
            if (i >= len)
                return -EINVAL; /* unterminated quote */
            char c = line[i++];
            if (c == '"')
                break;
            if (c == '\\') {
                if (i >= len || (line[i] != '"' && line[i] != '\\'))
                    return -EINVAL;
                c = line[i++];
            }
            if (c == '\0')
                return -EINVAL;
            out[o++] = c;
        }
        if (i < len && !is_blank(line[i]))
            return -EINVAL;
    } else {
        while (i < len && is_word(line[i]))
            out[o++] = line[i++];
        if (i < len && !is_blank(line[i]))
            return -EINVAL;
    }
    if (o == 0)
        return -EINVAL;
    out[o] = '\0';
    *pos = i;
    return 0;
}

static int role_parse(const char *s, enum analyse_role *ret)
{
    for (int r = 0; r < ANALYSE_ROLE_COUNT; r++) {
        if (strcmp(s, analyse_role_names[r]) == 0) {
            *ret = (enum analyse_role)r;
            return 0;
        }
    }
    return -EINVAL;
}

/* Parses one non-comment line into *r, copying values to *blob_pos. Returns 0 or -EINVAL. */
static int parse_line(const char *line, size_t len, struct analyse_rule *r, char **blob_pos)
{
    bool have_role = false;
    size_t i = 0;
    *r = (struct analyse_rule){ .role = ANALYSE_ROLE_OTHER };
    for (;;) {
        while (i < len && is_blank(line[i]))
            i++;
        if (i >= len)
            break;
        size_t k0 = i;
        while (i < len && is_word(line[i]))
            i++;
        size_t klen = i - k0;
        while (i < len && is_blank(line[i]))
            i++;
        if (klen == 0 || i >= len || line[i] != '=')
            return -EINVAL;
        i++;
        while (i < len && is_blank(line[i]))
            i++;
        char *val = *blob_pos;
        if (read_value(line, len, &i, val) < 0)
            return -EINVAL;
        *blob_pos += strlen(val) + 1;
        const char *key = line + k0;
#define KEY(s) (klen == sizeof(s) - 1 && memcmp(key, s, klen) == 0)
        const char **field = NULL;
        if (KEY("role")) {
            if (have_role || role_parse(val, &r->role) < 0)
                return -EINVAL;
            have_role = true;
        } else if (KEY("case")) {
            if (strcmp(val, "ignore") == 0)
                r->nocase = true;
            else if (strcmp(val, "exact") == 0)
                r->nocase = false;
            else
                return -EINVAL;
        } else if (KEY("cat")) {
            field = &r->cat;
        } else if (KEY("name")) {
            field = &r->name;
        } else if (KEY("prefix")) {
            field = &r->prefix;
        } else if (KEY("suffix")) {
            field = &r->suffix;
        } else if (KEY("contains")) {
            field = &r->contains;
        } else {
            return -EINVAL;
        }
#undef KEY
        if (field) {
            if (*field)
                return -EINVAL; /* a key given twice */
            *field = val;
        }
    }
    return have_role ? 0 : -EINVAL;
}

int analyse_rules_parse(const char *text, size_t len, struct analyse_rules **ret_rules, size_t *bad_line)
{
    size_t n_lines = 1;
    for (size_t i = 0; i < len; i++)
        n_lines += text[i] == '\n';
    struct analyse_rules *t = calloc(1, sizeof *t);
    if (!t)
        return -ENOMEM;
    struct analyse_rule *arr = calloc(n_lines, sizeof *arr);
    t->rules = arr;
    /* Values are never longer than their line, so the text's size bounds the blob. */
    t->blob = malloc(len + 1);
    if (!t->rules || !t->blob) {
        analyse_rules_free(t);
        return -ENOMEM;
    }
    char *blob_pos = t->blob;
    size_t line_no = 0, start = 0;
    while (start <= len) {
        size_t end = start;
        while (end < len && text[end] != '\n')
            end++;
        line_no++;
        const char *line = text + start;
        size_t llen = end - start;
        size_t j = 0;
        while (j < llen && is_blank(line[j]))
            j++;
        if (j < llen && line[j] != '#') {
            if (parse_line(line, llen, &arr[t->n_rules], &blob_pos) < 0) {
                if (bad_line)
                    *bad_line = line_no;
                analyse_rules_free(t);
                return -EINVAL;
            }
            t->n_rules++;
        }
        start = end + 1;
    }
    *ret_rules = t;
    return 0;
}

bool analyse_span_cat_is(const struct analyse_span *span, const char *lower)
{
    size_t n = strlen(lower);
    if (span->cat_len != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = span->cat[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lower[i])
            return false;
    }
    return true;
}

bool analyse_span_starts(const struct analyse_span *span, const char *prefix)
{
    size_t n = strlen(prefix);
    return span->name_len >= n && memcmp(span->name, prefix, n) == 0;
}
