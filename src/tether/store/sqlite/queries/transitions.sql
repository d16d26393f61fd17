-- A job's state changes and its event log (store/transitions.py).

-- name: lock_job
SELECT * FROM jobs WHERE id = :id;

-- name: update_job
UPDATE jobs
SET state = :state, stage = :stage, run_after = :run_after, max_attempts = :max_attempts,
    result = :result, error_code = :error_code, error_summary = :error_summary,
    lease_owner = :lease_owner, lease_expires_at = :lease_expires_at, lease_attempt = :lease_attempt,
    budget = :budget, finished_at = :finished_at, updated_at = :now, event_seq = event_seq + 1
WHERE id = :id
RETURNING event_seq;

-- name: bump_event_seq
UPDATE jobs SET event_seq = event_seq + 1 WHERE id = :id RETURNING event_seq;

-- name: insert_event
INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
VALUES (:job_id, :seq, :at, :kind, :from_state, :to_state, :attempt, :data);
