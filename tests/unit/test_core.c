/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/: line framing under every chunking, exact microsecond -> nanosecond
 * conversion, JSON string escaping, and configuration precedence (default < file < env < set).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "json.h"
#include "lbuf.h"
#include "num.h"
#include "sbuf.h"

/* Pushes in through an lbuf with max_line 8 in chunk-byte reads. Each line lands in out as
 * "line|", each over-long line as "!|". */
static void feed(const char *in, size_t chunk, char *out, size_t out_size)
{
    struct lbuf b;
    ck_assert_int_eq(lbuf_init(&b, 8), 0);
    size_t n = strlen(in), pos = 0;
    out[0] = '\0';
    while (pos < n) {
        size_t room;
        char *dst = lbuf_space(&b, &room);
        ck_assert_uint_gt(room, 0);
        size_t k = chunk < room ? chunk : room;
        if (k > n - pos)
            k = n - pos;
        memcpy(dst, in + pos, k);
        lbuf_commit(&b, k);
        pos += k;
        char *line;
        size_t len;
        int r;
        while ((r = lbuf_next(&b, &line, &len)) != 0) {
            if (r < 0) {
                ck_assert_int_eq(r, -EMSGSIZE);
                strncat(out, "!|", out_size - strlen(out) - 1);
            } else {
                ck_assert_uint_eq(strlen(line), len); /* NUL-terminated in place */
                strncat(out, line, out_size - strlen(out) - 1);
                strncat(out, "|", out_size - strlen(out) - 1);
            }
        }
    }
    lbuf_done(&b);
}

START_TEST(test_lbuf_output_independent_of_chunking)
{
    char out[256];
    feed("x\n\nabcdefgh\nabcdefghi\n12\r\nabcdefghijklmnopqrstuvwxyz0123\nz\n", (size_t)_i, out,
         sizeof out);
    ck_assert_str_eq(out, "x||abcdefgh|!|12|!|z|");
}
END_TEST

/* Found by libFuzzer: with max_line 1 the buffer holds 2 bytes, a quarter of that is 0, and a
 * full buffer with an unread byte offered no room at all. */
START_TEST(test_lbuf_tiny_buffer_always_has_room)
{
    struct lbuf b;
    ck_assert_int_eq(lbuf_init(&b, 1), 0);
    const char *in = "\n\n)\r";
    for (const char *p = in; *p; p++) {
        size_t room;
        char *dst = lbuf_space(&b, &room);
        ck_assert_uint_gt(room, 0);
        *dst = *p;
        lbuf_commit(&b, 1);
        char *line;
        size_t len;
        while (lbuf_next(&b, &line, &len) != 0)
            ;
    }
    lbuf_done(&b);
}
END_TEST

START_TEST(test_lbuf_counts_lines_and_pending)
{
    struct lbuf b;
    ck_assert_int_eq(lbuf_init(&b, 16), 0);
    size_t room;
    char *dst = lbuf_space(&b, &room);
    memcpy(dst, "a\nbb\ncc", 7);
    lbuf_commit(&b, 7);
    char *line;
    size_t len;
    ck_assert_int_eq(lbuf_next(&b, &line, &len), 1);
    ck_assert_int_eq(lbuf_next(&b, &line, &len), 1);
    ck_assert_str_eq(line, "bb");
    ck_assert_int_eq(lbuf_next(&b, &line, &len), 0);
    ck_assert_uint_eq(b.n_lines, 2);
    ck_assert_uint_eq(lbuf_pending(&b), 2); /* "cc": a partial line at EOF */
    lbuf_done(&b);
}
END_TEST

START_TEST(test_lbuf_padding_follows_every_line)
{
    /* A line that fills the buffer exactly still has LBUF_PADDING readable bytes after it:
     * ASan would flag the read below otherwise. */
    struct lbuf b;
    ck_assert_int_eq(lbuf_init(&b, 8), 0);
    size_t room;
    char *dst = lbuf_space(&b, &room);
    ck_assert_uint_eq(room, 9);
    memcpy(dst, "12345678\n", 9);
    lbuf_commit(&b, 9);
    char *line;
    size_t len;
    ck_assert_int_eq(lbuf_next(&b, &line, &len), 1);
    volatile char sink = 0;
    for (size_t i = 0; i <= len + LBUF_PADDING; i++)
        sink ^= line[i];
    (void)sink;
    lbuf_done(&b);
}
END_TEST

