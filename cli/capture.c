/* SPDX-License-Identifier: MIT */
/*
 * capture: builds the POST body from the flags, then reads the daemon's capture objects with a
 * small JSON walker that takes only what it prints (the top-level "id" and the "ranks" parts) and
 * skips everything else, so new fields in the answer change nothing. Reasons come from clients:
 * they are unescaped and printed with control bytes as '?'.
 */
#include "capture.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/sbuf.h"
#include "http_client.h"
#include "locate.h"

extern char **environ;

#define CAPTURE_JSON_DEPTH 32

void capture_usage(FILE *f)
{
    fputs("usage: stepscope capture JOB --steps N [--start next|STEP] [--ranks R,R...]\n"
          "                         [--every N --repeat R] [--what cpu,shapes,...]\n"
          "                         [--wait [--timeout SECONDS]]\n"
          "                         [--socket PATH | --http ADDR:PORT] [--auth-token-file FILE]\n"
          "Asks the running ranks of JOB to record N detailed steps with their profiler and\n"
          "prints the capture's id (with --repeat, each window's, one a line).\n"
          "\n"
          "  --steps N               how many steps, 1..1000\n"
          "  --start next|STEP       the next step each rank begins (default), or a step number\n"
          "  --ranks R,R...          these ranks only (default every rank of the job)\n"
          "  --every N               repeated: N steps from one window's start to the next's,\n"
          "                          at least --steps (default --steps)\n"
          "  --repeat R              repeated: R windows, 1..100 (default 1), each a capture of\n"
          "                          its own, counted against the daemon's capture caps\n"
          "  --what LIST             what to record: cpu, cuda, device, shapes, stack, memory,\n"
          "                          flops, modules (default cpu)\n"
          "  --wait                  follow the capture (each window in turn) until every rank\n"
          "                          is done, failed, expired or cancelled, then print each\n"
          "                          rank's state\n"
          "  --timeout SECONDS       with --wait, stop waiting after this long (default 300;\n"
          "                          0: until the capture ends)\n"
          LOCATE_HELP
          "  --auth-token-file FILE  its bearer token, when it has one (env\n"
          "                          STEPSCOPE_AUTH_TOKEN_FILE or STEPSCOPE_AUTH_TOKEN)\n"
          "\n"
          "Exit status: 0 created (with --wait: every rank done); 1 daemon unreachable or error\n"
          "answer (a job with no running session cannot capture); 2 bad usage; 3 a rank failed,\n"
          "expired or was cancelled; 4 the wait's time passed (the capture goes on in the\n"
          "daemon).\n",
          f);
}

/* ---- a minimal JSON walker over the daemon's answers ---- */

struct jcur {
    const char *p, *end;
};

