/* SPDX-License-Identifier: MIT */
/*
 * jobs: `stepscope jobs`, the daemon's job list (GET /api/v1/jobs?format=csv) as a table, most
 * recently seen first, or the CSV itself with --csv.
 */
#ifndef STEPSCOPE_IMPORT_JOBS_H
#define STEPSCOPE_IMPORT_JOBS_H

#include <stdio.h>

#define JOBS_MAX_COLUMNS 64 /* CSV fields per line read; more are ignored */

/* argv[0] is "jobs". Returns the exit code: 0 printed, 1 the daemon was unreachable or answered
 * an error (said on stderr), 2 bad command line. */
int jobs_command(int argc, char **argv);

void jobs_usage(FILE *f);

#endif
