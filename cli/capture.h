/* SPDX-License-Identifier: MIT */
/*
 * capture: `stepscope capture JOB --steps N`, asks a running job for N detailed steps
 * (POST /api/v1/jobs/{job}/captures, docs/API.md "Captures") and prints the capture's id; with
 * --wait it polls the capture until every rank's part is done or failed and prints their states.
 */
#ifndef STEPSCOPE_IMPORT_CAPTURE_H
#define STEPSCOPE_IMPORT_CAPTURE_H

#include <stdio.h>

enum {
    CAPTURE_EXIT_OK = 0,
    CAPTURE_EXIT_DAEMON = 1,  /* unreachable, or an error answer */
    CAPTURE_EXIT_USAGE = 2,
    CAPTURE_EXIT_FAILED = 3,  /* --wait: some rank's part failed or expired */
    CAPTURE_EXIT_TIMEOUT = 4, /* --wait: not ended within --timeout (default 300 s) */
};

#define CAPTURE_POLL_MS 200 /* --wait: one GET per this many milliseconds */
#define CAPTURE_WAIT_DEFAULT_S 300 /* --wait without --timeout stops after this long */
#define CAPTURE_REASON_MAX 512

/* argv[0] is "capture". Returns the exit code above. */
int capture_command(int argc, char **argv);

void capture_usage(FILE *f);

#endif
