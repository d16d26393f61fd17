-- The SQLite store's statements. Times are unix seconds; :now is always bound by the store
-- (the single machine's clock, or a test's FakeClock). Writes run inside BEGIN IMMEDIATE.

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

-- name: lock_job
SELECT * FROM jobs WHERE id = :id;

-- name: update_job
UPDATE jobs
SET state = :state, stage = :stage, run_after = :run_after, max_attempts = :max_attempts,
    result = :result, error_code = :error_code, error_summary = :error_summary,
    lease_owner = :lease_owner, lease_expires_at = :lease_expires_at, lease_token = :lease_token,
    budget = :budget, finished_at = :finished_at, updated_at = :now, event_seq = event_seq + 1
WHERE id = :id
RETURNING event_seq;

-- name: bump_event_seq
UPDATE jobs SET event_seq = event_seq + 1 WHERE id = :id RETURNING event_seq;

-- name: insert_event
INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
VALUES (:job_id, :seq, :at, :kind, :from_state, :to_state, :attempt, :data);

-- name: list_events
SELECT * FROM job_events WHERE job_id = :job_id AND seq > :after ORDER BY seq LIMIT :limit;

-- name: list_attempts
SELECT * FROM job_attempts WHERE job_id = :job_id ORDER BY attempt;

-- name: claim_jobs
-- With :start, first attempts go straight to 'running' (two events: seq - 1 and seq).
-- Flow control (docs/flow-control.md): no job of a paused queue or type; held counts the
-- slots each limit's keys hold now, the walk skips a job whose key or limit is full, and
-- the window (four times :limit while limits exist) loses the candidates that would fill
-- one past its limit within this batch (per_key_over, then total_over).
UPDATE jobs
SET state = CASE WHEN :start AND attempt_count = 0 THEN 'running' ELSE 'leased' END,
    attempt_count = attempt_count + 1, lease_token = attempt_count + 1,
    lease_owner = :worker_id, lease_expires_at = :now + :lease_ttl, updated_at = :now,
    event_seq = event_seq + CASE WHEN :start AND attempt_count = 0 THEN 2 ELSE 1 END
WHERE id IN (
    WITH held AS MATERIALIZED (
        SELECT l.scope, l.name,
               CASE WHEN l.key_field IS NULL THEN h.project ELSE coalesce(CAST(json_extract(
                   h.payload, '$."' || l.key_field || '"') AS TEXT), h.project) END AS key,
               count(*) AS n
        FROM flow_limits l JOIN jobs h
          ON (l.scope = 'queue' AND h.queue = l.name) OR (l.scope = 'type' AND h.type = l.name)
        WHERE h.state IN ('leased', 'running', 'pausing', 'cancelling')
        GROUP BY 1, 2, 3
    ), picked AS (
        SELECT j.id, j.queue, j.type, j.project, j.payload, j.priority, j.run_after
        FROM jobs j INDEXED BY jobs_claimable
        WHERE j.state = 'queued' AND j.run_after <= :now
          AND (:queues IS NULL OR j.queue IN (SELECT value FROM json_each(:queues)))
          AND (:types IS NULL OR j.type IN (SELECT value FROM json_each(:types))
               OR j.type || '@' || j.version IN (SELECT value FROM json_each(:versions)))
          AND j.queue NOT IN (SELECT name FROM queues WHERE paused = 1)
          AND j.type NOT IN (SELECT name FROM job_types WHERE paused = 1)
          AND NOT EXISTS (
              SELECT 1 FROM flow_limits l
              WHERE ((l.scope = 'queue' AND l.name = j.queue)
                     OR (l.scope = 'type' AND l.name = j.type))
                AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                                 WHERE held.scope = l.scope AND held.name = l.name)
                     OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                      WHERE held.scope = l.scope AND held.name = l.name
                                        AND held.key = CASE WHEN l.key_field IS NULL
                                            THEN j.project ELSE coalesce(CAST(json_extract(
                                            j.payload, '$."' || l.key_field || '"') AS TEXT),
                                            j.project) END)))
        ORDER BY j.priority, j.run_after, j.id
        LIMIT :limit * CASE WHEN EXISTS (SELECT 1 FROM flow_limits) THEN 4 ELSE 1 END
    ), keyed AS (
        SELECT p.id, p.priority, p.run_after, l.scope, l.name, l.per_key, l.total,
               CASE WHEN l.key_field IS NULL THEN p.project ELSE coalesce(CAST(json_extract(
                   p.payload, '$."' || l.key_field || '"') AS TEXT), p.project) END AS key
        FROM picked p JOIN flow_limits l
          ON (l.scope = 'queue' AND l.name = p.queue) OR (l.scope = 'type' AND l.name = p.type)
    ), per_key_over AS (
        SELECT k.id FROM (
            SELECT k.*, row_number() OVER (PARTITION BY k.scope, k.name, k.key
                                           ORDER BY k.priority, k.run_after, k.id) AS nk
            FROM keyed k) k
        WHERE k.per_key < nk + (SELECT coalesce(sum(n), 0) FROM held WHERE held.scope = k.scope
                                AND held.name = k.name AND held.key = k.key)
    ), total_over AS (
        SELECT k.id FROM (
            SELECT k.*, row_number() OVER (PARTITION BY k.scope, k.name
                                           ORDER BY k.priority, k.run_after, k.id) AS nt
            FROM keyed k WHERE k.id NOT IN (SELECT id FROM per_key_over)) k
        WHERE k.total < nt + (SELECT coalesce(sum(n), 0) FROM held WHERE held.scope = k.scope
                              AND held.name = k.name)
    ), chosen AS (
        SELECT id FROM picked
        WHERE id NOT IN (SELECT id FROM per_key_over) AND id NOT IN (SELECT id FROM total_over)
        ORDER BY priority, run_after, id LIMIT :limit
    )
    SELECT id FROM chosen)
RETURNING *;

