-- stepscope's ClickHouse schema, step 0: run by every node at every start (idempotent). It makes
-- the database and the table that records which numbered migrations (0001_*.sql, ...) were
-- applied; a node applies those above SELECT max(version) in order, then records them.
-- Every migration file runs again at each start and after each failed attempt (a dropped table
-- comes back), so each statement must be idempotent (IF NOT EXISTS, ...); only the versions
-- above max(version) are recorded. Statements end with ';' at the end of a line. Checked on Debian's clickhouse-server 18.16
-- (tests/cluster/test_cluster.py) and on a current ClickHouse (tests/cluster/test_schema.py).
CREATE DATABASE IF NOT EXISTS stepscope;

CREATE TABLE IF NOT EXISTS stepscope.schema_migrations (
    version UInt32,
    name String,
    node String,
    applied DateTime DEFAULT now()
) ENGINE = MergeTree ORDER BY version;
