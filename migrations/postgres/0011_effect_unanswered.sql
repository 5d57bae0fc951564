-- Whether a run of an effect key ever went unanswered: its worker died or
-- lost its lease before recording it, so its effect may have happened.
-- Set when a lease claims the key of its own row again and finds the last
-- run's run_until still set; kept for good, so that a later attempt's
-- failure does not make the row dead (the effect an unanswered run may
-- have applied is not undone by it): the row is unknown instead.
ALTER TABLE effects ADD COLUMN unanswered boolean NOT NULL DEFAULT false;
