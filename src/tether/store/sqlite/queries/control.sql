-- Due retries and resumes, pruning, gone workers: background upkeep (store/control.py).

-- name: due_retries
SELECT * FROM jobs INDEXED BY jobs_retry_due
WHERE state = 'retry_wait' AND run_after <= :now ORDER BY run_after LIMIT :limit;

-- name: prune_jobs
-- One batch, oldest first from ``since`` (the last batch's newest finished_at). INDEXED BY:
-- without statistics (tether never ANALYZEs) SQLite would pick jobs_state and sort every
-- finished job for each batch. A job whose provider batch is not settled stays: the batch's
-- reservation is still counted in its project, and its settlement needs the job.
DELETE FROM jobs
WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_finished
             WHERE finished_at IS NOT NULL AND finished_at >= :since AND finished_at < :cutoff
               AND state IN ('succeeded', 'failed', 'cancelled')
               AND NOT EXISTS (SELECT 1 FROM provider_batches b WHERE b.job_id = jobs.id
                               AND b.status IN ('submitting', 'submitted'))
             ORDER BY finished_at LIMIT :limit)
RETURNING finished_at;

-- name: prune_blobs
DELETE FROM blobs WHERE created_at < :cutoff AND sha256 NOT IN (SELECT blob FROM checkpoints);

-- Prune's last step forgets the workers gone before the cutoff: stopped then, or silent since
-- (killed), and holding no lease; then it takes their counter rows (``take_counters``; the
-- caller adds them to owner ''), so both tables keep a row per live worker, not per worker
-- ever run. A worker that comes back registers again at its next heartbeat.
-- name: forget_gone_workers
DELETE FROM workers
WHERE coalesce(stopped_at, last_heartbeat_at) < :cutoff
  AND NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.lease_owner = workers.id AND j.lease_attempt IS NOT NULL)
RETURNING id;

-- name: due_period_resumes
-- Jobs paused by a periodic project limit whose period has ended (run_after: its end).
SELECT * FROM jobs
WHERE state = 'paused' AND error_code = 'period_budget_exhausted' AND run_after <= :now
ORDER BY run_after LIMIT :limit;

-- name: live_children
SELECT * FROM jobs
WHERE parent_id = :id AND detached = 0
  AND state NOT IN ('succeeded', 'failed', 'cancelled', 'cancelling')
ORDER BY id;

-- name: prune_webhook_attempts
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.created_at < :cutoff AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id));

-- name: prune_webhook_deliveries
DELETE FROM webhook_deliveries
WHERE created_at < :cutoff AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_id);

-- name: prune_schedule_misses
DELETE FROM schedule_misses WHERE at < :cutoff;
