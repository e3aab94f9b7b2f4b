/* SPDX-License-Identifier: MIT */
/*
 * A MindSpore fixture's expected.json (what MindInsight returns for those files, in
 * $TEST_DATA/mindspore/<folder>/) as a flat table of "key<TAB>value" lines, flattened by python3.
 * Every key must be checked by some assertion, or gold_done() fails the test: a new key in a
 * fixture cannot go unnoticed. Shared by the step trace and data queue golden tests.
 */
#ifndef STEPSCOPE_TESTS_MI_GOLDEN_H
#define STEPSCOPE_TESTS_MI_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>

#define GOLD_MAX 1024
#define GOLD_TOL (1e-4 + 1e-9) /* one unit of MindInsight's 4th decimal */

struct gold_entry {
    char key[160];
    char val[160]; /* JSON number, "s:<string>", "{}" or "[]" */
    bool checked;
};

struct golden {
    struct gold_entry e[GOLD_MAX];
    size_t n;
    char dir[512];
    size_t n_match, n_quirk;
    size_t n_rounding; /* matched, but only within GOLD_TOL (MindInsight's double rounding) */
};

/* $TEST_DATA, else "tests/data". */
const char *gold_test_data(void);

/* Reads $TEST_DATA/mindspore/<folder>/expected.json into *g (g->dir is that folder). */
void gold_load(struct golden *g, const char *folder);

/* The entry of key; fails the test when expected.json has none. */
struct gold_entry *gold_find(struct golden *g, const char *key);

/* Python's round(x, 4): correctly rounded on the exact binary value, as glibc's printf. */
double gold_r4(double x);

/* A number: expected must equal MindInsight's arithmetic (mi) and ours within GOLD_TOL, or
 * else the key must be a documented quirk (quirk_ok), where ours is the correct value. */
void gold_num(struct golden *g, const char *key, double ours, double mi, bool quirk_ok);

/* A string value ("s:<ours>"), or a raw one ("{}", "[]", a JSON number as written). */
void gold_str(struct golden *g, const char *key, const char *ours);
void gold_raw(struct golden *g, const char *key, const char *raw);

/* Prints the tally and fails if some key was not checked. */
void gold_done(struct golden *g);

#endif
