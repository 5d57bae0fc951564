-- PostgreSQL's 0014 moves new batches' values to a table partitioned by
-- batch (batch_values), so that a purge truncates a partition. SQLite has
-- no partitions: a table of its own would cost the ingest a second write
-- per row and the purge a DELETE no cheaper than today's UPDATE, so its
-- values stay in batch_rows.payload. This step keeps the two engines'
-- versions in step.
SELECT 1;
