-- Natural keys are checked in the database: an import stores the digest of
-- each valid row's key, and one statement at the end of the ingest marks a
-- row whose key an earlier row has as a duplicate. Before, the importer
-- kept every key in memory (54 MB live at 1,000,000 rows).
ALTER TABLE batch_rows ADD COLUMN key_digest bytea;

-- Every row is updated once or twice after it is written (claimed, then its
-- outcome). With room left on each page and no index on an updated column,
-- those are HOT updates: no index entries, no table bloat. Issue 13's
-- profile saw 0.9% HOT updates without it; a 100,000-row customers import
-- with it made all 97,972 of its row updates HOT.
-- Pages written from now on keep the room; existing ones are unchanged.
ALTER TABLE batch_rows SET (fillfactor = 45);

-- A lease of a transactional kind's chunk may leave its rows unmarked: the
-- flush moves them from due to their outcome in one write (see
-- driver.ChunkClaimParams.DeferKinds). Re-runs and reviews must know such
-- a lease holds rows that still look due.
ALTER TABLE batch_chunks ADD COLUMN lease_deferred boolean NOT NULL DEFAULT false;