-- name: claim_jobs_fair
-- claim_jobs with fair dispatch and aging (docs/flow-control.md): levels walks jobs_fair to
-- each (project, priority) with queued jobs (index seeks: a row-value comparison would scan
-- a project's whole level); heads reads each level's first claimable job, the least of its
-- level in claim order, so only the :limit levels with the least heads (top_levels) can give
-- the batch a job; picked takes the first jobs of those, and the batch is chosen by aged
-- priority (ep: priority less one per :aging_s waited), then share (the project's jobs
-- holding a slot plus this one's place among its picked), so projects of one priority are
-- served round-robin; flow control as in claim_jobs.
UPDATE jobs
SET state = CASE WHEN :start AND attempt_count = 0 THEN 'running' ELSE 'leased' END,
    attempt_count = attempt_count + 1, lease_token = attempt_count + 1,
    lease_owner = :worker_id, lease_expires_at = :now + :lease_ttl, updated_at = :now,
    event_seq = event_seq + CASE WHEN :start AND attempt_count = 0 THEN 2 ELSE 1 END
WHERE id IN (
    WITH RECURSIVE levels(project, priority) AS (
        SELECT * FROM (SELECT project, priority FROM jobs INDEXED BY jobs_fair
                       WHERE state = 'queued' ORDER BY project, priority LIMIT 1)
        UNION ALL
        SELECT coalesce(CASE WHEN (SELECT min(priority) FROM jobs INDEXED BY jobs_fair
                                   WHERE state = 'queued' AND project = l.project
                                     AND priority > l.priority) IS NOT NULL
                             THEN l.project END,
                        (SELECT min(project) FROM jobs INDEXED BY jobs_fair
                         WHERE state = 'queued' AND project > l.project)),
               coalesce((SELECT min(priority) FROM jobs INDEXED BY jobs_fair
                         WHERE state = 'queued' AND project = l.project
                           AND priority > l.priority),
                        (SELECT min(priority) FROM jobs INDEXED BY jobs_fair
                         WHERE state = 'queued' AND project = (
                             SELECT min(project) FROM jobs INDEXED BY jobs_fair
                             WHERE state = 'queued' AND project > l.project)))
        FROM levels l WHERE l.project IS NOT NULL
    ), held AS MATERIALIZED (
        SELECT l.scope, l.name,
               CASE WHEN l.key_field IS NULL THEN h.project ELSE coalesce(CAST(json_extract(
                   h.payload, '$."' || l.key_field || '"') AS TEXT), h.project) END AS key,
               count(*) AS n
        FROM flow_limits l JOIN jobs h
          ON (l.scope = 'queue' AND h.queue = l.name) OR (l.scope = 'type' AND h.type = l.name)
        WHERE h.state IN ('leased', 'running', 'pausing', 'cancelling')
        GROUP BY 1, 2, 3
    ), fair_held AS MATERIALIZED (
        SELECT project, count(*) AS n FROM jobs
        WHERE state IN ('leased', 'running', 'pausing', 'cancelling')
          AND (SELECT count(DISTINCT project) FROM levels) > 1
        GROUP BY project
    ), heads AS (
        SELECT lv.project, lv.priority, (
            SELECT j.run_after FROM jobs j INDEXED BY jobs_fair
            WHERE j.state = 'queued' AND j.project = lv.project AND j.priority = lv.priority
              AND j.run_after <= :now
          AND (:queues IS NULL OR j.queue IN (SELECT value FROM json_each(:queues)))
          AND (:types IS NULL OR j.type IN (SELECT value FROM json_each(:types))
               OR j.type || '@' || j.version IN (SELECT value FROM json_each(:versions)))
          AND j.queue NOT IN (SELECT name FROM queues WHERE paused = 1)
          AND j.type NOT IN (SELECT name FROM job_types WHERE paused = 1)
          AND NOT EXISTS (
              SELECT 1 FROM flow_limits l
              WHERE ((l.scope = 'queue' AND l.name = j.queue)
                     OR (l.scope = 'type' AND l.name = j.type))
                AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                                 WHERE held.scope = l.scope AND held.name = l.name)
                     OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                      WHERE held.scope = l.scope AND held.name = l.name
                                        AND held.key = CASE WHEN l.key_field IS NULL
                                            THEN j.project ELSE coalesce(CAST(json_extract(
                                            j.payload, '$."' || l.key_field || '"') AS TEXT),
                                            j.project) END)))
            ORDER BY j.run_after, j.id LIMIT 1) AS head
        FROM levels lv WHERE lv.project IS NOT NULL
    ), top_levels AS (
        SELECT h.project, h.priority FROM heads h WHERE h.head IS NOT NULL
        ORDER BY h.priority - CAST((:now - h.head) / :aging_s AS INTEGER),
                 coalesce((SELECT n FROM fair_held f WHERE f.project = h.project), 0), h.head
        LIMIT :limit
    ), picked AS (
        SELECT j.id, j.queue, j.type, j.project, j.payload, j.priority, j.run_after,
               j.priority - CAST((:now - j.run_after) / :aging_s AS INTEGER) AS ep
        FROM top_levels lv, jobs j
        WHERE j.id IN (
        SELECT j.id FROM jobs j INDEXED BY jobs_fair
        WHERE j.state = 'queued' AND j.project = lv.project AND j.priority = lv.priority
          AND j.run_after <= :now
          AND (:queues IS NULL OR j.queue IN (SELECT value FROM json_each(:queues)))
          AND (:types IS NULL OR j.type IN (SELECT value FROM json_each(:types))
               OR j.type || '@' || j.version IN (SELECT value FROM json_each(:versions)))
          AND j.queue NOT IN (SELECT name FROM queues WHERE paused = 1)
          AND j.type NOT IN (SELECT name FROM job_types WHERE paused = 1)
          AND NOT EXISTS (
              SELECT 1 FROM flow_limits l
              WHERE ((l.scope = 'queue' AND l.name = j.queue)
                     OR (l.scope = 'type' AND l.name = j.type))
                AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                                 WHERE held.scope = l.scope AND held.name = l.name)
                     OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                      WHERE held.scope = l.scope AND held.name = l.name
                                        AND held.key = CASE WHEN l.key_field IS NULL
                                            THEN j.project ELSE coalesce(CAST(json_extract(
                                            j.payload, '$."' || l.key_field || '"') AS TEXT),
                                            j.project) END)))
        ORDER BY j.run_after, j.id
        LIMIT :limit * CASE WHEN EXISTS (SELECT 1 FROM flow_limits) THEN 4 ELSE 1 END)
    ), ranked AS (
        SELECT p.*, coalesce((SELECT n FROM fair_held f WHERE f.project = p.project), 0)
                    + row_number() OVER (PARTITION BY p.project
                                         ORDER BY p.ep, p.run_after, p.id) AS share
        FROM picked p
    ), keyed AS (
        SELECT p.id, p.ep, p.share, p.run_after, l.scope, l.name, l.per_key, l.total,
               CASE WHEN l.key_field IS NULL THEN p.project ELSE coalesce(CAST(json_extract(
                   p.payload, '$."' || l.key_field || '"') AS TEXT), p.project) END AS key
        FROM ranked p JOIN flow_limits l
          ON (l.scope = 'queue' AND l.name = p.queue) OR (l.scope = 'type' AND l.name = p.type)
    ), per_key_over AS (
        SELECT k.id FROM (
            SELECT k.*, row_number() OVER (PARTITION BY k.scope, k.name, k.key
                                           ORDER BY k.ep, k.share, k.run_after, k.id) AS nk
            FROM keyed k) k
        WHERE k.per_key < nk + (SELECT coalesce(sum(n), 0) FROM held WHERE held.scope = k.scope
                                AND held.name = k.name AND held.key = k.key)
    ), total_over AS (
        SELECT k.id FROM (
            SELECT k.*, row_number() OVER (PARTITION BY k.scope, k.name
                                           ORDER BY k.ep, k.share, k.run_after, k.id) AS nt
            FROM keyed k WHERE k.id NOT IN (SELECT id FROM per_key_over)) k
        WHERE k.total < nt + (SELECT coalesce(sum(n), 0) FROM held WHERE held.scope = k.scope
                              AND held.name = k.name)
    ), chosen AS (
        SELECT id FROM ranked
        WHERE id NOT IN (SELECT id FROM per_key_over) AND id NOT IN (SELECT id FROM total_over)
        ORDER BY ep, share, run_after, id LIMIT :limit
    )
    SELECT id FROM chosen)
RETURNING *;

-- name: insert_attempt
INSERT INTO job_attempts (job_id, attempt, worker_id, claimed_at, started_at)
VALUES (:job_id, :attempt, :worker_id, :claimed_at, :started_at);

-- name: start_attempt
UPDATE job_attempts SET started_at = :now WHERE job_id = :job_id AND attempt = :attempt;

-- name: finish_attempt
UPDATE job_attempts
SET finished_at = :now, outcome = :outcome, error_code = :error_code, error_summary = :error_summary
WHERE job_id = :job_id AND attempt = :attempt AND finished_at IS NULL;

