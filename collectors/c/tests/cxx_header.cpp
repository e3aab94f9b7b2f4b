/* SPDX-License-Identifier: MIT */
/* stepscope.h compiles as C++ and its functions link from C++ (extern "C"); no daemon is
 * needed: the client must work (and free quickly) with its socket absent. */
#include "stepscope.h"

#include <cstdio>

int main()
{
    struct ss_options o;
    ss_options_init(&o);
    o.socket_path = "/nonexistent/stepscope-cxx.sock";
    o.job = "cxx";
    struct ss_client *c = ss_client_new(&o);
    if (!c)
        return 1;
    int64_t t = ss_now_ns();
    int r = ss_span(c, "cxx", nullptr, t, t + 1000);
    struct ss_client_stats st;
    ss_stats(c, &st);
    ss_client_free(c);
    std::printf("span=%d records=%llu\n", r, (unsigned long long)st.records);
    return r == 0 && st.records == 1 ? 0 : 1;
}
