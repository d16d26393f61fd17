-- Due retries and resumes, pruning, gone workers: background upkeep (store/control.py).

-- name: due_retries
SELECT * FROM jobs WHERE state = 'retry_wait' AND run_after <= %(now)s
ORDER BY run_after LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: prune_jobs
-- One batch, oldest first from ``since`` (the last batch's newest finished_at: the index scan
-- starts past the entries of rows already deleted); the outer test re-checks a row a concurrent
-- retry changed. ``= ANY (ARRAY(...))``: the batch's ids are looked up by primary key (an
-- ``IN (subquery)`` may be planned as a hash join over the whole table). A job whose provider
-- batch is not settled stays: the batch's reservation is still counted in its project, and
-- its settlement needs the job.
DELETE FROM jobs
WHERE id = ANY (ARRAY(SELECT id FROM jobs
                      WHERE finished_at IS NOT NULL AND finished_at >= %(since)s
                        AND finished_at < %(cutoff)s
                        AND state IN ('succeeded', 'failed', 'cancelled')
                        AND NOT EXISTS (SELECT 1 FROM provider_batches b
                                        WHERE b.job_id = jobs.id
                                          AND b.status IN ('submitting', 'submitted'))
                      ORDER BY finished_at LIMIT %(limit)s))
  AND finished_at < %(cutoff)s AND state IN ('succeeded', 'failed', 'cancelled')
RETURNING finished_at;

-- name: prune_blobs
DELETE FROM blobs b
WHERE b.created_at < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.blob = b.sha256);

-- Prune's last step forgets the workers gone before the cutoff: stopped then, or silent since
-- (killed), and holding no lease; then it takes their counter rows (``take_counters``; the
-- caller adds them to owner ''), so both tables keep a row per live worker, not per worker
-- ever run. A worker that comes back registers again at its next heartbeat.
-- name: forget_gone_workers
DELETE FROM workers w
WHERE coalesce(w.stopped_at, w.last_heartbeat_at) < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.lease_owner = w.id AND j.lease_attempt IS NOT NULL)
RETURNING w.id;

-- name: due_period_resumes
-- Jobs paused by a periodic project limit whose period has ended (run_after: its end).
SELECT * FROM jobs
WHERE state = 'paused' AND error_code = 'period_budget_exhausted' AND run_after <= %(now)s
ORDER BY run_after LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- name: live_children
SELECT * FROM jobs
WHERE parent_id = %(id)s AND NOT detached
  AND state NOT IN ('succeeded', 'failed', 'cancelled', 'cancelling')
ORDER BY id FOR UPDATE;

-- name: prune_webhook_attempts
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.created_at < %(cutoff)s AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id));

-- name: prune_webhook_deliveries
DELETE FROM webhook_deliveries d
WHERE d.created_at < %(cutoff)s AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id);

-- name: prune_schedule_misses
DELETE FROM schedule_misses WHERE at < %(cutoff)s;
