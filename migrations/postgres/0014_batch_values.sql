-- A row's values in a table of their own, partitioned by batch, so that a
-- purge is a TRUNCATE of one partition (milliseconds, no WAL per row, the
-- space given back at once) instead of an UPDATE of every row (1.5 s and
-- 311 MB of WAL per million rows): docs/RETENTION.md, layout (c).
--
-- Each batch ingested from now on gets its partition, FOR VALUES FROM
-- (id) TO (id + 1), made by the store right after the batch row commits
-- and before any row is written: CREATE TABLE ... (LIKE batch_values),
-- then ATTACH PARTITION, which takes SHARE UPDATE EXCLUSIVE on this
-- table and so never waits for a running import (ROW EXCLUSIVE until its
-- commit), where CREATE TABLE ... PARTITION OF would take ACCESS
-- EXCLUSIVE and wait for all of them. There is no DEFAULT partition: an
-- attach would have to scan it under ACCESS EXCLUSIVE, and a row with no
-- partition is an error rather than values a purge could miss.
--
-- Nothing moves: the batches ingested before keep their values in
-- batch_rows.payload (readers take the values row when there is one,
-- else batch_rows.payload), and their purge stays the UPDATE of 0013.
-- A batch whose values are here has 'null' in batch_rows.payload, the
-- column's new default, so once its partition is truncated its rows read
-- back purged, with no write to batch_rows at all.
--
-- The key is a btree, not the BRIN index the layout was first measured
-- with (0.35 s cheaper per million rows at COPY): readers fetch values
-- one row at a time (a claim's rows, a page of rows, an edit) by
-- (batch_id, row_no), and a BRIN probe reads a whole block range per
-- row. On a million rows of customers values, a 1,000-row chunk read
-- that way took 1.8 to 3.4 ms with this key, 0.69 to 1.17 s with BRIN;
-- one row 0.05 ms against 1.3 ms (docs/RETENTION.md).
CREATE TABLE batch_values (
    batch_id  bigint NOT NULL,
    row_no    bigint NOT NULL,
    tenant_id text   NOT NULL,
    payload   jsonb  NOT NULL,
    PRIMARY KEY (batch_id, row_no)
) PARTITION BY RANGE (batch_id);
ALTER TABLE batch_values ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_values USING (tenant_id = current_setting('app.tenant_id', true));

ALTER TABLE batch_rows ALTER COLUMN payload SET DEFAULT 'null';
