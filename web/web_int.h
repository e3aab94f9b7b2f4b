/* SPDX-License-Identifier: MIT */
/*
 * web_int: what the files of web/ share, and what its tests reach into. Three layers, so each can
 * be tested alone:
 *
 *   parse.c   pure request parsing: percent-decoding, routing of the path, the static-file path
 *             check, strict integer and microsecond parameters, MIME types. No MHD, no store,
 *             no allocation, so tests/fuzz/fuzz_query.c feeds it arbitrary bytes directly.
 *   render.c  JSON documents built in an sbuf from store structs and the counters. No MHD.
 *   http.c    the libmicrohttpd daemon, dispatch, common headers and error answers;
 *   routes.c  the /api/v1/ handlers (reading through store_query.h);
 *   static.c  dashboard files from static_dir.
 *
 * This header does not include <microhttpd.h>: MHD types appear only as forward declarations, so
 * the tests and the fuzzer compile against it without MHD. Never included from outside web/ and
 * tests/.
 */
#ifndef STEPSCOPE_WEB_INT_H
#define STEPSCOPE_WEB_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../daemon/core/record.h"
#include "../daemon/core/sbuf.h"
#include "../daemon/core/stats.h"
#include "../daemon/live/live_query.h"
#include "../daemon/store/store_query.h"
#include "web.h"

#define WEB_PATH_MAX 2048                  /* longest request path served, bytes before decoding */
#define WEB_TIMELINE_LIMIT_DEFAULT 200000  /* timeline events per answer unless ?limit= says */
#define WEB_TIMELINE_LIMIT_MAX 10000000    /* largest ?limit= accepted */
#define WEB_ERROR_BODY_MAX 4096            /* an error document always fits in this */

/* ---- parse.c: pure, no MHD ---- */

enum web_route_id {
    WEB_ROUTE_STATIC,      /* not under /api: a dashboard file (see web__static_path()) */
    WEB_ROUTE_HEALTH,      /* /api/v1/health */
    WEB_ROUTE_STATS,       /* /api/v1/stats */
    WEB_ROUTE_JOBS,        /* /api/v1/jobs */
    WEB_ROUTE_JOB,         /* /api/v1/jobs/{job}; job holds {job} decoded */
    WEB_ROUTE_TIMELINE,    /* /api/v1/jobs/{job}/timeline; likewise */
    WEB_ROUTE_STEPS,       /* /api/v1/jobs/{job}/steps */
    WEB_ROUTE_STEP_TRACE,  /* /api/v1/jobs/{job}/step-trace */
    WEB_ROUTE_OPERATORS,   /* /api/v1/jobs/{job}/operators */
    WEB_ROUTE_API_UNKNOWN, /* under /api but no such route: 404 */
};

struct web_route {
    enum web_route_id id;
    char job[RECORD_NAME_MAX + 1]; /* JOB, TIMELINE: the decoded segment, 1..RECORD_NAME_MAX bytes */
    size_t job_len;
};

/* Percent-decodes src[0, n) into dst, which has room for n + 1 bytes, and NUL-terminates it.
 * '+' is kept as it is (MHD turns '+' into ' ' in query values before we see them; in paths it is
 * literal). Returns 0 and sets *ret_len; -EINVAL for a '%' not followed by two hex digits or for
 * a NUL byte, literal or decoded. dst's contents are unspecified on failure. */
int web__pct_decode(const char *src, size_t n, char *dst, size_t *ret_len);

/* Routes the undecoded request path (without its query string). The {job} segment is split off
 * before decoding, so a job name may contain "%2F". Returns 0 and fills *ret; -EINVAL if the {job}
 * segment has a bad escape or a NUL; -ENAMETOOLONG if it decodes to more than RECORD_NAME_MAX
 * bytes. Routes that take no {job} never fail. */
int web__route_parse(const char *path, struct web_route *ret);

/* Maps the undecoded request path of a dashboard file to a path relative to static_dir, written
 * to dst (dst_size bytes, NUL-terminated, no leading '/'). "/" maps to "index.html". Rejects,
 * after decoding: a path not starting with '/', any NUL, backslash or control character, "//",
 * "..", a segment starting with '.' (dot files, "." and ".."), and a trailing '/' (directories).
 * The caller still checks with realpath() that the file lies inside static_dir (symlinks).
 * Returns 0; -EINVAL for a bad escape; -EPERM for a rejected path; -ENAMETOOLONG if it does not
 * fit dst. dst's contents are unspecified on failure. */
int web__static_path(const char *path, char *dst, size_t dst_size);

/* Parses s[0, n) as a decimal integer: an optional '-', then digits, nothing else (no blanks, no
 * '+', no exponent, not empty). Returns 0 and sets *ret; -EINVAL for anything else; -ERANGE if it
 * does not fit int64 or lies outside [min, max]. */
int web__parse_i64(const char *s, size_t n, int64_t min, int64_t max, int64_t *ret);

/* Parses s[0, n) as microseconds, web__parse_i64() syntax plus an optional fraction of 1 to 3
 * digits ("1700000000123456.789", "-0.5"), and sets *ret_ns in nanoseconds. Returns 0, -EINVAL,
 * or -ERANGE (int64 ns overflow, or outside [min_ns, max_ns]). */
int web__parse_us(const char *s, size_t n, int64_t min_ns, int64_t max_ns, int64_t *ret_ns);

