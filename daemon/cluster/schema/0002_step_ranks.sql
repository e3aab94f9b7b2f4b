-- Version 2: the per-step, per-rank aggregates a node computes live (they are not additive in
-- SQL: a step's stages come from its FP/BP points, its breakdown from linking kernels to the
-- runtime calls that launched them), one row per (job, rank, step, node).
--
-- A step's row changes while the step fills in, so a node ships it again with a higher version
-- (the node's clock at shipping); ReplacingMergeTree(version) keeps the latest, and readers ask
-- with FINAL (or argMax(..., version)). Times in ns; -1: not known (a stage of a step without
-- FP/BP points, a breakdown category of a step that is not a ProfilerStep span or that the
-- breakdown left out).
CREATE TABLE IF NOT EXISTS stepscope.step_ranks (
    node String,
    job String,
    rank Int64,
    step Int64,
    begin_ns Int64,
    end_ns Int64,
    samples Int64,
    spans Int64,
    from_record UInt8,
    source String,
    interval_ns Int64,
    fp_bp_ns Int64,
    tail_ns Int64,
    kernel_ns Int64,
    memcpy_ns Int64,
    memset_ns Int64,
    communication_ns Int64,
    runtime_ns Int64,
    dataloader_ns Int64,
    cpu_exec_ns Int64,
    other_ns Int64,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMM(toDateTime(intDiv(begin_ns, 1000000000)))
ORDER BY (job, rank, step, node);
