/* SPDX-License-Identifier: MIT */
/*
 * jobs: reads the CSV form of the job list (RFC 4180, docs/API.md "CSV on every table"), finds
 * its columns by their header names, and prints them aligned. Names are printed with control
 * bytes as '?', so a hostile job name cannot drive the terminal.
 */
#include "jobs.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_client.h"
#include "locate.h"

extern char **environ;

enum { JOBS_EXIT_OK = 0, JOBS_EXIT_DAEMON = 1, JOBS_EXIT_USAGE = 2 };

void jobs_usage(FILE *f)
{
    fputs("usage: stepscope jobs [--socket PATH | --http ADDR:PORT] [--auth-token-file FILE]\n"
          "                      [--csv]\n"
          "Lists the jobs stepscoped holds, most recently seen first.\n"
          "\n"
          LOCATE_HELP
          "  --auth-token-file FILE  its bearer token, when it has one (env\n"
          "                          STEPSCOPE_AUTH_TOKEN_FILE or STEPSCOPE_AUTH_TOKEN)\n"
          "  --csv                   print the daemon's CSV (every column) instead\n"
          "\n"
          "Exit status: 0 listed; 1 daemon unreachable or error answer; 2 bad usage.\n",
          f);
}

/* Splits the CSV record at *p (up to end) into fields, unquoting in place; each field is
 * NUL-terminated. Advances *p past the record's newline. Returns the number of fields stored
 * (at most max; later ones are skipped). */
static size_t csv_record(char **p, char *end, char **fields, size_t max)
{
    size_t n = 0;
    char *s = *p;
    for (;;) {
        char *out = s, *field = s;
        if (s < end && *s == '"') {
            s++;
            while (s < end) {
                if (*s == '"' && s + 1 < end && s[1] == '"') {
                    *out++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    *out++ = *s++;
                }
            }
        }
        while (s < end && *s != ',' && *s != '\n')
            *out++ = *s++;
        char sep = s < end ? *s : '\n';
        *out = '\0'; /* out <= s: the quotes and doubled quotes took at least as many bytes */
        if (n < max)
            fields[n++] = field;
        s += s < end ? 1 : 0;
        if (sep == '\n') {
            *p = s;
            return n;
        }
    }
}

