/* SPDX-License-Identifier: MIT */
/* Built by tests/pkg/run against the installed libstepscope (pkg-config stepscope): records three
 * steps of job argv[2] to socket argv[1] and waits for the daemon's acknowledgement. Exit 0 when
 * acknowledged, 1 when not; prints the connect counters either way. */
#include <stdio.h>
#include <stepscope.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: client SOCKET JOB\n");
        return 2;
    }
    struct ss_options opt;
    ss_options_init(&opt);
    opt.socket_path = argv[1];
    opt.job = argv[2];
    opt.close_timeout_ms = 500;
    struct ss_client *c = ss_client_new(&opt);
    if (!c)
        return 2;
    for (int64_t s = 0; s < 3; s++) {
        ss_step_begin(c, s);
        ss_step_end(c, 8);
    }
    int r = ss_flush(c, 3000000000LL);
    struct ss_client_stats st;
    ss_stats(c, &st);
    printf("flush=%d connects=%llu connect_failures=%llu acked=%llu\n", r,
           (unsigned long long)st.connects, (unsigned long long)st.connect_failures,
           (unsigned long long)st.acked);
    ss_client_free(c);
    return r == 0 ? 0 : 1;
}
