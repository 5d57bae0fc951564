-- Batch totals in two steps, so that no flush and no status read sums all
-- of a batch's chunks (a 10,000,000-row batch has 10,000). Every group
-- holds the counts of 100 consecutive chunks (group_no = chunk_no / 100),
-- overwritten from an aggregate over those chunks whenever one of them is
-- recounted; a batch's totals are the sum over its groups. Counts are
-- still derived, never incremented: rows -> chunk -> group -> batch.
CREATE TABLE batch_count_groups (
    batch_id     bigint NOT NULL,
    group_no     bigint NOT NULL,
    tenant_id    text   NOT NULL,
    n_pending    bigint NOT NULL DEFAULT 0,
    n_valid      bigint NOT NULL DEFAULT 0,
    n_invalid    bigint NOT NULL DEFAULT 0,
    n_processing bigint NOT NULL DEFAULT 0,
    n_succeeded  bigint NOT NULL DEFAULT 0,
    n_failed     bigint NOT NULL DEFAULT 0,
    n_retrying   bigint NOT NULL DEFAULT 0,
    n_unknown    bigint NOT NULL DEFAULT 0,
    n_dead       bigint NOT NULL DEFAULT 0,
    n_cancelled  bigint NOT NULL DEFAULT 0,
    n_skipped    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, group_no)
);
ALTER TABLE batch_count_groups ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_count_groups USING (tenant_id = current_setting('app.tenant_id', true));

INSERT INTO batch_count_groups (batch_id, group_no, tenant_id, n_pending, n_valid, n_invalid, n_processing, n_succeeded, n_failed, n_retrying, n_unknown, n_dead, n_cancelled, n_skipped)
SELECT batch_id, chunk_no / 100, min(tenant_id), sum(n_pending), sum(n_valid), sum(n_invalid), sum(n_processing), sum(n_succeeded), sum(n_failed), sum(n_retrying), sum(n_unknown), sum(n_dead), sum(n_cancelled), sum(n_skipped)
FROM batch_chunks GROUP BY batch_id, chunk_no / 100;

-- Whether a batch has an open chunk is a probe, not a walk over its done
-- chunks (the finish check of every flush).
CREATE INDEX batch_chunks_open ON batch_chunks (batch_id) WHERE next_due_at IS NOT NULL;
