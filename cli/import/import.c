/* SPDX-License-Identifier: MIT */
/*
 * import: `stepscope import PATH... [--socket S] [--job NAME] [--rank R]` (contract in import.h).
 *
 * Pass 1 reads every file to the end through trace_file/trace_scan in constant memory: it
 * validates the JSON and every event, counts the events, collects the top-level facts
 * (distributedInfo, schemaVersion, ...), guesses the framework from the first events, and
 * writes the protocol lines it converts to an unlinked temporary file (import_validate.c). Only
 * when every file passed does pass 2 send each file's lines from there, one session per file, as
 * the stream "import:<abs path>:<size>:<mtime>" (import_send.c, import_hello.c). Because that
 * stream key is the file's identity, a second import of the same file (same job and rank) gets a
 * welcome whose next_seq covers what the daemon already holds, and only the rest is sent:
 * imports are idempotent, and an import whose connection broke resumes where the daemon's
 * durable state ends, on the next attempt or the next run. Which file does what: import_int.h.
 */
#include "import.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../http_client.h"
#include "../locate.h"
#include "import_int.h"
#include "line_spool.h"
#include "log.h"
#include "mindspore_dir.h"
#include "span_order.h"

extern char **environ;

#define IMPORT_JOB_MAX 256        /* the protocol's longest job name */

void import_usage(FILE *f)
{
    fputs("usage: stepscope import [--socket PATH | --http ADDR:PORT] [--job NAME] [--rank R]\n"
          "                        [--quiet] PATH...\n"
          "\n"
          "Imports Chrome-trace files (.json or .json.gz; Kineto, legacy torch, Paddle\n"
          "export_chrome_tracing, MindSpore timelines) and Paddle protobuf exports (.pb) into\n"
          "stepscoped, one file per rank, and MindSpore profiler folders (MindInsight-era\n"
          "profiler/ intermediate files, MindSpore 2.x *_ascend_ms/), one rank per <r> in\n"
          "their file names.\n"
          "Every file is validated completely before anything is sent; the command exits 0 only\n"
          "when the daemon has acknowledged every event. Importing the same file again adds\n"
          "nothing.\n"
          "\n"
          "  --socket PATH  the daemon's socket (default $STEPSCOPE_SOCKET, else\n"
          "                 $XDG_RUNTIME_DIR/stepscope.sock, else /tmp/stepscope-$UID.sock)\n"
          "  --http ADDR:PORT  or the daemon by its HTTP address (env STEPSCOPE_HTTP), which\n"
          "                 names its socket; given both, they must be the same daemon\n"
          "  --job NAME     job name (default: the file name without .gz/.json/.pt.trace,\n"
          "                 .pb/.paddle_trace;\n"
          "                 required with several files)\n"
          "  --rank R       rank of a single file (default: its distributedInfo.rank, else 0);\n"
          "                 with several files ranks come from distributedInfo when every file\n"
          "                 has a distinct one, else from the order of the files\n"
          "  --quiet        print nothing on success\n"
          "\n"
          "exit status: 0 all acknowledged, 1 daemon unreachable or refused, 2 usage,\n"
          "             3 invalid input file (nothing sent), 4 the daemon rejected events\n",
          f);
}

static void usage_error(const char *fmt, ...) SS_PRINTF(1, 2);

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("stepscope import: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\ntry 'stepscope import --help'\n", stderr);
    va_end(ap);
}

/* Parses a decimal int64 in [0, INT32_MAX]. */
static bool parse_rank(const char *s, int64_t *ret)
{
    if (!*s)
        return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
        if (v > INT32_MAX)
            return false;
    }
    *ret = v;
    return true;
}

static bool job_ok(const char *job)
{
    size_t n = strlen(job);
    if (n == 0 || n > IMPORT_JOB_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)job[i] < 0x20 || job[i] == 0x7f)
            return false;
    return true;
}

/* The default job name: the base name without .gz, .json and .pt.trace (Kineto's
 * "<worker>.<ts>.pt.trace.json"), or .pb and .paddle_trace (Paddle's protobuf export). Caller
 * frees. */
static char *job_from_path(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (import_has_suffix(b, n, ".gz"))
        n -= 3;
    if (import_has_suffix(b, n, ".json"))
        n -= 5;
    if (import_has_suffix(b, n, ".pt.trace"))
        n -= 9;
    if (import_has_suffix(b, n, ".pb"))
        n -= 3;
    if (import_has_suffix(b, n, ".paddle_trace"))
        n -= 13;
    if (n == 0)
        n = strlen(b);
    if (n > IMPORT_JOB_MAX)
        n = IMPORT_JOB_MAX;
    char *j = malloc(n + 1);
    if (j) {
        memcpy(j, b, n);
        j[n] = '\0';
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)j[i] < 0x20 || j[i] == 0x7f)
                j[i] = '_';
    }
    return j;
}

