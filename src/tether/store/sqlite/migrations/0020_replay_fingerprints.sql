-- What each journaled call asked (job/replay.py: call_fingerprint) and which version of each
-- stage wrote its checkpoint, so a replay can tell a changed call or stage from an unchanged
-- one. Rows written before this migration carry NULL and are reused as before.
ALTER TABLE call_journal ADD COLUMN fingerprint TEXT;
ALTER TABLE checkpoints ADD COLUMN version TEXT;
