/* SPDX-License-Identifier: MIT */
/* The daemon's command line, the checks on its configuration, and the rule files it names
 * (options.h). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

#include "stepscope_build.h"

#define FLAG_NAME_MAX 64 /* longest --flag made from a config key, + 1 */

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: stepscoped [OPTION]...\n"
            "Collects step traces, operator records, data-queue depths and timelines from\n"
            "training processes over a Unix socket, and serves them over HTTP.\n"
            "\n"
            "  --config FILE        read options from FILE (also $STEPSCOPE_CONFIG)\n"
            "  -h, --help           show this help and exit\n"
            "  -V, --version        show the version and exit\n");
    for (const struct config_option *o = config_options; o->name; o++) {
        char flag[64];
        size_t k = 0;
        for (const char *p = o->name; *p && k + 1 < sizeof flag; p++)
            flag[k++] = *p == '_' ? '-' : *p;
        flag[k] = '\0';
        char env[64];
        k = 0;
        for (const char *p = o->name; *p && k + 1 < sizeof env; p++)
            env[k++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
        env[k] = '\0';
        fprintf(f, "  --%-18s %s\n  %20s (env STEPSCOPE_%s; default %s)\n", flag, o->doc, "", env,
                !o->def ? "see below" : o->def[0] ? o->def : "none");
    }
    fprintf(f,
            "\n"
            "Defaults: socket $XDG_RUNTIME_DIR/stepscope.sock, else /tmp/stepscope-$UID.sock;\n"
            "data-dir $XDG_STATE_HOME/stepscope, else ~/.local/state/stepscope.\n"
            "Precedence: command line > environment > config file > default.\n"
            "\n"
            "Exit status: 0 stopped cleanly; 1 runtime error; 2 bad usage or configuration;\n"
            "3 another stepscoped is live on the socket or holds the data dir; 4 data dir\n"
            "unusable (read-only, corrupt, newer schema); 5 cannot bind the HTTP address.\n");
}

static int parse_args_with(int argc, char **argv, char **envp, struct config *cfg,
                           struct option *opts, char (*names)[FLAG_NAME_MAX]);

int options_parse(int argc, char **argv, char **envp, struct config *cfg)
{
    size_t n_cfg = 0;
    while (config_options[n_cfg].name)
        n_cfg++;
    /* Sized from the table, so a new config key always gets its --flag. */
    struct option *opts = calloc(n_cfg + 4, sizeof *opts);
    char (*names)[FLAG_NAME_MAX] = calloc(n_cfg + 1, sizeof *names);
    int r;
    if (!opts || !names) {
        fputs("stepscoped: out of memory\n", stderr);
        r = EXIT_RUNTIME;
    } else {
        r = parse_args_with(argc, argv, envp, cfg, opts, names);
    }
    free(opts);
    free(names);
    return r;
}

static int parse_args_with(int argc, char **argv, char **envp, struct config *cfg,
                           struct option *opts, char (*names)[FLAG_NAME_MAX])
{
    int n = 0;
    for (const struct config_option *o = config_options; o->name; o++, n++) {
        size_t k = 0;
        if (strlen(o->name) >= FLAG_NAME_MAX) {
            fprintf(stderr, "stepscoped: config key %s is too long for a flag\n", o->name);
            return EXIT_RUNTIME;
        }
        for (const char *p = o->name; *p; p++)
            names[n][k++] = *p == '_' ? '-' : *p;
        names[n][k] = '\0';
        opts[n] = (struct option){names[n], required_argument, NULL, 1000 + n};
    }
    opts[n++] = (struct option){"config", required_argument, NULL, 'c'};
    opts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    opts[n++] = (struct option){"version", no_argument, NULL, 'V'};
    opts[n] = (struct option){NULL, 0, NULL, 0};

    /* First pass: only --config, --help and --version, because the file must be applied before
     * the environment and both before the other flags. */
    const char *config_path = config_env_get(envp, "STEPSCOPE_CONFIG");
    int c;
    opterr = 0;
    optind = 0; /* glibc: 0 restarts scanning from scratch (a second call, in the unit tests) */
    while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return -1;
        }
        if (c == 'V') {
            printf("stepscoped %s\n", STEPSCOPE_VERSION);
            return -1;
        }
        if (c == 'c')
            config_path = optarg;
        if (c == '?' || c == ':') {
            fprintf(stderr, "stepscoped: %s: unknown option or missing value (see --help)\n",
                    argv[optind - 1]);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "stepscoped: unexpected argument \"%s\" (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    char err[CONFIG_ERR_MAX];
    if (config_path && config_path[0] && config_load_file(cfg, config_path, err) < 0) {
        fprintf(stderr, "stepscoped: config: %s\n", err);
        return EXIT_USAGE;
    }
    if (config_load_env(cfg, envp, err) < 0) {
        fprintf(stderr, "stepscoped: environment: %s\n", err);
        return EXIT_USAGE;
    }
    optind = 0; /* glibc: 0 restarts scanning from scratch */
    while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
        if (c < 1000)
            continue;
        const char *key = config_options[c - 1000].name;
        if (config_set(cfg, key, optarg, err) < 0) {
            fprintf(stderr, "stepscoped: --%s: %s\n", names[c - 1000], err);
            return EXIT_USAGE;
        }
    }
    return EXIT_OK;
}

