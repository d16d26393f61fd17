-- Submitting jobs and reading them back: jobs, events, attempts, lists (store/jobs.py).

-- name: insert_jobs
-- The jobs in two sets of arrays bound in binary (no text to escape or parse): per job
-- (element i is job i) its shape, payload, hash, key, start time and estimate; per shape
-- (element n is shape n) the columns jobs of a batch mostly share (type, project, queue ...),
-- sent once however many jobs share them. An array that is NULL for every element is bound
-- as one NULL (unnest pads it). The jobs are inserted in order with their submitted events,
-- one statement for the whole batch; a key that already exists inserts nothing (the caller
-- looks it up, and sends a key once per batch). It is left out before the insert, so that
-- it uses up no value of the id sequence, as ON CONFLICT would; ON CONFLICT remains for a
-- key committed meanwhile by a concurrent submit (which leaves one gap in the ids). Returns
-- only what the database chose; the caller has the rest. %(now)s NULL: the statement's own
-- now() (a submit in autocommit).
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), inserted AS (
    INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts,
                      safe_to_retry, idempotency_key, input_config_hash, payload, budget,
                      price_profile, estimated_cost_usd, parent_id, detached, trace_context,
                      version, event_seq, created_at, updated_at)
    SELECT s.type, s.project, s.queue, 'queued', s.priority,
           coalesce(to_timestamp(t.run_after), clock.now), s.max_attempts, s.safe_to_retry,
           t.idempotency_key, t.input_config_hash, t.payload::jsonb, s.budget::jsonb,
           s.price_profile, t.estimated_cost_usd::numeric, s.parent_id,
           coalesce(s.detached, false), s.trace_context, s.version, 1, clock.now, clock.now
    FROM clock, unnest(
        %(shapes)b::int[], %(payloads)b::text[], %(hashes)b::text[], %(keys)b::text[],
        %(run_afters)b::float8[], %(estimates)b::text[]
    ) WITH ORDINALITY AS t(shape, payload, input_config_hash, idempotency_key, run_after,
                           estimated_cost_usd, ord)
    JOIN unnest(
        %(types)b::text[], %(projects)b::text[], %(queues)b::text[], %(priorities)b::int[],
        %(max_attempts)b::int[], %(safe_to_retry)b::bool[], %(budgets)b::text[],
        %(price_profiles)b::text[], %(parents)b::bigint[], %(detached)b::bool[],
        %(trace_contexts)b::text[], %(versions)b::text[]
    ) WITH ORDINALITY AS s(type, project, queue, priority, max_attempts, safe_to_retry,
                           budget, price_profile, parent_id, detached, trace_context, version,
                           shape)
      ON s.shape = t.shape
    WHERE NOT EXISTS (
        SELECT 1 FROM jobs e WHERE e.idempotency_key IS NOT NULL
          AND e.idempotency_key = t.idempotency_key AND e.project = s.project)
    ORDER BY t.ord
    ON CONFLICT (project, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type, project, queue, idempotency_key, created_at, run_after, payload
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, 1, created_at, 'submitted', NULL, 'queued', NULL,
           jsonb_build_object('type', type, 'queue', queue, 'idempotency_key', idempotency_key)
    FROM inserted
)
SELECT id, project, idempotency_key, created_at, run_after, payload FROM inserted;

