/* SPDX-License-Identifier: MIT */
/* Unit tests of libstepscope against an in-test fake daemon.
 *
 * The fake is a thread speaking the protocol on a temp Unix socket: it answers each hello with a
 * welcome, numbers the lines of each connection from the hello's seq, stores each line of a
 * stream once (a line already held must come back byte for byte identical: replay checks), acks
 * every ack_every lines, and can drop a connection every drop_every lines, forgetting what it
 * had not acknowledged, as a daemon killed with -9 would. Tests then read what it stored. The
 * client under test is the public API only (stepscope.h).
 */
#include "stepscope.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FK_STREAMS 8
#define FK_CONNS 8
#define FK_BUF (2 * 1024 * 1024)

struct fk_stream {
    char key[512];
    char **lines;      /* lines[seq], without '\n' */
    size_t n, alloc;
    size_t acked;      /* acknowledged so far: survives a drop */
    uint64_t dups, mismatches, gaps;
};

struct fk_conn {
    int fd;            /* -1: free slot */
    struct fk_stream *st;
    uint64_t seq;      /* of the next line */
    uint64_t lines, since_ack;
    char *buf;
    size_t len;
};

struct fake {
    char path[108];
    int lfd;
    pthread_t th;
    _Atomic int stop;
    pthread_mutex_t mu;
    struct fk_stream streams[FK_STREAMS];
    int n_streams;
    struct fk_conn conns[FK_CONNS];
    _Atomic int ack_every;   /* 0: never ack; N: ack once N lines wait (and after each read) */
    _Atomic int drop_every;  /* close a connection after this many lines on it; 0: never */
    const char *after_welcome; /* a line to send after each welcome, or NULL */
    uint64_t hellos, drops;
    char last_hello[8192];
};

static char sock_dir[64];

static void make_dir(void)
{
    snprintf(sock_dir, sizeof sock_dir, "/tmp/sscXXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(sock_dir));
}

static void send_all(int fd, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
        if (k <= 0)
            return;
        s += k;
        n -= (size_t)k;
    }
}

static void fk_close(struct fake *f, struct fk_conn *cn, bool crash)
{
    close(cn->fd);
    cn->fd = -1;
    if (crash && cn->st) { /* forget what was not acknowledged, like kill -9 */
        for (size_t i = cn->st->acked; i < cn->st->n; i++)
            free(cn->st->lines[i]);
        cn->st->n = cn->st->acked;
        f->drops++;
    }
    cn->st = NULL;
    cn->len = 0;
}

static void fk_ack(struct fk_conn *cn)
{
    char b[64];
    cn->st->acked = cn->st->n;
    snprintf(b, sizeof b, "{\"ack\":%zu}\n", cn->st->n);
    send_all(cn->fd, b);
    cn->since_ack = 0;
}

static struct fk_stream *fk_stream_of(struct fake *f, const char *key)
{
    for (int i = 0; i < f->n_streams; i++)
        if (strcmp(f->streams[i].key, key) == 0)
            return &f->streams[i];
    if (f->n_streams == FK_STREAMS)
        return NULL;
    struct fk_stream *st = &f->streams[f->n_streams++];
    snprintf(st->key, sizeof st->key, "%s", key);
    return st;
}

/* Returns false when the connection was closed. */
static bool fk_line(struct fake *f, struct fk_conn *cn, char *line)
{
    if (!cn->st) { /* the hello */
        f->hellos++;
        snprintf(f->last_hello, sizeof f->last_hello, "%s", line);
        char key[512] = "";
        const char *k = strstr(line, "\"stream\":\"");
        if (k) {
            k += 10;
            size_t n = strcspn(k, "\"");
            if (n >= sizeof key)
                n = sizeof key - 1;
            memcpy(key, k, n);
            key[n] = '\0';
        }
        const char *s = strstr(line, "\"seq\":");
        cn->st = fk_stream_of(f, key);
        if (!cn->st) {
            fk_close(f, cn, false);
            return false;
        }
        cn->seq = s ? strtoull(s + 6, NULL, 10) : cn->st->n;
        char b[256];
        snprintf(b, sizeof b,
                 "{\"welcome\":\"stepscope/1\",\"job_id\":1,\"session_id\":%" PRIu64
                 ",\"stream_id\":1,\"next_seq\":%zu}\n",
                 f->hellos, cn->st->n);
        send_all(cn->fd, b);
        if (f->after_welcome)
            send_all(cn->fd, f->after_welcome);
        return true;
    }
    struct fk_stream *st = cn->st;
    uint64_t seq = cn->seq++;
    cn->lines++;
    if (seq < st->n) {
        st->dups++;
        if (strcmp(st->lines[seq], line) != 0)
            st->mismatches++;
    } else if (seq == st->n) {
        if (st->n == st->alloc) {
            st->alloc = st->alloc ? st->alloc * 2 : 1024;
            st->lines = realloc(st->lines, st->alloc * sizeof *st->lines);
        }
        st->lines[st->n++] = strdup(line);
    } else {
        st->gaps++;
    }
    cn->since_ack++;
    if (strcmp(line, "{\"type\":\"bye\"}") == 0) {
        fk_ack(cn);
        fk_close(f, cn, false);
        return false;
    }
    if (f->ack_every && cn->since_ack >= (uint64_t)f->ack_every)
        fk_ack(cn);
    if (f->drop_every && cn->lines >= (uint64_t)f->drop_every) {
        fk_close(f, cn, true);
        return false;
    }
    return true;
}

