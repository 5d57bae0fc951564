-- Batches, their rows, chunk counters and the event log.
--
-- batch_rows has no foreign key to batches on purpose: a foreign key check
-- per row roughly doubles COPY time at ingest, and rows are only ever written
-- by the store inside the transaction that creates their batch.

CREATE TABLE batches (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id           text        NOT NULL,
    kind                text        NOT NULL,
    source_name         text        NOT NULL DEFAULT '',
    source_digest       text        NOT NULL DEFAULT '',
    idempotency_key     text,
    status              text        NOT NULL DEFAULT 'running',
    header              jsonb       NOT NULL DEFAULT '[]',
    options             jsonb       NOT NULL DEFAULT '{}',
    skipped_empty       bigint      NOT NULL DEFAULT 0,
    event_seq           bigint      NOT NULL DEFAULT 0,
    paused              boolean     NOT NULL DEFAULT false,
    cancel_requested_at timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    finished_at         timestamptz
);

CREATE UNIQUE INDEX batches_idempotency_key ON batches (tenant_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TABLE batch_rows (
    batch_id        bigint      NOT NULL,
    row_no          bigint      NOT NULL,
    tenant_id       text        NOT NULL,
    chunk_no        bigint      NOT NULL,
    state           text        NOT NULL,
    payload         jsonb       NOT NULL,
    errors          jsonb,
    result_id       text,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    effect_key      text,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (batch_id, row_no)
);

-- No index on state, on purpose: every outcome changes a row's state, and
-- an index on it turns each of those updates into index maintenance (and,
-- on PostgreSQL, rules out HOT updates). Readers by state (the error
-- report, `batchctl rows --state`) walk the batch's primary-key range
-- instead; counts come from batch_chunks.

CREATE TABLE batch_chunks (
    batch_id         bigint      NOT NULL,
    chunk_no         bigint      NOT NULL,
    tenant_id        text        NOT NULL,
    first_row_no     bigint      NOT NULL,
    last_row_no      bigint      NOT NULL,
    lease_owner      text,
    lease_token      bigint      NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    next_due_at      timestamptz,
    last_claimed_at  timestamptz,
    n_pending        bigint      NOT NULL DEFAULT 0,
    n_valid          bigint      NOT NULL DEFAULT 0,
    n_invalid        bigint      NOT NULL DEFAULT 0,
    n_processing     bigint      NOT NULL DEFAULT 0,
    n_succeeded      bigint      NOT NULL DEFAULT 0,
    n_failed         bigint      NOT NULL DEFAULT 0,
    n_retrying       bigint      NOT NULL DEFAULT 0,
    n_unknown        bigint      NOT NULL DEFAULT 0,
    n_dead           bigint      NOT NULL DEFAULT 0,
    n_cancelled      bigint      NOT NULL DEFAULT 0,
    n_skipped        bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (batch_id, chunk_no)
);

-- Claims scan only chunks that have open rows: O(claimable chunks).
CREATE INDEX batch_chunks_claimable ON batch_chunks (last_claimed_at NULLS FIRST, batch_id, chunk_no)
    WHERE next_due_at IS NOT NULL;

CREATE TABLE batch_events (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  text        NOT NULL,
    batch_id   bigint      NOT NULL,
    seq        bigint      NOT NULL,
    type       text        NOT NULL,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (batch_id, seq)
);
