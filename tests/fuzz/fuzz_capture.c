/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the one HTTP body the daemon takes: the capture request of
 * POST /api/v1/jobs/{job}/captures (daemon/capture/capture.c, over lib/json), and the capture state
 * names. Invariants: capture_parse() answers 0, -EINVAL (with a terminated, non-empty reason),
 * -EMSGSIZE (only past CAPTURE_BODY_MAX) or -ENOMEM; an accepted request has 1..CAPTURE_STEPS_MAX
 * steps, a start of -1 (next) or a step >= 0, at most CAPTURE_RANKS_MAX ranks >= 0 unless all
 * ranks are meant, and a terminated "what"; parsing is deterministic; a state name parses back to
 * its state.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/lbuf.h"
#include "../../daemon/capture/capture.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct capture_spec a, b;
    if (size > CAPTURE_BODY_MAX + 64)
        return 0;
    /* The body as daemon/web/ hands it over: an exact-size copy, padded as lines are. */
    char *body = malloc(size + 1 + LBUF_PADDING);
    assert(body);
    memcpy(body, data, size);
    memset(body + size, 0, 1 + LBUF_PADDING);
    char err[CAPTURE_ERR_MAX], err2[CAPTURE_ERR_MAX];
    int r = capture_parse(body, size, &a, err);
    assert(r == 0 || r == -EINVAL || r == -EMSGSIZE || r == -ENOMEM);
    if (r == -EMSGSIZE)
        assert(size > CAPTURE_BODY_MAX);
    if (r == -EINVAL)
        assert(memchr(err, '\0', sizeof err) && err[0]);
    if (r == 0) {
        assert(a.steps >= 1 && a.steps <= CAPTURE_STEPS_MAX);
        assert(a.start_step >= -1);
        assert(a.n_ranks <= CAPTURE_RANKS_MAX);
        assert(!a.all_ranks || a.n_ranks == 0);
        for (size_t i = 0; i < a.n_ranks; i++)
            assert(a.ranks[i] >= 0);
        assert(memchr(a.what, '\0', sizeof a.what));
        int r2 = capture_parse(body, size, &b, err2);
        assert(r2 == 0 && b.steps == a.steps && b.start_step == a.start_step &&
               b.n_ranks == a.n_ranks && b.all_ranks == a.all_ranks &&
               strcmp(b.what, a.what) == 0 &&
               memcmp(b.ranks, a.ranks, a.n_ranks * sizeof a.ranks[0]) == 0);
    }
    int st = capture_state_parse((const char *)data, size);
    assert(st >= -1 && st < CAPTURE_STATE_COUNT);
    if (st >= 0) {
        const char *name = capture_state_name(st);
        assert(name && strlen(name) == size && memcmp(name, data, size) == 0);
    }
    free(body);
    return 0;
}