static void fk_read(struct fake *f, struct fk_conn *cn)
{
    ssize_t k = recv(cn->fd, cn->buf + cn->len, FK_BUF - 1 - cn->len, MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
        fk_close(f, cn, false);
        return;
    }
    if (k < 0)
        return;
    pthread_mutex_lock(&f->mu);
    cn->len += (size_t)k;
    size_t start = 0;
    for (size_t i = 0; i < cn->len; i++) {
        if (cn->buf[i] != '\n')
            continue;
        cn->buf[i] = '\0';
        if (!fk_line(f, cn, cn->buf + start)) {
            pthread_mutex_unlock(&f->mu);
            return;
        }
        start = i + 1;
    }
    memmove(cn->buf, cn->buf + start, cn->len - start);
    cn->len -= start;
    if (cn->st && f->ack_every && cn->since_ack)
        fk_ack(cn);
    pthread_mutex_unlock(&f->mu);
}

static void *fk_main(void *arg)
{
    struct fake *f = arg;
    while (!atomic_load(&f->stop)) {
        struct pollfd pf[FK_CONNS + 1];
        int idx[FK_CONNS + 1];
        int n = 0;
        pf[n].fd = f->lfd;
        pf[n].events = POLLIN;
        idx[n++] = -1;
        for (int i = 0; i < FK_CONNS; i++)
            if (f->conns[i].fd >= 0) {
                pf[n].fd = f->conns[i].fd;
                pf[n].events = POLLIN;
                idx[n++] = i;
            }
        if (poll(pf, (nfds_t)n, 5) <= 0)
            continue;
        for (int j = 0; j < n; j++) {
            if (!pf[j].revents)
                continue;
            if (idx[j] < 0) {
                int fd = accept(f->lfd, NULL, NULL);
                if (fd < 0)
                    continue;
                int slot = -1;
                for (int i = 0; i < FK_CONNS; i++)
                    if (f->conns[i].fd < 0) {
                        slot = i;
                        break;
                    }
                if (slot < 0) {
                    close(fd);
                    continue;
                }
                f->conns[slot].fd = fd;
                f->conns[slot].st = NULL;
                f->conns[slot].len = 0;
                f->conns[slot].lines = 0;
                f->conns[slot].since_ack = 0;
            } else {
                fk_read(f, &f->conns[idx[j]]);
            }
        }
    }
    return NULL;
}

static struct fake *fk_new(int ack_every, int drop_every)
{
    struct fake *f = calloc(1, sizeof *f);
    ck_assert_ptr_nonnull(f);
    snprintf(f->path, sizeof f->path, "%s/d.sock", sock_dir);
    f->ack_every = ack_every;
    f->drop_every = drop_every;
    pthread_mutex_init(&f->mu, NULL);
    for (int i = 0; i < FK_CONNS; i++) {
        f->conns[i].fd = -1;
        f->conns[i].buf = malloc(FK_BUF);
    }
    f->lfd = -1;
    return f;
}

static void fk_start(struct fake *f)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    unlink(f->path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(f->lfd, 0);
    ck_assert_int_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(f->lfd, 16), 0);
    atomic_store(&f->stop, 0);
    ck_assert_int_eq(pthread_create(&f->th, NULL, fk_main, f), 0);
}

static void fk_stop(struct fake *f)
{
    atomic_store(&f->stop, 1);
    pthread_join(f->th, NULL);
    for (int i = 0; i < FK_CONNS; i++)
        if (f->conns[i].fd >= 0)
            fk_close(f, &f->conns[i], false);
    close(f->lfd);
    unlink(f->path);
}

static void fk_free(struct fake *f)
{
    for (int i = 0; i < FK_CONNS; i++)
        free(f->conns[i].buf);
    for (int i = 0; i < f->n_streams; i++) {
        for (size_t j = 0; j < f->streams[i].n; j++)
            free(f->streams[i].lines[j]);
        free(f->streams[i].lines);
    }
    pthread_mutex_destroy(&f->mu);
    free(f);
}

/* The daemon lost everything it had not acknowledged (a restart from an old database). */
static void fk_forget(struct fake *f)
{
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < f->n_streams; i++) {
        struct fk_stream *st = &f->streams[i];
        for (size_t j = st->acked; j < st->n; j++)
            free(st->lines[j]);
        st->n = st->acked;
    }
    pthread_mutex_unlock(&f->mu);
}

