/* SPDX-License-Identifier: MIT */
/*
 * schema: the ClickHouse migrations, in order (cluster_int.h). Their text is schema/NNNN_name.sql,
 * compiled in by daemon/web/embed.py (meson.build), so a node never reads SQL from disk.
 */
#include "cluster_int.h"

extern const char cluster__sql_0000[], cluster__sql_0001[], cluster__sql_0002[],
    cluster__sql_0003[], cluster__sql_0004[], cluster__sql_0005[], cluster__sql_0006[],
    cluster__sql_0007[];

const struct cluster_migration cluster__migrations[] = {
    {0, "0000_bootstrap", cluster__sql_0000},
    {1, "0001_tables", cluster__sql_0001},
    {2, "0002_step_ranks", cluster__sql_0002},
    {3, "0003_sessions", cluster__sql_0003},
    {4, "0004_events", cluster__sql_0004},
    {5, "0005_host_pipelines", cluster__sql_0005},
    {6, "0006_event_blocks", cluster__sql_0006},
    {7, "0007_deletes", cluster__sql_0007},
};
const size_t cluster__n_migrations = sizeof cluster__migrations / sizeof cluster__migrations[0];
