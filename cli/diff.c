/* SPDX-License-Identifier: MIT */
/*
 * diff: one GET of /api/v1/diff?format=csv; the daemon's CSV is printed as it comes, with
 * control bytes but newline as '?' (operator names come from traces).
 */
#include "diff.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "locate.h"

extern char **environ;

enum { DIFF_EXIT_OK = 0, DIFF_EXIT_DAEMON = 1, DIFF_EXIT_USAGE = 2 };

void diff_usage(FILE *f)
{
    fputs("usage: stepscope diff BASE EXP [--rank R] [--base-rank R] [--exp-rank R]\n"
          "                      [--base-steps A-B] [--exp-steps A-B]\n"
          "                      [--socket PATH | --http ADDR:PORT] [--auth-token-file FILE]\n"
          "Prints, as CSV, every operator and kernel of two jobs matched by name: the calls,\n"
          "total and self time in BASE and in EXP and the change (EXP - BASE), added and removed\n"
          "ones marked, as stepscoped's GET /api/v1/diff computes them.\n"
          "\n"
          "  --rank R                one rank of both jobs (default: every rank merged)\n"
          "  --base-rank R, --exp-rank R  one rank of that job only\n"
          "  --base-steps A-B, --exp-steps A-B  only the steps A..B (or one step N) of that\n"
          "                          job, read from its stored spans (the other job: all its\n"
          "                          steps)\n"
          LOCATE_HELP
          "  --auth-token-file FILE  its bearer token, when it has one (env\n"
          "                          STEPSCOPE_AUTH_TOKEN_FILE or STEPSCOPE_AUTH_TOKEN)\n"
          "\n"
          "Exit status: 0 printed; 1 daemon unreachable or error answer (unknown job or rank);\n"
          "2 bad usage.\n",
          f);
}

int diff_command(int argc, char **argv)
{
    static const struct option opts[] = {
        {"rank", required_argument, NULL, 'r'},
        {"base-rank", required_argument, NULL, 'B'},
        {"exp-rank", required_argument, NULL, 'E'},
        {"base-steps", required_argument, NULL, 'b'},
        {"exp-steps", required_argument, NULL, 'e'},
        HCLIENT_OPTIONS,
    };
    /* The query parameter each option sets, in the order they are sent. */
    static const struct {
        int opt;
        const char *param, *chars, *msg;
    } params[] = {
        {'r', "rank", "0123456789", "--rank: not a rank"},
        {'B', "base_rank", "0123456789", "--base-rank: not a rank"},
        {'E', "exp_rank", "0123456789", "--exp-rank: not a rank"},
        {'b', "base_steps", "0123456789-", "--base-steps: not A-B or N"},
        {'e', "exp_steps", "0123456789-", "--exp-steps: not A-B or N"},
    };
    enum { N_PARAMS = sizeof params / sizeof params[0] };
    const char *val[N_PARAMS] = {NULL};
    int c, code;
    struct hclient_options o = {NULL, NULL, NULL};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        size_t k = 0;
        while (k < N_PARAMS && params[k].opt != c)
            k++;
        if (k < N_PARAMS)
            val[k] = optarg;
        else if ((code = hclient_option(c, "diff", diff_usage, argv, &o)) >= 0)
            return code;
    }
    const char *bad = NULL;
    if (argc - optind != 2)
        bad = argc - optind < 2 ? "give the base job and the experiment job" : "two jobs only";
    for (size_t k = 0; k < N_PARAMS && !bad; k++)
        if (val[k] && (!*val[k] || strlen(val[k]) > 21 ||
                       strspn(val[k], params[k].chars) != strlen(val[k])))
            bad = params[k].msg;
    if (bad) {
        fprintf(stderr, "stepscope diff: %s\n", bad);
        diff_usage(stderr);
        return DIFF_EXIT_USAGE;
    }
    char path[2 * HCLIENT_ADDR_MAX + 264] = "/api/v1/diff?format=csv&base=";
    if (hclient_add_segment(path, sizeof path - HCLIENT_ADDR_MAX - 200, argv[optind]) < 0) {
        fprintf(stderr, "stepscope diff: the base job's name is too long\n");
        return DIFF_EXIT_USAGE;
    }
    strcat(path, "&exp=");
    if (hclient_add_segment(path, sizeof path - 200, argv[optind + 1]) < 0) {
        fprintf(stderr, "stepscope diff: the experiment job's name is too long\n");
        return DIFF_EXIT_USAGE;
    }
    for (size_t k = 0; k < N_PARAMS; k++)
        if (val[k]) /* at most 5 * 34 bytes: the 200 kept past the names */
            snprintf(path + strlen(path), sizeof path - strlen(path), "&%s=%s", params[k].param,
                     val[k]);
    struct hclient_target t;
    char err[HCLIENT_ERR_MAX];
    int lr = locate_daemon(&t, environ, &o, LOCATE_HTTP, err);
    if (lr < 0) {
        fprintf(stderr, "stepscope diff: %s\n", err);
        return lr == -EINVAL ? DIFF_EXIT_USAGE : DIFF_EXIT_DAEMON;
    }
    int status;
    char *body;
    size_t len;
    code = DIFF_EXIT_OK;
    if (hclient_get(&t, path, &status, &body, &len, err) < 0) {
        fprintf(stderr, "stepscope diff: %s\n", err);
        code = DIFF_EXIT_DAEMON;
    } else {
        if (status != 200) {
            hclient_print_error("diff", status, body, len);
            code = DIFF_EXIT_DAEMON;
        } else {
            for (size_t i = 0; i < len; i++)
                if (((unsigned char)body[i] < 0x20 && body[i] != '\n') || body[i] == 0x7f)
                    body[i] = '?';
            fwrite(body, 1, len, stdout);
        }
        free(body);
    }
    explicit_bzero(t.token, sizeof t.token);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "stepscope diff: writing the output: %s\n", strerror(errno));
        code = DIFF_EXIT_DAEMON;
    }
    return code;
}
