/* SPDX-License-Identifier: MIT */
/* A training loop that serves captures, for tests/test_c_capture.py against the real stepscoped.
 *
 *   capture_client SOCKET JOB MODE      MODE: "serve" (sets a capture callback) or "none"
 *
 * Prints "ready" once its first step is acknowledged, then records a step every 20 ms (one span
 * "aten::linear" each), for at most 3000 steps. With "serve", the capture callback prints
 * "request id=I start=S steps=N what=W" and reports armed (or failed "step S has passed" when S
 * is behind the loop); the loop reports recording at the first step of the window, records one
 * extra span "captured_op" in each step of it, and reports done after the last. After the first
 * capture is done or failed it flushes, frees the client and prints
 * "done first=A last=B requests=R" (A, B: the window's steps, -1 when none). With "none" it
 * stops after a line on stdin.
 */
#include "stepscope.h"

#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static _Atomic int64_t g_step = -1;    /* the loop's current step */
static _Atomic int64_t g_id = -1;      /* the armed capture */
static _Atomic int64_t g_start = -1, g_steps = 0;
static _Atomic int g_ended = 0;

static void on_capture(struct ss_client *c, const struct ss_capture_request *req, void *user)
{
    (void)user;
    printf("request id=%" PRId64 " start=%" PRId64 " steps=%" PRId64 " what=%u\n", req->id,
           req->start_step, req->steps, req->what);
    fflush(stdout);
    int64_t now = atomic_load(&g_step);
    if (req->start_step >= 0 && req->start_step <= now) {
        char reason[64];
        snprintf(reason, sizeof reason, "step %" PRId64 " has passed", req->start_step);
        ss_capture_state(c, req->id, SS_CAPTURE_FAILED, reason);
        atomic_store(&g_ended, 1);
        return;
    }
    atomic_store(&g_start, req->start_step >= 0 ? req->start_step : now + 1);
    atomic_store(&g_steps, req->steps);
    atomic_store(&g_id, req->id);
    ss_capture_state(c, req->id, SS_CAPTURE_ARMED, NULL);
}

static bool stdin_line(void)
{
    struct pollfd pf = {0, POLLIN, 0};
    return poll(&pf, 1, 0) == 1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s SOCKET JOB serve|none\n", argv[0]);
        return 2;
    }
    bool serve = strcmp(argv[3], "serve") == 0;
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = argv[1];
    o.job = argv[2];
    o.framework = "c";
    struct ss_client *c = ss_client_new(&o);
    if (!c || (serve && ss_on_capture(c, on_capture, NULL) < 0))
        return 3;
    int64_t first = -1, last = -1;
    for (int64_t i = 0; i < 3000; i++) {
        atomic_store(&g_step, i);
        int64_t id = atomic_load(&g_id), start = atomic_load(&g_start);
        bool in_window = id >= 0 && i >= start && i < start + atomic_load(&g_steps);
        if (in_window && first < 0) {
            first = i;
            ss_capture_state(c, id, SS_CAPTURE_RECORDING, NULL);
        }
        ss_step_begin(c, i);
        int64_t t = ss_now_ns();
        ss_span(c, "aten::linear", "cpu_op", t, t + 1000000);
        if (in_window) {
            ss_span(c, "captured_op", "cpu_op", t + 1000000, t + 3000000);
            last = i;
        }
        usleep(20000);
        ss_step_end(c, 8);
        if (in_window && i == start + atomic_load(&g_steps) - 1) {
            ss_capture_state(c, id, SS_CAPTURE_DONE, NULL);
            atomic_store(&g_ended, 1);
        }
        if (i == 0) {
            if (ss_flush(c, 20 * 1000000000LL) < 0)
                return 4;
            printf("ready\n");
            fflush(stdout);
        }
        if (atomic_load(&g_ended) || (!serve && stdin_line()))
            break;
    }
    int fr = ss_flush(c, 20 * 1000000000LL);
    struct ss_client_stats st;
    ss_stats(c, &st);
    int cr = ss_client_free(c);
    printf("done first=%" PRId64 " last=%" PRId64 " requests=%" PRIu64 "\n", first, last,
           st.capture_requests);
    return fr == 0 && cr == 0 ? 0 : 1;
}
