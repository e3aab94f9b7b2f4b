/* SPDX-License-Identifier: MIT */
/*
 * common: what the shipper (cluster.c) and the cluster view's puller (pull.c) share: the wait
 * that a stop interrupts, and a curl handle's setup.
 */
#include <errno.h>
#include <time.h>

#include "cluster_int.h"

bool cluster__nap(pthread_mutex_t *mu, pthread_cond_t *cond, atomic_bool *stop, uint64_t ms,
                  bool (*wake)(void *ud), void *ud)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(mu);
    while (!atomic_load(stop) && !(wake && wake(ud))) {
        if (pthread_cond_timedwait(cond, mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(mu);
    return atomic_load(stop);
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    return atomic_load((atomic_bool *)ud) ? 1 : 0;
}

void cluster__curl_setup(CURL *h, long connect_ms, long timeout_ms, curl_write_callback on_write,
                         void *answer, atomic_bool *stop, const char *user, const char *password)
{
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, stop);
    if (user[0]) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, password);
    }
}