static void ws(struct jcur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool eat(struct jcur *c, char ch)
{
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A string's raw bytes (escapes kept) in [*s, *s + *n). */
static bool raw_string(struct jcur *c, const char **s, size_t *n)
{
    if (!eat(c, '"'))
        return false;
    const char *b = c->p;
    while (c->p < c->end && *c->p != '"')
        c->p += *c->p == '\\' && c->p + 1 < c->end ? 2 : 1;
    if (c->p >= c->end)
        return false;
    *s = b;
    *n = (size_t)(c->p - b);
    c->p++;
    return true;
}

/* A number or literal: the bytes up to a delimiter. */
static bool token(struct jcur *c, const char **s, size_t *n)
{
    ws(c);
    const char *b = c->p;
    while (c->p < c->end && !strchr(",:]}\" \t\r\n{[", *c->p))
        c->p++;
    *s = b;
    *n = (size_t)(c->p - b);
    return *n > 0;
}

static bool skip_value(struct jcur *c, int depth)
{
    const char *s;
    size_t n;
    ws(c);
    if (c->p >= c->end || depth > CAPTURE_JSON_DEPTH)
        return false;
    if (*c->p == '"')
        return raw_string(c, &s, &n);
    if (*c->p != '{' && *c->p != '[')
        return token(c, &s, &n);
    char close = *c->p == '{' ? '}' : ']';
    bool obj = close == '}';
    c->p++;
    if (eat(c, close))
        return true;
    do {
        if (obj && (!raw_string(c, &s, &n) || !eat(c, ':')))
            return false;
        if (!skip_value(c, depth + 1))
            return false;
    } while (eat(c, ','));
    return eat(c, close);
}

static bool key_is(const char *s, size_t n, const char *key)
{
    return strlen(key) == n && memcmp(s, key, n) == 0;
}

static bool int_token(const char *s, size_t n, long long *ret)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e;
    errno = 0;
    *ret = strtoll(buf, &e, 10);
    return *e == '\0' && errno == 0;
}

struct part {
    long long rank;
    char state[16];
    char reason[CAPTURE_REASON_MAX];
};

struct capture {
    long long id;
    struct part *parts;
    size_t n_parts;
};

static bool read_part(struct jcur *c, struct part *p)
{
    const char *k, *v;
    size_t kn, vn;
    bool have_rank = false;
    memset(p, 0, sizeof *p);
    if (!eat(c, '{'))
        return false;
    if (eat(c, '}'))
        return false;
    do {
        if (!raw_string(c, &k, &kn) || !eat(c, ':'))
            return false;
        ws(c);
        if (key_is(k, kn, "rank")) {
            if (!token(c, &v, &vn) || !int_token(v, vn, &p->rank))
                return false;
            have_rank = true;
        } else if ((key_is(k, kn, "state") || key_is(k, kn, "reason")) && c->p < c->end &&
                   *c->p == '"') {
            if (!raw_string(c, &v, &vn))
                return false;
            if (key_is(k, kn, "state"))
                hclient_json_unescape(v, vn, p->state, sizeof p->state);
            else
                hclient_json_unescape(v, vn, p->reason, sizeof p->reason);
        } else if (!skip_value(c, 1)) {
            return false;
        }
    } while (eat(c, ','));
    return eat(c, '}') && have_rank && p->state[0];
}

/* Reads a capture object; false if body is not one (cap's parts are then freed). */
static bool read_capture(const char *body, size_t len, struct capture *cap)
{
    struct jcur c = {body, body + len};
    const char *k, *v;
    size_t kn, vn;
    bool have_id = false;
    memset(cap, 0, sizeof *cap);
    if (!eat(&c, '{') || eat(&c, '}'))
        return false;
    do {
        if (!raw_string(&c, &k, &kn) || !eat(&c, ':'))
            goto bad;
        if (key_is(k, kn, "id")) {
            if (!token(&c, &v, &vn) || !int_token(v, vn, &cap->id))
                goto bad;
            have_id = true;
        } else if (key_is(k, kn, "ranks") && cap->parts == NULL) {
            if (!eat(&c, '['))
                goto bad;
            size_t size = 0;
            if (!eat(&c, ']')) {
                do {
                    if (cap->n_parts == size) {
                        size = size ? size * 2 : 8;
                        void *p = realloc(cap->parts, size * sizeof *cap->parts);
                        if (!p)
                            goto bad;
                        cap->parts = p;
                    }
                    if (!read_part(&c, &cap->parts[cap->n_parts++]))
                        goto bad;
                } while (eat(&c, ','));
                if (!eat(&c, ']'))
                    goto bad;
            }
        } else if (!skip_value(&c, 1)) {
            goto bad;
        }
    } while (eat(&c, ','));
    if (eat(&c, '}') && have_id)
        return true;
bad:
    free(cap->parts);
    cap->parts = NULL;
    cap->n_parts = 0;
    return false;
}

/* ---- the command ---- */

static bool parse_uint(const char *s, long long max, long long *ret)
{
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 12)
        return false;
    *ret = strtoll(s, NULL, 10);
    return *ret <= max;
}

/* Appends the comma-separated list s to body as a JSON array: of integers (ints) or of names
 * made of lower-case letters. */
