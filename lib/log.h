/* SPDX-License-Identifier: MIT */
/*
 * log: one line per message on stderr, with a level and a monotonic time. Only the decision points
 * (main.c, loop callbacks, HTTP handlers) log; core/ and analyse/ never do. log_ratelimit() keeps
 * per-event warnings to about one line a second per call site.
 */
#ifndef STEPSCOPE_LOG_H
#define STEPSCOPE_LOG_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define SS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SS_PRINTF(fmt, args)
#endif

enum log_level { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Messages above this level are dropped. Set once at start, before threads exist. */
void log_set_level(enum log_level level);

/* Parses "error", "warn", "info" or "debug". Returns 0, or -EINVAL. */
int log_level_parse(const char *s, enum log_level *ret_level);

void log_msg(enum log_level level, const char *fmt, ...) SS_PRINTF(2, 3);

/* A rate limit shared by the callers of one site: returns true at most once per interval_ns and
 * counts what it suppressed in *state->suppressed. Thread-safe enough for counters (best effort). */
struct log_ratelimit {
    int64_t last_ns;
    uint64_t suppressed;
};
bool log_ratelimit(struct log_ratelimit *rl, int64_t interval_ns);

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__)

#endif
