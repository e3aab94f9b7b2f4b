/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of daemon/options: the command line over the environment over the config file, the
 * answers to --help, --version and bad flags, the start-up checks (a non-loopback address needs a
 * token, a socket path must fit sun_path), and the rule files: read, parsed, and refused with the
 * exit code main() leaves with (2) for an unreadable, oversized or bad file.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/options/options.h"

static char dir[64];
static char path[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/stepscope-test-options-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Writes text to dir/name and returns its path (in the static path). */
static const char *file(const char *name, const char *text)
{
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static int parse(struct config *cfg, char **envp, int argc, char **argv)
{
    config_init(cfg, envp, 1000, "/static");
    return options_parse(argc, argv, envp, cfg);
}

START_TEST(test_precedence_file_env_flags)
{
    char conf[160];
    snprintf(conf, sizeof conf, "%s", file("c.conf", "http = 127.0.0.1:1111\nhttp_threads = 3\n"
                                                     "fp_point = FromFile\n"));
    char env_cfg[200], *envp[] = {env_cfg, "STEPSCOPE_HTTP_THREADS=5", NULL};
    snprintf(env_cfg, sizeof env_cfg, "STEPSCOPE_CONFIG=%s", conf);
    char *argv[] = {"stepscoped", "--fp-point", "FromFlag", NULL};
    struct config cfg;
    ck_assert_int_eq(parse(&cfg, envp, 3, argv), EXIT_OK);
    ck_assert_str_eq(cfg.http, "127.0.0.1:1111"); /* the file */
    ck_assert_uint_eq(cfg.http_threads, 5);      /* the environment over the file */
    ck_assert_str_eq(cfg.fp_point, "FromFlag");  /* the flag over both */

    /* --config beats $STEPSCOPE_CONFIG; a second call starts getopt afresh */
    char other[160];
    snprintf(other, sizeof other, "%s", file("d.conf", "http = 127.0.0.1:2222\n"));
    char *argv2[] = {"stepscoped", "--config", other, NULL};
    ck_assert_int_eq(parse(&cfg, envp, 3, argv2), EXIT_OK);
    ck_assert_str_eq(cfg.http, "127.0.0.1:2222");
}
END_TEST

START_TEST(test_bad_command_lines)
{
    char *envp[] = {NULL};
    struct config cfg;
    char *unknown[] = {"stepscoped", "--no-such-flag", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 2, unknown), EXIT_USAGE);
    char *stray[] = {"stepscoped", "stray", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 2, stray), EXIT_USAGE);
    char *bad_value[] = {"stepscoped", "--http-threads", "many", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 3, bad_value), EXIT_USAGE);
    char *missing[] = {"stepscoped", "--config", "/nonexistent/stepscoped.conf", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 3, missing), EXIT_USAGE);
    char *bad_env[] = {"STEPSCOPE_HTTP_THREADS=many", NULL};
    char *none[] = {"stepscoped", NULL};
    ck_assert_int_eq(parse(&cfg, bad_env, 1, none), EXIT_USAGE);
    char *help[] = {"stepscoped", "--help", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 2, help), -1);
    char *version[] = {"stepscoped", "-V", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 2, version), -1);
}
END_TEST

START_TEST(test_checks)
{
    char *envp[] = {NULL};
    struct config cfg;
    char *open_http[] = {"stepscoped", "--http", "0.0.0.0:0", NULL};
    ck_assert_int_eq(parse(&cfg, envp, 3, open_http), EXIT_OK);
    ck_assert_int_eq(options_check(&cfg), EXIT_USAGE); /* no token */
    char tok[160];
    snprintf(tok, sizeof tok, "%s", file("token", "s3cret-token-of-some-length\n"));
    ck_assert_int_eq(chmod(tok, 0600), 0);
    char *with_token[] = {"stepscoped", "--http", "0.0.0.0:0", "--auth-token-file", tok, NULL};
    ck_assert_int_eq(parse(&cfg, envp, 5, with_token), EXIT_OK);
    ck_assert_int_eq(options_check(&cfg), EXIT_OK);
    ck_assert_str_eq(cfg.auth_token, "s3cret-token-of-some-length");

    char sock[200];
    memset(sock, 'a', sizeof sock);
    memcpy(sock, "/tmp/", 5);
    sock[120] = '\0';
    char *long_socket[] = {"stepscoped", "--socket", sock, NULL};
    ck_assert_int_eq(parse(&cfg, envp, 3, long_socket), EXIT_OK);
    ck_assert_int_eq(options_check(&cfg), EXIT_USAGE);
    sock[107] = '\0'; /* 107 bytes fit */
    ck_assert_int_eq(parse(&cfg, envp, 3, long_socket), EXIT_OK);
    ck_assert_int_eq(options_check(&cfg), EXIT_OK);
}
END_TEST

START_TEST(test_helper_rules)
{
    struct analyse_helper_rules r, def;
    analyse_helper_rules_default(&def);
    ck_assert_int_eq(options_load_helper_rules("", &r), EXIT_OK);
    ck_assert(r.cpu_pct == def.cpu_pct);
    ck_assert_int_eq(options_load_helper_rules(file("h", "cpu_pct = 90\n"), &r), EXIT_OK);
    ck_assert(r.cpu_pct == 90);
    ck_assert(r.gpu_util == def.gpu_util);
    ck_assert_int_eq(options_load_helper_rules(file("h2", "cpu_pct = 90\nno_such_key = 1\n"), &r),
                     EXIT_USAGE);
    ck_assert_int_eq(options_load_helper_rules("/nonexistent/helper.rules", &r), EXIT_USAGE);
    /* one byte over the cap is refused */
    char *big = malloc(OPTIONS_RULES_MAX_BYTES + 2);
    ck_assert_ptr_nonnull(big);
    memset(big, '\n', OPTIONS_RULES_MAX_BYTES + 1);
    big[OPTIONS_RULES_MAX_BYTES + 1] = '\0';
    ck_assert_int_eq(options_load_helper_rules(file("big", big), &r), EXIT_USAGE);
    big[OPTIONS_RULES_MAX_BYTES] = '\0';
    ck_assert_int_eq(options_load_helper_rules(file("max", big), &r), EXIT_OK);
    free(big);
}
END_TEST

START_TEST(test_role_rules)
{
    struct analyse_rules *rules = (struct analyse_rules *)&rules;
    ck_assert_int_eq(options_load_role_rules("", &rules), EXIT_OK);
    ck_assert_ptr_null(rules);
    ck_assert_int_eq(
        options_load_role_rules(file("r", "role = communication  prefix = my_allreduce\n"), &rules),
        EXIT_OK);
    ck_assert_ptr_nonnull(rules);
    analyse_rules_free(rules);
    ck_assert_int_eq(options_load_role_rules(file("r2", "role = nonsense  prefix = x\n"), &rules),
                     EXIT_USAGE);
    ck_assert_int_eq(options_load_role_rules("/nonexistent/role.rules", &rules), EXIT_USAGE);
}
END_TEST

static Suite *options_suite(void)
{
    Suite *s = suite_create("options");
    TCase *tc = tcase_create("options");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_precedence_file_env_flags);
    tcase_add_test(tc, test_bad_command_lines);
    tcase_add_test(tc, test_checks);
    tcase_add_test(tc, test_helper_rules);
    tcase_add_test(tc, test_role_rules);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(options_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
