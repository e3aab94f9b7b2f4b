/* SPDX-License-Identifier: MIT */
/*
 * options: what stepscoped is told before it starts. The command line applied over the
 * environment and the config file (precedence and keys: core/config.h, whose table gives every
 * key its --flag and STEPSCOPE_ variable, so a new key needs no change here), the checks on the
 * result, and the rule files the configuration names (helper_rules, role_rules) parsed by
 * daemon/analyse. Each function reports what is wrong on stderr, in one line naming the flag,
 * key or file (and line), and returns the exit code main() leaves with.
 *
 * Threading: start-up only, before any other thread exists (getopt_long() keeps global state).
 */
#ifndef STEPSCOPE_OPTIONS_H
#define STEPSCOPE_OPTIONS_H

#include "../analyse/analyse_helper.h"
#include "../analyse/analyse_roles.h"
#include "../core/config.h"

/* Exit codes, documented in --help and README.md. */
enum {
    EXIT_OK = 0,
    EXIT_RUNTIME = 1,   /* failed while running */
    EXIT_USAGE = 2,     /* bad command line or configuration */
    EXIT_BUSY = 3,      /* another daemon is live on the socket or holds the data dir */
    EXIT_DATA_DIR = 4,  /* data dir unusable: read-only, corrupt, newer schema */
    EXIT_HTTP = 5,      /* cannot bind the HTTP address */
};

#define OPTIONS_RULES_MAX_BYTES (1 << 20) /* a longer rules file is refused */

/* Applies the config file (--config, else $STEPSCOPE_CONFIG), then the environment envp, then
 * the command line's flags over cfg (config_init()'s defaults). Returns EXIT_OK; -1 for "exit 0
 * now" after printing --help or --version on stdout; EXIT_USAGE (an unknown flag, a stray
 * argument, a bad value in any source); EXIT_RUNTIME (out of memory). */
int options_parse(int argc, char **argv, char **envp, struct config *cfg);

/* Reads the auth token file, then refuses what the daemon must not start with: a non-loopback
 * HTTP address without a token, a socket path longer than a Unix socket allows. Returns EXIT_OK
 * or EXIT_USAGE. */
int options_check(struct config *cfg);

/* *ret = the helper's defaults overridden by the file at path ("": none). Returns EXIT_OK or
 * EXIT_USAGE (unreadable, over OPTIONS_RULES_MAX_BYTES, or a bad line, named by its number). */
int options_load_helper_rules(const char *path, struct analyse_helper_rules *ret);

/* *ret = the role rules in the file at path (""; none: *ret = NULL); free with
 * analyse_rules_free(). Returns EXIT_OK or EXIT_USAGE (as above, or out of memory). */
int options_load_role_rules(const char *path, struct analyse_rules **ret);

/* The compiled-in dashboard directory: the installed one, unless this executable runs from inside
 * the build directory that assembled its own copy (meson.build, static_dir). */
const char *options_default_static_dir(void);

#endif
