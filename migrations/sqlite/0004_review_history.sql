-- Review and re-runs: see the PostgreSQL migration.
ALTER TABLE batch_rows ADD COLUMN reviewed INTEGER NOT NULL DEFAULT 0;

CREATE TABLE batch_history (
    id         INTEGER PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    batch_id   INTEGER NOT NULL,
    row_no     INTEGER,
    action     TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    detail     TEXT    NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL
);
CREATE INDEX batch_history_batch ON batch_history (batch_id, id);
