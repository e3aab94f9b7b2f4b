/* SPDX-License-Identifier: MIT */
/* MindInsight's expected.json as a flat table (mi_golden.h). */
#include "mi_golden.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gold_test_data(void)
{
    const char *d = getenv("TEST_DATA");
    return d && d[0] ? d : "tests/data";
}

void gold_load(struct golden *g, const char *folder)
{
    memset(g, 0, sizeof *g);
    snprintf(g->dir, sizeof g->dir, "%s/mindspore/%s", gold_test_data(), folder);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys\n"
             "def f(p,v):\n"
             "  if isinstance(v,dict):\n"
             "    if not v: print(p+\"\\t{}\")\n"
             "    for k,x in v.items(): f(p+\"/\"+k if p else k,x)\n"
             "  elif isinstance(v,list):\n"
             "    if not v: print(p+\"\\t[]\")\n"
             "    for i,x in enumerate(v): f(p+\"/\"+str(i),x)\n"
             "  elif isinstance(v,str): print(p+\"\\ts:\"+v)\n"
             "  else: print(p+\"\\t\"+json.dumps(v))\n"
             "f(\"\",json.load(open(sys.argv[1])))' '%s/expected.json'",
             g->dir);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "popen python3");
    char line[512];
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        ck_assert_msg(tab && g->n < GOLD_MAX, "bad flattened line %s", line);
        *tab = '\0';
        ck_assert_msg(strlen(line) < sizeof g->e[0].key && strlen(tab + 1) < sizeof g->e[0].val,
                      "flattened entry too long: %s", line);
        snprintf(g->e[g->n].key, sizeof g->e[g->n].key, "%.159s", line);
        snprintf(g->e[g->n].val, sizeof g->e[g->n].val, "%.159s", tab + 1);
        g->n++;
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(g->n > 0, "no entries in %s/expected.json", g->dir);
}

struct gold_entry *gold_find(struct golden *g, const char *key)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->e[i].key, key) == 0)
            return &g->e[i];
    ck_abort_msg("%s: expected.json has no key %s", g->dir, key);
    return NULL;
}

double gold_r4(double x)
{
    char b[64];
    snprintf(b, sizeof b, "%.4f", x);
    return strtod(b, NULL);
}

static double gold_value(struct gold_entry *e)
{
    const char *v = e->val[0] == 's' && e->val[1] == ':' ? e->val + 2 : e->val;
    char *end;
    double d = strtod(v, &end);
    ck_assert_msg(end != v, "%s is not a number: %s", e->key, e->val);
    return d;
}

void gold_num(struct golden *g, const char *key, double ours, double mi, bool quirk_ok)
{
    struct gold_entry *e = gold_find(g, key);
    double want = gold_value(e);
    e->checked = true;
    ck_assert_msg(fabs(want - mi) <= 1e-9, "%s: MindInsight emulation %.10g != expected %.10g",
                  key, mi, want);
    if (fabs(want - ours) <= GOLD_TOL) {
        g->n_match++;
        if (fabs(want - ours) > 1e-9)
            g->n_rounding++;
        return;
    }
    ck_assert_msg(quirk_ok, "%s: ours %.10g != expected %.10g", key, ours, want);
    g->n_quirk++;
    printf("  quirk %s: MindInsight %.6g, stepscope %.6g\n", key, want, ours);
}

void gold_str(struct golden *g, const char *key, const char *ours)
{
    struct gold_entry *e = gold_find(g, key);
    e->checked = true;
    ck_assert_msg(e->val[0] == 's' && e->val[1] == ':' && strcmp(e->val + 2, ours) == 0,
                  "%s: ours \"%s\" != expected %s", key, ours, e->val);
    g->n_match++;
}

void gold_raw(struct golden *g, const char *key, const char *raw)
{
    struct gold_entry *e = gold_find(g, key);
    e->checked = true;
    ck_assert_msg(strcmp(e->val, raw) == 0, "%s: ours %s != expected %s", key, raw, e->val);
    g->n_match++;
}

void gold_done(struct golden *g)
{
    size_t unchecked = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!g->e[i].checked) {
            printf("  unchecked %s = %s\n", g->e[i].key, g->e[i].val);
            unchecked++;
        }
    }
    printf("%s: %zu keys, %zu match (%zu of them 1e-4 off by MindInsight's rounding), "
           "%zu documented quirks, %zu unchecked\n",
           g->dir, g->n, g->n_match, g->n_rounding, g->n_quirk, unchecked);
    ck_assert_msg(unchecked == 0, "%s: %zu keys of expected.json were not checked", g->dir,
                  unchecked);
}