-- name: heartbeat
UPDATE jobs SET lease_expires_at = :now + :lease_ttl
WHERE lease_owner = :worker_id AND lease_token IS NOT NULL
  AND (:jobs IS NULL OR id IN (SELECT value FROM json_each(:jobs)))
RETURNING id, lease_token, state;

-- name: touch_worker
UPDATE workers SET last_heartbeat_at = :now WHERE id = :worker_id;

-- name: set_stage
UPDATE jobs SET stage = :stage, updated_at = :now
WHERE id = :id AND lease_token = :token AND state IN ('running', 'pausing', 'cancelling');

-- name: lease_state
SELECT state, lease_token FROM jobs WHERE id = :id;

-- name: expired_leases
SELECT * FROM jobs
WHERE lease_token IS NOT NULL AND lease_expires_at < :now
ORDER BY lease_expires_at LIMIT :limit;

-- name: due_retries
SELECT * FROM jobs INDEXED BY jobs_retry_due
WHERE state = 'retry_wait' AND run_after <= :now ORDER BY run_after LIMIT :limit;

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

-- name: set_queue_paused
INSERT INTO queues (name, paused, updated_at) VALUES (:name, :paused, :now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

-- name: set_type_paused
INSERT INTO job_types (name, paused, updated_at) VALUES (:name, :paused, :now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

-- Job types that have a row (paused once) or jobs, with their jobs counted by state.
-- name: list_types
SELECT t.name AS name, coalesce(p.paused, 0) AS paused, c.state AS state, c.n AS n
FROM (SELECT name FROM job_types UNION SELECT DISTINCT type FROM jobs) t
LEFT JOIN job_types p ON p.name = t.name
LEFT JOIN (SELECT type, state, count(*) AS n FROM jobs GROUP BY type, state) c ON c.type = t.name
ORDER BY t.name, c.state;

-- Paused flags alone, read without counting jobs (/metrics).
-- name: type_flags
SELECT name, paused FROM job_types ORDER BY name;

-- name: put_flow_limit
INSERT INTO flow_limits (scope, name, key_field, per_key, total, updated_at)
VALUES (:scope, :name, :key_field, :per_key, :total, :now)
ON CONFLICT (scope, name) DO UPDATE SET key_field = excluded.key_field,
    per_key = excluded.per_key, total = excluded.total, updated_at = excluded.updated_at;

-- name: delete_flow_limit
DELETE FROM flow_limits WHERE scope = :scope AND name = :name;

-- name: list_flow_limits
SELECT scope, name, key_field, per_key, total FROM flow_limits ORDER BY scope, name;

-- The slots each limit's keys hold now: claim_jobs' held, read alone.
-- name: flow_usage
SELECT l.scope, l.name, CASE WHEN l.key_field IS NULL THEN h.project ELSE coalesce(CAST(json_extract(
           h.payload, '$."' || l.key_field || '"') AS TEXT), h.project) END AS key,
       count(*) AS n
FROM flow_limits l JOIN jobs h
  ON (l.scope = 'queue' AND h.queue = l.name) OR (l.scope = 'type' AND h.type = l.name)
WHERE h.state IN ('leased', 'running', 'pausing', 'cancelling')
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;

-- name: list_queues
SELECT q.name AS name, q.paused AS paused, j.state AS state, count(j.id) AS n
FROM queues q LEFT JOIN jobs j ON j.queue = q.name
GROUP BY q.name, q.paused, j.state ORDER BY q.name;

-- Jobs by queue and state for /metrics, read in time that does not grow with the history:
-- the live states exactly through jobs_state (only their rows), and each finished state
-- counted up to :cap jobs a queue through jobs_queue_finished (estimate_jobs beyond that;
-- the index holds finished jobs only, so the statements say the states they may be asked for).
-- name: count_live_jobs
SELECT queue, state, count(*) AS n FROM jobs
WHERE state IN (SELECT value FROM json_each(:states))
GROUP BY queue, state;

-- name: count_finished_jobs
SELECT q.name AS queue, q.paused AS paused, s.value AS state,
       (SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE j.queue = q.name AND j.state = s.value
                                AND j.state IN ('succeeded', 'failed', 'cancelled')
                              LIMIT :cap)) AS n
FROM queues q, json_each(:states) s;

-- SQLite keeps no statistics to estimate from: a queue's jobs in one state, counted.
-- name: estimate_jobs
SELECT count(*) AS n FROM jobs WHERE queue = :queue AND state = :state
  AND state IN ('succeeded', 'failed', 'cancelled');

-- name: upsert_worker
INSERT INTO workers (id, hostname, pid, queues, types, versions, lease_ttl, concurrency,
                     started_at, last_heartbeat_at)
VALUES (:id, :hostname, :pid, :queues, :types, :versions, :lease_ttl, :concurrency, :now, :now)
ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, stopped_at = NULL,
                               types = excluded.types, versions = excluded.versions,
                               lease_ttl = excluded.lease_ttl;

-- Live workers: not stopped, and heard from within their lease TTL (the silence after which
-- their leases expire too; :default_ttl for a row from before workers recorded it).
-- name: live_workers
SELECT types, queues, versions FROM workers
WHERE stopped_at IS NULL AND last_heartbeat_at >= :now - coalesce(lease_ttl, :default_ttl);

-- Queued jobs by queue, type and version, for the jobs no live worker serves (jobs_state).
-- name: count_queued_by_type
SELECT queue, type, version, count(*) AS n FROM jobs WHERE state = 'queued'
GROUP BY queue, type, version;

-- name: stop_worker
UPDATE workers SET stopped_at = :now WHERE id = :id;

-- name: list_workers
SELECT w.*, (SELECT count(*) FROM jobs j WHERE j.lease_owner = w.id AND j.lease_token IS NOT NULL) AS leases
FROM workers w
WHERE :include_stopped OR w.stopped_at IS NULL
ORDER BY w.started_at DESC;

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

-- name: applied_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: insert_token
INSERT INTO api_tokens (id, name, token_hash, projects, admin, created_at)
VALUES (:id, :name, :token_hash, :projects, :admin, :now);

-- name: token_by_hash
SELECT * FROM api_tokens WHERE token_hash = :token_hash AND revoked_at IS NULL;

-- name: list_tokens
SELECT * FROM api_tokens ORDER BY created_at;

-- name: revoke_token
UPDATE api_tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL;

-- ---- budgets, journal, ledger ------------------------------------------------

-- name: job_budget
SELECT * FROM budgets WHERE scope = 'job' AND key = :key;

-- name: project_budget
SELECT * FROM budgets WHERE scope = 'project' AND key = :key;

-- name: budget_row
SELECT * FROM budgets WHERE scope = :scope AND key = :key;

-- name: ensure_budget
INSERT INTO budgets (scope, key, updated_at) VALUES (:scope, :key, :now)
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_budget
SELECT * FROM budgets WHERE scope = :scope AND key = :key;

-- name: set_budget_limits
INSERT INTO budgets (scope, key, limits, updated_at) VALUES (:scope, :key, :limits, :now)
ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits, updated_at = excluded.updated_at;

-- name: journal_get
SELECT * FROM call_journal WHERE job_id = :job_id AND key = :key;

-- name: journal_list
SELECT * FROM call_journal WHERE job_id = :job_id ORDER BY created_at, key;

-- name: journal_reserve
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          fingerprint, reserved_usd, reserved_input_tokens,
                          reserved_output_tokens, created_at, updated_at)
VALUES (:job_id, :key, :stage, 'reserved', :attempt, :provider, :model, :request_hash,
        :fingerprint, :reserved_usd, :reserved_input_tokens, :reserved_output_tokens, :now, :now)
