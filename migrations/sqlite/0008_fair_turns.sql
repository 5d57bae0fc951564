-- Fair claims across tenants; see the PostgreSQL migration.
ALTER TABLE batch_chunks ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
UPDATE batch_chunks SET turn = chunk_no WHERE next_due_at IS NOT NULL;

DROP INDEX batch_chunks_claimable;
CREATE INDEX batch_chunks_claimable ON batch_chunks (turn, batch_id, chunk_no)
    WHERE next_due_at IS NOT NULL;

CREATE TABLE tenant_turns (
    tenant_id TEXT    PRIMARY KEY,
    next_turn INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE turn_clock (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    turn INTEGER NOT NULL
);
INSERT INTO turn_clock (one, turn) VALUES (1, 0);