/* The Content-Type of a file by its extension (case-sensitive); "application/octet-stream" for
 * any other. Never NULL; static storage. */
const char *web__mime_type(const char *name);

/* ---- render.c: JSON documents, no MHD ---- */

/* Each appends one complete JSON document (or, for _job_fields, members) to b; b's cap and error
 * state (sbuf.h) say whether it fitted. Strings go through sbuf_json_str(), times through
 * sbuf_json_us() (ns in, us out). */
void web__render_error(struct sbuf *b, const char *code, const char *message);
void web__render_health(struct sbuf *b, const char *version);
/* The members of one job object, without braces. */
void web__render_job_fields(struct sbuf *b, const struct store_job *j);
void web__render_jobs(struct sbuf *b, const struct store_job *jobs, size_t n);
void web__render_job(struct sbuf *b, const struct store_job *j, const struct store_rank *ranks,
                     size_t n_ranks);
/* info NULL renders "store":null (no store attached). */
void web__render_stats(struct sbuf *b, struct stats *s, const struct store_info *info);

/* A Chrome-trace document: _begin, then _event per stored line (verbatim; the first one given
 * first), then _end with what the caller knows about it. */
void web__render_timeline_begin(struct sbuf *b);
void web__render_timeline_event(struct sbuf *b, const char *line, size_t len, bool first);
void web__render_timeline_end(struct sbuf *b, const struct store_job *j, int64_t n_events,
                              int64_t limit);

/* ---- http.c, routes.c, static.c: MHD ---- */

struct MHD_Connection;
struct MHD_Daemon;
struct MHD_Response;

struct web {
    struct MHD_Daemon *mhd;
    uint16_t port;                 /* bound port */
    struct store *store;           /* borrowed; NULL: API answers 503 */
    struct live *live;             /* borrowed; NULL: live routes answer 503 */
    struct stats *stats;           /* borrowed */
    size_t max_response_bytes;
    char version[64];
    char static_root[PATH_MAX];    /* realpath() of static_dir; "" serves no files */
    size_t static_root_len;
};

/* Queues a JSON answer built in b (its bytes are taken; b is left empty). A failed b becomes
 * 413 response_too_large (-EMSGSIZE) or 500 internal. Counts errors. Returns the MHD result as
 * an int (1 MHD_YES, 0 MHD_NO). */
int web__send_json(struct web *w, struct MHD_Connection *c, unsigned status, struct sbuf *b,
                   const char *disposition);

/* Queues {"error":{"code","message"}} with status. message may be NULL (the code is repeated). */
int web__send_error(struct web *w, struct MHD_Connection *c, unsigned status, const char *code,
                    const char *message);

/* Queues the error matching a negative errno from store_query_*: -ENOENT 404 not_found,
 * -EBUSY/-EAGAIN 503 busy, -ENOMEM and others 500 internal (logged, rate-limited). what names
 * the query for the log line. */
int web__send_store_error(struct web *w, struct MHD_Connection *c, int r, const char *what);

/* Queues an answer on a freshly created response (destroyed here), adding the headers every
 * answer carries, counting status >= 400 in http_errors. */
int web__queue(struct web *w, struct MHD_Connection *c, unsigned status, struct MHD_Response *resp);

/* Reads query parameter name as web__parse_i64() / web__parse_us(): absent gives def; present but
 * empty, with a bad escape, junk or out of range queues 400 bad_request naming the parameter and
 * returns its MHD result through *ret_mhd. Returns 0 (value in *ret) or -1 (answered). */
int web__param_i64(struct web *w, struct MHD_Connection *c, const char *name, int64_t min,
                   int64_t max, int64_t def, int64_t *ret, int *ret_mhd);
int web__param_us(struct web *w, struct MHD_Connection *c, const char *name, int64_t min_ns,
                  int64_t max_ns, int64_t def_ns, int64_t *ret_ns, int *ret_mhd);

/* Looks up query parameter name into buf (size bytes, NUL-terminated, percent-decoded).
 * Returns 0 if absent, 1 if present (length in *ret_len), -1 if answered 400 (empty, too long,
 * bad escape) with the MHD result in *ret_mhd. */
int web__param_str(struct web *w, struct MHD_Connection *c, const char *name, char *buf,
                   size_t size, size_t *ret_len, int *ret_mhd);

/* Queues a text/csv answer built in b (its bytes are taken), as web__send_json() does. */
int web__send_csv(struct web *w, struct MHD_Connection *c, struct sbuf *b);

/* routes_live.c: steps, step-trace and operators from live snapshots. */
int web__route_live(struct web *w, struct MHD_Connection *c, const struct web_route *r,
                    const struct store_job *job);

/* render.c, live documents. csv selects CSV (a header line, then one line per row). */
void web__render_live_steps(struct sbuf *b, const struct live_step_row *rows, size_t n,
                            size_t total, bool csv);
void web__render_live_steptrace(struct sbuf *b, const struct analyse_st_trace *t,
                                const struct live_step_row *points);
void web__render_live_ops(struct sbuf *b, const struct analyse_op_table *page, const char *group,
                          bool csv);

/* routes.c: answers an /api route already parsed. */
int web__route_api(struct web *w, struct MHD_Connection *c, const struct web_route *r);

/* static.c: answers a dashboard file request for the undecoded path. */
int web__route_static(struct web *w, struct MHD_Connection *c, const char *path);

#endif
