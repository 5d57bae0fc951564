-- Batches, their rows, chunk counters and the event log. Times are integer
-- milliseconds since the Unix epoch, taken from SQLite's clock
-- (unixepoch('subsec')), so that comparisons are exact and indexable.

CREATE TABLE batches (
    id                  INTEGER PRIMARY KEY,
    tenant_id           TEXT    NOT NULL,
    kind                TEXT    NOT NULL,
    source_name         TEXT    NOT NULL DEFAULT '',
    source_digest       TEXT    NOT NULL DEFAULT '',
    idempotency_key     TEXT,
    status              TEXT    NOT NULL DEFAULT 'running',
    header              TEXT    NOT NULL DEFAULT '[]',
    options             TEXT    NOT NULL DEFAULT '{}',
    skipped_empty       INTEGER NOT NULL DEFAULT 0,
    event_seq           INTEGER NOT NULL DEFAULT 0,
    paused              INTEGER NOT NULL DEFAULT 0,
    cancel_requested_at INTEGER,
    created_at          INTEGER NOT NULL,
    finished_at         INTEGER
);

CREATE UNIQUE INDEX batches_idempotency_key ON batches (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE batch_rows (
    batch_id        INTEGER NOT NULL,
    row_no          INTEGER NOT NULL,
    tenant_id       TEXT    NOT NULL,
    chunk_no        INTEGER NOT NULL,
    state           TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    errors          TEXT,
    result_id       TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    effect_key      TEXT,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (batch_id, row_no)
) WITHOUT ROWID;

-- No index on state, on purpose: every outcome changes a row's state, and
-- an index on it turns each of those updates into index maintenance (and,
-- on PostgreSQL, rules out HOT updates). Readers by state (the error
-- report, `batchctl rows --state`) walk the batch's primary-key range
-- instead; counts come from batch_chunks.

CREATE TABLE batch_chunks (
    batch_id         INTEGER NOT NULL,
    chunk_no         INTEGER NOT NULL,
    tenant_id        TEXT    NOT NULL,
    first_row_no     INTEGER NOT NULL,
    last_row_no      INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_token      INTEGER NOT NULL DEFAULT 0,
    lease_expires_at INTEGER,
    next_due_at      INTEGER,
    last_claimed_at  INTEGER,
    n_pending        INTEGER NOT NULL DEFAULT 0,
    n_valid          INTEGER NOT NULL DEFAULT 0,
    n_invalid        INTEGER NOT NULL DEFAULT 0,
    n_processing     INTEGER NOT NULL DEFAULT 0,
    n_succeeded      INTEGER NOT NULL DEFAULT 0,
    n_failed         INTEGER NOT NULL DEFAULT 0,
    n_retrying       INTEGER NOT NULL DEFAULT 0,
    n_unknown        INTEGER NOT NULL DEFAULT 0,
    n_dead           INTEGER NOT NULL DEFAULT 0,
    n_cancelled      INTEGER NOT NULL DEFAULT 0,
    n_skipped        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, chunk_no)
) WITHOUT ROWID;

CREATE INDEX batch_chunks_claimable ON batch_chunks (last_claimed_at, batch_id, chunk_no)
    WHERE next_due_at IS NOT NULL;

CREATE TABLE batch_events (
    id         INTEGER PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    batch_id   INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    type       TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (batch_id, seq)
);
