/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of daemon/sessions (the table of open sessions) and of the capture registry that
 * reads it (daemon/capture): open, find, close and the job's other sessions as main.c uses them;
 * a reader thread asking sessions_can_capture() while the loop opens and closes; and the
 * registry refusing a capture no open session can serve, then offering, arming, failing on
 * disconnect, expiring and handing the store what changed.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/capture/capture.h"
#include "../../daemon/sessions/sessions.h"

#define S 1000000000LL

START_TEST(test_open_find_close)
{
    struct sessions *t = sessions_new();
    ck_assert_ptr_nonnull(t);
    /* past the first growth (64) */
    for (int64_t i = 1; i <= 200; i++) {
        struct session s = {i, 10 + i % 3, i % 8, 100 + i, i % 2 == 0};
        ck_assert_int_eq(sessions_open(t, &s), 0);
    }
    ck_assert_uint_eq(sessions_count(t), 200);
    const struct session *s = sessions_find(t, 77);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq(s->job_id, 10 + 77 % 3);
    ck_assert_int_eq(s->rank, 77 % 8);
    ck_assert_int_eq(s->stream_id, 177);
    ck_assert(!s->can_capture);
    ck_assert_ptr_null(sessions_find(t, 201));

    struct session gone;
    ck_assert_int_eq(sessions_close(t, 77, &gone), 0);
    ck_assert_int_eq(gone.session_id, 77);
    ck_assert_int_eq(gone.stream_id, 177);
    ck_assert_int_eq(sessions_close(t, 77, NULL), -ENOENT);
    ck_assert_ptr_null(sessions_find(t, 77));
    ck_assert_uint_eq(sessions_count(t), 199);
    /* every other session is still found, whatever moved */
    size_t seen = 0;
    for (size_t i = 0; i < sessions_count(t); i++) {
        const struct session *k = sessions_at(t, i);
        ck_assert_ptr_eq(sessions_find(t, k->session_id), k);
        seen++;
    }
    ck_assert_uint_eq(seen, 199);

    /* job 10 + 1: sessions 1, 4, 7, ... until the last one closes */
    ck_assert(sessions_job_open(t, 11));
    for (int64_t i = 1; i <= 200; i += 3)
        if (i != 77)
            ck_assert_int_eq(sessions_close(t, i, NULL), 0);
    ck_assert(!sessions_job_open(t, 11));
    ck_assert(sessions_job_open(t, 12));
    sessions_free(t);
    sessions_free(NULL);
}
END_TEST

START_TEST(test_can_capture)
{
    struct sessions *t = sessions_new();
    bool any = false;
    ck_assert(!sessions_can_capture(t, 5, -1, &any));
    ck_assert(!any);
    struct session a = {1, 5, 0, 1, false}, b = {2, 5, 1, 2, true};
    ck_assert_int_eq(sessions_open(t, &a), 0);
    ck_assert(!sessions_can_capture(t, 5, -1, &any));
    ck_assert(any); /* a session, but none able to capture */
    ck_assert_int_eq(sessions_open(t, &b), 0);
    any = false;
    ck_assert(sessions_can_capture(t, 5, -1, &any));
    ck_assert(sessions_can_capture(t, 5, 1, &any));
    any = false;
    ck_assert(!sessions_can_capture(t, 5, 0, &any));
    ck_assert(any);
    any = false;
    ck_assert(!sessions_can_capture(t, 5, 2, &any));
    ck_assert(!any);
    ck_assert(!sessions_can_capture(t, 6, -1, &any));
    sessions_free(t);
}
END_TEST

struct reader {
    struct sessions *t;
    atomic_bool stop;
    long found;
};

static void *read_loop(void *arg)
{
    struct reader *r = arg;
    while (!atomic_load(&r->stop)) {
        bool any = false;
        if (sessions_can_capture(r->t, 1, -1, &any))
            r->found++;
    }
    return NULL;
}

/* The loop opens and closes (growing the array) while another thread reads: under ASan and
 * UBSan this is the check that readers never see the array move under them. */
