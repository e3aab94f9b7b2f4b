/* SPDX-License-Identifier: MIT */
/*
 * analyse_clock.h: the clocks of a job's hosts against one another (clock.c; issue 16, item 2:
 * "align what can be aligned, and say what cannot"). docs/ANALYSIS.md, "Clocks of different
 * hosts".
 *
 * Each host stamps its ranks' events with its own clock. In a synchronous data-parallel job the
 * collective at the end of every step holds every rank until all have arrived, so a step ends
 * on every rank at (almost) the same instant; the difference between two hosts' stamps of the
 * same step's end is then their clocks' offset, up to the collective's skew. The estimate is
 * the median of that difference over the steps both hosts have, and its spread (the median
 * absolute deviation) says how well the hosts were in lockstep.
 *
 * The reference is the host of the lowest name (strcmp) among those whose ranks have min_steps
 * distinct steps or more (without one, the host with the most steps, then the lowest name): the
 * answer depends only on the job's data, never on which daemon is asked, and stays the same host
 * while the hosts progress.
 * A host's offset is its clock minus the reference's: its times less the offset are on the
 * reference's clock.
 *
 * Pure: arrays in, a table out; no I/O, globals or logging. The result belongs to the caller
 * (analyse_clock_free()); times are int64 ns.
 */
#ifndef STEPSCOPE_ANALYSE_CLOCK_H
#define STEPSCOPE_ANALYSE_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ANALYSE_CLOCK_MIN_STEPS 8           /* shared steps a host needs to be aligned */
#define ANALYSE_CLOCK_MAX_SPREAD_RATIO 0.05 /* spread above 5 % of the reference's median step
                                               time: not in lockstep, not aligned */

/* One step of one rank, on its host's clock. */
struct analyse_clock_step {
    int64_t rank;
    int64_t step;
    int64_t begin_ns;
    int64_t end_ns;       /* a row with end_ns < begin_ns is ignored */
};

/* One host (one clock) and its ranks' steps, any order. All borrowed. */
struct analyse_clock_host {
    const char *name;                       /* NUL-terminated; hosts' names are distinct */
    const struct analyse_clock_step *steps; /* [n]; may be NULL when n is 0 */
    size_t n;
};

struct analyse_clock_params {
    size_t min_steps;        /* 0: ANALYSE_CLOCK_MIN_STEPS */
    double max_spread_ratio; /* of the reference's median step time; NaN or < 0 is -EINVAL */
};

enum analyse_clock_reason {
    ANALYSE_CLOCK_REFERENCE,    /* aligned: the reference itself, offset 0 */
    ANALYSE_CLOCK_ALIGNED,      /* aligned: offset measured */
    ANALYSE_CLOCK_NO_STEPS,     /* not aligned: the host's ranks have no step */
    ANALYSE_CLOCK_NO_SHARED,    /* not aligned: no step number in common with the reference */
    ANALYSE_CLOCK_FEW_STEPS,    /* not aligned: fewer than min_steps in common */
    ANALYSE_CLOCK_NOT_LOCKSTEP, /* not aligned: spread above the threshold (an asynchronous
                                   pipeline, hosts that do not end their steps together) */
    ANALYSE_CLOCK_REASON_COUNT,
};

struct analyse_clock_row {
    const char *name;       /* borrowed from the input */
    bool aligned;
    enum analyse_clock_reason reason;
    int64_t offset_ns;      /* the host's clock minus the reference's; 0 when not aligned */
    int64_t estimate_ns;    /* the median difference even when refused (FEW_STEPS,
                               NOT_LOCKSTEP); 0 without a shared step */
    int64_t spread_ns;      /* median absolute deviation of the differences from estimate_ns;
                               0 without a shared step */
    size_t steps;           /* shared steps used (the reference: its own distinct steps) */
    size_t ranks;           /* distinct ranks of the host with a step */
};

/* Read-only outside clock.c. */
struct analyse_clock {
    size_t n_hosts;
    struct analyse_clock_row *hosts; /* [n_hosts], in input order */
    ptrdiff_t reference;             /* index into hosts; -1 when no host has a step */
    int64_t ref_step_ns;             /* the reference's median step time (end - begin) */
    int64_t max_spread_ns;           /* the threshold used: max_spread_ratio * ref_step_ns */
    size_t min_steps;                /* the bound used */
};

/* The sentence a reason stands for ("reference", "aligned", "no steps", ...): a static string. */
const char *analyse_clock_reason_text(enum analyse_clock_reason reason);

/* Offsets of hosts[0..n) against the reference. For each host and each step number its ranks
 * have, the host's end of the step is the median of its ranks' ends of it (ranks of a host share
 * its clock); the differences between the host's and the reference's ends over the step numbers
 * both have give estimate_ns (their median, exact in integers: the mean of the two middle ones
 * rounded toward zero when even) and spread_ns. A host is aligned when steps >= min_steps and
 * spread_ns <= max_spread_ns; otherwise offset_ns is 0 and reason says why. params NULL: the
 * defaults. Returns 0 and *ret (free with analyse_clock_free()), -EINVAL (hosts NULL with
 * n > 0, a host's steps NULL with n > 0, ret NULL, a bad ratio), -ENOMEM. */
int analyse_clock_compute(const struct analyse_clock_host *hosts, size_t n,
                          const struct analyse_clock_params *params, struct analyse_clock **ret);

/* The row of the host named name, or NULL. */
const struct analyse_clock_row *analyse_clock_find(const struct analyse_clock *c, const char *name);

/* Frees a result; NULL is accepted. */
void analyse_clock_free(struct analyse_clock *c);

#endif
