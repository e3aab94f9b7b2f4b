-- Version 4: every stored trace line of a node's blocks verbatim (all ph: the X and B spans with
-- their args, the M thread and process names, C counters, i instants, the E of a B, flow s/t/f),
-- so that a node with the cluster view (daemon/cluster/pull.c) feeds other nodes' ranks the lines
-- their trainers sent, not lines rebuilt from the spans' columns. Kineto's kernel <-> launch
-- linking (args.correlation), thread names and flow arrows then answer on every node as on the
-- rank's own. The spans table stays as it is, for SQL over the columns.
--
-- Keyed like spans: (node, block, idx) is a line's identity (its SQLite block's rowid and its
-- index in the block; a span's idx in spans is the same number), in the sorting key, so a batch
-- inserted twice collapses at merge. A node inserts a batch's lines before its spans, so a puller
-- that sees a block's spans sees its lines too (unless the node predates this table: then it
-- rebuilds that block's spans from the columns). month (YYYYMM, UTC) is that of the line's "ts",
-- 197001 for a line without one (M metadata may lack it): the partition, as the other tables'
-- months of their rows' times; a column, not an expression over a ts_ns column, because such a
-- column cost 5 to 7 bytes per span compressed (in this sorting key the times are not in order)
-- and this one, equal within a block, almost nothing (docs/PERFORMANCE.md).
CREATE TABLE IF NOT EXISTS stepscope.events (
    node String,
    job String,
    rank Int64,
    block UInt64,
    idx UInt32,
    month UInt32,
    line String
) ENGINE = ReplacingMergeTree()
PARTITION BY month
ORDER BY (job, rank, node, block, idx);