START_TEST(test_reader_while_the_loop_changes_the_table)
{
    struct reader r = {.t = sessions_new()};
    ck_assert_ptr_nonnull(r.t);
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, read_loop, &r), 0);
    for (int round = 0; round < 20; round++) {
        for (int64_t i = 1; i <= 1000; i++) {
            struct session s = {i, 1, i, i, i == 1000};
            ck_assert_int_eq(sessions_open(r.t, &s), 0);
        }
        for (int64_t i = 1; i <= 1000; i++)
            ck_assert_int_eq(sessions_close(r.t, i, NULL), 0);
    }
    atomic_store(&r.stop, true);
    pthread_join(th, NULL);
    ck_assert_uint_eq(sessions_count(r.t), 0);
    sessions_free(r.t);
}
END_TEST

/* ---- the capture registry on the table ---- */

struct sent {
    int n;
    char last[512];
};

static int send_line(void *ud, const char *line, size_t len)
{
    struct sent *s = ud;
    s->n++;
    ck_assert_uint_lt(len, sizeof s->last);
    memcpy(s->last, line, len);
    s->last[len] = '\0';
    return 0;
}

static struct capture_spec spec_of(const char *body)
{
    struct capture_spec spec;
    char err[CAPTURE_ERR_MAX] = "";
    ck_assert_msg(capture_parse(body, strlen(body), &spec, err) == 0, "%s: %s", body, err);
    return spec;
}