struct num_case {
    const char *in;
    int r;
    int64_t ns;
};

static const struct num_case us_cases[] = {
    {"0", 0, 0},
    {"1", 0, 1000},
    {"-1", 0, -1000},
    {"1.5", 0, 1500},
    {"0.0004", 0, 0},
    {"0.0005", 0, 1},  /* half away from zero */
    {"-0.0005", 0, -1},
    {"1700000000123456.789", 0, 1700000000123456789LL},
    {"1700000000123456.7894", 0, 1700000000123456789LL},
    {"1700000000123456.7895", 0, 1700000000123456790LL},
    {"1.7e3", 0, 1700000},
    {"1.5E-3", 0, 2}, /* 1.5 ns rounds to 2 */
    {"12.25e+2", 0, 1225000},
    {"9223372036854775.807", 0, INT64_MAX},
    {"-9223372036854775.808", 0, INT64_MIN},
    {"9223372036854775.808", -ERANGE, 0},
    {"1e300", -ERANGE, 0},
    {"1e-300", 0, 0},
    {" 42 ", 0, 42000},
    {"", -EINVAL, 0},
    {"-", -EINVAL, 0},
    {"01", -EINVAL, 0},
    {"1.", -EINVAL, 0},
    {".5", -EINVAL, 0},
    {"1e", -EINVAL, 0},
    {"NaN", -EINVAL, 0},
    {"Infinity", -EINVAL, 0},
    {"1x", -EINVAL, 0},
    {"\"1\"", -EINVAL, 0},
    /* Around the plain spelling's fast path (<= 16 digits, <= 3 decimals) and its edges. */
    {"1693000000000006.500", 0, 1693000000000006500LL},
    {"1234567890123456", 0, 1234567890123456000LL},
    {"9999999999999999.999", -ERANGE, 0},
    {"12345678901234567", -ERANGE, 0},
    {"0.000000000000000000001", 0, 0},
    {"-9223372036854775.807", 0, -INT64_MAX},
    {"0.5", 0, 500},
    {"0.120", 0, 120},
    {"-0.000", 0, 0},
    {"-1.2345", 0, -1235},
    {"5e0", 0, 5000},
    {"7 ", 0, 7000},
    {"00.5", -EINVAL, 0},
    {"7.", -EINVAL, 0},
    {"-.5", -EINVAL, 0},
    {"1.2.3", -EINVAL, 0},
    {"--1", -EINVAL, 0},
    {"1.5x", -EINVAL, 0},
};

START_TEST(test_num_us_to_ns_table)
{
    const struct num_case *c = &us_cases[_i];
    int64_t v = 12345;
    int r = num_us_to_ns(c->in, strlen(c->in), &v);
    ck_assert_msg(r == c->r, "%s: r=%d, want %d", c->in, r, c->r);
    if (r == 0)
        ck_assert_msg(v == c->ns, "%s: %lld, want %lld", c->in, (long long)v, (long long)c->ns);
    else
        ck_assert_int_eq(v, 12345); /* untouched on failure */
}
END_TEST

START_TEST(test_num_parse_i64)
{
    int64_t v;
    ck_assert_int_eq(num_parse_i64("42", 2, &v), 0);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(num_parse_i64("4.2e1", 5, &v), 0);
    ck_assert_int_eq(v, 42);
    ck_assert_int_eq(num_parse_i64("4.0", 3, &v), 0);
    ck_assert_int_eq(v, 4);
    ck_assert_int_eq(num_parse_i64("4.5", 3, &v), -EINVAL);
    ck_assert_int_eq(num_parse_i64("9223372036854775807", 19, &v), 0);
    ck_assert_int_eq(v, INT64_MAX);
    ck_assert_int_eq(num_parse_i64("9223372036854775808", 19, &v), -ERANGE);
    ck_assert_int_eq(num_parse_i64("-9223372036854775808", 20, &v), 0);
    ck_assert_int_eq(v, INT64_MIN);
    ck_assert_int_eq(num_parse_i64("123456789012345678901", 21, &v), -EINVAL);
}
END_TEST

static char *json_of(const char *s, size_t n)
{
    static char out[512];
    struct sbuf b;
    sbuf_init(&b, 1 << 20);
    sbuf_json_str(&b, s, n);
    ck_assert_int_eq(b.error, 0);
    snprintf(out, sizeof out, "%s", b.data);
    sbuf_done(&b);
    return out;
}

