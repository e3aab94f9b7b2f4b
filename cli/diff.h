/* SPDX-License-Identifier: MIT */
/*
 * diff: `stepscope diff BASE EXP`, two jobs side by side as stepscoped compares them
 * (GET /api/v1/diff?format=csv, docs/API.md "Diff of two runs"): per operator and kernel,
 * matched by name, the calls, total and self time of each job and the change, printed as the
 * daemon's CSV.
 */
#ifndef STEPSCOPE_CLI_DIFF_H
#define STEPSCOPE_CLI_DIFF_H

#include <stdio.h>

/* argv[0] is "diff". Returns the exit code: 0 printed, 1 the daemon was unreachable or answered
 * an error (said on stderr), 2 bad command line. */
int diff_command(int argc, char **argv);

void diff_usage(FILE *f);

#endif
