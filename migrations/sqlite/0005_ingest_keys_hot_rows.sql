-- Natural keys are checked in the database: see the PostgreSQL migration.
-- SQLite has no fillfactor.
ALTER TABLE batch_rows ADD COLUMN key_digest BLOB;

-- Deferred leases: see the PostgreSQL migration.
ALTER TABLE batch_chunks ADD COLUMN lease_deferred INTEGER NOT NULL DEFAULT 0;
