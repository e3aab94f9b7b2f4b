/* SPDX-License-Identifier: MIT */
/*
 * summary: `stepscope summary JOB`, the daemon's Paddle-style tables
 * (GET /api/v1/jobs/{job}/summary/{kind}?format=text, docs/API.md "Paddle's summaries") printed
 * as the daemon lays them out: one kind with --kind, else every kind in Paddle's order.
 */
#ifndef STEPSCOPE_IMPORT_SUMMARY_H
#define STEPSCOPE_IMPORT_SUMMARY_H

#include <stdio.h>

/* argv[0] is "summary". Returns the exit code: 0 printed, 1 the daemon was unreachable or
 * answered an error (said on stderr), 2 bad command line. */
int summary_command(int argc, char **argv);

void summary_usage(FILE *f);

#endif
