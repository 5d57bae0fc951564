-- The service: API tokens, webhook endpoints and their outbox; see the
-- PostgreSQL migration. (SQLite has no row-level security: one process
-- owns the file.)
CREATE TABLE api_tokens (
    id           INTEGER PRIMARY KEY,
    tenant_id    TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('admin', 'viewer')),
    token_hash   TEXT    NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, id);

CREATE TABLE webhook_endpoints (
    id          INTEGER PRIMARY KEY,
    tenant_id   TEXT    NOT NULL,
    url         TEXT    NOT NULL,
    secret      TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    disabled_at INTEGER
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY,
    tenant_id       TEXT    NOT NULL,
    endpoint_id     INTEGER NOT NULL,
    batch_id        INTEGER NOT NULL,
    event_seq       INTEGER NOT NULL,
    event_type      TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    last_status     INTEGER,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    done_at         INTEGER,
    UNIQUE (endpoint_id, batch_id, event_seq)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, id);
