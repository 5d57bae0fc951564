-- The rows' lifecycle (issue 28): a row's values (batch_rows.payload, the
-- cells as read) are customer data that a retention policy or a command
-- drops, while its outcome (state, result id, attempts), its errors and
-- the batch's counts stay.
--
-- A policy per tenant and kind: the values of a finished or cancelled
-- batch are dropped values_days after it ended. kind '' is the tenant's
-- policy for every kind without one of its own.
CREATE TABLE retention_policies (
    tenant_id   text        NOT NULL,
    kind        text        NOT NULL DEFAULT '',
    values_days integer     NOT NULL CHECK (values_days > 0),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, kind)
);
ALTER TABLE retention_policies ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON retention_policies USING (tenant_id = current_setting('app.tenant_id', true));

-- When a batch's values were dropped and by what ('policy' or
-- 'command'): every reader that needs them refuses, naming both. A
-- purged row's payload is the JSON null, not SQL NULL: the column stays
-- NOT NULL (no catalog change to batch_rows, nothing for its COPY to
-- check), and a one-word jsonb keeps the update HOT on a page that
-- fillfactor 45 left room on (0005): a 1,000,000-row batch is purged in
-- 1.5 s with no growth of the table (docs/RETENTION.md).
ALTER TABLE batches ADD COLUMN values_purged_at timestamptz;
ALTER TABLE batches ADD COLUMN values_purged_by text NOT NULL DEFAULT '';

-- The sweep reads only the ended batches whose values are still kept.
CREATE INDEX batches_values_kept ON batches (finished_at)
    WHERE values_purged_at IS NULL AND finished_at IS NOT NULL;