START_TEST(test_sbuf_json_str_escapes)
{
    ck_assert_str_eq(json_of("plain", 5), "\"plain\"");
    ck_assert_str_eq(json_of("<script>\"q\"&", 12), "\"\\u003cscript\\u003e\\\"q\\\"\\u0026\"");
    ck_assert_str_eq(json_of("a\nb\tc\\", 6), "\"a\\nb\\tc\\\\\"");
    ck_assert_str_eq(json_of("\x01", 1), "\"\\u0001\"");
    ck_assert_str_eq(json_of("\xff", 1), "\"\\ufffd\"");
    ck_assert_str_eq(json_of("\xc3\xa9", 2), "\"\xc3\xa9\"");             /* é kept */
    ck_assert_str_eq(json_of("\xc3", 1), "\"\\ufffd\"");                   /* truncated */
    ck_assert_str_eq(json_of("\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    ck_assert_str_eq(json_of("\xe4\xb8\xad\xf0\x9f\x98\x80", 7), "\"\xe4\xb8\xad\xf0\x9f\x98\x80\"");
    ck_assert_str_eq(json_of("a\0b", 3), "\"a\\u0000b\"");
}
END_TEST

START_TEST(test_sbuf_json_us_exact)
{
    struct sbuf b;
    sbuf_init(&b, 1024);
    sbuf_json_us(&b, 1700000000123456789LL);
    sbuf_addc(&b, ' ');
    sbuf_json_us(&b, 1500);
    sbuf_addc(&b, ' ');
    sbuf_json_us(&b, 2000);
    sbuf_addc(&b, ' ');
    sbuf_json_us(&b, -1);
    sbuf_addc(&b, ' ');
    sbuf_json_us(&b, INT64_MIN);
    ck_assert_str_eq(b.data, "1700000000123456.789 1.5 2 -0.001 -9223372036854775.808");
    sbuf_done(&b);
}
END_TEST

START_TEST(test_sbuf_cap_fails_once)
{
    struct sbuf b;
    sbuf_init(&b, 8);
    sbuf_adds(&b, "12345");
    sbuf_adds(&b, "6789");
    ck_assert_int_eq(b.error, -EMSGSIZE);
    sbuf_adds(&b, "x");
    ck_assert_int_eq(b.error, -EMSGSIZE);
    ck_assert_ptr_null(sbuf_steal(&b, NULL));
    sbuf_done(&b);
}
END_TEST

static char *const test_env[] = {"HOME=/home/u", "XDG_RUNTIME_DIR=/run/user/7",
                                 "STEPSCOPE_MAX_LINE_BYTES=2048", "STEPSCOPE_HTTP=127.0.0.1:9090",
                                 NULL};

START_TEST(test_config_defaults_from_xdg)
{
    struct config c;
    char *const env[] = {"HOME=/home/u", NULL};
    config_init(&c, env, 1234, "/s");
    ck_assert_str_eq(c.socket, "/tmp/stepscope-1234.sock");
    ck_assert_str_eq(c.data_dir, "/home/u/.local/state/stepscope");
    ck_assert_str_eq(c.http, "127.0.0.1:8080");
    ck_assert_uint_eq(c.max_line_bytes, 1048576);
    ck_assert_uint_eq(c.max_connections, 1024);
    config_init(&c, test_env, 1234, "/s");
    ck_assert_str_eq(c.socket, "/run/user/7/stepscope.sock");
    char *const env2[] = {"XDG_STATE_HOME=/st", "HOME=/home/u", NULL};
    config_init(&c, env2, 1, "/s");
    ck_assert_str_eq(c.data_dir, "/st/stepscope");
}
END_TEST

START_TEST(test_config_precedence)
{
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, test_env, 0, "");
    const char *file = "# comment\nmax_line_bytes = 4096  # trailing\n\nmax_connections=7\n"
                       "http = 127.0.0.1:7070\nsocket = /tmp/from-file.sock\n";
    ck_assert_int_eq(config_load_text(&c, file, strlen(file), err), 0);
    ck_assert_uint_eq(c.max_line_bytes, 4096);
    ck_assert_str_eq(c.socket, "/tmp/from-file.sock");
    ck_assert_int_eq(config_load_env(&c, test_env, err), 0);
    ck_assert_uint_eq(c.max_line_bytes, 2048);      /* env beats file */
    ck_assert_uint_eq(c.max_connections, 7);        /* file beats default */
    ck_assert_str_eq(c.http, "127.0.0.1:9090");
    ck_assert_int_eq(config_set(&c, "http", "127.0.0.1:0", err), 0); /* command line beats env */
    ck_assert_str_eq(c.http, "127.0.0.1:0");
}
END_TEST

