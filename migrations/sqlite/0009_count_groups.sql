-- Batch totals in two steps: see migrations/postgres/0009_count_groups.sql.
CREATE TABLE batch_count_groups (
    batch_id     INTEGER NOT NULL,
    group_no     INTEGER NOT NULL,
    tenant_id    TEXT    NOT NULL,
    n_pending    INTEGER NOT NULL DEFAULT 0,
    n_valid      INTEGER NOT NULL DEFAULT 0,
    n_invalid    INTEGER NOT NULL DEFAULT 0,
    n_processing INTEGER NOT NULL DEFAULT 0,
    n_succeeded  INTEGER NOT NULL DEFAULT 0,
    n_failed     INTEGER NOT NULL DEFAULT 0,
    n_retrying   INTEGER NOT NULL DEFAULT 0,
    n_unknown    INTEGER NOT NULL DEFAULT 0,
    n_dead       INTEGER NOT NULL DEFAULT 0,
    n_cancelled  INTEGER NOT NULL DEFAULT 0,
    n_skipped    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, group_no)
) WITHOUT ROWID;

INSERT INTO batch_count_groups (batch_id, group_no, tenant_id, n_pending, n_valid, n_invalid, n_processing, n_succeeded, n_failed, n_retrying, n_unknown, n_dead, n_cancelled, n_skipped)
SELECT batch_id, chunk_no / 100, min(tenant_id), sum(n_pending), sum(n_valid), sum(n_invalid), sum(n_processing), sum(n_succeeded), sum(n_failed), sum(n_retrying), sum(n_unknown), sum(n_dead), sum(n_cancelled), sum(n_skipped)
FROM batch_chunks GROUP BY batch_id, chunk_no / 100;

CREATE INDEX batch_chunks_open ON batch_chunks (batch_id) WHERE next_due_at IS NOT NULL;
