-- The rows' lifecycle: see migrations/postgres/0013_row_retention.sql.
-- A purged row's payload is the JSON text 'null'; the pages it frees are
-- reused by later writes (auto_vacuum is off: the file does not shrink
-- unless VACUUM runs, docs/RETENTION.md).
CREATE TABLE retention_policies (
    tenant_id   TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    values_days INTEGER NOT NULL CHECK (values_days > 0),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, kind)
);

ALTER TABLE batches ADD COLUMN values_purged_at INTEGER;
ALTER TABLE batches ADD COLUMN values_purged_by TEXT NOT NULL DEFAULT '';

CREATE INDEX batches_values_kept ON batches (finished_at)
    WHERE values_purged_at IS NULL AND finished_at IS NOT NULL;