/* The one part of capture id of job: its state, and its reason in *reason (static). */
static enum capture_state part_of(struct capture_reg *reg, int64_t job, int64_t id,
                                  const char **reason)
{
    static char text[CAPTURE_REASON_MAX + 1];
    struct capture_view *v;
    size_t n;
    ck_assert_int_eq(capture_reg_views(reg, job, id, &v, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(v[0].id, id);
    ck_assert_uint_eq(v[0].n_parts, 1);
    enum capture_state st = v[0].parts[0].state;
    ck_assert_int_eq(v[0].state, st); /* the capture's state is its one part's */
    memcpy(text, v[0].parts[0].reason, sizeof text);
    *reason = text;
    capture_views_free(v, n);
    return st;
}

static int count_changes(void *ud, const struct record_capture *c)
{
    (void)c;
    ++*(int *)ud;
    return 0;
}

static int count_ranks(void *ud, const struct record_capture_rank *r)
{
    (void)r;
    return 0;
}

struct forgot {
    int64_t ids[16];
    size_t n;
};

static int note_forget(void *ud, int64_t id)
{
    struct forgot *f = ud;
    ck_assert_uint_lt(f->n, 16);
    f->ids[f->n++] = id;
    return 0;
}

static int never_forget(void *ud, int64_t id)
{
    (void)ud;
    ck_abort_msg("capture %lld forgotten", (long long)id);
    return 0;
}

static int refuse_forget(void *ud, int64_t id)
{
    (void)ud;
    (void)id;
    return -ENOMEM;
}

static int no_change(void *ud, const struct record_capture *c)
{
    (void)ud;
    (void)c;
    return 0;
}

/* The ids of job's captures, in order, as a string "1,2,3". */
static const char *ids_of(struct capture_reg *reg, int64_t job)
{
    static char text[128];
    struct capture_view *v;
    size_t n;
    ck_assert_int_eq(capture_reg_views(reg, job, -1, &v, &n), 0);
    size_t len = 0;
    text[0] = '\0';
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%s%lld", i ? "," : "",
                                (long long)v[i].id);
    capture_views_free(v, n);
    return text;
}

static void end_capture(struct capture_reg *reg, int64_t job, int64_t id)
{
    static const char none[] = "";
    ck_assert_int_eq(capture_reg_report(reg, job, 0, id, CAPTURE_DONE, -1, none, 0, 1 * S), 0);
}

/* Issue 18, item 8: captures kept had no bound but CAPTURE_MAX for the whole daemon, past which
 * every new capture of every job was refused for good (the list is kept across restarts). Now a
 * job keeps max_kept and the registry max_all: past them the oldest ended capture (of the job,
 * then of any job) is forgotten, its id handed to the store; only when none has ended is a new
 * one refused. */
START_TEST(test_registry_forgets_the_oldest_ended_captures)
{
    struct sessions *t = sessions_new();
    struct capture_reg *reg = capture_reg_new(t, 5);
    struct session a = {1, 7, 0, 11, true}, b = {2, 8, 0, 12, true};
    ck_assert_int_eq(sessions_open(t, &a), 0);
    ck_assert_int_eq(sessions_open(t, &b), 0);
    struct capture_spec spec = spec_of("{\"ranks\":[0],\"steps\":1}");
    char err[CAPTURE_ERR_MAX] = "";
    /* job 7 keeps 3: three open ones, a fourth is refused (none has ended) */
    for (int64_t id = 1; id <= 3; id++)
        ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 3, 1 * S, NULL, err), id);
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 3, 1 * S, NULL, err), -EDQUOT);
    ck_assert_msg(strstr(err, "keeps 3 captures") && strstr(err, "capture_max_kept"), "%s", err);
    /* the second ends: it is forgotten for the next, the first (still open) is kept */
    end_capture(reg, 7, 2);
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 3, 1 * S, NULL, err), 4);
    ck_assert_str_eq(ids_of(reg, 7), "1,3,4");
    struct forgot f = {.n = 0};
    capture_reg_collect(reg, no_change, count_ranks, note_forget, &f);
    ck_assert_uint_eq(f.n, 1);
    ck_assert_int_eq(f.ids[0], 2);
    f.n = 0;
    capture_reg_collect(reg, no_change, count_ranks, note_forget, &f);
    ck_assert_uint_eq(f.n, 0); /* handed over once */

    /* the registry keeps 5: job 8's two fill it; with none ended, a sixth is refused */
    ck_assert_int_eq(capture_reg_add(reg, 8, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), 5);
    ck_assert_int_eq(capture_reg_add(reg, 8, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), 6);
    ck_assert_int_eq(capture_reg_add(reg, 8, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), -ENOSPC);
    ck_assert_msg(strstr(err, "keeps 5 captures"), "%s", err);
    /* job 7's oldest ended one goes for job 8's next: any job's, oldest first */
    end_capture(reg, 7, 3);
    end_capture(reg, 7, 1);
    ck_assert_int_eq(capture_reg_add(reg, 8, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), 7);
    ck_assert_str_eq(ids_of(reg, 7), "3,4");
    ck_assert_str_eq(ids_of(reg, 8), "5,6,7");
    /* a store that cannot take the id now gets it again on the next call */
    capture_reg_collect(reg, no_change, count_ranks, refuse_forget, &f);
    capture_reg_collect(reg, no_change, count_ranks, note_forget, &f);
    ck_assert_uint_eq(f.n, 1);
    ck_assert_int_eq(f.ids[0], 1);

    capture_reg_free(reg);
    ck_assert_int_eq(sessions_close(t, 1, NULL), 0);
    ck_assert_int_eq(sessions_close(t, 2, NULL), 0);
    sessions_free(t);
}
END_TEST

static int64_t first_step_of(struct capture_reg *reg, int64_t job, int64_t id)
{
    struct capture_view *v;
    size_t n;
    ck_assert_int_eq(capture_reg_views(reg, job, id, &v, &n), 0);
    int64_t f = v[0].parts[0].first_step;
    capture_views_free(v, n);
    return f;
}

/* Issue 17, item 7: a series of 3 windows from "next": the later windows wait, unsent and
 * unexpired, until window 0 reports the step it began at, then go out at that step + i * every;
 * a cancel cancels what has not started and tells the client; a series past the caps is refused
 * whole; window 0 ending without recording fails the held windows. */