int options_check(struct config *cfg)
{
    char err[CONFIG_ERR_MAX];
    if (config_load_token(cfg, err) < 0) {
        fprintf(stderr, "stepscoped: auth_token_file: %s\n", err);
        return EXIT_USAGE;
    }
    if (!cfg->auth_token[0] && !config_http_is_loopback(cfg->http)) {
        fprintf(stderr,
                "stepscoped: http %s is not a loopback address: serving it needs an auth token "
                "(--auth-token-file FILE, $STEPSCOPE_AUTH_TOKEN or auth_token_file in the "
                "config file); refusing to start\n",
                cfg->http);
        return EXIT_USAGE;
    }
    /* sun_path is 108 bytes on Linux, NUL included; libuv 1.44 would truncate silently. */
    if (strlen(cfg->socket) >= 108) {
        fprintf(stderr,
                "stepscoped: socket path is %zu bytes, longer than the 107 a Unix socket allows: "
                "%s\n",
                strlen(cfg->socket), cfg->socket);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* Reads the rules file path (at most OPTIONS_RULES_MAX_BYTES) into a malloc()'d *ret_text of
 * *ret_n bytes. Returns EXIT_OK, or EXIT_USAGE after saying on stderr what is wrong, naming the
 * file by its config key. */
static int read_rules(const char *key, const char *path, char **ret_text, size_t *ret_n)
{
    int code = EXIT_USAGE;
    char *text = malloc(OPTIONS_RULES_MAX_BYTES + 1);
    FILE *f = fopen(path, "rb");
    if (!f || !text) {
        fprintf(stderr, "stepscoped: %s %s: %s\n", key, path, strerror(text ? errno : ENOMEM));
        goto out;
    }
    size_t n = fread(text, 1, OPTIONS_RULES_MAX_BYTES + 1, f);
    if (ferror(f) || n > OPTIONS_RULES_MAX_BYTES) {
        fprintf(stderr, "stepscoped: %s %s: %s\n", key, path,
                ferror(f) ? "read error" : "longer than 1 MiB");
        goto out;
    }
    *ret_text = text;
    *ret_n = n;
    text = NULL;
    code = EXIT_OK;
out:
    if (f)
        fclose(f);
    free(text);
    return code;
}

int options_load_helper_rules(const char *path, struct analyse_helper_rules *ret)
{
    analyse_helper_rules_default(ret);
    if (!path[0])
        return EXIT_OK;
    char *text = NULL;
    size_t n = 0;
    int code = read_rules("helper_rules", path, &text, &n);
    if (code != EXIT_OK)
        return code;
    size_t bad_line = 0;
    if (analyse_helper_rules_parse(text, n, ret, &bad_line) < 0) {
        fprintf(stderr,
                "stepscoped: helper_rules %s: line %zu: unknown key, bad value or no '=' (keys "
                "and values: docs/ANALYSIS.md, \"Helper and ranks\")\n",
                path, bad_line);
        code = EXIT_USAGE;
    }
    free(text);
    return code;
}

int options_load_role_rules(const char *path, struct analyse_rules **ret)
{
    *ret = NULL;
    if (!path[0])
        return EXIT_OK;
    char *text = NULL;
    size_t n = 0;
    int code = read_rules("role_rules", path, &text, &n);
    if (code != EXIT_OK)
        return code;
    size_t bad_line = 0;
    int r = analyse_rules_parse(text, n, ret, &bad_line);
    if (r == -ENOMEM) {
        fprintf(stderr, "stepscoped: role_rules %s: %s\n", path, strerror(ENOMEM));
        code = EXIT_USAGE;
    } else if (r < 0) {
        fprintf(stderr,
                "stepscoped: role_rules %s: line %zu: bad rule (syntax: docs/ANALYSIS.md, "
                "\"Rules syntax\")\n",
                path, bad_line);
        code = EXIT_USAGE;
    }
    free(text);
    return code;
}

const char *options_default_static_dir(void)
{
    char exe[CONFIG_PATH_MAX], root[PATH_MAX];
    if (!STEPSCOPE_BUILD_STATIC_DIR[0] || !realpath(STEPSCOPE_BUILD_ROOT, root))
        return STEPSCOPE_STATIC_DIR;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1); /* resolved, as root is */
    if (n <= 0)
        return STEPSCOPE_STATIC_DIR;
    exe[n] = '\0';
    size_t k = strlen(root);
    if (strncmp(exe, root, k) == 0 && exe[k] == '/')
        return STEPSCOPE_BUILD_STATIC_DIR;
    return STEPSCOPE_STATIC_DIR;
}
