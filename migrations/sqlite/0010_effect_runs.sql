-- How long the last run of an effect key may still be under way: see
-- migrations/postgres/0010_effect_runs.sql. Milliseconds of SQLite's clock.
ALTER TABLE effects ADD COLUMN run_until INTEGER;