struct column {
    const char *header; /* as the CSV names it */
    const char *title;  /* as printed */
    bool left;          /* left-aligned (text) */
    int index;          /* in the CSV record; -1 if the daemon did not send it */
    size_t width;
};

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width_of(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* "1700000000123456.789" (us since the epoch) as "2023-11-14 22:13:20"; "0" as "-". */
static void format_time(const char *us, char *buf, size_t size)
{
    char *end;
    long long v = strtoll(us, &end, 10);
    time_t t = (time_t)(v / 1000000);
    struct tm tm;
    if (end == us || v <= 0 || !gmtime_r(&t, &tm) ||
        strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0)
        snprintf(buf, size, "-");
}

static void print_cell(const char *s, const struct column *c, bool last)
{
    size_t pad = c->width - width_of(s);
    if (!c->left)
        printf("%*s", (int)pad, "");
    fputs(s, stdout);
    if (c->left && !last)
        printf("%*s", (int)pad, "");
    fputs(last ? "\n" : "  ", stdout);
}

static int print_table(char *csv, size_t len)
{
    struct column cols[] = {
        {"id", "ID", false, -1, 0},          {"name", "NAME", true, -1, 0},
        {"ranks", "RANKS", false, -1, 0},    {"steps", "STEPS", false, -1, 0},
        {"events", "EVENTS", false, -1, 0},  {"live", "LIVE", true, -1, 0},
        {"last_seen_us", "LAST SEEN (UTC)", true, -1, 0},
    };
    enum { N_COLS = sizeof cols / sizeof cols[0], TIME_COL = N_COLS - 1, TIME_MAX = 32 };
    char *p = csv, *end = csv + len;
    char *head[JOBS_MAX_COLUMNS];
    size_t n_head = csv_record(&p, end, head, JOBS_MAX_COLUMNS);
    for (size_t c = 0; c < N_COLS; c++) {
        for (size_t k = 0; k < n_head; k++)
            if (strcmp(head[k], cols[c].header) == 0)
                cols[c].index = (int)k;
        if (cols[c].index < 0) {
            fprintf(stderr, "stepscope jobs: the daemon's job list has no \"%s\" column\n",
                    cols[c].header);
            return JOBS_EXIT_DAEMON;
        }
        cols[c].width = width_of(cols[c].title);
    }
    /* Two passes over the records: widths, then printing. */
    size_t n_rows = 0, cap = 0;
    char *(*rows)[N_COLS] = NULL;
    char (*times)[TIME_MAX] = NULL;
    int code = JOBS_EXIT_OK;
    while (p < end) {
        char *f[JOBS_MAX_COLUMNS];
        size_t n = csv_record(&p, end, f, JOBS_MAX_COLUMNS);
        if (n == 1 && f[0][0] == '\0')
            continue; /* a blank line */
        if (n_rows == cap) {
            cap = cap ? cap * 2 : 64;
            void *a = realloc(rows, cap * sizeof *rows);
            void *b = a ? realloc(times, cap * sizeof *times) : NULL;
            if (a)
                rows = a;
            if (b)
                times = b;
            if (!a || !b) {
                fprintf(stderr, "stepscope jobs: out of memory\n");
                code = JOBS_EXIT_DAEMON;
                goto out;
            }
        }
        for (size_t c = 0; c < N_COLS; c++) {
            char *v = (size_t)cols[c].index < n ? f[cols[c].index] : "";
            if (c == TIME_COL) {
                format_time(v, times[n_rows], TIME_MAX);
                v = times[n_rows];
            }
            sanitize(v);
            rows[n_rows][c] = v;
            size_t w = width_of(v);
            cols[c].width = w > cols[c].width ? w : cols[c].width;
        }
        n_rows++;
    }
    for (size_t c = 0; c < N_COLS; c++)
        print_cell(cols[c].title, &cols[c], c + 1 == N_COLS);
    for (size_t i = 0; i < n_rows; i++)
        for (size_t c = 0; c < N_COLS; c++)
            print_cell(rows[i][c], &cols[c], c + 1 == N_COLS);
out:
    free(rows);
    free(times);
    return code;
}

int jobs_command(int argc, char **argv)
{
    static const struct option opts[] = {
        {"csv", no_argument, NULL, 'c'},
        HCLIENT_OPTIONS,
    };
    bool csv = false;
    int c, code;
    struct hclient_options o = {NULL, NULL, NULL};
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            csv = true;
            break;
        default:
            if ((code = hclient_option(c, "jobs", jobs_usage, argv, &o)) >= 0)
                return code;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "stepscope jobs: unexpected argument \"%s\"\n", argv[optind]);
        jobs_usage(stderr);
        return JOBS_EXIT_USAGE;
    }
    struct hclient_target t;
    char err[HCLIENT_ERR_MAX];
    int lr = locate_daemon(&t, environ, &o, LOCATE_HTTP, err);
    if (lr < 0) {
        fprintf(stderr, "stepscope jobs: %s\n", err);
        return lr == -EINVAL ? JOBS_EXIT_USAGE : JOBS_EXIT_DAEMON;
    }
    int status;
    char *body;
    size_t len;
    int r = hclient_get(&t, "/api/v1/jobs?format=csv", &status, &body, &len, err);
    explicit_bzero(t.token, sizeof t.token);
    if (r < 0) {
        fprintf(stderr, "stepscope jobs: %s\n", err);
        return JOBS_EXIT_DAEMON;
    }
    code = JOBS_EXIT_OK;
    if (status != 200) {
        hclient_print_error("jobs", status, body, len);
        code = JOBS_EXIT_DAEMON;
    } else if (csv) {
        fwrite(body, 1, len, stdout);
    } else {
        code = print_table(body, len);
    }
    free(body);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "stepscope jobs: writing the output: %s\n", strerror(errno));
        code = JOBS_EXIT_DAEMON;
    }
    return code;
}
