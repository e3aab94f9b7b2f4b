/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"

static enum log_level max_level = LOG_LEVEL_INFO;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_set_level(enum log_level level)
{
    max_level = level;
}

int log_level_parse(const char *s, enum log_level *ret_level)
{
    for (size_t i = 0; i < sizeof level_names / sizeof level_names[0]; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *ret_level = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > max_level)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per message keeps lines from different threads whole. */
    fprintf(stderr, "stepscoped: %s: %s\n", level_names[level], line);
}

bool log_ratelimit(struct log_ratelimit *rl, int64_t interval_ns)
{
    int64_t now = clock_mono_ns();
    if (rl->last_ns != 0 && now - rl->last_ns < interval_ns) {
        rl->suppressed++;
        return false;
    }
    rl->last_ns = now;
    return true;
}
