-- Version 5: the host samples (a rank's process CPU and RSS, {"type":"host"}) and the MindData
-- pipeline records ({"type":"pipeline"}, the record verbatim) of every node, so that a node with
-- the cluster view (daemon/cluster/pull.c) answers a remote rank's pipeline and host figures as
-- its own node does. Keyed as queue_samples: (node, row) is a row's identity (its SQLite rowid at
-- the node), in the sorting key, so a batch inserted twice collapses at merge.
CREATE TABLE IF NOT EXISTS stepscope.host_samples (
    node String,
    job String,
    rank Int64,
    ts_ns Int64,
    cpu_percent Float64,
    sys_cpu_percent Float64,
    rss_bytes Int64,
    row UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(ts_ns, 1000000000)))
ORDER BY (job, rank, ts_ns, node, row);

CREATE TABLE IF NOT EXISTS stepscope.pipelines (
    node String,
    job String,
    rank Int64,
    ts_ns Int64,
    json String,
    row UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(ts_ns, 1000000000)))
ORDER BY (job, rank, ts_ns, node, row);
