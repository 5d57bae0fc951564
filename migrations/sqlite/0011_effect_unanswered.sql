-- Whether a run of an effect key ever went unanswered: see
-- migrations/postgres/0011_effect_unanswered.sql.
ALTER TABLE effects ADD COLUMN unanswered INTEGER NOT NULL DEFAULT 0;
