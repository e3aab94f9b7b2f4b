/* SPDX-License-Identifier: MIT */
/*
 * main: the `stepscope` command-line tool. It dispatches to one subcommand per module of this
 * folder; `import` is the first (import.h), `jobs` (jobs.h), `capture` (capture.h) and `summary`
 * (summary.h) the next, then `diff` (diff.h); later ones join the table below.
 */
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "diff.h"
#include "import/import.h"
#include "jobs.h"
#include "stepscope_build.h"
#include "summary.h"

static void usage(FILE *f)
{
    fputs("usage: stepscope COMMAND [ARGS...]\n"
          "       stepscope --version\n"
          "\n"
          "commands:\n"
          "  import PATH...   import Chrome-trace files (.json, .json.gz) and MindSpore\n"
          "                   profiler folders into stepscoped\n"
          "  jobs             list the jobs stepscoped holds\n"
          "  capture JOB      ask a running job for N detailed steps (--steps N)\n"
          "  summary JOB      print paddle.profiler's summary tables of a job\n"
          "  diff BASE EXP    compare two jobs' operators and kernels (CSV)\n"
          "  help [COMMAND]   show this text, or a command's usage\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return IMPORT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "import") == 0)
        return import_command(argc - 1, argv + 1);
    if (strcmp(cmd, "jobs") == 0)
        return jobs_command(argc - 1, argv + 1);
    if (strcmp(cmd, "capture") == 0)
        return capture_command(argc - 1, argv + 1);
    if (strcmp(cmd, "summary") == 0)
        return summary_command(argc - 1, argv + 1);
    if (strcmp(cmd, "diff") == 0)
        return diff_command(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("stepscope %s\n", STEPSCOPE_VERSION);
        return 0;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        if (argc > 2 && strcmp(argv[2], "import") == 0)
            import_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "jobs") == 0)
            jobs_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "capture") == 0)
            capture_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "summary") == 0)
            summary_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "diff") == 0)
            diff_usage(stdout);
        else
            usage(stdout);
        return 0;
    }
    fprintf(stderr, "stepscope: unknown command '%s'\n", cmd);
    usage(stderr);
    return IMPORT_EXIT_USAGE;
}