/* helper_rules is a path: empty by default (the helper's own defaults), set from the file. */
START_TEST(test_config_helper_rules_path)
{
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, test_env, 0, "");
    ck_assert_str_eq(c.helper_rules, "");
    const char *file = "helper_rules = /etc/stepscope/helper.conf\n";
    ck_assert_int_eq(config_load_text(&c, file, strlen(file), err), 0);
    ck_assert_str_eq(c.helper_rules, "/etc/stepscope/helper.conf");
    ck_assert_int_eq(config_set(&c, "helper_rules", "", err), 0);
    ck_assert_str_eq(c.helper_rules, "");
}
END_TEST

START_TEST(test_config_errors_name_the_line)
{
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, NULL, 0, "");
    const char *bad = "max_connections = 5\nnot an assignment\n";
    ck_assert_int_eq(config_load_text(&c, bad, strlen(bad), err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "line 2"));
    const char *unknown = "\nfrobnicate = 1\n";
    ck_assert_int_eq(config_load_text(&c, unknown, strlen(unknown), err), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "frobnicate"));
    ck_assert_int_eq(config_set(&c, "max_line_bytes", "12x", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "max_line_bytes", "-5", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "max_line_bytes", "99999999999999999999999", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "max_connections", "0", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "http", "nocolon", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "http", "1.2.3.4:65536", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "durability", "sometimes", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "durability", "full", err), 0);
    ck_assert_int_eq(c.durability, CONFIG_DURABILITY_FULL);
    ck_assert_uint_eq(c.socket_mode, 0660); /* the table's default */
    ck_assert_int_eq(config_set(&c, "socket_mode", "0600", err), 0);
    ck_assert_uint_eq(c.socket_mode, 0600);
    ck_assert_int_eq(config_set(&c, "socket_mode", "666", err), 0);
    ck_assert_uint_eq(c.socket_mode, 0666);
    ck_assert_int_eq(config_set(&c, "socket_mode", "0460", err), -EINVAL); /* owner cannot write */
    ck_assert_int_eq(config_set(&c, "socket_mode", "0", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "socket_mode", "01660", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "socket_mode", "0680", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "socket_mode", "", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "socket_mode", "-660", err), -EINVAL);
    ck_assert_uint_eq(c.socket_mode, 0666); /* a refused value changes nothing */
    char huge[CONFIG_PATH_MAX + 10];
    memset(huge, 'a', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    ck_assert_int_eq(config_set(&c, "socket", huge, err), -ENAMETOOLONG);
    char *const env[] = {"STEPSCOPE_MAX_CONNECTIONS=lots", NULL};
    ck_assert_int_eq(config_load_env(&c, env, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "STEPSCOPE_MAX_CONNECTIONS"));
}
END_TEST

START_TEST(test_config_hostport)
{
    char addr[64];
    uint16_t port;
    ck_assert_int_eq(config_parse_hostport("127.0.0.1:8080", addr, sizeof addr, &port), 0);
    ck_assert_str_eq(addr, "127.0.0.1");
    ck_assert_uint_eq(port, 8080);
    ck_assert_int_eq(config_parse_hostport("[::1]:0", addr, sizeof addr, &port), 0);
    ck_assert_str_eq(addr, "::1");
    ck_assert_uint_eq(port, 0);
    ck_assert_int_eq(config_parse_hostport(":80", addr, sizeof addr, &port), -EINVAL);
    ck_assert_int_eq(config_parse_hostport("h:", addr, sizeof addr, &port), -EINVAL);
    ck_assert_int_eq(config_parse_hostport("h:8o", addr, sizeof addr, &port), -EINVAL);
}
END_TEST

/* auth_token: empty (off), or CONFIG_TOKEN_MIN+ bytes of visible ASCII; the token file gives
 * its first line, trimmed; both at once, an empty file or a bad token are refused. */
