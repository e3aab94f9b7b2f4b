/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the configuration parser. Invariants: whatever the text, every numeric option stays
 * inside its documented bounds and every string stays NUL-terminated inside its field.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct config c;
    char err[CONFIG_ERR_MAX];
    config_init(&c, NULL, 0, "");
    int r = config_load_text(&c, (const char *)data, size, err);
    if (r < 0 && memchr(err, '\0', sizeof err) == NULL)
        abort();
    if (memchr(c.socket, '\0', sizeof c.socket) == NULL ||
        memchr(c.http, '\0', sizeof c.http) == NULL ||
        memchr(c.data_dir, '\0', sizeof c.data_dir) == NULL ||
        memchr(c.log_level, '\0', sizeof c.log_level) == NULL)
        abort();
    if (c.max_line_bytes < 256 || c.max_line_bytes > (1u << 30) || c.max_connections < 1 ||
        c.max_connections > 65536 || c.flush_interval_ms < 1 || c.http_threads < 1 ||
        c.http_threads > 256)
        abort();
    return 0;
}
