/* SPDX-License-Identifier: MIT */
/*
 * Replays a fuzz corpus without libFuzzer: every file under the directories (or the files) given
 * on the command line goes through LLVMFuzzerTestOneInput once. A target signals a broken
 * invariant by aborting, so a non-zero exit (or a sanitizer report) fails the test.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            uint8_t *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = p;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0)
            break;
        n += k;
    }
    fclose(f);
    /* An exact-size copy, so ASan catches a read one past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    int n_run = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) < 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            failed |= run_file(argv[i]) < 0;
            n_run++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (!d) {
            perror(argv[i]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed |= run_file(path) < 0;
            n_run++;
        }
        closedir(d);
    }
    printf("replayed %d inputs\n", n_run);
    if (n_run == 0) {
        fprintf(stderr, "no corpus inputs found\n");
        return 1;
    }
    return failed ? 1 : 0;
}