-- name: insert_job
-- insert_jobs for a batch of one job (a single submit), its values bound one by one: binding
-- the arrays would cost more than the statement itself.
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), inserted AS (
    INSERT INTO jobs (type, project, queue, state, priority, run_after, max_attempts,
                      safe_to_retry, idempotency_key, input_config_hash, payload, budget,
                      price_profile, estimated_cost_usd, parent_id, detached, trace_context,
                      version, event_seq, created_at, updated_at)
    SELECT %(type)s, %(project)s, %(queue)s, 'queued', %(priority)s::int,
           coalesce(to_timestamp(%(run_after_seconds)s::float8), clock.now),
           %(max_attempts)s::int, %(safe_to_retry)s, %(idempotency_key)s::text,
           %(input_config_hash)s, %(payload)s::jsonb, %(budget)s::jsonb, %(price_profile)s::text,
           %(estimated_cost_usd)s::numeric, %(parent_id)s::bigint, %(detached)s,
           %(trace_context)s::text, %(version)s::text, 1, clock.now, clock.now
    FROM clock
    WHERE NOT EXISTS (
        SELECT 1 FROM jobs e WHERE e.idempotency_key IS NOT NULL
          AND e.idempotency_key = %(idempotency_key)s::text AND e.project = %(project)s)
    ON CONFLICT (project, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING id, type, project, queue, idempotency_key, created_at, run_after, payload
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, 1, created_at, 'submitted', NULL, 'queued', NULL,
           jsonb_build_object('type', type, 'queue', queue, 'idempotency_key', idempotency_key)
    FROM inserted
)
SELECT id, project, idempotency_key, created_at, run_after, payload FROM inserted;

-- name: jobs_by_keys
-- %(keys)s is a JSON array of [project, idempotency_key] pairs; rows as get_job reads them.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.idempotency_key IS NOT NULL
  AND (j.project, j.idempotency_key) IN (
      SELECT k ->> 0, k ->> 1 FROM jsonb_array_elements(%(keys)s::jsonb) AS k);

-- name: job_ids_by_keys
-- The id and configuration hash of each job of %(project)s named by a key of %(keys)s (a
-- repeated batch's ids, read without building its jobs), by the jobs_idempotency index.
SELECT idempotency_key, id, input_config_hash FROM jobs
WHERE idempotency_key IS NOT NULL
  AND project = %(project)s AND idempotency_key = ANY (%(keys)s::text[]);

-- name: get_job
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.id = %(id)s;

-- name: list_events
SELECT * FROM job_events WHERE job_id = %(job_id)s AND seq > %(after)s ORDER BY seq
LIMIT %(limit)s;

-- name: list_attempts
SELECT * FROM job_attempts WHERE job_id = %(job_id)s ORDER BY attempt;

-- name: list_jobs
-- Newest first; no state and no search (those have the two statements below): the primary
-- key read backwards, filtered.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
  AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
  AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
  AND (%(before_id)s::bigint IS NULL OR j.id < %(before_id)s::bigint)
ORDER BY j.id DESC LIMIT %(limit)s;

-- name: list_jobs_in_state
-- The state is a plain equality (never ``IS NULL OR``, which a generic plan cannot match to
-- an index): jobs_state (state, id) read backwards, so a rare state among millions of
-- finished jobs costs what a common one does.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.state = %(state)s::text
  AND (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
  AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
  AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
  AND (%(before_id)s::bigint IS NULL OR j.id < %(before_id)s::bigint)
ORDER BY j.id DESC LIMIT %(limit)s;

-- name: list_jobs_in_project_state
-- One project and a state (the dashboard's "failed jobs of this project"): jobs_project_state
-- (project, state, id) read backwards, however many jobs other projects or states hold. That
-- index holds no queued job, so queued ones are a branch of their own (jobs_fair narrowed to
-- the project, or jobs_state); each branch names its state literally, so that even a generic
-- plan knows which index may serve it and runs only the branch the state asks for.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM ((SELECT * FROM jobs WHERE project = %(project)s::text AND state = %(state)s::text
         AND state <> 'queued'
         AND (%(type)s::text IS NULL OR type = %(type)s::text)
         AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
         AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
       ORDER BY id DESC LIMIT %(limit)s)
      UNION ALL
      (SELECT * FROM jobs WHERE project = %(project)s::text AND state = %(state)s::text
         AND state = 'queued'
         AND (%(type)s::text IS NULL OR type = %(type)s::text)
         AND (%(queue)s::text IS NULL OR queue = %(queue)s::text)
         AND (%(before_id)s::bigint IS NULL OR id < %(before_id)s::bigint)
       ORDER BY id DESC LIMIT %(limit)s)) j
LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
ORDER BY j.id DESC LIMIT %(limit)s;

-- name: list_jobs_search
-- A job id or an idempotency key: the primary key and jobs_idempotency_key, never a scan.
SELECT j.*, b.spent_usd, b.reserved_usd, b.calls, b.reserved_calls, b.input_tokens,
       b.output_tokens, b.reserved_input_tokens, b.reserved_output_tokens, b.examples
FROM jobs j LEFT JOIN budgets b ON b.scope = 'job' AND b.key = j.id::text
WHERE j.id IN (SELECT k.id FROM jobs k WHERE k.idempotency_key = %(search)s::text
               UNION ALL SELECT %(search_id)s::bigint)
  AND (%(state)s::text IS NULL OR j.state = %(state)s::text)
  AND (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
  AND (%(type)s::text IS NULL OR j.type = %(type)s::text)
  AND (%(queue)s::text IS NULL OR j.queue = %(queue)s::text)
  AND (%(before_id)s::bigint IS NULL OR j.id < %(before_id)s::bigint)
ORDER BY j.id DESC LIMIT %(limit)s;

-- name: ensure_queue
INSERT INTO queues (name, paused, updated_at) VALUES (%(name)s, false, %(now)s)
ON CONFLICT (name) DO NOTHING;
