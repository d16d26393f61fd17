-- Waits, their children and signals (store/waits.py).

-- name: wait_get
SELECT * FROM job_waits WHERE job_id = :job_id AND key = :key;

-- name: waits_of
SELECT * FROM job_waits WHERE job_id = :job_id ORDER BY created_at, attempt, key;

-- name: wait_current
-- The wait the job is blocked on: the open one its latest attempt began.
SELECT * FROM job_waits WHERE job_id = :job_id AND status = 'open'
ORDER BY attempt DESC, created_at DESC LIMIT 1;

-- name: wait_insert
INSERT INTO job_waits (job_id, key, kind, wake_at, child_count, fail_mode, signal, prompt,
                       schema, attempt, created_at)
VALUES (:job_id, :key, :kind, :wake_at, :child_count, :fail_mode, :signal, :prompt, :schema,
        :attempt, :now);

-- name: wait_touch
UPDATE job_waits SET attempt = :attempt WHERE job_id = :job_id AND key = :key AND status = 'open';

-- name: wait_close
UPDATE job_waits SET status = 'done', outcome = :outcome, value = :value, done_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'open';

-- name: wait_children_insert
-- One batch of a gather's children, positions from :offset, in one statement.
INSERT INTO wait_children (job_id, key, pos, child_id)
SELECT :job_id, :key, :offset + CAST(c.key AS INTEGER), c.value FROM json_each(:ids) c;

-- name: wait_lock
SELECT * FROM job_waits WHERE job_id = :job_id AND key = :key;

-- name: wait_count
-- A gather's children counted from their rows: not finished, and failed (a pruned child
-- counts as failed: it finished long ago).
SELECT coalesce(sum(CASE WHEN j.state NOT IN ('succeeded', 'failed', 'cancelled')
                         THEN 1 ELSE 0 END), 0) AS pending,
       coalesce(sum(CASE WHEN j.id IS NULL OR j.state IN ('failed', 'cancelled')
                         THEN 1 ELSE 0 END), 0) AS failed
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = :job_id AND c.key = :key;

-- name: wait_set_counts
UPDATE job_waits SET pending = :pending, failed = :failed
WHERE job_id = :job_id AND key = :key;

-- name: wait_child_done
-- A gathered child ended: every open gather that waits for it counts it, O(1) each (the
-- wait_children_child index finds the gathers and how often each names the child).
UPDATE job_waits
SET pending = pending - (SELECT count(*) FROM wait_children c INDEXED BY wait_children_child
                         WHERE c.child_id = :child_id AND c.job_id = job_waits.job_id
                           AND c.key = job_waits.key),
    failed = failed + :failed * (SELECT count(*) FROM wait_children c
                                 INDEXED BY wait_children_child
                                 WHERE c.child_id = :child_id AND c.job_id = job_waits.job_id
                                   AND c.key = job_waits.key)
WHERE status = 'open' AND kind = 'children'
  AND (job_id, key) IN (SELECT job_id, key FROM wait_children WHERE child_id = :child_id)
RETURNING job_id, key, pending, failed, fail_mode;

-- name: wait_first_failed
-- The first child in the gather's order that failed, was cancelled or no longer exists.
SELECT c.child_id AS id, coalesce(j.state, 'cancelled') AS state, j.error_code,
       j.error_summary, j.id IS NULL AS pruned
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = :job_id AND c.key = :key
  AND (j.id IS NULL OR j.state IN ('failed', 'cancelled'))
ORDER BY c.pos LIMIT 1;

-- name: wait_results
-- One page of a gather's children in its order, results included.
SELECT c.pos, c.child_id AS id, j.id IS NULL AS pruned, coalesce(j.state, 'cancelled') AS state,
       j.result, j.error_code, j.error_summary
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = :job_id AND c.key = :key AND c.pos >= :after
ORDER BY c.pos LIMIT :limit;

-- name: lock_job_if_free
SELECT * FROM jobs WHERE id = :id;

-- name: wait_child_ids
SELECT key, child_id FROM wait_children WHERE job_id = :job_id ORDER BY key, pos;

-- name: waiting_due
SELECT * FROM jobs WHERE state = 'waiting' AND run_after <= :now ORDER BY run_after LIMIT :limit;

-- name: set_run_after
UPDATE jobs SET run_after = :run_after WHERE id = :id;

-- name: list_waiting_jobs
-- ``list_jobs`` narrowed to waiting jobs whose open wait is of kind :kind ("waiting for me":
-- a signal). job_waits' primary key (job_id, key) serves the EXISTS.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.state = 'waiting'
  AND EXISTS (SELECT 1 FROM job_waits w
              WHERE w.job_id = j.id AND w.status = 'open' AND w.kind = :kind)
  AND (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
  AND (:type IS NULL OR j.type = :type)
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:before_id IS NULL OR j.id < :before_id)
  AND (:search IS NULL OR j.idempotency_key = :search OR CAST(j.id AS TEXT) = :search)
ORDER BY j.id DESC LIMIT :limit;

-- name: signal_insert
INSERT INTO job_signals (job_id, name, value, sent_at) VALUES (:job_id, :name, :value, :now);

-- name: signal_next
SELECT id, value FROM job_signals
WHERE job_id = :job_id AND name = :name AND consumed_at IS NULL ORDER BY id LIMIT 1;

-- name: signal_consume
UPDATE job_signals SET consumed_at = :now, consumed_by = :key WHERE id = :id;

-- name: batch_status
SELECT status FROM provider_batches WHERE job_id = :job_id AND key = :key;
