/* SPDX-License-Identifier: MIT */
/*
 * summary: one GET per kind; the daemon's text is printed as it comes, with control bytes but
 * newline and tab as '?' (operator names come from traces), kinds separated by a blank line.
 */
#include "summary.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "locate.h"

extern char **environ;

enum { SUMMARY_EXIT_OK = 0, SUMMARY_EXIT_DAEMON = 1, SUMMARY_EXIT_USAGE = 2 };

/* Paddle's order (profiler_statistic.py _build_table). */
/* The summary tables (/summary/{kind}), then, only when asked for by name, "aicpu"
 * (MindInsight's AI CPU tables) and "perf": Paddle's Perf Summary (/benchmark). */
static const char *const kinds[] = {"device",       "overview",
                                    "model",        "distributed",
                                    "operator",     "kernel",
                                    "memory-manipulation", "user-defined",
                                    "memory",       "aicpu",
                                    "perf"};
enum { N_KINDS = sizeof kinds / sizeof kinds[0], N_TABLES = N_KINDS - 2, PERF = N_KINDS - 1 };

void summary_usage(FILE *f)
{
    fputs("usage: stepscope summary JOB [--kind KIND] [--rank R] [--steps A-B] [--skip N]\n"
          "                         [--time-unit s|ms|us|ns] [--socket PATH | --http ADDR:PORT]\n"
          "                         [--auth-token-file FILE]\n"
          "Prints paddle.profiler's summary tables of one rank of JOB, computed by stepscoped.\n"
          "\n"
          "  --kind KIND             one table: device, overview, model, distributed, operator,\n"
          "                          kernel, memory-manipulation, user-defined, memory (default:\n"
          "                          all, in that order; as Paddle, the tables after overview\n"
          "                          only when not empty); aicpu: MindInsight's AI CPU tables;\n"
          "                          perf: Paddle's Perf Summary (its benchmark timer)\n"
          "  --skip N                perf: warm-up steps left out (default 10, as Paddle)\n"
          "  --rank R                the rank (default 0)\n"
          "  --steps A-B             ProfileSteps A..B only (or one step N; default all)\n"
          "  --time-unit UNIT        the tables' time unit (default ms)\n"
          LOCATE_HELP
          "  --auth-token-file FILE  its bearer token, when it has one (env\n"
          "                          STEPSCOPE_AUTH_TOKEN_FILE or STEPSCOPE_AUTH_TOKEN)\n"
          "\n"
          "Exit status: 0 printed; 1 daemon unreachable or error answer (unknown job, rank, no\n"
          "step in range); 2 bad usage.\n",
          f);
}

static bool only(const char *s, const char *set)
{
    return *s && strspn(s, set) == strlen(s) && strlen(s) < 40;
}

static void print_text(char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') || s[i] == 0x7f)
            s[i] = '?';
    fwrite(s, 1, n, stdout);
    if (n > 0 && s[n - 1] != '\n')
        putchar('\n');
}

int summary_command(int argc, char **argv)
{
    static const struct option opts[] = {
        {"kind", required_argument, NULL, 'k'},
        {"rank", required_argument, NULL, 'r'},
        {"steps", required_argument, NULL, 's'},
        {"time-unit", required_argument, NULL, 'u'},
        {"skip", required_argument, NULL, 'n'},
        HCLIENT_OPTIONS,
    };
    const char *kind = NULL, *rank = "0", *steps = NULL, *skip = NULL;
    const char *unit = "ms";
    int c, code;
    struct hclient_options o = {NULL, NULL, NULL};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'k':
            kind = optarg;
            break;
        case 'r':
            rank = optarg;
            break;
        case 's':
            steps = optarg;
            break;
        case 'u':
            unit = optarg;
            break;
        case 'n':
            skip = optarg;
            break;
        default:
            if ((code = hclient_option(c, "summary", summary_usage, argv, &o)) >= 0)
                return code;
        }
    }
    size_t first = 0, last = N_TABLES;
    for (size_t k = 0; kind && k < N_KINDS; k++)
        if (strcmp(kind, kinds[k]) == 0)
            first = k, last = k + 1;
    const char *bad = NULL;
    if (optind + 1 != argc)
        bad = optind >= argc ? "give the job's name" : "one job at a time";
    else if (kind && last - first != 1)
        bad = "--kind: not one of device, overview, model, distributed, operator, kernel, "
              "memory-manipulation, user-defined, memory, aicpu, perf";
    else if (skip && (first != PERF || !only(skip, "0123456789")))
        bad = first != PERF ? "--skip: only with --kind perf" : "--skip: not a number";
    else if (!only(rank, "0123456789"))
        bad = "--rank: not a rank";
    else if (steps && !only(steps, "0123456789-"))
        bad = "--steps: not A-B or N";
    else if (!only(unit, "smun"))
        bad = "--time-unit: not s, ms, us or ns";
    if (bad) {
        fprintf(stderr, "stepscope summary: %s\n", bad);
        summary_usage(stderr);
        return SUMMARY_EXIT_USAGE;
    }
    char job[HCLIENT_ADDR_MAX] = "";
    struct hclient_target t;
    char err[HCLIENT_ERR_MAX];
    if (hclient_add_segment(job, sizeof job, argv[optind]) < 0) {
        fprintf(stderr, "stepscope summary: the job's name is too long\n");
        return SUMMARY_EXIT_USAGE;
    }
    int lr = locate_daemon(&t, environ, &o, LOCATE_HTTP, err);
    if (lr < 0) {
        fprintf(stderr, "stepscope summary: %s\n", err);
        return lr == -EINVAL ? SUMMARY_EXIT_USAGE : SUMMARY_EXIT_DAEMON;
    }
    code = SUMMARY_EXIT_OK;
    int printed = 0;
    for (size_t k = first; k < last && code == SUMMARY_EXIT_OK; k++) {
        char path[HCLIENT_ADDR_MAX + 256];
        if (k == PERF)
            snprintf(path, sizeof path, "/api/v1/jobs/%s/benchmark?format=text&rank=%s%s%s%s%s",
                     job, rank, steps ? "&steps=" : "", steps ? steps : "", skip ? "&skip=" : "",
                     skip ? skip : "");
        else
            snprintf(path, sizeof path,
                     "/api/v1/jobs/%s/summary/%s?format=text&rank=%s&time_unit=%s%s%s", job,
                     kinds[k], rank, unit, steps ? "&steps=" : "", steps ? steps : "");
        int status;
        char *body;
        size_t len;
        if (hclient_get(&t, path, &status, &body, &len, err) < 0) {
            fprintf(stderr, "stepscope summary: %s\n", err);
            code = SUMMARY_EXIT_DAEMON;
            break;
        }
        if (status != 200) {
            hclient_print_error("summary", status, body, len);
            code = SUMMARY_EXIT_DAEMON;
        } else if (len == 0) {
            /* a table Paddle's summary() leaves out when empty: the daemon sends none */
            if (kind)
                fprintf(stderr, "stepscope summary: no %s table (Paddle leaves it out when "
                        "empty)\n", kinds[k]);
        } else {
            if (printed++)
                putchar('\n');
            print_text(body, len);
        }
        free(body);
    }
    explicit_bzero(t.token, sizeof t.token);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "stepscope summary: writing the output: %s\n", strerror(errno));
        code = SUMMARY_EXIT_DAEMON;
    }
    return code;
}