ON CONFLICT (job_id, key) DO UPDATE
SET stage = excluded.stage, status = 'reserved', attempt = excluded.attempt,
    provider = excluded.provider, model = excluded.model, request_hash = excluded.request_hash,
    fingerprint = excluded.fingerprint, reserved_usd = excluded.reserved_usd,
    reserved_input_tokens = excluded.reserved_input_tokens,
    reserved_output_tokens = excluded.reserved_output_tokens, result = NULL, usage = NULL,
    cost_usd = NULL, error_code = NULL, error_summary = NULL, updated_at = excluded.updated_at
WHERE call_journal.status IN ('failed', 'unconfirmed');

-- name: journal_finish
UPDATE call_journal
SET status = :status, result = :result, usage = :usage, cost_usd = :cost_usd,
    error_code = :error_code, error_summary = :error_summary, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'reserved' AND attempt = :attempt;

-- name: journal_open
SELECT * FROM call_journal WHERE job_id = :job_id AND status = 'reserved';

-- name: journal_cached
SELECT j.result AS result, j.usage AS usage FROM call_journal j JOIN jobs o ON o.id = j.job_id
WHERE j.request_hash = :request_hash AND j.request_hash IS NOT NULL AND j.status = 'done'
  AND o.project = :project
LIMIT 1;

-- name: insert_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at)
VALUES (:job_id, :project, :stage, :key, :attempt, :provider, :model, :input_tokens,
        :output_tokens, :cached_input_tokens, :reasoning_tokens, :cache_write_tokens,
        :cache_write_1h_tokens, :input_per_mtok, :output_per_mtok, :cached_input_per_mtok,
        :cache_write_per_mtok, :cache_write_1h_per_mtok, :price_profile, :cost_usd,
        :reserved_usd, :confirmed, :overrun, :now);


-- ---- calls: reserve and settle, many at once (store/calls.py) --------------------------------

-- What a batch of one job's calls reads first: the job's lease and limits, and the job's and the
-- project's accumulators (one row each). The write lock is already held (BEGIN IMMEDIATE).
-- Fewer than two rows: the job or a budget row is missing (ensure_call_budgets creates them).
-- name: lock_calls
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, b.*
FROM jobs j JOIN budgets b ON (b.scope = 'job' AND b.key = :job_key)
                           OR (b.scope = 'project' AND b.key = j.project)
WHERE j.id = :job_id;

-- The journal rows of a batch's keys (:keys: a JSON array): what a reserve or a settle needs.
-- name: journal_keys
SELECT c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM json_each(:keys) k CROSS JOIN call_journal c
WHERE c.job_id = :job_id AND c.key = k.value;

-- lock_calls and journal_keys for several jobs at once, each row naming its job: PostgreSQL's
-- group of many jobs' calls (store/postgres/group.py). SQLite's group commit already shares one
-- transaction across jobs through the one-job statements; these keep the backends at parity
-- (:job_ids, :keys: JSON arrays; the i-th key belongs to the i-th job id).
-- name: lock_calls_many
SELECT j.id AS job_id, j.project AS job_project, j.state AS job_state,
       j.lease_token AS lease_token, j.budget AS budget, j.price_profile AS price_profile, b.*
FROM json_each(:job_ids) w JOIN jobs j ON j.id = w.value
JOIN budgets b ON (b.scope = 'job' AND b.key = CAST(j.id AS TEXT))
               OR (b.scope = 'project' AND b.key = j.project);

-- name: journal_keys_many
SELECT c.job_id, c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM json_each(:job_ids) w JOIN json_each(:keys) k ON k.key = w.key
JOIN call_journal c ON c.job_id = w.value AND c.key = k.value;

-- The ledger row a settle just wrote.
-- name: ledger_last
SELECT * FROM cost_ledger WHERE job_id = :job_id AND key = :key ORDER BY id DESC LIMIT 1;

-- name: ensure_call_budgets
INSERT INTO budgets (scope, key, updated_at)
SELECT scope, key, :now FROM (
    SELECT 'job' AS scope, CAST(id AS TEXT) AS key FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT 'project', project FROM jobs WHERE id = :job_id) WHERE true
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets
SELECT * FROM budgets WHERE scope = 'job' AND key = :job_key
UNION ALL
SELECT * FROM budgets WHERE scope = 'project' AND key = :project;

-- A child job draws on its ancestors' budgets too (a gather's fan-out cannot overspend the
-- parent): the *_tree forms add every ancestor's job accumulator, with that ancestor's limits
-- (owner_budget) and how many ancestors there are (ancestors: to tell a missing row). Rows come
-- in (scope, key) order, the one lock order of every path that takes several budget rows.
-- name: job_parent
SELECT parent_id FROM jobs WHERE id = :job_id;

-- name: lock_calls_tree
WITH RECURSIVE up(id, parent_id, budget, depth) AS (
    SELECT p.id, p.parent_id, p.budget, 1 FROM jobs c JOIN jobs p ON p.id = c.parent_id
    WHERE c.id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, p.budget, up.depth + 1 FROM up JOIN jobs p ON p.id = up.parent_id
    WHERE up.depth < 64
)
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, up.budget AS owner_budget,
       (SELECT count(*) FROM up) AS ancestors, b.*
FROM jobs j JOIN budgets b ON (b.scope = 'job' AND b.key = :job_key)
                           OR (b.scope = 'project' AND b.key = j.project)
                           OR (b.scope = 'job' AND b.key IN (SELECT CAST(id AS TEXT) FROM up))
LEFT JOIN up ON b.scope = 'job' AND b.key = CAST(up.id AS TEXT)
WHERE j.id = :job_id
ORDER BY b.scope, b.key;

-- name: ensure_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
INSERT INTO budgets (scope, key, updated_at)
SELECT scope, key, :now FROM (
    SELECT 'job' AS scope, CAST(id AS TEXT) AS key FROM chain
    UNION ALL
    SELECT 'project', project FROM jobs WHERE id = :job_id) WHERE true
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
SELECT b.*, (SELECT count(*) FROM chain) - 1 AS ancestors FROM budgets b
WHERE (b.scope = 'job' AND b.key IN (SELECT CAST(id AS TEXT) FROM chain))
   OR (b.scope = 'project' AND b.key = :project)
ORDER BY b.scope, b.key;

-- One accumulator row (a job's or a project's, locked earlier in the same transaction); the
-- store writes both rows of a call as two of these in one batch.
-- name: update_budget_row
UPDATE budgets
SET spent_usd = :spent_usd, reserved_usd = :reserved_usd, calls = :calls,
    reserved_calls = :reserved_calls, input_tokens = :input_tokens,
    output_tokens = :output_tokens, reserved_input_tokens = :reserved_input_tokens,
    reserved_output_tokens = :reserved_output_tokens, examples = :examples, updated_at = :now
WHERE scope = :scope AND key = :key;

-- A call's change as a difference (PostgreSQL's path for concurrent writers; here one writer
-- at a time writes values, update_budget_row). Money adds as exact decimals.
-- name: add_budget_row
UPDATE budgets
SET spent_usd = (SELECT tether_decimal_sum(v) FROM (SELECT spent_usd AS v
                                                    UNION ALL SELECT :spent_usd)),
    reserved_usd = (SELECT tether_decimal_sum(v) FROM (SELECT reserved_usd AS v
                                                       UNION ALL SELECT :reserved_usd)),
    calls = calls + :calls, reserved_calls = reserved_calls + :reserved_calls,
    input_tokens = input_tokens + :input_tokens, output_tokens = output_tokens + :output_tokens,
    reserved_input_tokens = reserved_input_tokens + :reserved_input_tokens,
    reserved_output_tokens = reserved_output_tokens + :reserved_output_tokens,
    examples = examples + :examples, updated_at = :now