START_TEST(test_config_auth_token)
{
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, NULL, 0, "");
    ck_assert_str_eq(c.auth_token, "");
    ck_assert_int_eq(config_set(&c, "auth_token", "0123456789abcdef", err), 0);
    ck_assert_str_eq(c.auth_token, "0123456789abcdef");
    ck_assert_int_eq(config_set(&c, "auth_token", "short", err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "at least 16"));
    ck_assert_int_eq(config_set(&c, "auth_token", "0123456789 abcdef", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "auth_token", "0123456789abcdef\x7f", err), -EINVAL);
    ck_assert_int_eq(config_set(&c, "auth_token", "0123456789abcde\xc3\xa9", err), -EINVAL);
    ck_assert_str_eq(c.auth_token, "0123456789abcdef"); /* failures leave it */
    ck_assert_int_eq(config_set(&c, "auth_token", "", err), 0);
    ck_assert_int_eq(config_load_token(&c, err), 0); /* no file: nothing to do */

    char path[] = "/tmp/ss-token-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    static const char good[] = "  s3cr3t-t0ken-0123456789 \r\nsecond line ignored\n";
    ck_assert_int_eq(write(fd, good, sizeof good - 1), (ssize_t)(sizeof good - 1));
    ck_assert_int_eq(config_set(&c, "auth_token_file", path, err), 0);
    ck_assert_int_eq(config_load_token(&c, err), 0);
    ck_assert_str_eq(c.auth_token, "s3cr3t-t0ken-0123456789");
    /* Both given: refused. */
    ck_assert_int_eq(config_load_token(&c, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not both"));
    c.auth_token[0] = '\0';
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    ck_assert_int_eq(config_load_token(&c, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "empty"));
    ck_assert_int_eq(pwrite(fd, "tooshort\n", 9, 0), 9);
    ck_assert_int_eq(config_load_token(&c, err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "at least"));
    close(fd);
    unlink(path);
    ck_assert_int_eq(config_load_token(&c, err), -ENOENT);
    ck_assert_str_eq(c.auth_token, "");
}
END_TEST

START_TEST(test_config_http_is_loopback)
{
    ck_assert(config_http_is_loopback("127.0.0.1:8080"));
    ck_assert(config_http_is_loopback("127.1.2.3:0"));
    ck_assert(config_http_is_loopback("[::1]:80"));
    ck_assert(config_http_is_loopback("[::ffff:127.0.0.1]:80"));
    ck_assert(!config_http_is_loopback("0.0.0.0:8080"));
    ck_assert(!config_http_is_loopback("128.0.0.1:8080"));
    ck_assert(!config_http_is_loopback("10.0.0.1:8080"));
    ck_assert(!config_http_is_loopback("[::]:8080"));
    ck_assert(!config_http_is_loopback("[::ffff:10.0.0.1]:80"));
    ck_assert(!config_http_is_loopback("localhost:8080"));
    ck_assert(!config_http_is_loopback("nonsense"));
}
END_TEST

START_TEST(test_config_allowed_hosts)
{
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, NULL, 0, "");
    ck_assert_str_eq(c.http_allowed_hosts, "");
    ck_assert_int_eq(config_set(&c, "http_allowed_hosts", "box.example, Stepscope-1.lan,*", err),
                     0);
    ck_assert_int_eq(config_set(&c, "http_allowed_hosts", "10.0.0.5,[fe80::1]", err), 0);
    ck_assert_str_eq(c.http_allowed_hosts, "10.0.0.5,[fe80::1]");
    static const char *const bad[] = {"box:8080", "evil/x", "[::1", "[]", "a\tb", "h@st", "x_y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(config_set(&c, "http_allowed_hosts", bad[i], err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "http_allowed_hosts"));
    }
    ck_assert_str_eq(c.http_allowed_hosts, "10.0.0.5,[fe80::1]"); /* failures leave it */
}
END_TEST

/* config/stepscoped.conf documents every option with its default: the file is the manual, so
 * an option added to the table without a line there fails here. */
START_TEST(test_config_sample_file_documents_every_option)
{
    const char *root = getenv("SOURCE_ROOT");
    ck_assert_ptr_nonnull(root);
    char path[4096];
    snprintf(path, sizeof path, "%s/config/stepscoped.conf", root);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    for (const struct config_option *o = config_options; o->name; o++) {
        char want[256];
        if (o->def)
            snprintf(want, sizeof want, "# %s = %s\n", o->name, o->def);
        else
            snprintf(want, sizeof want, "# %s = ", o->name);
        ck_assert_msg(strstr(text, want) != NULL, "%s does not document \"%s\"", path, want);
    }
    /* And the whole file, uncommented, is a valid configuration. */
    struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, NULL, 0, "");
    ck_assert_msg(config_load_text(&c, text, n, err) == 0, "%s", err);
}
END_TEST

