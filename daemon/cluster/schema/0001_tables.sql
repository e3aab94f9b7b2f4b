-- Version 1: what node daemons ship (daemon/cluster/cluster.h), one row per stored span, step and
-- queue sample of every node.
--
-- Exactly once: each row names its origin, (node, block, idx) for a span (the SQLite block's
-- rowid and the line's index in it) and (node, row) for the others, and the sorting key holds
-- that origin, so a batch inserted twice (a retry, a node killed before it saved its cursor)
-- gives rows with equal keys, which ReplacingMergeTree collapses at merge. Until a merge has run
-- readers ask with FINAL (or group by the key); see docs/ARCHITECTURE.md.
--
-- Sorted for (job, rank, time) queries; partitioned by month of the row's time (a partition
-- per month and no more: ClickHouse's advice is tens to hundreds of partitions, not thousands).
CREATE TABLE IF NOT EXISTS stepscope.spans (
    node String,
    job String,
    rank Int64,
    ts_ns Int64,
    dur_ns Int64,
    ph String,
    name String,
    cat String,
    pid String,
    tid String,
    block UInt64,
    idx UInt32
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(ts_ns, 1000000000)))
ORDER BY (job, rank, ts_ns, node, block, idx);

CREATE TABLE IF NOT EXISTS stepscope.steps (
    node String,
    job String,
    rank Int64,
    step Int64,
    begin_ns Int64,
    end_ns Int64,
    samples Int64,
    phases String,
    row UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(begin_ns, 1000000000)))
ORDER BY (job, rank, step, node, row);

CREATE TABLE IF NOT EXISTS stepscope.queue_samples (
    node String,
    job String,
    rank Int64,
    ts_ns Int64,
    step Int64,
    name String,
    size Int64,
    capacity Int64,
    row UInt64
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(ts_ns, 1000000000)))
ORDER BY (job, rank, ts_ns, node, row);