/* The stored lines of stream key (NULL: the first stream); 0 when absent. */
static size_t fk_count(struct fake *f, const char *key)
{
    pthread_mutex_lock(&f->mu);
    size_t n = 0;
    for (int i = 0; i < f->n_streams; i++)
        if (!key || strcmp(f->streams[i].key, key) == 0) {
            n = f->streams[i].n;
            break;
        }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Line seq of the first stream (copied into out). */
static const char *fk_get(struct fake *f, size_t seq, char *out, size_t cap)
{
    pthread_mutex_lock(&f->mu);
    out[0] = '\0';
    if (f->n_streams && seq < f->streams[0].n)
        snprintf(out, cap, "%s", f->streams[0].lines[seq]);
    pthread_mutex_unlock(&f->mu);
    return out;
}

static struct ss_client *client_for(struct fake *f, struct ss_options *o)
{
    struct ss_options d;
    if (!o) {
        ss_options_init(&d);
        o = &d;
    }
    o->socket_path = f->path;
    if (!o->job)
        o->job = "ctest";
    struct ss_client *c = ss_client_new(o);
    ck_assert_ptr_nonnull(c);
    return c;
}

static double secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define SEC 1000000000LL

static void setup(void)
{
    make_dir();
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", sock_dir);
    (void)system(cmd);
}

/* ---- encoding --------------------------------------------------------------------------- */

START_TEST(test_span_escaping)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    ck_assert_int_eq(ss_span(c, "a\"b\\c\n\t\x01\x1f\x7f", "cat/\"x\"", 1700000000123456789LL,
                             1700000000123457789LL),
                     0);
    /* valid 2/3/4-byte UTF-8 kept; stray continuation, overlong, surrogate, cut sequence,
     * 0xFF and above U+10FFFF each become U+FFFD */
    ck_assert_int_eq(ss_span(c, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xc0\xaf|\xed\xa0\x80|"
                                "\xe2\x82|\xff|\xf4\x90\x80\x80",
                             NULL, 5, 3),
                     0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    char line[4096];
    fk_get(f, 0, line, sizeof line);
    const char *want = "{\"ph\":\"X\",\"name\":\"a\\\"b\\\\c\\n\\t\\u0001\\u001f\x7f\","
                       "\"cat\":\"cat/\\\"x\\\"\",\"ts\":1700000000123456.789,\"dur\":1.000,"
                       "\"pid\":";
    ck_assert_msg(strncmp(line, want, strlen(want)) == 0, "got %s", line);
    char tail[64];
    snprintf(tail, sizeof tail, "\"pid\":%d,\"tid\":", (int)getpid());
    ck_assert_ptr_nonnull(strstr(line, tail));
    fk_get(f, 1, line, sizeof line);
    ck_assert_ptr_nonnull(strstr(line, "\"name\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|"
                                       "\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd|"
                                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
                                       "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd|"
                                       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
                                       "\"cat\":\"user_annotation\",\"ts\":0.005,\"dur\":0.000"));
    ck_assert_int_eq(ss_client_free(c), 0);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_long_name_cut_on_char_boundary)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    char name[2000];
    memset(name, 'a', sizeof name);
    /* a 3-byte character straddling byte SS_NAME_MAX */
    memcpy(name + SS_NAME_MAX - 1, "\xe2\x82\xac", 3);
    name[sizeof name - 1] = '\0';
    ck_assert_int_eq(ss_span(c, name, "c", 0, 0), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    char line[4096];
    fk_get(f, 0, line, sizeof line);
    const char *p = strstr(line, "\"name\":\"") + 8;
    size_t n = strcspn(p, "\"");
    ck_assert_uint_eq(n, SS_NAME_MAX - 1); /* the euro sign is left out whole */
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_step_phases_counter_queue)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    ck_assert_int_eq(ss_step_end(c, 1), -ENOENT);
    ck_assert_int_eq(ss_phase_end(c), -ENOENT);
    ck_assert_int_eq(ss_phase_begin(c, "outside"), 0); /* timed, but no step: nothing */
    ck_assert_int_eq(ss_phase_end(c), 0);
    ck_assert_int_eq(ss_step_begin(c, 7), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(ss_phase_begin(c, "forward"), 0);
        ck_assert_int_eq(ss_phase_begin(c, "inner\"q"), 0);
        ck_assert_int_eq(ss_phase_end(c), 0);
        ck_assert_int_eq(ss_phase_end(c), 0);
    }
    ck_assert_int_eq(ss_queue(c, "prefetch", 3, 8), 0);
    ck_assert_int_eq(ss_step_end(c, 32), 0);
    ck_assert_int_eq(ss_step_begin(c, 8), 0);
    ck_assert_int_eq(ss_step_end(c, -1), 0);
    ck_assert_int_eq(ss_queue(c, "q2", -5, -1), 0);
    ck_assert_int_eq(ss_counter(c, "loss", 1.5), 0);
    ck_assert_int_eq(ss_counter(c, "n", 42), 0);
    ck_assert_int_eq(ss_counter(c, "bad", NAN), 0);
    ck_assert_int_eq(ss_counter(c, "big", -1e300), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    ck_assert_uint_eq(fk_count(f, NULL), 8);
    char l[4096];
    fk_get(f, 0, l, sizeof l);
    ck_assert_ptr_nonnull(strstr(l, "{\"type\":\"queue\",\"name\":\"prefetch\",\"size\":3,"
                                    "\"capacity\":8,\"step\":7,\"ts_us\":"));
    fk_get(f, 1, l, sizeof l);
    ck_assert_ptr_nonnull(strstr(l, "{\"type\":\"step\",\"step\":7,\"begin_us\":"));
    ck_assert_ptr_nonnull(strstr(l, ",\"samples\":32,\"phases\":{\"forward\":"));
    ck_assert_ptr_nonnull(strstr(l, ",\"inner\\\"q\":"));
    ck_assert_ptr_null(strstr(l, "outside"));
    ck_assert_str_eq(l + strlen(l) - 2, "}}");
    fk_get(f, 2, l, sizeof l);
    ck_assert_ptr_nonnull(strstr(l, "\"step\":8,"));
    ck_assert_ptr_null(strstr(l, "samples"));
    ck_assert_ptr_null(strstr(l, "phases"));
    fk_get(f, 3, l, sizeof l);
    ck_assert_ptr_nonnull(strstr(l, "\"name\":\"q2\",\"size\":0,\"ts_us\":"));
    ck_assert_ptr_nonnull(strstr(fk_get(f, 4, l, sizeof l), "\"args\":{\"value\":1.5}}"));
    ck_assert_ptr_nonnull(strstr(fk_get(f, 4, l, sizeof l), "{\"ph\":\"C\",\"name\":\"loss\""));
    ck_assert_ptr_nonnull(strstr(fk_get(f, 5, l, sizeof l), "\"args\":{\"value\":42}}"));
    ck_assert_ptr_nonnull(strstr(fk_get(f, 6, l, sizeof l), "\"args\":{\"value\":null}}"));
    ck_assert_ptr_nonnull(strstr(fk_get(f, 7, l, sizeof l), "\"args\":{\"value\":-1e+300}}"));
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_phase_limits)
{
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = "/nonexistent/ss.sock";
    struct ss_client *c = ss_client_new(&o);
    ck_assert_int_eq(ss_step_begin(c, 0), 0);
    for (int i = 0; i < SS_PHASE_DEPTH_MAX; i++)
        ck_assert_int_eq(ss_phase_begin(c, "p"), 0);
    ck_assert_int_eq(ss_phase_begin(c, "p"), -EOVERFLOW);
    for (int i = 0; i < SS_PHASE_DEPTH_MAX; i++)
        ck_assert_int_eq(ss_phase_end(c), 0);
    char name[16];
    for (int i = 0; i < SS_PHASES_MAX + 2; i++) {
        snprintf(name, sizeof name, "p%d", i);
        ck_assert_int_eq(ss_phase_begin(c, name), i < SS_PHASES_MAX - 1 ? 0 : -ENOSPC);
        ck_assert_int_eq(ss_phase_end(c), 0);
    }
    ck_assert_int_eq(ss_span(NULL, "x", NULL, 0, 0), -EINVAL);
    ck_assert_int_eq(ss_span(c, NULL, NULL, 0, 0), -EINVAL);
    ss_client_free(c);
}
END_TEST

START_TEST(test_hello_fields_from_env)
{
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("STEPSCOPE_JOB", "env\x01job", 1);
    setenv("STEPSCOPE_RUN", "r1", 1);
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = f->path;
    o.framework = "torch";
    struct ss_client *c = ss_client_new(&o);
    ck_assert_int_eq(ss_span(c, "x", NULL, 0, 0), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    pthread_mutex_lock(&f->mu);
    const char *h = f->last_hello;
    ck_assert_ptr_nonnull(strstr(h, "{\"hello\":\"stepscope/1\",\"job\":\"env_job\",\"rank\":3,"
                                    "\"world_size\":4,"));
    ck_assert_ptr_nonnull(strstr(h, "\"framework\":\"torch\""));
    ck_assert_ptr_nonnull(strstr(h, "\"run\":\"r1\""));
    ck_assert_ptr_nonnull(strstr(h, "\"clock\":\"realtime\""));
    ck_assert_ptr_nonnull(strstr(h, ",\"seq\":0}"));
    char want[600];
    snprintf(want, sizeof want, "\"stream\":\"%s\"", ss_client_stream(c));
    ck_assert_ptr_nonnull(strstr(h, want));
    pthread_mutex_unlock(&f->mu);
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_default_socket_path)
{
    unsetenv("STEPSCOPE_SOCKET");
    setenv("XDG_RUNTIME_DIR", "/run/user/77", 1);
    struct ss_client *c = ss_client_new(NULL);
    ck_assert_str_eq(ss_client_socket_path(c), "/run/user/77/stepscope.sock");
    ss_client_free(c);
    setenv("XDG_RUNTIME_DIR", "relative", 1);
    c = ss_client_new(NULL);
    char want[64];
    snprintf(want, sizeof want, "/tmp/stepscope-%u.sock", (unsigned)getuid());
    ck_assert_str_eq(ss_client_socket_path(c), want);
    ss_client_free(c);
    setenv("STEPSCOPE_SOCKET", "/x/y.sock", 1);
    c = ss_client_new(NULL);
    ck_assert_str_eq(ss_client_socket_path(c), "/x/y.sock");
    ss_client_free(c);
}
END_TEST

/* ---- batching, drops, never blocking ----------------------------------------------------- */

START_TEST(test_batched_writes)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    const int n = 20000;
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(ss_span(c, "batched_span_name", "cpu_op", i, i + 10), 0);
    ck_assert_int_eq(ss_flush(c, 20 * SEC), 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.records, (uint64_t)n);
    ck_assert_uint_eq(st.sent, (uint64_t)n);
    ck_assert_uint_eq(st.acked, (uint64_t)n);
    ck_assert_uint_eq(fk_count(f, NULL), (size_t)n);
    /* one write per line would be 20000; batches of 4..64 KiB make it a few dozen */
    ck_assert_uint_lt(st.writes, (uint64_t)n / 20);
    ck_assert_uint_ge(st.bytes_written / st.writes, 4096);
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_ring_full_drops_counted)
{
    struct fake *f = fk_new(1, 0);
    struct ss_options o;
    ss_options_init(&o);
    o.ring_bytes = 64 * 1024;
    o.flush_interval_ms = 2000; /* the flush thread sleeps: the ring fills */
    struct ss_client *c = client_for(f, &o);
    usleep(50000); /* past the thread's first (empty) drain */
    const int n = 100000;
    int ok = 0, dropped = 0;
    for (int i = 0; i < n; i++) {
        int r = ss_span(c, "ring_full", "c", i, i);
        if (r == 0)
            ok++;
        else if (r == -ENOBUFS)
            dropped++;
    }
    ck_assert_int_eq(ok + dropped, n);
    ck_assert_int_gt(dropped, 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.records, (uint64_t)ok);
    ck_assert_uint_eq(st.dropped_ring_full, (uint64_t)dropped);
    ck_assert_uint_eq(st.dropped, (uint64_t)dropped);
    fk_start(f);
    ck_assert_int_eq(ss_flush(c, 20 * SEC), 0);
    ck_assert_uint_eq(fk_count(f, NULL), (size_t)ok); /* every record taken arrives */
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_no_daemon_never_blocks)
{
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = "/nonexistent/dir/stepscope.sock";
    struct ss_client *c = ss_client_new(&o);
    ck_assert_ptr_nonnull(c);
    double t0 = secs();
    int dropped = 0;
    for (int i = 0; i < 1000000; i++)
        dropped += ss_span(c, "no_daemon", "c", i, i + 1) != 0;
    double spent = secs() - t0;
    ck_assert_msg(spent < 2.0, "1e6 spans with no daemon took %.3f s", spent);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.records + st.dropped_ring_full, 1000000);
    ck_assert_uint_eq(st.dropped_ring_full, (uint64_t)dropped);
    ck_assert(!st.connected);
    t0 = secs();
    ck_assert_int_eq(ss_flush(c, SEC / 10), -ETIMEDOUT);
    ck_assert_int_eq(ss_client_free(c), -ETIMEDOUT);
    spent = secs() - t0;
    ck_assert_msg(spent < 2.0, "flush + free with no daemon took %.3f s", spent);
}
END_TEST

