/* SPDX-License-Identifier: MIT */
/*
 * store_bench: how fast the store makes timeline events durable. It appends N synthetic 240-byte
 * Chrome trace lines (default 2,000,000) in batches of 1000, as ingest would, flushes every 20 ms
 * like the daemon's flush timer, honours -EAGAIN by waiting for the writer, and stops the clock
 * when store_flush_wait() says everything is committed. The lines are generated before the clock
 * starts. It prints events/s durable, the loop thread's time in store_append() per event, and the
 * compression ratio of the stored blocks.
 *
 * Lines look like Kineto events (repeated keys and kernel names, varying numbers) padded with
 * random digits, the 'realistic but not flattering' case; all-random text compresses about 2x less.
 *
 * Usage: store_bench [N] [DIR]  (DIR defaults to a new directory under $TMPDIR or /tmp, removed
 * at the end). Build: executable('store_bench', 'store_bench.c', dependencies: [store_dep]).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/clock.h"
#include "../../daemon/core/stats.h"
#include "../../daemon/store/store.h"
#include "../../daemon/store/store_query.h"

#define LINE 240
#define CHUNK 1000

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const kernels[] = {
    "volta_sgemm_128x64_nn", "void at::native::vectorized_elementwise_kernel<4>",
    "ncclKernel_AllReduce_RING_LL_Sum_float", "cudnn::winograd_nonfused::winogradForwardData4x4",
    "aten::addmm", "aten::convolution", "Memcpy HtoD (Pageable -> Device)", "aten::relu_",
    "Optimizer.step#SGD.step", "cudaLaunchKernel", "aten::batch_norm", "aten::max_pool2d",
};
static const char *const cats[] = {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy"};

/* One line of exactly LINE bytes, shaped like a Kineto event: repeated keys and names, varying
 * numbers, and a filler of random digits to reach LINE so that padding cannot flatter the ratio. */
static void make_line(char *out, uint64_t i, int64_t *ret_ts_ns, int64_t *ret_dur_ns)
{
    static int64_t ts_ns = 1712345678901000000LL;
    static const int grids[] = {64, 128, 256, 1024};
    ts_ns += (int64_t)(next_rand() % 5000);
    int64_t dur_ns = (int64_t)(next_rand() % 200000);
    const char *name = kernels[next_rand() % (sizeof kernels / sizeof kernels[0])];
    const char *cat = cats[next_rand() % 4];
    int k = snprintf(out, LINE + 1,
                     "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":0,\"tid\":%u,"
                     "\"ts\":%" PRId64 ".%03d,\"dur\":%" PRId64 ".%03d,\"args\":{\"External id\":%" PRIu64
                     ",\"correlation\":%" PRIu64 ",\"stream\":%u,\"grid\":[%d,1,1],\"seq\":\"",
                     cat, name, (unsigned)(next_rand() % 16), ts_ns / 1000, (int)(ts_ns % 1000),
                     dur_ns / 1000, (int)(dur_ns % 1000), i / 3, 100000 + i,
                     (unsigned)(next_rand() % 8), grids[next_rand() % 4]);
    if (k > LINE - 3)
        k = LINE - 3;
    while (k < LINE - 3)
        out[k++] = (char)('0' + next_rand() % 10);
    memcpy(out + k, "\"}}", 3);
    *ret_ts_ns = ts_ns;
    *ret_dur_ns = dur_ns;
}

