-- The end of an attempt, many at once (store/outcomes.py).

-- name: succeed_many
-- :items is a JSON array of [id, attempt, result]; the rows that are still running under that
-- lease with no call left open succeed. Their events and attempts are written next. NOT
-- INDEXED keeps the planner on rowid lookups per item (it would rather scan jobs_state).
-- A child's end is then counted in the gathers that wait for it (wait_children_done_many).
UPDATE jobs NOT INDEXED
SET state = 'succeeded', result = json_extract(i.value, '$[2]'), error_code = NULL,
    error_summary = NULL, lease_owner = NULL, lease_expires_at = NULL, lease_attempt = NULL,
    finished_at = :now, updated_at = :now, event_seq = event_seq + 1
FROM json_each(:items) AS i
WHERE jobs.id = json_extract(i.value, '$[0]') AND jobs.lease_attempt = json_extract(i.value, '$[1]')
  AND jobs.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM call_journal c
                  WHERE c.job_id = jobs.id AND c.status = 'reserved')
RETURNING jobs.id, jobs.event_seq, jobs.parent_id;

-- name: wait_children_done_many
-- A batch of children that succeeded, counted in the open gathers that wait for them; the
-- gathers this completes come back (their parents wake). CROSS JOIN keeps the batch's ids
-- outermost, each looked up in the child index (not every child of the gather, per batch).
UPDATE job_waits
SET pending = pending - (SELECT count(*) FROM json_each(:ids) i CROSS JOIN wait_children c
                         WHERE c.child_id = i.value AND c.job_id = job_waits.job_id
                           AND c.key = job_waits.key)
WHERE status = 'open' AND kind = 'children'
  AND (job_id, key) IN (SELECT c.job_id, c.key FROM json_each(:ids) i CROSS JOIN wait_children c
                        WHERE c.child_id = i.value)
RETURNING job_id, pending;