/* ---- json: the reader (text without padding) ---- */

START_TEST(test_json_array_has_string)
{
    static const struct {
        const char *text;
        bool has;
    } cases[] = {
        {"[\"x\",\"capture\"]", true},
        {" [ \"capt\\u0075re\" ] ", true}, /* compared unescaped */
        {"[[\"capture\"],\"capture\"]", true},
        {"[1,{\"a\":\"capture\"},null,\"capture\"]", true},
        {"[[\"capture\"]]", false},
        {"[{\"capture\":1}]", false},
        {"[\"captures\"]", false},
        {"[\"captur\"]", false},
        {"[]", false},
        {"[\"capture", false}, /* cut short: never read past the end */
        {"[\"\\u00", false},
        {"{\"capture\":1}", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(json_array_has_string(cases[i].text, strlen(cases[i].text), "capture") ==
                          cases[i].has,
                      "%s", cases[i].text);
}
END_TEST

START_TEST(test_json_reader_walks_nested_text)
{
    const char *t = "{\"a\":[1,2.5e1,-3],\"s\\u0074r\":\"x\\ny\\u00e9\",\"deep\":{\"k\":[{},[]]},"
                    "\"n\":null,\"b\":true}";
    struct json_reader r;
    json_reader_init(&r, t, strlen(t));
    ck_assert(json_object_begin(&r));
    char key[8];
    double sum = 0;
    int members = 0;
    while (json_member(&r, key, sizeof key)) {
        members++;
        if (strcmp(key, "a") == 0) {
            ck_assert(json_array_begin(&r));
            while (json_element(&r)) {
                double v;
                ck_assert(json_read_double(&r, &v));
                sum += v;
            }
        } else if (strcmp(key, "str") == 0) {
            char v[4];
            size_t n;
            ck_assert(json_read_string(&r, v, sizeof v, &n));
            ck_assert_uint_eq(n, 5); /* x \n y and a two-byte é */
            ck_assert_str_eq(v, "x\ny");
        } else {
            ck_assert(json_skip(&r));
        }
    }
    ck_assert(!r.bad);
    ck_assert_int_eq(members, 5);
    ck_assert(sum == 23.0);
    /* Text cut anywhere fails, and never reads past its end (ASan). */
    for (size_t n = 0; n < strlen(t); n++) {
        char *cut = malloc(n ? n : 1);
        memcpy(cut, t, n);
        json_reader_init(&r, cut, n);
        ck_assert_msg(!json_skip(&r), "cut at %zu", n);
        free(cut);
    }
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("lbuf");
    tcase_add_loop_test(tc, test_lbuf_output_independent_of_chunking, 1, 40);
    tcase_add_test(tc, test_lbuf_counts_lines_and_pending);
    tcase_add_test(tc, test_lbuf_tiny_buffer_always_has_room);
    tcase_add_test(tc, test_lbuf_padding_follows_every_line);
    suite_add_tcase(s, tc);
    tc = tcase_create("num");
    tcase_add_loop_test(tc, test_num_us_to_ns_table, 0,
                        (int)(sizeof us_cases / sizeof us_cases[0]));
    tcase_add_test(tc, test_num_parse_i64);
    suite_add_tcase(s, tc);
    tc = tcase_create("sbuf");
    tcase_add_test(tc, test_sbuf_json_str_escapes);
    tcase_add_test(tc, test_sbuf_json_us_exact);
    tcase_add_test(tc, test_sbuf_cap_fails_once);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_test(tc, test_json_array_has_string);
    tcase_add_test(tc, test_json_reader_walks_nested_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("config");
    tcase_add_test(tc, test_config_defaults_from_xdg);
    tcase_add_test(tc, test_config_precedence);
    tcase_add_test(tc, test_config_errors_name_the_line);
    tcase_add_test(tc, test_config_helper_rules_path);
    tcase_add_test(tc, test_config_hostport);
    tcase_add_test(tc, test_config_sample_file_documents_every_option);
    tcase_add_test(tc, test_config_auth_token);
    tcase_add_test(tc, test_config_http_is_loopback);
    tcase_add_test(tc, test_config_allowed_hosts);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