START_TEST(test_registry_schedules_a_series)
{
    struct sessions *t = sessions_new();
    struct capture_reg *reg = capture_reg_new(t, 0);
    struct session a = {1, 7, 0, 11, true};
    ck_assert_int_eq(sessions_open(t, &a), 0);
    struct capture_spec spec = spec_of("{\"ranks\":[0],\"steps\":2,\"every\":5,\"repeat\":3}");
    ck_assert_int_eq(spec.every, 5);
    ck_assert_int_eq(spec.repeat, 3);
    char err[CAPTURE_ERR_MAX] = "";
    /* 3 windows are 3 captures: past capture_max_open 2, refused whole */
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 2, 0, 1 * S, NULL, err), -EDQUOT);
    ck_assert_ptr_nonnull(strstr(err, "one per window"));
    ck_assert_str_eq(ids_of(reg, 7), "");
    struct capture_view *made = NULL;
    int64_t id = capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 1 * S, &made, err);
    ck_assert_int_eq(id, 1);
    ck_assert_int_eq(made->series, 1);
    ck_assert_int_eq(made->window, 0);
    ck_assert_int_eq(made->repeat, 3);
    capture_views_free(made, 1);
    ck_assert_str_eq(ids_of(reg, 7), "1,2,3");
    /* only window 0 goes out; the held ones never expire */
    struct sent sent = {0};
    capture_reg_offer(reg, 7, 0, 1, true, send_line, &sent, 1 * S);
    ck_assert_int_eq(sent.n, 1);
    ck_assert_ptr_nonnull(strstr(sent.last, "\"id\":1,\"start_step\":null"));
    static const char none[] = "";
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, 1, CAPTURE_ARMED, -1, none, 0, 2 * S), 0);
    ck_assert_uint_eq(capture_reg_expire(reg, 100 * S, 30 * S), 0);
    ck_assert_int_eq(first_step_of(reg, 7, 2), -1);
    /* window 0 began at step 40: windows 1 and 2 at 45 and 50, sent with those steps */
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, 1, CAPTURE_RECORDING, 40, none, 0, 3 * S), 0);
    ck_assert_int_eq(first_step_of(reg, 7, 1), 40);
    ck_assert_int_eq(first_step_of(reg, 7, 2), 45);
    ck_assert_int_eq(first_step_of(reg, 7, 3), 50);
    capture_reg_offer(reg, 7, 0, 1, true, send_line, &sent, 3 * S);
    ck_assert_int_eq(sent.n, 3);
    ck_assert_ptr_nonnull(strstr(sent.last, "\"id\":3,\"start_step\":50,\"steps\":2"));
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, 2, CAPTURE_ARMED, -1, none, 0, 3 * S), 0);
    /* cancel through any window: the two not started, and the client is told once */
    ck_assert_int_eq(capture_reg_cancel(reg, 7, 3, 4 * S), 2);
    const char *why;
    ck_assert_int_eq(part_of(reg, 7, 1, &why), CAPTURE_RECORDING);
    ck_assert_int_eq(part_of(reg, 7, 2, &why), CAPTURE_CANCELLED);
    ck_assert_str_eq(why, "cancelled");
    ck_assert_int_eq(part_of(reg, 7, 3, &why), CAPTURE_CANCELLED);
    capture_reg_offer(reg, 7, 0, 1, true, send_line, &sent, 4 * S);
    ck_assert_int_eq(sent.n, 5);
    ck_assert_str_eq(sent.last, "{\"capture_cancel\":{\"id\":3}}\n");
    capture_reg_offer(reg, 7, 0, 1, true, send_line, &sent, 4 * S);
    ck_assert_int_eq(sent.n, 5);
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, 1, CAPTURE_DONE, -1, none, 0, 5 * S), 0);
    ck_assert_int_eq(capture_reg_cancel(reg, 7, 1, 5 * S), 0);
    ck_assert_int_eq(capture_reg_cancel(reg, 8, 1, 5 * S), -ENOENT);
    ck_assert_int_eq(part_of(reg, 7, 1, &why), CAPTURE_DONE);

    /* a second series whose window 0 expires unarmed: its held windows fail with the reason */
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 10 * S, NULL, err), 4);
    ck_assert_uint_eq(capture_reg_expire(reg, 41 * S, 30 * S), 1);
    ck_assert_int_eq(part_of(reg, 7, 4, &why), CAPTURE_EXPIRED);
    ck_assert_int_eq(part_of(reg, 7, 5, &why), CAPTURE_FAILED);
    ck_assert_str_eq(why, "window 0 of the series ended on this rank before it started");
    ck_assert_int_eq(part_of(reg, 7, 6, &why), CAPTURE_FAILED);
    /* a third whose client reports no step: likewise, saying so */
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 50 * S, NULL, err), 7);
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, 7, CAPTURE_RECORDING, -1, none, 0, 51 * S), 0);
    ck_assert_int_eq(part_of(reg, 7, 8, &why), CAPTURE_FAILED);
    ck_assert_ptr_nonnull(strstr(why, "did not report"));
    /* a fixed start needs no report: window i's start is start + i * every */
    struct capture_spec at = spec_of("{\"ranks\":[0],\"start\":100,\"steps\":1,\"repeat\":2}");
    ck_assert_int_eq(at.every, 1);
    ck_assert_int_eq(capture_reg_add(reg, 7, &at, NULL, 0, 0, 0, 60 * S, NULL, err), 10);
    ck_assert_int_eq(first_step_of(reg, 7, 11), 101);
    capture_reg_free(reg);
    sessions_free(t);
}
END_TEST