/* One input per file argument; a folder argument becomes one input per rank of its MindSpore
 * files plus one per timeline it holds. Returns 0, or -1 after printing why. */
static int expand(const char **paths, size_t n, struct msdir **dirs, struct input **ret_ins,
                  size_t *ret_n)
{
    size_t cap = n, k = 0;
    int ret = 0;
    struct input *ins = calloc(cap, sizeof *ins);
    if (!ins) {
        fputs("stepscope import: out of memory\n", stderr);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        size_t need = 1;
        if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (msdir_scan(paths[i], &dirs[i]) < 0) {
                ret = -1;
                continue;
            }
            need = dirs[i]->n_ranks + dirs[i]->n_timelines;
        }
        if (k + need > cap) {
            size_t nc = (k + need) * 2;
            struct input *ni = realloc(ins, nc * sizeof *ni);
            if (!ni) {
                fputs("stepscope import: out of memory\n", stderr);
                ret = -1;
                break;
            }
            memset(ni + cap, 0, (nc - cap) * sizeof *ni);
            ins = ni;
            cap = nc;
        }
        if (!dirs[i]) {
            ins[k].arg = paths[i];
            ins[k++].fixed_rank = -1;
            continue;
        }
        char *abs = realpath(paths[i], NULL);
        for (size_t r = 0; abs && r < dirs[i]->n_ranks; r++) {
            ins[k].arg = paths[i];
            ins[k].ms = &dirs[i]->ranks[r];
            ins[k].fixed_rank = dirs[i]->ranks[r].rank;
            ins[k++].dir = strdup(abs);
        }
        for (size_t r = 0; abs && r < dirs[i]->n_timelines; r++) {
            ins[k].arg = dirs[i]->timelines[r].path;
            ins[k].fixed_rank = dirs[i]->timelines[r].rank;
            ins[k++].dir = strdup(abs);
        }
        if (!abs) {
            fprintf(stderr, "stepscope import: %s: %s\n", paths[i], strerror(errno));
            ret = -1;
        }
        free(abs);
    }
    for (size_t i = 0; i < k; i++)
        if (ins[i].fixed_rank >= 0 && !ins[i].dir) {
            fputs("stepscope import: out of memory\n", stderr);
            ret = -1;
            break;
        }
    *ret_ins = ins;
    *ret_n = k;
    return ret;
}

/* The command line into *o and paths[0, *n). Returns 0, 1 after printing the usage (--help),
 * or -1 after printing what is wrong. */
static int parse_options(int argc, char **argv, struct opts *o, const char **paths, size_t *n)
{
    bool opts_done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        if (opts_done || a[0] != '-' || strcmp(a, "-") == 0) {
            paths[(*n)++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            opts_done = true;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            import_usage(stdout);
            return 1;
        }
        if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o->quiet = true;
            continue;
        }
        const char *names[] = {"--socket", "--job", "--rank", "--http"};
        size_t k;
        for (k = 0; k < 4; k++) {
            size_t nl = strlen(names[k]);
            if (strncmp(a, names[k], nl) == 0 && (a[nl] == '\0' || a[nl] == '=')) {
                if (a[nl] == '=')
                    val = a + nl + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                break;
            }
        }
        if (k == 4) {
            usage_error("unknown option %s", a);
            return -1;
        }
        if (!val) {
            usage_error("%s needs a value", a);
            return -1;
        }
        if (k == 0) {
            o->socket = val;
        } else if (k == 3) {
            o->http = val;
        } else if (k == 1) {
            if (!job_ok(val)) {
                usage_error("--job must be 1 to 256 bytes without control characters: %s", val);
                return -1;
            }
            o->job = val;
        } else if (!parse_rank(val, &o->rank)) {
            usage_error("--rank must be an integer from 0 to 2147483647: %s", val);
            return -1;
        }
    }
    if (*n == 0) {
        usage_error("%s", "no file to import");
        return -1;
    }
    if (*n > 1 && o->rank >= 0) {
        usage_error("%s", "--rank applies to a single file; with several files ranks come from "
                          "distributedInfo or the order of the files");
        return -1;
    }
    if (*n > 1 && !o->job) {
        usage_error("%s", "several files go into one job: name it with --job NAME");
        return -1;
    }
    return 0;
}

/* The daemon's socket into o->socket (pointing into *target): given, or asked from the daemon
 * --http names (locate.h). Returns IMPORT_EXIT_OK, or the exit status after printing why not. */
