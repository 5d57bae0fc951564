-- Event retention trims by age: see the PostgreSQL migration.
CREATE INDEX batch_events_created_at ON batch_events (created_at);