WHERE scope = :scope AND key = :key;

-- The accumulators a call checks limits against, read again (one writer: nothing to lock).
-- name: lock_budget_keys
SELECT b.* FROM json_each(:scopes) s JOIN json_each(:keys) k ON k.key = s.key
JOIN budgets b ON b.scope = s.value AND b.key = k.value
ORDER BY b.scope, b.key;

-- name: list_ledger
SELECT * FROM cost_ledger WHERE job_id = :job_id ORDER BY id;

-- From the running totals (spend_totals: a row per project, provider and model), never the
-- ledger itself.
-- name: spend_totals
SELECT provider, model, sum(calls) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, group_concat(cost_usd, ' ') AS costs,
       sum(unconfirmed_calls) AS unconfirmed
FROM spend_totals
WHERE :projects IS NULL OR project IN (SELECT value FROM json_each(:projects))
GROUP BY provider, model ORDER BY provider, model;

-- name: spent_projects
SELECT DISTINCT project FROM spend_totals ORDER BY project;

-- Money adds as exact decimals.
-- name: count_spend
INSERT INTO spend_totals (project, provider, model, calls, input_tokens, output_tokens,
                          cost_usd, unconfirmed_calls)
VALUES (:project, :provider, :model, :calls, :input_tokens, :output_tokens, :cost_usd,
        :unconfirmed_calls)
ON CONFLICT (project, provider, model) DO UPDATE
SET calls = calls + excluded.calls, input_tokens = input_tokens + excluded.input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    cost_usd = tether_decimal_add(spend_totals.cost_usd, excluded.cost_usd),
    unconfirmed_calls = unconfirmed_calls + excluded.unconfirmed_calls;

-- What settled in one period of a project (store/accounting.py, ``_recount_period``): calls
-- made, so not the rows a fork carried.
-- name: period_ledger
SELECT count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       tether_decimal_sum(cost_usd) AS spent_usd
FROM cost_ledger
WHERE project = :project AND created_at >= :since AND created_at < :until
  AND reused_from IS NULL;

-- Spend report (store/spend.py): the ledger grouped by the dimensions switched on, each other
-- dimension a constant NULL, so one statement serves every grouping. local_ts shifts a call's
-- time into the report's zone (tether_utc_offset is registered on every connection by
-- sqlite/functions.py; UTC skips it); tether_decimal_sum sums the decimal
-- text of money exactly (sum() would add floats).
-- Rows a fork carried (reused_from) are left out: the job that paid counts those calls.
-- The window is two plain ranges (an open end is infinite) so cost_ledger_created serves it:
-- SQLite cannot use an index for "(:since IS NULL OR created_at >= :since)".
-- name: spend_report
SELECT CASE WHEN :by_project THEN project END AS project,
       CASE WHEN :by_provider THEN provider END AS provider,
       CASE WHEN :by_model THEN model END AS model,
       CASE WHEN :by_job_type THEN (SELECT j.type FROM jobs j WHERE j.id = l.job_id) END
           AS job_type,
       CASE WHEN :by_stage THEN stage END AS stage,
       CASE WHEN :by_day THEN strftime('%Y-%m-%d', local_ts, 'unixepoch') END AS day,
       CASE WHEN :by_week THEN date(local_ts, 'unixepoch', 'weekday 0', '-6 days') END AS week,
       CASE WHEN :by_month THEN strftime('%Y-%m', local_ts, 'unixepoch') END AS month,
       count(*) AS calls, sum(1 - confirmed) AS unconfirmed_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       tether_decimal_sum(cost_usd) AS cost_usd, tether_decimal_sum(reserved_usd) AS reserved_usd
FROM (SELECT *, CASE WHEN :tz = 'UTC' THEN created_at
                     ELSE created_at + tether_utc_offset(created_at, :tz) END AS local_ts
      FROM cost_ledger
      WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
        AND created_at >= coalesce(:since, -9e999) AND created_at < coalesce(:until, 9e999)
        AND reused_from IS NULL) AS l
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- name: first_start
SELECT min(started_at) AS started_at FROM job_attempts WHERE job_id = :job_id;

-- ---- checkpoints and blobs -------------------------------------------------------------------

-- name: get_checkpoint
SELECT * FROM checkpoints WHERE job_id = :job_id AND stage = :stage;

-- name: list_checkpoints
SELECT * FROM checkpoints WHERE job_id = :job_id ORDER BY position, created_at;

-- name: insert_checkpoint
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, version)
VALUES (:job_id, :stage, :position, :blob, :size, :attempt, :now, :version);

-- name: put_blob
INSERT INTO blobs (sha256, data, size, created_at) VALUES (:sha256, :data, :size, :now)
ON CONFLICT (sha256) DO NOTHING;

-- name: get_blob
SELECT data FROM blobs WHERE sha256 = :sha256;

-- name: prune_blobs
DELETE FROM blobs WHERE created_at < :cutoff AND sha256 NOT IN (SELECT blob FROM checkpoints);

-- name: save_profile
INSERT INTO price_profiles (id, name, effective_date, body, created_at)
VALUES (:id, :name, :effective_date, :body, :now)
ON CONFLICT (id) DO NOTHING;

-- name: get_profile
SELECT * FROM price_profiles WHERE id = :id;

-- ---- shared rate limits ----------------------------------------------------------------------

-- name: rate_lock
SELECT 1;

-- name: rate_window
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens, min(at) AS oldest
FROM rate_limit_events WHERE scope = :scope AND at > :since;

-- name: rate_oldest_until
SELECT at, tokens FROM rate_limit_events WHERE scope = :scope AND at > :since ORDER BY at;

-- name: rate_insert
INSERT INTO rate_limit_events (scope, at, tokens, job_id, key)
VALUES (:scope, :now, :tokens, :job_id, :key);

-- name: rate_settle
UPDATE rate_limit_events SET tokens = coalesce(:tokens, tokens), settled = 1
WHERE job_id = :job_id AND key = :key;

-- name: rate_in_flight
-- The calls of a scope granted up to :at (since :since) whose answers had not come back.
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens FROM rate_limit_events
WHERE scope = :scope AND at <= :at AND at > :since AND settled = 0;

-- name: rate_prune
DELETE FROM rate_limit_events WHERE at < :before;

-- name: rate_calls
SELECT at FROM rate_limit_events WHERE scope = :scope ORDER BY at;

-- name: journal_record_cached
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, fingerprint)
VALUES (:job_id, :key, :stage, 'done', :attempt, :provider, :model, :request_hash, '0', 0, 0,
        :result, :usage, '0', :now, :now, :fingerprint)
ON CONFLICT (job_id, key) DO NOTHING;

-- ---- engine statistics -----------------------------------------------------------------------

-- Sums over owners (engine_counters: a few rows a worker, never the attempts).
-- name: engine_counts
SELECT coalesce(sum(CASE WHEN name = 'claims' THEN n END), 0) AS claims,
       coalesce(sum(CASE WHEN name = 'lease_expiries' THEN n END), 0) AS lease_expiries,
       coalesce(sum(CASE WHEN name = 'budget_pauses' THEN n END), 0) AS budget_pauses,
       coalesce(sum(CASE WHEN name = 'budget_thresholds' THEN n END), 0) AS budget_thresholds
