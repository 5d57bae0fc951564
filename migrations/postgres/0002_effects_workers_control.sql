-- Effects claimed before they run, worker credentials, pauses (kill
-- switches a worker observes at every claim and renewal), and the attempt
-- limit a claim enforces.

-- One row per effect key: the unique constraint is the boundary that
-- makes an external effect happen once per key, whichever worker, attempt
-- or re-run gets there. digest is the SHA-256 of the row's payload: the same
-- key with another payload is a key reused, not a duplicate.
CREATE TABLE effects (
    tenant_id  text        NOT NULL,
    effect_key text        NOT NULL,
    digest     text        NOT NULL,
    batch_id   bigint      NOT NULL,
    row_no     bigint      NOT NULL,
    state      text        NOT NULL, -- claimed, done, failed, unknown
    result_id  text,
    claimed_at timestamptz NOT NULL DEFAULT now(),
    done_at    timestamptz,
    PRIMARY KEY (tenant_id, effect_key)
);

-- Worker credentials: a name, the SHA-256 of its token (never the token),
-- and the tenants it may work ('[]': any).
CREATE TABLE workers (
    name       text        PRIMARY KEY,
    token_hash text        NOT NULL UNIQUE,
    tenant_ids jsonb       NOT NULL DEFAULT '[]',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);

-- Pauses of a kind or of a whole tenant (a batch has batches.paused).
CREATE TABLE pauses (
    tenant_id  text        NOT NULL,
    scope      text        NOT NULL, -- kind, tenant
    value      text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, scope, value)
);

-- The kind's attempt limit, kept with the batch at ingest: a claim moves a
-- row that has used them all (a row that crashes its worker) to dead.
ALTER TABLE batches ADD COLUMN max_attempts integer NOT NULL DEFAULT 5;

-- A batch being ingested in several transactions (SQLite) is 'ingesting'
-- until its file is accepted; its importer renews this while it reads. An
-- 'ingesting' batch whose importer died (it expired) is removed at the next
-- migration, rows and all.
ALTER TABLE batches ADD COLUMN ingest_expires_at timestamptz;
