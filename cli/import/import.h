/* SPDX-License-Identifier: MIT */
/*
 * import: the `stepscope import` subcommand. Validates every file completely first (pass 1:
 * nothing is sent unless every file is a valid trace whose events the daemon will all take),
 * then sends each file as one rank of one job (pass 2) and waits until the daemon has
 * acknowledged every line. Usage and guarantees: cli/README.md.
 */
#ifndef STEPSCOPE_IMPORT_IMPORT_H
#define STEPSCOPE_IMPORT_IMPORT_H

#include <stdio.h>

enum import_exit {
    IMPORT_EXIT_OK = 0,          /* every line of every file was acknowledged */
    IMPORT_EXIT_DAEMON = 1,      /* the daemon was unreachable, refused the hello or went away */
    IMPORT_EXIT_USAGE = 2,       /* bad command line */
    IMPORT_EXIT_INPUT = 3,       /* an input file is invalid (then nothing was sent) */
    IMPORT_EXIT_REJECTED = 4,    /* the daemon answered some lines with errors */
};

/* Runs `stepscope import` with argv[0] == "import". Writes its report to stdout and its errors
 * to stderr. Returns an enum import_exit value. Blocks until done. */
int import_command(int argc, char **argv);

/* Prints the subcommand's usage to f. */
void import_usage(FILE *f);

#endif
