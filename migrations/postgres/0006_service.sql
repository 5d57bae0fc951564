-- The service: API tokens, webhook endpoints and their durable outbox, and
-- row-level security on every tenant table.

-- API tokens: the SHA-256 of the token (never the token), its tenant and
-- its role. admin acts, viewer reads.
CREATE TABLE api_tokens (
    id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id    text        NOT NULL,
    name         text        NOT NULL,
    role         text        NOT NULL CHECK (role IN ('admin', 'viewer')),
    token_hash   text        NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, id);

-- Where a tenant's webhooks go, and the secret they are signed with.
CREATE TABLE webhook_endpoints (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text        NOT NULL,
    url         text        NOT NULL,
    secret      text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);

-- The outbox: one row per endpoint per terminal event, written in the
-- transaction that finished or cancelled the batch, so that a delivery is
-- never lost nor invented. payload is the body, byte for byte, on every
-- attempt (the signature covers it).
CREATE TABLE webhook_deliveries (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id       text        NOT NULL,
    endpoint_id     bigint      NOT NULL,
    batch_id        bigint      NOT NULL,
    event_seq       bigint      NOT NULL,
    event_type      text        NOT NULL,
    payload         text        NOT NULL,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    done_at         timestamptz,
    UNIQUE (endpoint_id, batch_id, event_seq)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_tenant ON webhook_deliveries (tenant_id, id);

-- Row-level security, as defence in depth under the queries' own tenant
-- filters: a role that is not the tables' owner sees the rows of the
-- tenant its transaction names (set_config('app.tenant_id', ..., true))
-- and nothing when it names none. The owner (migrations, workers) is not
-- subject to it: ENABLE, not FORCE.
ALTER TABLE batches ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batches USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE batch_rows ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_rows USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE batch_chunks ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_chunks USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE batch_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_events USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE batch_history ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON batch_history USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE effects ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON effects USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE pauses ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON pauses USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE api_tokens ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_tokens USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE webhook_endpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhook_endpoints USING (tenant_id = current_setting('app.tenant_id', true));
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhook_deliveries USING (tenant_id = current_setting('app.tenant_id', true));
