/* SPDX-License-Identifier: MIT */
/*
 * cluster: ships what this node's store committed to a ClickHouse cluster (issue 16), so that
 * many hosts' ranks land in one engine. SQLite stays the node's store and becomes its outbox:
 * the shipper reads committed spans (and their blocks whole: the verbatim lines, one row per
 * block, the store's own zstd frame), steps and queue samples
 * past a cursor kept in SQLite
 * (store_ship.h), and the per-step, per-rank aggregates live analysis computed (live_query.h:
 * step stages and breakdown, which are not additive in SQL; re-sent while a step fills in),
 * encodes them (the spans as a Native block, the rest as RowBinary), compresses each request
 * (gzip, or none: cluster_compression) and POSTs it to
 * ClickHouse's HTTP interface (libcurl, only here in the daemon); the cursor moves only after
 * ClickHouse took every table's part of the batch. The ClickHouse schema is in schema/NNNN_name.sql,
 * applied in order at start and recorded in stepscope.schema_migrations (the shipper's only
 * other ClickHouse SQL is its INSERTs, in cluster.c).
 *
 * Exactly once: every row carries (node, source rowid, line index), the tables are
 * ReplacingMergeTree ordered by keys that include them, and readers use FINAL (or argMax);
 * a batch sent twice (a retry after a timeout, a node killed between the insert and the cursor
 * save) collapses to one copy. docs/ARCHITECTURE.md says why this and not insert tokens.
 *
 * Deleted jobs: a job deleted on the node (store_job_delete()) is queued in the store; the
 * shipper deletes this node's rows of it in ClickHouse (ALTER TABLE ... DELETE, every table)
 * before it ships anything else (store_ship.h says how the store makes it wait), then records
 * the delete in stepscope.deletes, which the other nodes' cluster views carry out (pull.c).
 *
 * Failure: an attempt that fails (no connection, timeout, or ClickHouse answering an error such
 * as a read-only user or a missing table) is counted, its reason kept (stats), and retried after
 * an exponential backoff (250 ms doubling to retry_max_ms); the node serves locally meanwhile,
 * and afterwards catches up at most max_rows_per_s. Ingest and training never wait for it.
 *
 * Threading: cluster_start() and cluster_stop() on the main thread; the shipper runs on its own
 * thread and touches only its store_ship connection, its curl handle, live snapshots (through
 * live_query.h, any thread) and the stats atomics.
 * Ownership: cfg strings are copied; store and stats are borrowed and must outlive the cluster.
 */
#ifndef STEPSCOPE_CLUSTER_H
#define STEPSCOPE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "../core/config.h"
#include "../core/stats.h"

#define CLUSTER_ERR_MAX 512

struct store;
struct live;
struct cluster;

/* What the cluster view (pull.c, its own thread) asks of the daemon. */
struct cluster_ops {
    /* Deletes ranks[0..n) of job here (all: the job's every rank, so the job goes): their node
     * deleted the job. Returns 0 once committed, -ENOENT (no such job), -EBUSY (a session of the
     * job is open: again later), or another negative errno. */
    int (*drop_ranks)(void *ud, const char *job, const int64_t *ranks, size_t n, bool all);
    void *ud;
};

struct cluster_config {
    const char *url;              /* ClickHouse's HTTP interface, http://HOST:PORT/ */
    const char *user;             /* NULL or "": ClickHouse's default user */
    const char *password;         /* copied, wiped from the copy at stop */
    const char *node;             /* this node's name in every row */
    uint64_t batch_rows;          /* spans read per batch (steps and queue samples likewise) */
    uint64_t max_rows_per_s;      /* catch-up bound; 0: none */
    uint64_t retry_max_ms;        /* longest backoff */
    uint64_t poll_ms;             /* how often an idle shipper looks for new commits */
    bool no_gzip;                 /* request bodies as they are (cluster_compression none) */
    struct store *store;
    struct live *live;            /* NULL: no per-step aggregates shipped */
    struct stats *stats;
    struct cluster_ops ops;       /* the cluster view's; drop_ranks NULL: never deletes here */
};

/* Reads "USER:PASSWORD" (the first line; no ':' is a user alone) from path into user and
 * password (each size bytes). Returns 0 or a negative errno with err (CLUSTER_ERR_MAX) set. */
int cluster_read_credentials(const char *path, char *user, char *password, size_t size,
                             char *err);

/* Starts the shipper thread (curl_global_init is called here: main thread, before any other
 * thread uses curl). Returns 0 and *ret; -EINVAL (a URL that is not http:// or https://, no node)
 * or -ENOMEM, with err set. */
int cluster_start(const struct cluster_config *cfg, struct cluster **ret, char *err);

/* The daemon's start: nothing (0, *ret NULL) when cfg->cluster_url is empty; else reads
 * cluster_credentials_file and cluster_start()s with cfg's cluster keys. Returns 0 or a negative
 * errno with err set. */
int cluster_start_config(const struct config *cfg, struct store *store, struct live *live,
                         struct stats *stats, const struct cluster_ops *ops,
                         struct cluster **ret, char *err);

/* A DELETE of job on this node (any thread; docs/API.md "Delete a job"): hold (true) closes the
 * cluster view's pulled streams of job (their sessions end as the daemon reads the closes) and
 * keeps them closed, the rows it pulls for job meanwhile dropped, until hold false. Returns the
 * streams it closed (0: none, or no cluster view), or -ETIMEDOUT (the puller did not answer
 * within 10 s; call hold false all the same). */
int cluster_hold_job(struct cluster *c, const char *job, bool hold);

/* Stops the thread (a request in flight is abandoned within a second; its rows are shipped
 * again by the next start, and collapse) and frees c. NULL-safe. */
void cluster_stop(struct cluster *c);

#endif
