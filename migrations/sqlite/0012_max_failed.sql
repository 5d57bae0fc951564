-- A batch's bound on its failed and dead rows: see
-- migrations/postgres/0012_max_failed.sql.
ALTER TABLE batches ADD COLUMN max_failed TEXT NOT NULL DEFAULT '';
