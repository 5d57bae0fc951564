-- Event retention trims by age: an index on the time, so that a trim
-- reads only what it deletes.
CREATE INDEX batch_events_created_at ON batch_events (created_at);
