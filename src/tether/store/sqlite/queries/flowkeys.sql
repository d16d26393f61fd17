-- Submitting with a singleton or debounce key (store/flowkeys.py).

-- name: insert_flow_job
-- insert_job for a job with a flow key: nothing is inserted when its key (or its idempotency
-- key) already names a job the unique indexes count (jobs_singleton, jobs_debounce).
INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts, safe_to_retry,
                  idempotency_key, input_config_hash, payload, budget, price_profile,
                  estimated_cost_usd, parent_id, detached, trace_context, version, event_seq,
                  created_at, updated_at, flow_mode, flow_key)
VALUES (:type, :project, :queue, 'queued', :priority, coalesce(:run_after_seconds, :now),
        :max_attempts, :safe_to_retry, :idempotency_key, :input_config_hash, :payload, :budget,
        :price_profile, :estimated_cost_usd, :parent_id, :detached, :trace_context, :version, 1,
        :now, :now, :flow_mode, :flow_key)
ON CONFLICT DO NOTHING
RETURNING id, project, idempotency_key, created_at, run_after, payload;

-- name: flow_live_job
-- The live singleton job of a key, as get_job reads it.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.project = :project AND j.type = :type AND j.flow_key = :flow_key
  AND j.flow_mode = 'singleton' AND j.state NOT IN ('succeeded', 'failed', 'cancelled');

-- name: flow_replace_pending
-- A debounced key's pending job takes the new submit's payload; no row when it has none.
UPDATE jobs SET payload = :payload, input_config_hash = :input_config_hash,
    estimated_cost_usd = :estimated_cost_usd, updated_at = :now, event_seq = event_seq + 1
WHERE project = :project AND type = :type AND flow_key = :flow_key
  AND flow_mode = 'debounce' AND state = 'queued' AND attempt_count = 0
RETURNING id, event_seq;
