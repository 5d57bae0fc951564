-- Fair claims across tenants (start-time fair queuing). Every open chunk
-- has a turn; a claim takes the due chunk with the lowest. A batch's
-- chunks get consecutive turns from its tenant's next_turn, which starts
-- no earlier than the clock (the highest turn claimed so far): a tenant
-- with ten batches or ten times the rows gets one chunk per turn, as does
-- a tenant with one small batch, and a tenant new to the queue starts at
-- the clock, not ahead of everyone with an idle history's credit.
ALTER TABLE batch_chunks ADD COLUMN turn bigint NOT NULL DEFAULT 0;
-- Open chunks of existing batches take turns by chunk number: round robin
-- over the batches instead of one batch after another.
UPDATE batch_chunks SET turn = chunk_no WHERE next_due_at IS NOT NULL;

DROP INDEX batch_chunks_claimable;
CREATE INDEX batch_chunks_claimable ON batch_chunks (turn, batch_id, chunk_no)
    WHERE next_due_at IS NOT NULL;

CREATE TABLE tenant_turns (
    tenant_id text   PRIMARY KEY,
    next_turn bigint NOT NULL
);
ALTER TABLE tenant_turns ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_turns USING (tenant_id = current_setting('app.tenant_id', true));

-- The clock: one row, advanced (never moved back) by the claims. It holds
-- no tenant's data; a tenant role reads it to queue a batch.
CREATE TABLE turn_clock (
    one  boolean PRIMARY KEY DEFAULT true CHECK (one),
    turn bigint  NOT NULL
);
INSERT INTO turn_clock (turn) VALUES (0);
