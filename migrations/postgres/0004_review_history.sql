-- Review and re-runs. A row a reviewer edited is protected from re-runs
-- like a completed one: reviewed. Adding a column with a constant default
-- rewrites nothing on PostgreSQL 11 and later.
ALTER TABLE batch_rows ADD COLUMN reviewed boolean NOT NULL DEFAULT false;

-- Every re-run, edit and skip: who, when, what changed. row_no is NULL
-- for a re-run of the batch; detail holds the old and new values, the
-- reason, the counts.
CREATE TABLE batch_history (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  text        NOT NULL,
    batch_id   bigint      NOT NULL,
    row_no     bigint,
    action     text        NOT NULL, -- rerun, edit, skip
    actor      text        NOT NULL,
    detail     jsonb       NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batch_history_batch ON batch_history (batch_id, id);