FROM engine_counters;

-- Prune's last step forgets the workers gone before the cutoff: stopped then, or silent since
-- (killed), and holding no lease; then it takes their counter rows (``take_counters``; the
-- caller adds them to owner ''), so both tables keep a row per live worker, not per worker
-- ever run. A worker that comes back registers again at its next heartbeat.
-- name: forget_gone_workers
DELETE FROM workers
WHERE coalesce(stopped_at, last_heartbeat_at) < :cutoff
  AND NOT EXISTS (SELECT 1 FROM jobs j
                  WHERE j.lease_owner = workers.id AND j.lease_token IS NOT NULL)
RETURNING id;

-- name: take_counters
DELETE FROM engine_counters WHERE owner IN (SELECT value FROM json_each(:owners))
RETURNING name, n;

-- name: count_engine
INSERT INTO engine_counters (name, owner, n) VALUES (:name, :owner, :n)
ON CONFLICT (name, owner) DO UPDATE SET n = n + excluded.n;

-- name: recent_claim_latency
SELECT json_extract(e.data, '$.waited_s') AS latency
FROM (SELECT job_id, attempt FROM job_attempts ORDER BY job_id DESC, attempt DESC
      LIMIT :limit) a
JOIN job_events e ON e.job_id = a.job_id AND e.attempt = a.attempt AND e.kind = 'leased';

-- ---- batched completion (the common case: running jobs that succeeded) ------------------------

-- name: succeed_many
-- :items is a JSON array of [id, token, result]; the rows that are still running under that
-- lease with no call left open succeed. Their events and attempts are written next. NOT
-- INDEXED keeps the planner on rowid lookups per item (it would rather scan jobs_state).
-- A child's end is then counted in the gathers that wait for it (wait_children_done_many).
UPDATE jobs NOT INDEXED
SET state = 'succeeded', result = json_extract(i.value, '$[2]'), error_code = NULL,
    error_summary = NULL, lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
    finished_at = :now, updated_at = :now, event_seq = event_seq + 1
FROM json_each(:items) AS i
WHERE jobs.id = json_extract(i.value, '$[0]') AND jobs.lease_token = json_extract(i.value, '$[1]')
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

-- name: due_period_resumes
-- Jobs paused by a periodic project limit whose period has ended (run_after: its end).
SELECT * FROM jobs
WHERE state = 'paused' AND error_code = 'period_budget_exhausted' AND run_after <= :now
ORDER BY run_after LIMIT :limit;

-- --- waits (store/waits.py) ------------------------------------------------------------------

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

-- --- callback URLs (store/callbacks.py) -----------------------------------------------------

-- name: callback_insert
INSERT INTO wait_callbacks (id, job_id, wait_key, signal, token_hash, issued_by, created_at,
                            expires_at)
VALUES (:id, :job_id, :key, :signal, :token_hash, :issued_by, :now, :expires_at);

-- name: callback_get
SELECT * FROM wait_callbacks WHERE id = :id;

-- name: callbacks_of
SELECT * FROM wait_callbacks WHERE job_id = :job_id ORDER BY created_at, id;

-- name: callbacks_of_wait
SELECT * FROM wait_callbacks WHERE job_id = :job_id AND wait_key = :key
ORDER BY created_at, id;

-- name: callback_handed_exists
SELECT 1 AS handed FROM wait_callbacks
WHERE job_id = :job_id AND wait_key = :key AND issued_by = 'job' AND handed_at IS NOT NULL
LIMIT 1;

-- name: callback_handed
UPDATE wait_callbacks SET handed_at = :now WHERE id = :id AND job_id = :job_id;

-- name: callback_answered
SELECT 1 AS answered FROM wait_callbacks
WHERE job_id = :job_id AND wait_key = :key AND used_at IS NOT NULL LIMIT 1;

-- name: callback_use
UPDATE wait_callbacks SET used_at = :now WHERE id = :id AND used_at IS NULL;

-- name: live_children
SELECT * FROM jobs
WHERE parent_id = :id AND detached = 0
  AND state NOT IN ('succeeded', 'failed', 'cancelled', 'cancelling')
ORDER BY id;

-- ---- forks and retries from a stage (store/forks.py) ----------------------------------------
-- :stages / :kept are JSON arrays of stage names. A carried row names the job that paid for
-- it (the source, or the source's own source when the source was itself a fork). A call made
-- before the job's first stage (stage null) is carried by every fork.

-- name: fork_checkpoints
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, reused_from,
                         version)
SELECT :job_id, stage, position, blob, size, 0, :now, coalesce(reused_from, job_id),
       version
FROM checkpoints
WHERE job_id = :source_id AND stage IN (SELECT value FROM json_each(:stages));

-- name: fork_journal
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, reused_from, fingerprint)
SELECT :job_id, key, stage, 'done', 0, provider, model, request_hash, '0', 0, 0, result, usage,
       '0', :now, :now, coalesce(reused_from, job_id), fingerprint
FROM call_journal
WHERE job_id = :source_id AND status = 'done'
  AND (stage IS NULL OR stage IN (SELECT value FROM json_each(:stages)));

-- The confirmed ledger rows of the carried calls, at cost 0, with the payer's cost beside.
-- name: fork_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at, reused_from, reused_cost_usd)
SELECT :job_id, l.project, l.stage, l.key, 0, l.provider, l.model, l.input_tokens,
       l.output_tokens, l.cached_input_tokens, l.reasoning_tokens, l.cache_write_tokens,
       l.cache_write_1h_tokens, l.input_per_mtok, l.output_per_mtok, l.cached_input_per_mtok,
       l.cache_write_per_mtok, l.cache_write_1h_per_mtok, l.price_profile, '0', '0', 1, 0,
       :now, coalesce(l.reused_from, l.job_id), coalesce(l.reused_cost_usd, l.cost_usd)
FROM cost_ledger l
JOIN call_journal c ON c.job_id = l.job_id AND c.key = l.key AND c.status = 'done'
WHERE l.job_id = :source_id AND l.confirmed = 1
  AND (l.stage IS NULL OR l.stage IN (SELECT value FROM json_each(:stages)))
ORDER BY l.id;

-- name: drop_checkpoints
DELETE FROM checkpoints
WHERE job_id = :job_id AND stage NOT IN (SELECT value FROM json_each(:kept));

-- The answers a retry from a stage drops: each gets a call_repaid event.
-- name: dropped_answers
SELECT * FROM call_journal
WHERE job_id = :job_id AND status = 'done' AND stage IS NOT NULL
  AND stage NOT IN (SELECT value FROM json_each(:kept))
ORDER BY created_at, key;

-- Finished calls of the dropped stages (a call still reserved stays: its money is open).
-- name: drop_journal
DELETE FROM call_journal
WHERE job_id = :job_id AND status <> 'reserved' AND stage IS NOT NULL
  AND stage NOT IN (SELECT value FROM json_each(:kept));

-- ---- schedules (store/schedules.py) ------------------------------------------------------------

-- name: lock_schedule
SELECT * FROM schedules WHERE name = :name;

-- name: get_schedule
SELECT * FROM schedules WHERE name = :name;

-- name: insert_schedule
INSERT INTO schedules (name, cron, timezone, catch_up, type, project, queue, priority,
                       max_attempts, safe_to_retry, payload, budget, input_config_hash,
                       price_profile, estimated_cost_usd, paused, next_run_at, created_at,
                       updated_at)