START_TEST(test_buffer_cap_drops_new_lines)
{
    struct fake *f = fk_new(1, 0);
    struct ss_options o;
    ss_options_init(&o);
    o.buffer_bytes = 20000;
    struct ss_client *c = client_for(f, &o);
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(ss_span(c, "capped", "c", i, i), 0);
    ck_assert_int_eq(ss_flush(c, SEC / 5), -ETIMEDOUT); /* no daemon yet: drained, held */
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.records, 1000);
    ck_assert_uint_gt(st.dropped_buffer_full, 0);
    ck_assert_uint_le(st.held_bytes, 20000);
    ck_assert_uint_eq(st.held_lines + st.dropped_buffer_full, 1000);
    fk_start(f);
    ck_assert_int_eq(ss_flush(c, 20 * SEC), 0);
    ck_assert_uint_eq(fk_count(f, NULL), st.held_lines);
    /* the oldest lines were kept, the new ones dropped */
    char l[1024];
    ck_assert_ptr_nonnull(strstr(fk_get(f, 0, l, sizeof l), "\"ts\":0.000,"));
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

/* ---- acks, replay, flush and free -------------------------------------------------------- */

START_TEST(test_replay_exactly_once_in_order)
{
    /* acks every 40 lines, and the connection breaks every 700 lines, forgetting what was not
     * acknowledged: every line must still be stored once, in seq order */
    struct fake *f = fk_new(40, 700);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    const int n = 6000;
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "r%d", i);
        ck_assert_int_eq(ss_span(c, name, "c", i, i), 0);
        if (i % 500 == 0)
            usleep(2000); /* several batches, several connections */
    }
    ck_assert_int_eq(ss_flush(c, 60 * SEC), 0);
    f->drop_every = 0;
    ck_assert_uint_eq(fk_count(f, NULL), (size_t)n);
    pthread_mutex_lock(&f->mu);
    ck_assert_uint_eq(f->streams[0].mismatches, 0);
    ck_assert_uint_eq(f->streams[0].gaps, 0);
    ck_assert_int_eq(f->n_streams, 1);
    ck_assert_uint_gt(f->drops, 3);
    for (int i = 0; i < n; i++) {
        char want[48];
        snprintf(want, sizeof want, "\"name\":\"r%d\",", i);
        ck_assert_msg(strstr(f->streams[0].lines[i], want), "line %d: %s", i,
                      f->streams[0].lines[i]);
    }
    pthread_mutex_unlock(&f->mu);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_gt(st.reconnects, 3);
    ck_assert_uint_gt(st.replayed, 0);
    ck_assert_uint_eq(st.acked, (uint64_t)n);
    ck_assert_uint_eq(st.sent, (uint64_t)n);
    ck_assert_uint_eq(st.held_lines, 0);
    ck_assert_int_eq(ss_client_free(c), 0);
    ck_assert_uint_eq(fk_count(f, NULL), (size_t)n + 1); /* and the bye */
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_daemon_restart_replays)
{
    struct fake *f = fk_new(0, 0); /* never acks: everything stays held */
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    for (int i = 0; i < 300; i++)
        ck_assert_int_eq(ss_span(c, "held", "c", i, i), 0);
    ck_assert_int_eq(ss_flush(c, SEC / 5), -ETIMEDOUT);
    ck_assert_uint_eq(fk_count(f, NULL), 300);
    fk_stop(f); /* the daemon goes away without having acked anything */
    fk_forget(f);
    f->ack_every = 1;
    for (int i = 300; i < 400; i++)
        ck_assert_int_eq(ss_span(c, "held", "c", i, i), 0);
    fk_start(f);
    ck_assert_int_eq(ss_flush(c, 20 * SEC), 0);
    ck_assert_uint_eq(fk_count(f, NULL), 400);
    char l[512];
    ck_assert_ptr_nonnull(strstr(fk_get(f, 399, l, sizeof l), "\"ts\":0.399,"));
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.reconnects, 1);
    ck_assert_uint_eq(st.acked, 400);
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_flush_and_free)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    double t0 = secs();
    ck_assert_int_eq(ss_flush(c, 5 * SEC), 0); /* nothing recorded: done at once */
    ck_assert(secs() - t0 < 1.0);
    ck_assert_int_eq(ss_queue(c, "q", 1, 2), 0);
    ck_assert_int_eq(ss_flush(c, -1), 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.acked, 1);
    ck_assert(st.connected);
    f->ack_every = 0;
    ck_assert_int_eq(ss_queue(c, "q", 2, 2), 0);
    ck_assert_int_eq(ss_flush(c, SEC / 10), -ETIMEDOUT); /* written, never acked */
    ck_assert_uint_eq(fk_count(f, NULL), 2);
    f->ack_every = 1;
    ck_assert_int_eq(ss_queue(c, "q", 3, 2), 0);
    /* free: bye last, everything acked (the fake acks the bye and closes) */
    ck_assert_int_eq(ss_client_free(c), 0);
    char l[256];
    ck_assert_uint_eq(fk_count(f, NULL), 4);
    ck_assert_str_eq(fk_get(f, 3, l, sizeof l), "{\"type\":\"bye\"}");
    ck_assert_int_eq(ss_client_free(NULL), 0);
    fk_stop(f);
    fk_free(f);
}
END_TEST