START_TEST(test_registry_follows_the_sessions_table)
{
    struct sessions *t = sessions_new();
    struct capture_reg *reg = capture_reg_new(t, 0);
    ck_assert_ptr_nonnull(reg);
    struct capture_spec spec = spec_of("{\"ranks\":[0],\"steps\":2}");
    char err[CAPTURE_ERR_MAX] = "";
    /* no session of the job: refused, and says why */
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), -EHOSTDOWN);
    ck_assert_ptr_nonnull(strstr(err, "no session of those ranks is connected"));
    /* a session that cannot capture: refused for that reason */
    struct session plain = {1, 7, 0, 11, false};
    ck_assert_int_eq(sessions_open(t, &plain), 0);
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 1 * S, NULL, err), -EHOSTDOWN);
    ck_assert_ptr_nonnull(strstr(err, "can capture"));
    ck_assert_int_eq(sessions_close(t, 1, NULL), 0);
    capture_reg_session_closed(reg, 1, 1 * S);

    struct session s = {2, 7, 0, 12, true};
    ck_assert_int_eq(sessions_open(t, &s), 0);
    struct capture_view *made = NULL;
    int64_t id = capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 2 * S, &made, err);
    ck_assert_int_eq(id, 1);
    ck_assert_ptr_nonnull(made);
    ck_assert_int_eq(made->id, 1);
    ck_assert_int_eq(made->job_id, 7);
    ck_assert_int_eq(made->steps, 2);
    ck_assert_int_eq(made->start_step, -1);
    ck_assert_uint_eq(made->n_parts, 1);
    ck_assert_int_eq(made->parts[0].state, CAPTURE_PENDING);
    capture_views_free(made, 1);

    /* offered once to the session, not twice */
    struct sent sent = {0};
    capture_reg_offer(reg, 7, 0, 2, true, send_line, &sent, 2 * S);
    capture_reg_offer(reg, 7, 0, 2, true, send_line, &sent, 2 * S);
    ck_assert_int_eq(sent.n, 1);
    ck_assert_ptr_nonnull(strstr(sent.last, "\"capture\""));
    /* armed, then the session goes: the part fails */
    static const char none[] = "";
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, id, CAPTURE_ARMED, -1, none, 0, 3 * S), 0);
    ck_assert_int_eq(sessions_close(t, 2, NULL), 0);
    capture_reg_session_closed(reg, 2, 4 * S);
    const char *why;
    ck_assert_int_eq(part_of(reg, 7, id, &why), CAPTURE_FAILED);
    ck_assert_str_eq(why, "client disconnected");
    ck_assert_int_eq(capture_reg_report(reg, 7, 0, id, CAPTURE_DONE, -1, none, 0, 5 * S), -EALREADY);
    /* and with no session left, a new capture is refused again */
    ck_assert_int_eq(capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 5 * S, NULL, err), -EHOSTDOWN);

    /* a pending part that nobody takes expires after the window */
    ck_assert_int_eq(sessions_open(t, &s), 0);
    int64_t id2 = capture_reg_add(reg, 7, &spec, NULL, 0, 0, 0, 6 * S, NULL, err);
    ck_assert_int_eq(id2, 2);
    ck_assert_uint_eq(capture_reg_expire(reg, 7 * S, 30 * S), 0);
    ck_assert_uint_eq(capture_reg_expire(reg, 37 * S, 30 * S), 1);
    ck_assert_int_eq(part_of(reg, 7, id2, &why), CAPTURE_EXPIRED);
    ck_assert_ptr_nonnull(strstr(why, "no session of rank 0 took it within 30 s"));
    struct capture_view *all;
    size_t n_all;
    ck_assert_int_eq(capture_reg_views(reg, 7, -1, &all, &n_all), 0);
    ck_assert_uint_eq(n_all, 2);
    ck_assert_int_eq(all[0].id, id);
    ck_assert_int_eq(all[1].id, id2);
    capture_views_free(all, n_all);
    ck_assert_int_eq(capture_reg_views(reg, 8, -1, &all, &n_all), 0);
    ck_assert_uint_eq(n_all, 0);
    ck_assert_int_eq(capture_reg_views(reg, 8, id, &all, &n_all), -ENOENT);

    /* what changed goes to the store once */
    int changes = 0;
    capture_reg_collect(reg, count_changes, count_ranks, never_forget, &changes);
    ck_assert_int_eq(changes, 2);
    changes = 0;
    capture_reg_collect(reg, count_changes, count_ranks, never_forget, &changes);
    ck_assert_int_eq(changes, 0);

    capture_reg_drop_job(reg, 7);
    ck_assert_int_eq(capture_reg_views(reg, 7, id, &all, &n_all), -ENOENT);
    capture_reg_free(reg);
    sessions_free(t);
}
END_TEST