VALUES (:name, :cron, :timezone, :catch_up, :type, :project, :queue, :priority, :max_attempts,
        :safe_to_retry, :payload, :budget, :input_config_hash, :price_profile,
        :estimated_cost_usd, 0, :next_run_at, :now, :now)
ON CONFLICT (name) DO NOTHING;

-- name: redefine_schedule
UPDATE schedules
SET cron = :cron, timezone = :timezone, catch_up = :catch_up, type = :type, project = :project,
    queue = :queue, priority = :priority, max_attempts = :max_attempts,
    safe_to_retry = :safe_to_retry, payload = :payload, budget = :budget,
    input_config_hash = :input_config_hash, price_profile = :price_profile,
    estimated_cost_usd = :estimated_cost_usd, next_run_at = :next_run_at, updated_at = :now
WHERE name = :name;

-- name: list_schedules
SELECT * FROM schedules
WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
ORDER BY name;

-- name: set_schedule_paused
UPDATE schedules SET paused = :paused, next_run_at = :next_run_at, updated_at = :now
WHERE name = :name;

-- name: delete_schedule
DELETE FROM schedules WHERE name = :name;

-- name: any_due_schedule
-- A read before the step's write transaction: most steps find nothing due.
SELECT 1 AS due FROM schedules WHERE paused = 0 AND next_run_at <= :now LIMIT 1;

-- name: claim_due_schedules
-- Due schedules, oldest tick first. The write transaction (BEGIN IMMEDIATE) is the lock: one
-- scheduler at a time, and the next one sees next_run_at already advanced.
SELECT * FROM schedules INDEXED BY schedules_due
WHERE paused = 0 AND next_run_at <= :now
ORDER BY next_run_at, name LIMIT :limit;

-- name: advance_schedule
UPDATE schedules
SET next_run_at = :next_run_at, last_run_at = coalesce(:last_run_at, last_run_at),
    last_job_id = coalesce(:last_job_id, last_job_id), updated_at = :now
