-- Effects claimed before they run, worker credentials, pauses (kill
-- switches a worker observes at every claim and renewal), and the attempt
-- limit a claim enforces. See the PostgreSQL migration for the why.

CREATE TABLE effects (
    tenant_id  TEXT    NOT NULL,
    effect_key TEXT    NOT NULL,
    digest     TEXT    NOT NULL,
    batch_id   INTEGER NOT NULL,
    row_no     INTEGER NOT NULL,
    state      TEXT    NOT NULL,
    result_id  TEXT,
    claimed_at INTEGER NOT NULL,
    done_at    INTEGER,
    PRIMARY KEY (tenant_id, effect_key)
) WITHOUT ROWID;

CREATE TABLE workers (
    name       TEXT    PRIMARY KEY,
    token_hash TEXT    NOT NULL UNIQUE,
    tenant_ids TEXT    NOT NULL DEFAULT '[]',
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE pauses (
    tenant_id  TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, scope, value)
) WITHOUT ROWID;

ALTER TABLE batches ADD COLUMN max_attempts INTEGER NOT NULL DEFAULT 5;

ALTER TABLE batches ADD COLUMN ingest_expires_at INTEGER;
