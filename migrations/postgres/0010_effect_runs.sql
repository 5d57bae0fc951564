-- How long the last run of an effect key may still be under way: set
-- when a lease claims the key to run it (the kind's timeout and grace
-- after the claim), cleared when the run answers. A worker that stalled
-- or died with a run under way may leave that run going (an external
-- program, a request in flight) past its lease; until run_until no other
-- worker runs the key again, so the two cannot both apply it.
ALTER TABLE effects ADD COLUMN run_until timestamptz;
