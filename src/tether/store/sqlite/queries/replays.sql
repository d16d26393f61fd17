-- Replays that notice change, and patch markers (store/replays.py).

-- The last resume with a decision (data.on_change) or the last wait, pause or end, whichever
-- came last: a decision holds for the replay that follows its resume, until the job parks.
-- name: replay_decision
SELECT kind, data FROM job_events
WHERE job_id = :job_id
  AND (kind = 'resume' OR to_state IN ('waiting', 'paused', 'succeeded', 'failed', 'cancelled'))
ORDER BY seq DESC LIMIT 1;

-- A changed call reused: its recorded answer now stands for the new request.
-- name: journal_refingerprint
UPDATE call_journal SET fingerprint = :fingerprint, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'done';

-- A changed call to be paid again: its old answer is in the call_repaid event, and the row is
-- reserved again as a failed one is (journal_reserve).
-- name: journal_supersede
UPDATE call_journal
SET status = 'failed', error_code = 'journal_mismatch',
    error_summary = 'changed since recorded; paid again', updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'done';

-- name: checkpoint_version
UPDATE checkpoints SET version = :version
WHERE job_id = :job_id AND stage = :stage;

-- name: drop_checkpoint
DELETE FROM checkpoints WHERE job_id = :job_id AND stage = :stage;

-- name: patch_markers
SELECT data FROM job_events WHERE job_id = :job_id AND kind = 'patched' ORDER BY seq;

-- Whether an attempt before :attempt recorded progress, or a fork carried some.
-- name: earlier_progress
SELECT EXISTS (SELECT 1 FROM call_journal WHERE job_id = :job_id
               AND (attempt < :attempt OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM checkpoints WHERE job_id = :job_id
               AND (attempt < :attempt OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM job_waits WHERE job_id = :job_id AND attempt < :attempt)
    AS progressed;
