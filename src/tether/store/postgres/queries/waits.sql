-- Waits, their children and signals (store/waits.py).

-- name: wait_get
SELECT * FROM job_waits WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: waits_of
SELECT * FROM job_waits WHERE job_id = %(job_id)s ORDER BY created_at, attempt, key;

-- name: wait_current
-- The wait the job is blocked on: the open one its latest attempt began.
SELECT * FROM job_waits WHERE job_id = %(job_id)s AND status = 'open'
ORDER BY attempt DESC, created_at DESC LIMIT 1;

-- name: wait_insert
INSERT INTO job_waits (job_id, key, kind, wake_at, child_count, fail_mode, signal, prompt,
                       schema, attempt, created_at)
VALUES (%(job_id)s, %(key)s, %(kind)s, %(wake_at)s, %(child_count)s, %(fail_mode)s,
        %(signal)s, %(prompt)s, %(schema)s::jsonb, %(attempt)s, %(now)s);

-- name: wait_touch
UPDATE job_waits SET attempt = %(attempt)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'open';

-- name: wait_close
UPDATE job_waits SET status = 'done', outcome = %(outcome)s, value = %(value)s::jsonb,
    done_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'open';

-- name: wait_children_insert
-- One batch of a gather's children, positions from :offset, in one statement.
INSERT INTO wait_children (job_id, key, pos, child_id)
SELECT %(job_id)s, %(key)s, %(offset)s + c.pos - 1, c.id
FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS c (id, pos);

-- name: wait_lock
-- The gather's row, locked: children that end meanwhile wait to count themselves.
SELECT * FROM job_waits WHERE job_id = %(job_id)s AND key = %(key)s FOR UPDATE;

-- name: wait_count
-- A gather's children counted from their rows: not finished, and failed (a pruned child
-- counts as failed: it finished long ago).
SELECT count(*) FILTER (WHERE j.state NOT IN ('succeeded', 'failed', 'cancelled')) AS pending,
       count(*) FILTER (WHERE j.id IS NULL OR j.state IN ('failed', 'cancelled')) AS failed
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = %(job_id)s AND c.key = %(key)s;

-- name: wait_set_counts
UPDATE job_waits SET pending = %(pending)s, failed = %(failed)s
WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: wait_child_done
-- A gathered child ended: every open gather that waits for it counts it, O(1) each (the
-- wait_children_child index finds the gathers and how often each names the child).
UPDATE job_waits w
SET pending = w.pending - c.n, failed = w.failed + %(failed)s * c.n
FROM (SELECT job_id, key, count(*) AS n FROM wait_children WHERE child_id = %(child_id)s
      GROUP BY job_id, key) c
WHERE w.job_id = c.job_id AND w.key = c.key AND w.status = 'open' AND w.kind = 'children'
RETURNING w.job_id, w.key, w.pending, w.failed, w.fail_mode;

-- name: wait_first_failed
-- The first child in the gather's order that failed, was cancelled or no longer exists.
SELECT c.child_id AS id, coalesce(j.state, 'cancelled') AS state, j.error_code,
       j.error_summary, j.id IS NULL AS pruned
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = %(job_id)s AND c.key = %(key)s
  AND (j.id IS NULL OR j.state IN ('failed', 'cancelled'))
ORDER BY c.pos LIMIT 1;

-- name: wait_results
-- One page of a gather's children in its order, results included.
SELECT c.pos, c.child_id AS id, j.id IS NULL AS pruned, coalesce(j.state, 'cancelled') AS state,
       j.result, j.error_code, j.error_summary
FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
WHERE c.job_id = %(job_id)s AND c.key = %(key)s AND c.pos >= %(after)s
ORDER BY c.pos LIMIT %(limit)s;

-- name: wait_child_ids
SELECT key, child_id FROM wait_children WHERE job_id = %(job_id)s ORDER BY key, pos;

-- name: lock_job_if_free
-- A gather's parent, unless another transaction holds it (its own park, which counts the
-- children again once this one commits).
SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE SKIP LOCKED;

-- name: waiting_due
-- Waiting jobs whose recheck time has come; another sweeper's rows are skipped, not waited on.
SELECT * FROM jobs WHERE state = 'waiting' AND run_after <= %(now)s
ORDER BY run_after LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- name: set_run_after
UPDATE jobs SET run_after = %(run_after)s WHERE id = %(id)s;

-- name: list_waiting_jobs
-- ``list_jobs`` narrowed to waiting jobs whose open wait is of kind %(kind)s ("waiting for
-- me": a signal). job_waits' primary key (job_id, key) serves the EXISTS.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.state = 'waiting'
  AND EXISTS (SELECT 1 FROM job_waits w
              WHERE w.job_id = j.id AND w.status = 'open' AND w.kind = %(kind)s::text)
  AND (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
  AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
  AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
  AND (%(before_id)s::bigint IS NULL OR j.id < %(before_id)s::bigint)
  AND (%(search)s::text IS NULL OR j.idempotency_key = %(search)s::text
       OR j.id::text = %(search)s::text)
ORDER BY j.id DESC LIMIT %(limit)s;

-- name: signal_insert
INSERT INTO job_signals (job_id, name, value, sent_at)
VALUES (%(job_id)s, %(name)s, %(value)s::jsonb, %(now)s);

-- name: signal_next
SELECT id, value FROM job_signals
WHERE job_id = %(job_id)s AND name = %(name)s AND consumed_at IS NULL ORDER BY id LIMIT 1
FOR UPDATE;

-- name: signal_consume
UPDATE job_signals SET consumed_at = %(now)s, consumed_by = %(key)s WHERE id = %(id)s;

-- name: batch_status
SELECT status FROM provider_batches WHERE job_id = %(job_id)s AND key = %(key)s;
