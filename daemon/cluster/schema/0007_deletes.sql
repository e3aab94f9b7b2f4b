-- Version 7: the jobs a node deleted (DELETE /api/v1/jobs/{job} there), one row per delete, so
-- that the nodes that pulled its ranks (daemon/cluster/pull.c) delete their copies too. A node
-- inserts the row once ClickHouse took the ALTER ... DELETEs of the job's rows, and before it
-- ships any row committed after the delete. `id` is the delete's id at the node (its SQLite
-- ship_deletes id): (node, id) is its identity, so a row inserted twice collapses. last_block,
-- last_step, last_queue, last_host and last_pipe are the node's cursor after the delete (its
-- last rowid in each table that ClickHouse took, no higher than the table's last): SQLite gives
-- the next rows the rowids that follow, which a viewer's cursor may already be past when the
-- deleted rows were the newest, so a viewer brings its cursor down to them.
CREATE TABLE IF NOT EXISTS stepscope.deletes (
    node String,
    job String,
    id Int64,
    deleted_ns Int64,
    last_block Int64,
    last_step Int64,
    last_queue Int64,
    last_host Int64,
    last_pipe Int64
) ENGINE = ReplacingMergeTree()
ORDER BY (node, id);