WHERE name = :name;
-- name: event_seqs
-- The last event seq of each of these jobs (the live streams' change check: one read for all).
SELECT id, event_seq FROM jobs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: event_horizon
-- The feed's horizon: none. A write takes the database's one write lock before it reads its
-- clock, so events commit in `at` order and every committed event is final.
SELECT NULL AS horizon_us;

-- name: event_feed
-- Events of every project (or of :projects) after the cursor (:at, :job_id, :seq), in that
-- order; job_events_feed (0013) makes it a range scan from the cursor.
SELECT e.*, j.project, e.at AS feed_at FROM job_events e JOIN jobs j ON j.id = e.job_id
WHERE e.at >= :at AND (e.at > :at OR e.job_id > :job_id OR (e.job_id = :job_id AND e.seq > :seq))
  AND (:horizon_us IS NULL OR e.at < :horizon_us / 1e6)
  AND (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
ORDER BY e.at, e.job_id, e.seq LIMIT :limit;

-- name: event_feed_head
SELECT at AS feed_at, job_id, seq FROM job_events
WHERE :horizon_us IS NULL OR at < :horizon_us / 1e6
ORDER BY at DESC, job_id DESC, seq DESC LIMIT 1;

-- ---- replays that notice change (store/replays.py) -------------------------------------------

-- The last resume with a decision (data.on_change) or the last wait, pause or end, whichever
-- came last: a decision holds for the replay that follows its resume, until the job parks.
-- name: replay_decision
SELECT kind, data FROM job_events
WHERE job_id = :job_id
  AND (kind = 'resume' OR to_state IN ('waiting', 'paused', 'succeeded', 'failed', 'cancelled'))
ORDER BY seq DESC LIMIT 1;

-- A changed call reused: its recorded answer now stands for the new request.
-- name: journal_refingerprint
UPDATE call_journal SET fingerprint = :fingerprint, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'done';

-- A changed call to be paid again: its old answer is in the call_repaid event, and the row is
-- reserved again as a failed one is (journal_reserve).
-- name: journal_supersede
UPDATE call_journal
SET status = 'failed', error_code = 'journal_mismatch',
    error_summary = 'changed since recorded; paid again', updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'done';

-- name: checkpoint_version
UPDATE checkpoints SET version = :version
WHERE job_id = :job_id AND stage = :stage;

-- name: drop_checkpoint
DELETE FROM checkpoints WHERE job_id = :job_id AND stage = :stage;

-- name: batch_get
SELECT * FROM provider_batches WHERE job_id = :job_id AND key = :key;

-- name: batches_of
SELECT * FROM provider_batches WHERE job_id = :job_id ORDER BY created_at, key;

-- name: batch_status
SELECT status FROM provider_batches WHERE job_id = :job_id AND key = :key;

-- name: batch_insert
INSERT INTO provider_batches (job_id, key, stage, attempt, provider, model, tether_key, status, items, price, standard_price, price_profile, reserved_usd, reserved_input_tokens, reserved_output_tokens, items_total, created_at, updated_at)
VALUES (:job_id, :key, :stage, :attempt, :provider, :model, :tether_key, 'submitting', :items, :price, :standard_price, :price_profile, :reserved_usd, :reserved_input_tokens, :reserved_output_tokens, :items_total, :now, :now);

-- name: batch_submitted
UPDATE provider_batches SET status = 'submitted', remote_id = :remote_id,
    next_poll_at = :wake_at, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_claim_due
-- Due batches, their next poll moved out first so no other sweep polls them at once.
UPDATE provider_batches SET next_poll_at = :wake_at
WHERE (job_id, key) IN (SELECT job_id, key FROM provider_batches
                        WHERE status = 'submitted' AND next_poll_at <= :now
                        ORDER BY next_poll_at LIMIT :limit )
RETURNING *;

-- name: batch_polled
UPDATE provider_batches SET remote_status = :remote_status, items_done = :items_done,
    items_failed = :items_failed, polls = polls + 1, next_poll_at = :wake_at,
    updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitted';

-- name: batch_settle
UPDATE provider_batches SET status = :status, remote_status = :remote_status,
    settled_usd = :settled_usd, standard_usd = :standard_usd,
    items_done = :items_done, items_failed = :items_failed, error = :error,
    next_poll_at = NULL, settled_at = :now, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status IN ('submitting', 'submitted');

-- name: batch_uploading
UPDATE provider_batches SET remote_status = 'uploading', updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_unsent
-- A job's batches reserved and never sent (unmarked: store/batches.py ``batch_uploading``).
SELECT * FROM provider_batches
WHERE job_id = :job_id AND status = 'submitting' AND remote_status IS NULL;

-- name: batches_orphaned
-- Batches reserved, not known to be at the provider, whose jobs ended: no replay will settle
-- them (the sweep does, worker/batch_poller.py).
SELECT b.* FROM provider_batches b JOIN jobs j ON j.id = b.job_id
WHERE b.status = 'submitting' AND j.state IN ('succeeded', 'failed', 'cancelled')
ORDER BY b.created_at LIMIT :limit;

-- name: batch_answers_insert
-- A settled batch's answers, in its order (:answers: a JSON array of objects).
INSERT INTO provider_batch_answers (job_id, key, pos, item, ok, value, error_code,
                                    error_summary, retryable)
SELECT :job_id, :key, a.value ->> '$.pos', a.value ->> '$.item', a.value ->> '$.ok',
       a.value -> '$.value', a.value ->> '$.error_code', a.value ->> '$.error_summary',
       a.value ->> '$.retryable'
FROM json_each(:answers) a;

-- name: batch_answers
SELECT item, ok, value, error_code, error_summary, retryable FROM provider_batch_answers
WHERE job_id = :job_id AND key = :key ORDER BY pos;

-- name: batch_delete_unsent
DELETE FROM provider_batches
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_open
-- Batches not settled yet, for /metrics: few at a time (each holds many items).
SELECT provider, reserved_usd FROM provider_batches
WHERE status IN ('submitting', 'submitted');

-- ---- patches (job/patches.py) -------------------------------------------------------------
-- name: patch_markers
SELECT data FROM job_events WHERE job_id = :job_id AND kind = 'patched' ORDER BY seq;

-- Whether an attempt before :attempt recorded progress, or a fork carried some.
-- name: earlier_progress
SELECT EXISTS (SELECT 1 FROM call_journal WHERE job_id = :job_id
               AND (attempt < :attempt OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM checkpoints WHERE job_id = :job_id
               AND (attempt < :attempt OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM job_waits WHERE job_id = :job_id AND attempt < :attempt)
    AS progressed;

-- ---- budget thresholds (store/thresholds.py) ---------------------------------------------
-- A crossing, once: a row only when no other transaction recorded this threshold of this
-- budget, limit value and period (the primary key), and then it is returned.
-- name: insert_crossing
INSERT INTO budget_crossings (scope, key, limit_name, threshold, limit_value, period, project,
                              metric, used, period_start, job_id, crossed_at)
VALUES (:scope, :key, :limit_name, :threshold, :limit_value, :period, :project, :metric, :used, :period_start, :job_id, :now)
ON CONFLICT DO NOTHING
RETURNING scope;

-- The limits of a child's ancestors, whose thresholds an orphan's settlement may cross.
-- name: ancestor_limits
SELECT CAST(id AS TEXT) AS key, budget FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: budget_crossings
-- A project's crossings, newest first: its own budget's and its jobs' (scope, key narrow it).
SELECT * FROM budget_crossings
WHERE project = :project AND (:scope IS NULL OR scope = :scope) AND (:key IS NULL OR key = :key)
ORDER BY crossed_at DESC, key, limit_name, threshold
LIMIT :limit;

-- ---- singleton and debounce (core/flowkeys.py) --------------------------------------------

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

-- ---- provider headroom (core/headroom.py) --------------------------------------------------

-- name: rate_headroom
-- A scope's stored headroom, with the calls and tokens granted after the call that brought it.
SELECT p.*,
       (SELECT count(*) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS calls_since,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS tokens_since
FROM provider_limits p WHERE p.scope = :scope;

-- name: rate_granted_at
SELECT at FROM rate_limit_events WHERE job_id = :job_id AND key = :key AND scope = :scope
ORDER BY at DESC LIMIT 1;

-- name: rate_headroom_save
INSERT INTO provider_limits (scope, observed_at, requests_limit, requests_remaining,
                             requests_reset_at, tokens_limit, tokens_remaining, tokens_reset_at,
                             retry_at, requests_in_flight, tokens_in_flight, updated_at)
VALUES (:scope, :observed_at, :requests_limit, :requests_remaining, :requests_reset_at,
        :tokens_limit, :tokens_remaining, :tokens_reset_at, :retry_at, :requests_in_flight,
        :tokens_in_flight, :now)
ON CONFLICT (scope) DO UPDATE SET
    observed_at = excluded.observed_at, requests_limit = excluded.requests_limit,
    requests_remaining = excluded.requests_remaining,
    requests_reset_at = excluded.requests_reset_at, tokens_limit = excluded.tokens_limit,
    tokens_remaining = excluded.tokens_remaining, tokens_reset_at = excluded.tokens_reset_at,
    retry_at = excluded.retry_at, requests_in_flight = excluded.requests_in_flight,
    tokens_in_flight = excluded.tokens_in_flight, updated_at = excluded.updated_at;

-- name: rate_scopes
-- Every scope with calls in the window or a stored headroom: what the interfaces show.
SELECT s.scope,
       (SELECT count(*) FROM rate_limit_events e
        WHERE e.scope = s.scope AND e.at > :since) AS calls,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = s.scope AND e.at > :since) AS tokens
FROM (SELECT DISTINCT scope FROM rate_limit_events WHERE at > :since
      UNION SELECT scope FROM provider_limits) s
ORDER BY s.scope;

-- ---- webhooks (store/webhooks.py) --------------------------------------------------------------

-- name: webhook_insert
INSERT INTO webhook_subscriptions (id, project, url, kinds, secret, description, created_at)
VALUES (:id, :project, :url, :kinds, :secret, :description, :now);

-- name: webhook_get
SELECT * FROM webhook_subscriptions WHERE id = :id;

-- name: webhook_list
-- An admin-wide subscription (project NULL) is listed only when no :projects scope is given.
SELECT * FROM webhook_subscriptions
WHERE :projects IS NULL OR project IN (SELECT value FROM json_each(:projects))
ORDER BY created_at, id;

-- name: webhook_delete
DELETE FROM webhook_subscriptions WHERE id = :id;

-- name: webhook_cursor_get
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_lock
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_set
UPDATE webhook_cursor SET position = :position WHERE name = 'events';

-- name: webhook_event_jobs
SELECT id, type, project, queue, state, error_code, error_summary FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: schedule_miss_insert
INSERT INTO schedule_misses (schedule, project, first_tick, last_tick, missed, at)
VALUES (:schedule, :project, :first_tick, :last_tick, :missed, :now);

-- name: schedule_misses_pending
SELECT * FROM schedule_misses WHERE dispatched_at IS NULL ORDER BY id LIMIT :limit;

-- name: schedule_misses_dispatched
UPDATE schedule_misses SET dispatched_at = :now WHERE id IN (SELECT value FROM json_each(:ids));

-- name: webhook_delivery_insert
INSERT INTO webhook_deliveries (id, subscription_id, project, owner, kind, url, job_id, sends,
                                body, created_at)
VALUES (:id, :subscription_id, :project, :owner, :kind, :url, :job_id, 1, :body, :now)
ON CONFLICT (id) DO NOTHING;

-- name: webhook_deliveries
-- Newest first; :state filters by the current delivery job's state.
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE (:subscription_id IS NULL OR d.subscription_id = :subscription_id)
  AND (:projects IS NULL OR d.owner IN (SELECT value FROM json_each(:projects)))
  AND (:state IS NULL OR j.state = :state)
ORDER BY d.created_at DESC, d.id LIMIT :limit;

-- name: webhook_delivery_get
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = :id;

-- name: webhook_delivery_lock
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = :id;

-- name: webhook_delivery_resent
UPDATE webhook_deliveries SET job_id = :job_id, sends = :sends WHERE id = :id;

-- name: webhook_attempts
SELECT * FROM webhook_attempts WHERE delivery_id = :id ORDER BY n;

-- name: webhook_attempt_insert
INSERT INTO webhook_attempts (delivery_id, n, job_id, at, status, error, duration_ms)
SELECT :id, coalesce(max(n), 0) + 1, :job_id, :now, :status, :error, :duration_ms
FROM webhook_attempts WHERE delivery_id = :id;

-- name: schedule_misses_any
SELECT 1 AS one FROM schedule_misses WHERE dispatched_at IS NULL LIMIT 1;

-- name: prune_webhook_attempts
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.created_at < :cutoff AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id));

-- name: prune_webhook_deliveries
DELETE FROM webhook_deliveries
WHERE created_at < :cutoff AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_id);

-- name: prune_schedule_misses
DELETE FROM schedule_misses WHERE at < :cutoff;
