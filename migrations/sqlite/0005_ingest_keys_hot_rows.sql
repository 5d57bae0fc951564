-- Natural keys are checked in the database: see the PostgreSQL migration.
-- SQLite has no fillfactor.
ALTER TABLE batch_rows ADD COLUMN key_digest BLOB;
