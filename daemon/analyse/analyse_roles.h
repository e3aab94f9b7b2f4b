/* SPDX-License-Identifier: MIT */
/*
 * analyse_roles.h: what a span is. The span every analysis reads, its roles, and the rule
 * tables that classify spans into roles (roles.c). The other analyse headers build on it.
 *
 * analyse is pure: arrays in, tables out; no I/O, libuv, SQLite, globals or logging. Results
 * belong to the caller (free them with the matching *_free()); times are int64 ns. Formulas
 * follow the peers; deliberate differences are written in docs/ANALYSIS.md.
 */
#ifndef STEPSCOPE_ANALYSE_ROLES_H
#define STEPSCOPE_ANALYSE_ROLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a span is, for every analysis. Classified once by analyse_classify(). */
enum analyse_role {
    ANALYSE_ROLE_OTHER,
    ANALYSE_ROLE_STEP,            /* ProfilerStep#N and the like: one training step */
    ANALYSE_ROLE_DATALOADER,
    ANALYSE_ROLE_FORWARD,
    ANALYSE_ROLE_BACKWARD,
    ANALYSE_ROLE_OPTIMIZER,
    ANALYSE_ROLE_COMMUNICATION,
    ANALYSE_ROLE_HOST_OP,         /* a framework operator on the host (aten::conv2d, ...) */
    ANALYSE_ROLE_KERNEL,          /* device kernel */
    ANALYSE_ROLE_MEMCPY,
    ANALYSE_ROLE_MEMSET,
    ANALYSE_ROLE_RUNTIME,         /* cudaLaunchKernel and other runtime/driver calls */
    ANALYSE_ROLE_USER_ANNOTATION, /* record_function / RecordEvent ranges */
    ANALYSE_ROLE_PYTHON,          /* python_function events */
    ANALYSE_ROLE_GPU_ANNOTATION,  /* Kineto's GPU mirror of a host range (cat gpu_user_annotation):
                                     device-side, so in neither the host nor the kernel table (torch's
                                     key_averages() lists it as a CUDA row); CPU exec in the breakdown */
    ANALYSE_ROLE_SCOPE,           /* a level of the network's scope hierarchy (MindSpore's "Scope
                                     Layer": Default, network-WithLossCell, Gradients, ...): over
                                     the operators, not one; in no table, step point nor breakdown */
    ANALYSE_ROLE_COUNT,
};

/* A complete span (Chrome "X", or a B/E pair already matched by the caller). Strings are
 * borrowed, not NUL-terminated. */
struct analyse_span {
    int64_t ts_ns;
    int64_t dur_ns;
    const char *name;
    size_t name_len;
    const char *cat;      /* Chrome "cat"; len 0 when absent (legacy torch traces) */
    size_t cat_len;
    int64_t pid;          /* numeric pid/tid; a string pid/tid is mapped to a stable id by the caller */
    int64_t tid;
    int64_t correlation;  /* args.correlation / args["External id"] links, -1 when absent */
    int64_t external_id;  /* args["External id"], -1 when absent */
    enum analyse_role role;
};

/* Lower-case names of the roles, indexed by enum analyse_role ("host_op", "kernel", ...). */
extern const char *const analyse_role_names[ANALYSE_ROLE_COUNT];

/* Bit for a role in a role mask. */
#define ANALYSE_ROLE_BIT(r) (UINT32_C(1) << (r))

/* --- Roles (roles.c) ---------------------------------------------------------------------
 * A rule gives a role to the spans it matches. Every field that is not NULL must match (AND);
 * a field may list alternatives separated by '|' (OR). cat is compared case-insensitively (as
 * torch-tb-profiler lower-cases "cat"), "-" matching a span without a cat; the name fields are
 * case-sensitive unless nocase is set. Rules are tried in order; the first match wins. */
struct analyse_rule {
    enum analyse_role role;
    const char *cat;      /* category alternatives, "-" = no cat; NULL = any */
    const char *name;     /* whole-name alternatives; NULL = any */
    const char *prefix;   /* name prefix alternatives; NULL = any */
    const char *suffix;   /* name suffix alternatives; NULL = any */
    const char *contains; /* name substring alternatives; NULL = any */
    bool nocase;          /* compare name, prefix, suffix and contains ignoring ASCII case */
};

/* An ordered rule table. Read-only outside roles.c. */
struct analyse_rules {
    size_t n_rules;
    const struct analyse_rule *rules; /* [n_rules]; strings point into blob (parsed) or are static */
    char *blob;                 /* owned text of parsed rules; NULL for the built-in table */
};

/* The built-in rule table (docs/ANALYSIS.md lists it): Kineto's current and 2021 categories,
 * legacy torch traces without cat, Paddle's and MindSpore's names. Static, never freed; a span no
 * rule matches is ANALYSE_ROLE_OTHER. */
const struct analyse_rules *analyse_rules_default(void);

/* Parses user rules, one a line: `key = value` pairs separated by blanks, keys role (required:
 * one of analyse_role_names), cat, name, prefix, suffix, contains, case (exact | ignore). A value
 * with blanks, '"' or '\' is written in double quotes with \" and \\ escapes. Blank lines and
 * lines whose first non-blank character is '#' are skipped. text need not be NUL-terminated.
 * Returns 0 and sets *ret_rules (caller frees with analyse_rules_free()); -EINVAL on a bad line,
 * whose 1-based number is then stored in *bad_line when bad_line is not NULL; -ENOMEM. */
int analyse_rules_parse(const char *text, size_t len, struct analyse_rules **ret_rules, size_t *bad_line);

/* Frees parsed rules; NULL and the built-in table are accepted and ignored. */
void analyse_rules_free(struct analyse_rules *rules);

/* Sets spans[i].role for every span: user rules first (NULL for none), then the built-in table.
 * Pure; O(n * rules). */
void analyse_classify(struct analyse_span *spans, size_t n, const struct analyse_rules *user);

/* The role of one span under user rules (may be NULL) and the built-in table. */
enum analyse_role analyse_role_of(const struct analyse_span *span, const struct analyse_rules *user);

/* Whether span's cat equals lower (lower-case ASCII) ignoring ASCII case, as torch-tb-profiler
 * reads categories (category.lower()). Pure. */
bool analyse_span_cat_is(const struct analyse_span *span, const char *lower);

/* Whether span's name starts with prefix (case-sensitive). Pure. */
bool analyse_span_starts(const struct analyse_span *span, const char *prefix);

#endif
