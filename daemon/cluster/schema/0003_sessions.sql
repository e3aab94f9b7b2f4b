-- Version 3: each node's sessions (one row per hello it stored), so that a node with the cluster
-- view (daemon/cluster/pull.c) can open the ranks of other nodes as its own sessions: their job,
-- rank, world size, host, framework and the hello verbatim (its "env" carries the job's FP/BP
-- points). `row` is the session's rowid in the node's SQLite store: (node, row) is its identity,
-- so a batch sent twice collapses like the other tables'. Sessions a node pulled from others
-- (their hello has "origin") are never shipped again.
CREATE TABLE IF NOT EXISTS stepscope.sessions (
    node String,
    job String,
    rank Int64,
    row UInt64,
    world_size Int64,
    host String,
    pid Int64,
    framework String,
    framework_version String,
    run String,
    clock String,
    started_ns Int64,
    hello String
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(toDateTime(intDiv(started_ns, 1000000000)))
ORDER BY (job, rank, node, row);
