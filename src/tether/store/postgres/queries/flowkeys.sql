-- Submitting with a singleton or debounce key (store/flowkeys.py).

-- name: insert_flow_job
-- insert_job for a job with a flow key: nothing is inserted when its key (or its idempotency
-- key) already names a job the unique indexes count (jobs_singleton, jobs_debounce). A
-- concurrent submit of the same key waits here for the other's transaction to end.
INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts,
                  safe_to_retry, idempotency_key, input_config_hash, payload, budget,
                  price_profile, estimated_cost_usd, parent_id, detached, trace_context,
                  version, event_seq, created_at, updated_at, flow_mode, flow_key)
VALUES (%(type)s, %(project)s, %(queue)s, 'queued', %(priority)s::int,
        coalesce(to_timestamp(%(run_after_seconds)s::float8), %(now)s), %(max_attempts)s::int,
        %(safe_to_retry)s, %(idempotency_key)s::text, %(input_config_hash)s,
        %(payload)s::jsonb, %(budget)s::jsonb, %(price_profile)s::text,
        %(estimated_cost_usd)s::numeric, %(parent_id)s::bigint, %(detached)s,
        %(trace_context)s::text, %(version)s::text, 1, %(now)s, %(now)s, %(flow_mode)s::text,
        %(flow_key)s::text)
ON CONFLICT DO NOTHING
RETURNING id, project, idempotency_key, created_at, run_after, payload;

-- name: flow_live_job
-- The live singleton job of a key, as get_job reads it.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.project = %(project)s AND j.type = %(type)s AND j.flow_key = %(flow_key)s
  AND j.flow_mode = 'singleton' AND j.state NOT IN ('succeeded', 'failed', 'cancelled');

-- name: flow_replace_pending
-- A debounced key's pending job takes the new submit's payload; no row when it has none (a
-- claim that got there first leaves it unmatched once the claim commits).
UPDATE jobs SET payload = %(payload)s::jsonb, input_config_hash = %(input_config_hash)s,
    estimated_cost_usd = %(estimated_cost_usd)s::numeric, updated_at = %(now)s,
    event_seq = event_seq + 1
WHERE project = %(project)s AND type = %(type)s AND flow_key = %(flow_key)s
  AND flow_mode = 'debounce' AND state = 'queued' AND attempt_count = 0
RETURNING id, event_seq;