static int n_control;
static char control_line[256];

static void on_control(const char *line, size_t len, void *ud)
{
    n_control++;
    snprintf(control_line, sizeof control_line, "%.*s", (int)len, line);
    ck_assert_ptr_eq(ud, &n_control);
    ck_assert_int_eq(line[len], '\0');
}

START_TEST(test_control_lines_and_errors)
{
    struct fake *f = fk_new(1, 0);
    f->after_welcome = "{\"capture\":{\"steps\":3}}\n"
                       "{\"error\":{\"line\":9,\"code\":\"invalid\"}}\n\n{\"ack\":0}\n";
    fk_start(f);
    struct ss_options o;
    ss_options_init(&o);
    o.control_cb = on_control;
    o.control_userdata = &n_control;
    struct ss_client *c = client_for(f, &o);
    ck_assert_int_eq(ss_span(c, "x", NULL, 0, 0), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_eq(st.control_lines, 1);
    ck_assert_uint_eq(st.errors_from_daemon, 1);
    ck_assert_int_eq(n_control, 1);
    ck_assert_str_eq(control_line, "{\"capture\":{\"steps\":3}}");
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

static _Atomic int n_capture;
static struct ss_capture_request last_capture;

static void on_capture(struct ss_client *c, const struct ss_capture_request *req, void *ud)
{
    ck_assert_ptr_eq(ud, &n_capture);
    last_capture = *req;
    /* Reporting from the callback (the flush thread, its lock held) must not deadlock. */
    ck_assert_int_eq(ss_capture_state(c, req->id, SS_CAPTURE_ARMED, NULL), 0);
    atomic_fetch_add(&n_capture, 1);
}

static bool fk_hello_has(struct fake *f, const char *part)
{
    pthread_mutex_lock(&f->mu);
    bool r = strstr(f->last_hello, part) != NULL;
    pthread_mutex_unlock(&f->mu);
    return r;
}

/* The index of the first held line equal to want in the fake's stream, or -1. */
static long fk_find(struct fake *f, const char *want)
{
    char l[512];
    for (size_t i = 0, n = fk_count(f, NULL); i < n; i++)
        if (strcmp(fk_get(f, i, l, sizeof l), want) == 0)
            return (long)i;
    return -1;
}

START_TEST(test_capture_requests_and_states)
{
    struct fake *f = fk_new(1, 0);
    f->after_welcome = "{\"capture\":{\"id\":7,\"start_step\":12,\"steps\":2,"
                       "\"what\":[\"cpu\",\"flops\",\"bogus\"]}}\n"
                       "{\"capture\":{\"id\":8,\"start_step\":null,\"steps\":\"x\"}}\n";
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    ck_assert_int_eq(ss_on_capture(NULL, on_capture, NULL), -EINVAL);
    ck_assert_int_eq(ss_on_capture(c, on_capture, &n_capture), 0);
    ck_assert_int_eq(ss_span(c, "before", NULL, 0, 0), 0);
    while (atomic_load(&n_capture) == 0 || !fk_hello_has(f, "\"capabilities\""))
        usleep(1000);
    ck_assert(fk_hello_has(f, ",\"capabilities\":[\"capture\"],"));
    ck_assert_int_eq(last_capture.id, 7);
    ck_assert_int_eq(last_capture.start_step, 12);
    ck_assert_int_eq(last_capture.steps, 2);
    ck_assert_uint_eq(last_capture.what, SS_CAPTURE_WHAT_CPU | SS_CAPTURE_WHAT_FLOPS);
    /* From another thread: after the records made before it, with the reason escaped. */
    ck_assert_int_eq(ss_span(c, "window", NULL, 0, 0), 0);
    ck_assert_int_eq(ss_capture_state(c, 7, SS_CAPTURE_FAILED, "no \"GPU\"\n"), 0);
    ck_assert_int_eq(ss_capture_state(c, -1, SS_CAPTURE_DONE, NULL), -EINVAL);
    ck_assert_int_eq(ss_capture_state(c, 7, 0, NULL), -EINVAL);
    ck_assert_int_eq(ss_capture_state(c, 7, SS_CAPTURE_FAILED + 1, NULL), -EINVAL);
    ck_assert_int_eq(ss_capture_state(NULL, 7, SS_CAPTURE_DONE, NULL), -EINVAL);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    long armed = fk_find(f, "{\"type\":\"capture\",\"id\":7,\"state\":\"armed\"}");
    long failed = fk_find(f, "{\"type\":\"capture\",\"id\":7,\"state\":\"failed\","
                             "\"reason\":\"no \\\"GPU\\\"\\n\"}");
    ck_assert_int_ge(armed, 0);
    ck_assert_int_gt(failed, armed);
    char l[512];
    long window = -1;
    for (long i = 0; i < failed; i++)
        if (strstr(fk_get(f, (size_t)i, l, sizeof l), "\"name\":\"window\""))
            window = i;
    ck_assert_int_ge(window, 0); /* the span recorded before the report precedes it */
    /* The unreadable request failed at once, by its id. */
    ck_assert_int_ge(fk_find(f, "{\"type\":\"capture\",\"id\":8,\"state\":\"failed\","
                                "\"reason\":\"libstepscope: unreadable capture request\"}"), 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ck_assert_uint_ge(st.capture_requests, 2); /* (a welcome before ss_on_capture: control) */
    /* Cleared: the next hello has no capability, requests go to the control counter. */
    ck_assert_int_eq(ss_on_capture(c, NULL, NULL), 0);
    while (fk_hello_has(f, "\"capabilities\""))
        usleep(1000);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

/* ---- threads and fork -------------------------------------------------------------------- */

#define MT_THREADS 8
#define MT_SPANS 20000

struct mt_arg {
    struct ss_client *c;
    int id;
    int dropped;
};

static void *mt_main(void *p)
{
    struct mt_arg *a = p;
    char name[32];
    for (int i = 0; i < MT_SPANS; i++) {
        snprintf(name, sizeof name, "t%d:%d", a->id, i);
        int r = ss_span(a->c, name, "mt", i, i);
        if (r)
            a->dropped++;
        if (i % 1000 == 999) {
            ss_step_begin(a->c, i / 1000);
            ss_phase_begin(a->c, "work");
            ss_phase_end(a->c);
            a->dropped += ss_step_end(a->c, 1) != 0;
        }
    }
    return NULL;
}

START_TEST(test_threads_exact_totals)
{
    struct fake *f = fk_new(64, 0);
    fk_start(f);
    struct ss_options o;
    ss_options_init(&o);
    /* Producers outrun the one flush thread (~50 ns vs ~200 ns a record) and exited threads
     * hand their rings on with their backlog: rings that hold everything make "no drop" exact. */
    o.ring_bytes = 16 << 20;
    struct ss_client *c = client_for(f, &o);
    pthread_t th[MT_THREADS];
    struct mt_arg a[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++) {
        a[i] = (struct mt_arg){c, i, 0};
        ck_assert_int_eq(pthread_create(&th[i], NULL, mt_main, &a[i]), 0);
    }
    int dropped = 0;
    for (int i = 0; i < MT_THREADS; i++) {
        pthread_join(th[i], NULL);
        dropped += a[i].dropped;
    }
    ck_assert_int_eq(ss_flush(c, 60 * SEC), 0);
    struct ss_client_stats st;
    ss_stats(c, &st);
    const uint64_t total = (uint64_t)MT_THREADS * (MT_SPANS + MT_SPANS / 1000);
    ck_assert_uint_eq(st.records + st.dropped, total);
    ck_assert_msg(st.dropped == 0 && dropped == 0, "dropped: ring %llu buffer %llu calls %d",
                  (unsigned long long)st.dropped_ring_full,
                  (unsigned long long)st.dropped_buffer_full, dropped);
    ck_assert_uint_eq(fk_count(f, NULL), total);
    /* each thread's records arrive in its own order */
    int next[MT_THREADS] = {0};
    int steps = 0;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->streams[0].n; i++) {
        const char *l = f->streams[0].lines[i];
        int t, k;
        const char *p = strstr(l, "\"name\":\"t");
        if (!p) {
            steps += strstr(l, "\"type\":\"step\"") != NULL;
            continue;
        }
        ck_assert_int_eq(sscanf(p, "\"name\":\"t%d:%d\"", &t, &k), 2);
        ck_assert_int_eq(k, next[t]);
        next[t]++;
    }
    pthread_mutex_unlock(&f->mu);
    ck_assert_int_eq(steps, MT_THREADS * MT_SPANS / 1000);
    for (int i = 0; i < MT_THREADS; i++)
        ck_assert_int_eq(next[i], MT_SPANS);
    /* exited threads hand their rings on: new threads reuse them */
    for (int i = 0; i < MT_THREADS; i++) {
        a[i] = (struct mt_arg){c, i, 0};
        pthread_create(&th[i], NULL, mt_main, &a[i]);
        pthread_join(th[i], NULL);
    }
    ck_assert_int_eq(ss_flush(c, 60 * SEC), 0);
    ss_stats(c, &st);
    ck_assert_msg(fk_count(f, NULL) == 2 * total, "stored %zu, records %llu dropped %llu",
                  fk_count(f, NULL), (unsigned long long)st.records,
                  (unsigned long long)st.dropped);
    ss_client_free(c);
    fk_stop(f);
    fk_free(f);
}
END_TEST

START_TEST(test_fork_child_gets_fresh_stream)
{
    struct fake *f = fk_new(1, 0);
    fk_start(f);
    struct ss_client *c = client_for(f, NULL);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(ss_span(c, "parent", "c", i, i), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    char parent_stream[512];
    snprintf(parent_stream, sizeof parent_stream, "%s", ss_client_stream(c));
    /* records still in the parent's ring at fork time belong to the parent only */
    for (int i = 10; i < 20; i++)
        ck_assert_int_eq(ss_span(c, "parent", "c", i, i), 0);
    fflush(stdout);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int bad = 0;
        bad |= strcmp(ss_client_stream(c), parent_stream) == 0;
        struct ss_client_stats st;
        ss_stats(c, &st);
        bad |= (st.records != 0) << 1;
        for (int i = 0; i < 7; i++)
            bad |= (ss_span(c, "child", "c", i, i) != 0) << 2;
        bad |= (ss_flush(c, 20 * SEC) != 0) << 3;
        ss_stats(c, &st);
        bad |= (st.records != 7 || st.acked != 7) << 4;
        bad |= (ss_client_free(c) != 0) << 5;
        _exit(bad);
    }
    for (int i = 20; i < 30; i++)
        ck_assert_int_eq(ss_span(c, "parent", "c", i, i), 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
    ck_assert_int_eq(ss_flush(c, 10 * SEC), 0);
    ck_assert_uint_eq(fk_count(f, parent_stream), 30);
    pthread_mutex_lock(&f->mu);
    ck_assert_int_eq(f->n_streams, 2);
    struct fk_stream *child = strcmp(f->streams[0].key, parent_stream) ? &f->streams[0]
                                                                        : &f->streams[1];
    ck_assert_uint_eq(child->n, 8); /* 7 spans and the bye */
    for (size_t i = 0; i < 7; i++)
        ck_assert_ptr_nonnull(strstr(child->lines[i], "\"name\":\"child\""));
    for (size_t i = 0; i < 30; i++) {
        struct fk_stream *p = child == &f->streams[0] ? &f->streams[1] : &f->streams[0];
        ck_assert_ptr_nonnull(strstr(p->lines[i], "\"name\":\"parent\""));
    }
    pthread_mutex_unlock(&f->mu);
    ck_assert_int_eq(ss_client_free(c), 0);
    fk_stop(f);
    fk_free(f);
}
END_TEST

static Suite *client_suite(void)
{
    Suite *s = suite_create("c_client");
    struct {
        const char *name;
        const TTest *t;
    } cases[] = {
        {"escaping", test_span_escaping},
        {"long_name", test_long_name_cut_on_char_boundary},
        {"records", test_step_phases_counter_queue},
        {"phase_limits", test_phase_limits},
        {"hello", test_hello_fields_from_env},
        {"socket_path", test_default_socket_path},
        {"batching", test_batched_writes},
        {"ring_full", test_ring_full_drops_counted},
        {"no_daemon", test_no_daemon_never_blocks},
        {"buffer_cap", test_buffer_cap_drops_new_lines},
        {"replay", test_replay_exactly_once_in_order},
        {"restart", test_daemon_restart_replays},
        {"flush_free", test_flush_and_free},
        {"control", test_control_lines_and_errors},
        {"capture", test_capture_requests_and_states},
        {"threads", test_threads_exact_totals},
        {"fork", test_fork_child_gets_fresh_stream},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].t);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(client_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