static int64_t cpu_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Appends recs[0, n) as seqs base.. and waits until they are durable; prints the figures. */
static int run_pass(const char *label, struct store *st, int64_t session_id, struct stats *stats,
                    uint64_t max_buffered, const struct record *recs, uint64_t n, uint64_t base)
{
    uint64_t commits0 = STATS_GET(stats, commits);
    int64_t t0 = clock_mono_ns(), append_ns = 0, last_flush = t0;
    int64_t proc0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), loop0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    uint64_t pauses = 0;
    int r;
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        int64_t a = clock_mono_ns();
        r = store_append(st, session_id, recs + i, m, base + i + m);
        int64_t b = clock_mono_ns();
        append_ns += b - a;
        if (r == -EAGAIN) {
            /* What ingest does: stop reading until the writer catches up. */
            pauses++;
            store_flush(st);
            while (store_buffered_bytes(st) > max_buffered / 2) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        } else if (r < 0) {
            fprintf(stderr, "store_append: %d\n", r);
            return r;
        }
        if (b - last_flush >= 20000000) {
            store_flush(st);
            last_flush = b;
        }
    }
    r = store_flush_wait(st, 120 * 1000000000LL);
    int64_t t1 = clock_mono_ns();
    if (r < 0) {
        fprintf(stderr, "store_flush_wait: %d\n", r);
        return r;
    }
    int64_t loop_cpu = cpu_ns(CLOCK_THREAD_CPUTIME_ID) - loop0;
    int64_t writer_cpu = cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - proc0 - loop_cpu;
    double secs = (double)(t1 - t0) / 1e9;
    printf("%s: %" PRIu64 " events x %d bytes: %.3f s, %.2f M events/s durable, %.0f MB/s raw\n",
           label, n, LINE, secs, (double)n / secs / 1e6, (double)n * LINE / secs / 1e6);
    printf("  store_append %.1f ns/event (loop thread), writer %.0f ns/event CPU; %" PRIu64
           " commits, %" PRIu64 " -EAGAIN pauses\n",
           (double)append_ns / (double)n, (double)writer_cpu / (double)n,
           STATS_GET(stats, commits) - commits0, pauses);
    return 0;
}

static void rm_dir(const char *dir)
{
    const char *names[] = {"stepscope.db", "stepscope.db-wal", "stepscope.db-shm", "lock"};
    char p[4200];
    for (size_t i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        (void)unlink(p);
    }
    (void)rmdir(dir);
}

int main(int argc, char **argv)
{
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2000000;
    char dir[4096];
    bool own_dir = argc <= 2;
    if (own_dir) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/store_bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return EXIT_FAILURE;
        }
    } else {
        snprintf(dir, sizeof dir, "%s", argv[2]);
    }

    char *text = malloc(n * (LINE + 1));
    struct record *recs = calloc(n, sizeof *recs);
    if (!text || !recs) {
        fprintf(stderr, "out of memory\n");
        return EXIT_FAILURE;
    }
    for (uint64_t i = 0; i < n; i++) {
        char *line = text + i * (LINE + 1);
        struct record *r = &recs[i];
        make_line(line, i, &r->ts_ns, &r->dur_ns);
        r->kind = RECORD_TRACE;
        r->seq = i;
        r->raw = line;
        r->raw_len = LINE;
        r->ph = 'X';
    }

    struct stats stats = {0};
    struct store_config cfg = {
        .data_dir = dir,
        .retention_bytes_per_job = 0,
        .max_buffered_bytes = 256u << 20,
        .durability = CONFIG_DURABILITY_NORMAL,
        .stats = &stats,
    };
    struct store *st = NULL;
    char err[STORE_ERR_MAX];
    int r = store_open(&cfg, &st, err);
    if (r < 0) {
        fprintf(stderr, "store_open: %s\n", err);
        return EXIT_FAILURE;
    }
    struct record_hello h = {.job = "bench", .run = "", .stream = "", .host = "", .framework = "",
                             .framework_version = "", .clock = "", .rank = 0, .world_size = 1,
                             .pid = -1, .raw = "{}", .raw_len = 2};
    struct record_welcome w;
    if (store_session_open(st, &h, &w, err) < 0) {
        fprintf(stderr, "store_session_open: %s\n", err);
        return EXIT_FAILURE;
    }

    /* The cold pass pays for first-touch memory up to max_buffered_bytes; the warm pass, on the
     * same store, is what a daemon that has been running sees. */
    if (run_pass("cold", st, w.session_id, &stats, cfg.max_buffered_bytes, recs, n, 0) < 0 ||
        run_pass("warm", st, w.session_id, &stats, cfg.max_buffered_bytes, recs, n, n) < 0)
        return EXIT_FAILURE;
    struct store_info info;
    store_query_info(st, &info);
    store_close(st);

    printf("blocks %" PRId64 ", raw %" PRId64 " B, stored %" PRId64 " B, ratio %.2fx, db+wal %"
           PRId64 " B\n",
           info.blocks, info.block_raw_bytes, info.block_bytes,
           info.block_bytes ? (double)info.block_raw_bytes / (double)info.block_bytes : 0.0,
           info.db_bytes);
    printf("sample line: %.*s\n", LINE, text);
    if (own_dir)
        rm_dir(dir);
    free(text);
    free(recs);
    return EXIT_SUCCESS;
}
