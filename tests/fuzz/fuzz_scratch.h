/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fuzz targets that write each input to real files (tfile, msdir): where those
 * files go. STEPSCOPE_FUZZ_TMP if set, else /dev/shm when it is a writable directory (a tmpfs:
 * creating, writing and removing files there costs no disk journal; on this machine's ext4 /tmp
 * the two targets ran 6 (msdir) and 18 (tfile) times slower), else /tmp. The files still go through the real open/read/readdir
 * path; only the filesystem under them is faster.
 */
#ifndef STEPSCOPE_FUZZ_SCRATCH_H
#define STEPSCOPE_FUZZ_SCRATCH_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Writes "<scratch>/<name>.<pid><suffix>" to buf[0, n). */
static inline void fuzz_scratch_path(char *buf, size_t n, const char *name, const char *suffix)
{
    const char *base = getenv("STEPSCOPE_FUZZ_TMP");
    if (!base || !base[0])
        base = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(buf, n, "%s/%s.%ld%s", base, name, (long)getpid(), suffix);
}
#endif