/* A POST body's "ranks" and "what" are JSON arrays read by lib/json's reader: a name spelled
 * with an escape is that name (refused before), anything but plain integers and known names is
 * refused. */
START_TEST(test_capture_body_arrays)
{
    struct capture_spec sp = spec_of("{\"what\":[\"cp\\u0075\",\"sh\\u0061pes\",\"cpu\"],"
                                     "\"ranks\":[1, 0 ,1],\"steps\":2}");
    ck_assert_str_eq(sp.what, "cpu,shapes");
    ck_assert_uint_eq(sp.n_ranks, 2);
    ck_assert(sp.ranks[0] == 1 && sp.ranks[1] == 0);
    static const char *const bad[] = {
        "{\"ranks\":[1.5]}", "{\"ranks\":[\"1\"]}", "{\"ranks\":[[1]]}", "{\"ranks\":[-1]}",
        "{\"ranks\":[]}", "{\"what\":[[\"cpu\"]]}", "{\"what\":[\"cpus\"]}", "{\"what\":[1]}",
        "{\"what\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct capture_spec spec;
        char err[CAPTURE_ERR_MAX] = "";
        ck_assert_msg(capture_parse(bad[i], strlen(bad[i]), &spec, err) == -EINVAL, "%s", bad[i]);
        ck_assert_msg(err[0] != '\0', "%s", bad[i]);
    }
}
END_TEST

static Suite *sessions_suite(void)
{
    Suite *s = suite_create("sessions");
    TCase *tc = tcase_create("table");
    tcase_add_test(tc, test_open_find_close);
    tcase_add_test(tc, test_can_capture);
    tcase_add_test(tc, test_reader_while_the_loop_changes_the_table);
    suite_add_tcase(s, tc);
    tc = tcase_create("capture registry");
    tcase_add_test(tc, test_registry_follows_the_sessions_table);
    tcase_add_test(tc, test_registry_forgets_the_oldest_ended_captures);
    tcase_add_test(tc, test_registry_schedules_a_series);
    tcase_add_test(tc, test_capture_body_arrays);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(sessions_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
