-- A batch's bound on its failed and dead rows (batchtype.Threshold as
-- text: "10", "2.5%"; '' for none). The flush that passes it pauses the
-- batch in its transaction.
ALTER TABLE batches ADD COLUMN max_failed text NOT NULL DEFAULT '';