static bool add_list(struct sbuf *body, const char *s, bool ints)
{
    sbuf_addc(body, '[');
    const char *p = s;
    for (bool first = true;; first = false) {
        size_t n = strcspn(p, ",");
        char item[32];
        if (n == 0 || n >= sizeof item)
            return false;
        memcpy(item, p, n);
        item[n] = '\0';
        long long v;
        if (ints && !parse_uint(item, INT32_MAX, &v))
            return false;
        if (!ints && strspn(item, "abcdefghijklmnopqrstuvwxyz") != n)
            return false;
        sbuf_adds(body, first ? "" : ",");
        if (ints)
            sbuf_printf(body, "%lld", v);
        else
            sbuf_printf(body, "\"%s\"", item);
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    sbuf_addc(body, ']');
    return true;
}

static bool finished(const struct part *p)
{
    return strcmp(p->state, "done") == 0 || strcmp(p->state, "failed") == 0 ||
           strcmp(p->state, "expired") == 0 || strcmp(p->state, "cancelled") == 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints the parts whose state differs from the previous answer's (prev may be NULL) on stderr. */
static void print_changes(const struct capture *now, const struct capture *prev)
{
    for (size_t i = 0; i < now->n_parts; i++) {
        const struct part *p = &now->parts[i], *q = NULL;
        for (size_t j = 0; prev && j < prev->n_parts; j++)
            if (prev->parts[j].rank == p->rank)
                q = &prev->parts[j];
        if (!q || strcmp(q->state, p->state) != 0)
            fprintf(stderr, "rank %lld: %s%s%s\n", p->rank, p->state, p->reason[0] ? ": " : "",
                    p->reason);
    }
}

/* Polls one capture until every part has finished or, when timeout_s > 0, until the shared
 * deadline has passed (at least one look either way); the message names the user's timeout_s. */
static int wait_for(const struct hclient_target *t, const char *path, double deadline,
                    long long timeout_s, struct capture *cap)
{
    struct capture prev = {0};
    int code = CAPTURE_EXIT_DAEMON;
    for (;;) {
        int status;
        char *body, err[HCLIENT_ERR_MAX];
        size_t len;
        if (hclient_get(t, path, &status, &body, &len, err) < 0) {
            fprintf(stderr, "stepscope capture: %s\n", err);
            break;
        }
        if (status != 200) {
            hclient_print_error("capture", status, body, len);
            free(body);
            break;
        }
        struct capture now;
        bool ok = read_capture(body, len, &now);
        free(body);
        if (!ok) {
            fprintf(stderr, "stepscope capture: the daemon's answer is not a capture\n");
            break;
        }
        print_changes(&now, prev.parts ? &prev : NULL);
        free(prev.parts);
        prev = now;
        bool all = now.n_parts > 0;
        for (size_t i = 0; i < now.n_parts; i++)
            all = all && finished(&now.parts[i]);
        if (all) {
            code = CAPTURE_EXIT_OK;
            break;
        }
        if (timeout_s > 0 && now_s() >= deadline) {
            fprintf(stderr,
                    "stepscope capture: capture %lld has not ended after %lld s; it goes on in "
                    "the daemon (wait longer with --timeout SECONDS, 0 for no limit)\n",
                    now.id, timeout_s);
            code = CAPTURE_EXIT_TIMEOUT;
            break;
        }
        struct timespec ts = {0, CAPTURE_POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    *cap = prev;
    return code;
}

static int finish(struct capture *cap, int code)
{
    if (cap->n_parts > 0)
        printf("RANK  STATE      REASON\n");
    for (size_t i = 0; i < cap->n_parts; i++) {
        const struct part *p = &cap->parts[i];
        printf("%4lld  %-9s  %s\n", p->rank, p->state, p->reason[0] ? p->reason : "-");
        if (code == CAPTURE_EXIT_OK && strcmp(p->state, "done") != 0)
            code = CAPTURE_EXIT_FAILED;
    }
    free(cap->parts);
    return code;
}

int capture_command(int argc, char **argv)
{
    static const struct option opts[] = {
        {"steps", required_argument, NULL, 'n'},
        {"start", required_argument, NULL, 's'},
        {"ranks", required_argument, NULL, 'r'},
        {"what", required_argument, NULL, 'w'},
        {"wait", no_argument, NULL, 'W'},
        {"timeout", required_argument, NULL, 't'},
        {"every", required_argument, NULL, 'e'},
        {"repeat", required_argument, NULL, 'R'},
        HCLIENT_OPTIONS,
    };
    const char *start = "next", *ranks = NULL, *what = NULL;
    long long steps = -1, timeout = CAPTURE_WAIT_DEFAULT_S, every = -1, repeat = 1;
    bool wait = false;
    int c, code;
    struct hclient_options o = {NULL, NULL, NULL};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!parse_uint(optarg, 1000, &steps) || steps < 1) {
                fprintf(stderr, "stepscope capture: --steps: \"%s\" is not in 1..1000\n", optarg);
                return CAPTURE_EXIT_USAGE;
            }
            break;
        case 's':
            start = optarg;
            break;
        case 'e': /* the daemon checks the rest (every >= steps), with the reason */
            if (!parse_uint(optarg, 1000000, &every) || every < 1) {
                fprintf(stderr, "stepscope capture: --every: \"%s\" is not in 1..1000000\n",
                        optarg);
                return CAPTURE_EXIT_USAGE;
            }
            break;
        case 'R':
            if (!parse_uint(optarg, 100, &repeat) || repeat < 1) {
                fprintf(stderr, "stepscope capture: --repeat: \"%s\" is not in 1..100\n", optarg);
                return CAPTURE_EXIT_USAGE;
            }
            break;
        case 'r':
            ranks = optarg;
            break;
        case 'w':
            what = optarg;
            break;
        case 'W':
            wait = true;
            break;
        case 't':
            if (!parse_uint(optarg, 1000000, &timeout)) {
                fprintf(stderr, "stepscope capture: --timeout: \"%s\" is not seconds\n", optarg);
                return CAPTURE_EXIT_USAGE;
            }
            break;
        default:
            if ((code = hclient_option(c, "capture", capture_usage, argv, &o)) >= 0)
                return code;
        }
    }
    if (optind + 1 != argc || steps < 0) {
        fprintf(stderr, "stepscope capture: %s\n",
                optind >= argc ? "give the job's name"
                : steps < 0    ? "give --steps N"
                               : "one job at a time");
        capture_usage(stderr);
        return CAPTURE_EXIT_USAGE;
    }
    const char *job = argv[optind];
    struct sbuf body;
    sbuf_init(&body, 16384);
    sbuf_printf(&body, "{\"steps\":%lld,\"start\":", steps);
    long long start_step;
    if (strcmp(start, "next") == 0) {
        sbuf_adds(&body, "\"next\"");
    } else if (parse_uint(start, INT64_MAX / 2, &start_step)) {
        sbuf_printf(&body, "%lld", start_step);
    } else {
        fprintf(stderr, "stepscope capture: --start: \"%s\" is not \"next\" or a step\n", start);
        sbuf_done(&body);
        return CAPTURE_EXIT_USAGE;
    }
    if (every > 0)
        sbuf_printf(&body, ",\"every\":%lld", every);
    if (repeat > 1)
        sbuf_printf(&body, ",\"repeat\":%lld", repeat);
    if (ranks) {
        sbuf_adds(&body, ",\"ranks\":");
        if (!add_list(&body, ranks, true)) {
            fprintf(stderr, "stepscope capture: --ranks: \"%s\" is not R,R,...\n", ranks);
            sbuf_done(&body);
            return CAPTURE_EXIT_USAGE;
        }
    }
    if (what) {
        sbuf_adds(&body, ",\"what\":");
        if (!add_list(&body, what, false)) {
            fprintf(stderr, "stepscope capture: --what: \"%s\" is not a list of names\n", what);
            sbuf_done(&body);
            return CAPTURE_EXIT_USAGE;
        }
    }
    sbuf_addc(&body, '}');
    char path[HCLIENT_ADDR_MAX] = "/api/v1/jobs/";
    struct hclient_target t;
    char err[HCLIENT_ERR_MAX];
    code = CAPTURE_EXIT_USAGE;
    if (body.error || hclient_add_segment(path, sizeof path - 64, job) < 0) {
        fprintf(stderr, "stepscope capture: the job's name or a list is too long\n");
        goto out;
    }
    strcat(path, "/captures");
    int lr = locate_daemon(&t, environ, &o, LOCATE_HTTP, err);
    if (lr < 0) {
        fprintf(stderr, "stepscope capture: %s\n", err);
        code = lr == -EINVAL ? CAPTURE_EXIT_USAGE : CAPTURE_EXIT_DAEMON;
        goto out;
    }
    int status;
    char *ans;
    size_t len;
    code = CAPTURE_EXIT_DAEMON;
    if (hclient_request(&t, "POST", path, body.data, body.len, &status, &ans, &len, err) < 0) {
        fprintf(stderr, "stepscope capture: %s\n", err);
        goto out_token;
    }
    struct capture cap;
    if (status != 201) {
        hclient_print_error("capture", status, ans, len);
    } else if (!read_capture(ans, len, &cap)) {
        fprintf(stderr, "stepscope capture: the daemon's answer is not a capture\n");
    } else {
        /* A series' windows have consecutive ids, the first the series'. */
        long long first = cap.id;
        for (long long w = 0; w < repeat; w++)
            printf("%lld\n", first + w);
        fflush(stdout);
        free(cap.parts);
        code = CAPTURE_EXIT_OK;
        double deadline = now_s() + (double)timeout;
        size_t base = strlen(path);
        for (long long w = 0; wait && w < repeat; w++) {
            snprintf(path + base, 32, "/%lld", first + w);
            if (repeat > 1)
                fprintf(stderr, "window %lld of %lld: capture %lld\n", w + 1, repeat, first + w);
            int wc = wait_for(&t, path, deadline, timeout, &cap);
            if (repeat > 1)
                printf("window %lld of %lld: capture %lld\n", w + 1, repeat, first + w);
            wc = finish(&cap, wc);
            if (code == CAPTURE_EXIT_OK || wc == CAPTURE_EXIT_TIMEOUT || wc == CAPTURE_EXIT_DAEMON)
                code = wc;
            if (wc == CAPTURE_EXIT_TIMEOUT || wc == CAPTURE_EXIT_DAEMON)
                break;
        }
    }
    free(ans);
out_token:
    explicit_bzero(t.token, sizeof t.token);
out:
    sbuf_done(&body);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "stepscope capture: writing the output: %s\n", strerror(errno));
        code = CAPTURE_EXIT_DAEMON;
    }
    return code;
}
