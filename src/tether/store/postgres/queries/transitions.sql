-- A job's state changes and its event log (store/transitions.py).

-- name: lock_job
SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE;

-- name: update_job
UPDATE jobs
SET state = %(state)s, stage = %(stage)s, run_after = %(run_after)s,
    max_attempts = %(max_attempts)s, result = %(result)s::jsonb, error_code = %(error_code)s,
    error_summary = %(error_summary)s, lease_owner = %(lease_owner)s,
    lease_expires_at = %(lease_expires_at)s, lease_attempt = %(lease_attempt)s,
    budget = %(budget)s::jsonb, finished_at = %(finished_at)s, updated_at = %(now)s,
    event_seq = event_seq + 1
WHERE id = %(id)s
RETURNING event_seq;

-- name: bump_event_seq
UPDATE jobs SET event_seq = event_seq + 1 WHERE id = %(id)s RETURNING event_seq;

-- name: insert_event
INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
VALUES (%(job_id)s, %(seq)s, %(at)s, %(kind)s, %(from_state)s, %(to_state)s, %(attempt)s,
        %(data)s::jsonb);