static int find_socket(struct opts *o, struct hclient_target *target)
{
    struct hclient_options lo = {.http = o->http, .socket = o->socket};
    char lerr[HCLIENT_ERR_MAX];
    int lr = locate_daemon(target, environ, &lo, LOCATE_SOCKET, lerr);
    explicit_bzero(target->token, sizeof target->token);
    if (lr < 0) {
        fprintf(stderr, "stepscope import: %s\n", lerr);
        return lr == -EINVAL ? IMPORT_EXIT_USAGE : IMPORT_EXIT_DAEMON;
    }
    o->socket = target->socket;
    return IMPORT_EXIT_OK;
}

/* Pass 1: the inputs of paths[0, n) (*ret_ins, *ret_n; dirs[i] the folder of paths[i]), every
 * one validated completely before anything is sent. Returns IMPORT_EXIT_OK, or the exit status
 * after printing why not. */
static int pass1(const char **paths, size_t n, const struct opts *o, struct msdir **dirs,
                 struct input **ret_ins, size_t *ret_n)
{
    if (expand(paths, n, dirs, ret_ins, ret_n) < 0)
        return IMPORT_EXIT_INPUT;
    struct input *ins = *ret_ins;
    if (o->rank >= 0) {
        for (size_t i = 0; i < *ret_n; i++)
            if (ins[i].fixed_rank >= 0 && ins[i].fixed_rank != ins[0].fixed_rank) {
                usage_error("--rank applies to a folder of one rank; %s holds several", paths[0]);
                return IMPORT_EXIT_USAGE;
            }
    }
    bool bad = false;
    for (size_t i = 0; i < *ret_n; i++)
        if (import_validate(&ins[i]) < 0)
            bad = true;
    return bad ? IMPORT_EXIT_INPUT : IMPORT_EXIT_OK;
}

/* Pass 2: send, one session per input, until one fails (a rejected event does not stop it).
 * Returns the exit status. */
static int pass2(struct input *ins, size_t n_in, const char *job, const struct opts *o)
{
    /* sendfile(2) has no MSG_NOSIGNAL: a daemon that goes away must give EPIPE, not kill us. */
    signal(SIGPIPE, SIG_IGN);
    int ret = IMPORT_EXIT_OK;
    for (size_t i = 0; i < n_in; i++) {
        int r = import_send_file(&ins[i], job, o);
        if (r == IMPORT_EXIT_REJECTED)
            ret = r;
        else if (r != IMPORT_EXIT_OK) {
            ret = r;
            break;
        }
    }
    return ret;
}

static void free_inputs(struct input *ins, size_t n_in)
{
    for (size_t i = 0; i < n_in; i++) {
        free(ins[i].abs);
        free(ins[i].dir);
        free(ins[i].mem);
        spool_free(ins[i].spool);
        spool_free(ins[i].spool2);
        order_free(ins[i].order);
    }
    free(ins);
}

int import_command(int argc, char **argv)
{
    struct opts o = {.rank = -1};
    const char **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t n = 0;
    int ret = IMPORT_EXIT_USAGE;
    struct hclient_target target;
    char *job_owned = NULL;
    struct input *ins = NULL;
    size_t n_in = 0;
    struct msdir **dirs = NULL;
    if (!paths) {
        fputs("stepscope import: out of memory\n", stderr);
        return IMPORT_EXIT_USAGE;
    }
    int r = parse_options(argc, argv, &o, paths, &n);
    if (r != 0) {
        ret = r > 0 ? IMPORT_EXIT_OK : IMPORT_EXIT_USAGE;
        goto out;
    }
    if ((ret = find_socket(&o, &target)) != IMPORT_EXIT_OK)
        goto out;
    ret = IMPORT_EXIT_USAGE;
    dirs = calloc(n, sizeof *dirs);
    if (!dirs) {
        fputs("stepscope import: out of memory\n", stderr);
        goto out;
    }
    if ((ret = pass1(paths, n, &o, dirs, &ins, &n_in)) != IMPORT_EXIT_OK)
        goto out;
    ret = IMPORT_EXIT_USAGE;
    import_assign_ranks(ins, n_in, &o);
    const char *job = o.job;
    if (!job) {
        job = job_owned = job_from_path(ins[0].dir ? ins[0].dir : ins[0].arg);
        if (!job) {
            fputs("stepscope import: out of memory\n", stderr);
            goto out;
        }
    }
    ret = pass2(ins, n_in, job, &o);
out:
    free_inputs(ins, n_in);
    for (size_t i = 0; dirs && i < n; i++)
        msdir_free(dirs[i]);
    free(dirs);
    free(job_owned);
    free(paths);
    return ret;
}
