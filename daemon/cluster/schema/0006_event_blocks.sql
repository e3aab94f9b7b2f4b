-- Version 6: a node's stored trace lines, one row per stored block (its SQLite block's rowid)
-- instead of one per line: data is the block as the node's store keeps it, shipped without
-- decoding or re-encoding it: codec 1, one zstd frame (content size raw_bytes) of the block's
-- lines joined by '\n'; codec 0, those lines as they are. lines: how many (a line's idx in the
-- block, as in spans and events, runs from 0 to lines - 1). A node that ships this table no
-- longer writes stepscope.events; a puller (daemon/cluster/pull.c) reads, block by block in
-- block order, this table's row, else the block's rows of events (a node of 0004 or 0005),
-- else its spans rebuilt from the columns (a node older than 0004).
--
-- Why: ClickHouse spent about 1.1 µs storing each ~240-byte line as a row of its own (the
-- shipping rate with the lines was 0.29 M spans/s against 0.70 M without: docs/PERFORMANCE.md);
-- a block of ~4 000 lines is one row here, its bytes already compressed by the node.
--
-- Keyed like the other tables: (node, block) is a row's identity, in the sorting key, so a
-- batch inserted twice collapses at merge (and a puller takes the copies, side by side, once).
-- month (YYYYMM, UTC) is that of the block's first time (197001 when it has none): the partition.
CREATE TABLE IF NOT EXISTS stepscope.event_blocks (
    node String,
    job String,
    rank Int64,
    block UInt64,
    month UInt32,
    lines UInt32,
    raw_bytes UInt64,
    codec UInt8,
    data String
) ENGINE = ReplacingMergeTree()
PARTITION BY month
ORDER BY (job, rank, node, block);
