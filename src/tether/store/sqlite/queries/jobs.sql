-- Submitting jobs and reading them back: jobs, events, attempts, lists (store/jobs.py).

-- name: insert_jobs
-- :jobs is a JSON array of job objects, inserted in array order in one statement; a key that
-- already exists inserts nothing (the caller looks it up, and sends a key once per batch).
-- It is left out before the insert, not refused by ON CONFLICT: AUTOINCREMENT would use up an
-- id for each refused row. The submitted events follow. Returns only what the database
-- chose; the caller has the rest.
INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts, safe_to_retry,
                  idempotency_key, input_config_hash, payload, budget, price_profile,
                  estimated_cost_usd, parent_id, detached, trace_context, version, event_seq,
                  created_at, updated_at)
SELECT json_extract(j.value, '$.type'), json_extract(j.value, '$.project'),
       json_extract(j.value, '$.queue'), 'queued', json_extract(j.value, '$.priority'),
       coalesce(json_extract(j.value, '$.run_after'), :now),
       json_extract(j.value, '$.max_attempts'), json_extract(j.value, '$.safe_to_retry'),
       json_extract(j.value, '$.idempotency_key'), json_extract(j.value, '$.input_config_hash'),
       json_extract(j.value, '$.payload'), json_extract(j.value, '$.budget'),
       json_extract(j.value, '$.price_profile'), json_extract(j.value, '$.estimated_cost_usd'),
       json_extract(j.value, '$.parent_id'), coalesce(json_extract(j.value, '$.detached'), 0),
       json_extract(j.value, '$.trace_context'), json_extract(j.value, '$.version'), 1, :now,
       :now
FROM json_each(:jobs) AS j
WHERE json_extract(j.value, '$.idempotency_key') IS NULL OR NOT EXISTS (
    SELECT 1 FROM jobs e WHERE e.idempotency_key = json_extract(j.value, '$.idempotency_key')
      AND e.project = json_extract(j.value, '$.project'))
ORDER BY j.key
ON CONFLICT (project, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, project, idempotency_key, created_at, run_after, payload;

-- name: insert_job
-- insert_jobs for a batch of one job (a single submit), its values bound one by one.
INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts, safe_to_retry,
                  idempotency_key, input_config_hash, payload, budget, price_profile,
                  estimated_cost_usd, parent_id, detached, trace_context, version, event_seq,
                  created_at, updated_at)
SELECT :type, :project, :queue, 'queued', :priority, coalesce(:run_after_seconds, :now),
       :max_attempts, :safe_to_retry, :idempotency_key, :input_config_hash, :payload, :budget,
       :price_profile, :estimated_cost_usd, :parent_id, :detached, :trace_context, :version, 1, :now,
       :now
WHERE :idempotency_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM jobs e WHERE e.idempotency_key = :idempotency_key AND e.project = :project)
ON CONFLICT (project, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id, project, idempotency_key, created_at, run_after, payload;

-- name: jobs_by_keys
-- :keys is a JSON array of [project, idempotency_key] pairs; rows as get_job reads them.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.idempotency_key IS NOT NULL
  AND (j.project, j.idempotency_key) IN (
      SELECT json_extract(k.value, '$[0]'), json_extract(k.value, '$[1]')
      FROM json_each(:keys) AS k);

-- name: job_ids_by_keys
-- The id and configuration hash of each job of :project named by a key of :keys (a JSON
-- array; a repeated batch's ids, read without building its jobs), by jobs_idempotency.
SELECT idempotency_key, id, input_config_hash FROM jobs
WHERE idempotency_key IS NOT NULL
  AND project = :project AND idempotency_key IN (SELECT value FROM json_each(:keys));

-- name: get_job
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.id = :id;

-- name: list_events
SELECT * FROM job_events WHERE job_id = :job_id AND seq > :after ORDER BY seq LIMIT :limit;

-- name: list_attempts
SELECT * FROM job_attempts WHERE job_id = :job_id ORDER BY attempt;

-- name: list_jobs
-- Newest first; no state and no search (those have the two statements below): the rowid
-- read backwards, filtered.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
  AND (:type IS NULL OR j.type = :type)
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:before_id IS NULL OR j.id < :before_id)
ORDER BY j.id DESC LIMIT :limit;

-- name: list_jobs_in_state
-- The state is a plain equality (never ``IS NULL OR``, which the planner cannot match to an
-- index): jobs_state (state, id) read backwards, so a rare state among millions of finished
-- jobs costs what a common one does.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j INDEXED BY jobs_state
LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.state = :state
  AND (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
  AND (:type IS NULL OR j.type = :type)
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:before_id IS NULL OR j.id < :before_id)
ORDER BY j.id DESC LIMIT :limit;

-- name: list_jobs_in_project_state
-- One project and a state (the dashboard's "failed jobs of this project"): jobs_project_state
-- (project, state, id) read backwards, however many jobs other projects or states hold.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j INDEXED BY jobs_project_state
LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.project = :project AND j.state = :state
  AND (:type IS NULL OR j.type = :type)
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:before_id IS NULL OR j.id < :before_id)
ORDER BY j.id DESC LIMIT :limit;

-- name: list_jobs_search
-- A job id or an idempotency key: the rowid and jobs_idempotency_key, never a scan.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = CAST(j.id AS TEXT)
WHERE j.id IN (SELECT k.id FROM jobs k WHERE k.idempotency_key = :search
               UNION ALL SELECT :search_id)
  AND (:state IS NULL OR j.state = :state)
  AND (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
  AND (:type IS NULL OR j.type = :type)
  AND (:queue IS NULL OR j.queue = :queue)
  AND (:before_id IS NULL OR j.id < :before_id)
ORDER BY j.id DESC LIMIT :limit;

-- name: ensure_queue
INSERT INTO queues (name, paused, updated_at) VALUES (:name, 0, :now)
ON CONFLICT (name) DO NOTHING;
