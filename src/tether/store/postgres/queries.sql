-- The PostgreSQL store's statements: the same names as sqlite/queries.sql, psycopg %(name)s
-- parameters. Times are timestamptz; %(now)s is the database clock (now(), read once per
-- transaction) unless a test injected a clock. Read-modify-write paths lock rows with
-- FOR UPDATE; queue-like scans use FOR UPDATE SKIP LOCKED so workers never wait on each other.

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

-- name: lock_job
SELECT * FROM jobs WHERE id = %(id)s FOR UPDATE;

-- name: update_job
UPDATE jobs
SET state = %(state)s, stage = %(stage)s, run_after = %(run_after)s,
    max_attempts = %(max_attempts)s, result = %(result)s::jsonb, error_code = %(error_code)s,
    error_summary = %(error_summary)s, lease_owner = %(lease_owner)s,
    lease_expires_at = %(lease_expires_at)s, lease_token = %(lease_token)s,
    budget = %(budget)s::jsonb, finished_at = %(finished_at)s, updated_at = %(now)s,
    event_seq = event_seq + 1
WHERE id = %(id)s
RETURNING event_seq;

-- name: bump_event_seq
UPDATE jobs SET event_seq = event_seq + 1 WHERE id = %(id)s RETURNING event_seq;

-- name: insert_event
INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
VALUES (%(job_id)s, %(seq)s, %(at)s, %(kind)s, %(from_state)s, %(to_state)s, %(attempt)s,
        %(data)s::jsonb);

-- name: list_events
SELECT * FROM job_events WHERE job_id = %(job_id)s AND seq > %(after)s ORDER BY seq
LIMIT %(limit)s;

-- name: list_attempts
SELECT * FROM job_attempts WHERE job_id = %(job_id)s ORDER BY attempt;

-- The end both claims share: the chosen jobs leased (and started with :start), their
-- attempt rows, events and the claims counter; the batch in claim order.
-- fragment: claim_tail
claimed AS (
    UPDATE jobs j
    SET state = CASE WHEN %(start)s::boolean AND j.attempt_count = 0
                     THEN 'running' ELSE 'leased' END,
        attempt_count = j.attempt_count + 1,
        lease_token = j.attempt_count + 1, lease_owner = %(worker_id)s,
        lease_expires_at = clock.now + make_interval(secs => %(lease_ttl)s),
        updated_at = clock.now,
        event_seq = j.event_seq + CASE WHEN %(start)s::boolean AND j.attempt_count = 0
                                       THEN 2 ELSE 1 END
    FROM picked, clock
    WHERE j.id = picked.id AND picked.id IN (SELECT id FROM chosen)
    RETURNING j.*, clock.now AS claimed_at
), attempts AS (
    INSERT INTO job_attempts (job_id, attempt, worker_id, claimed_at, started_at)
    SELECT id, lease_token, %(worker_id)s, claimed_at,
           CASE WHEN state = 'running' THEN claimed_at END
    FROM claimed
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, event_seq - CASE WHEN state = 'running' THEN 1 ELSE 0 END, claimed_at,
           'leased', 'queued', 'leased', lease_token,
           jsonb_build_object('worker_id', %(worker_id)s::text, 'waited_s',
                              round(extract(epoch FROM claimed_at - run_after)::numeric, 6))
    FROM claimed
    UNION ALL
    SELECT id, event_seq, claimed_at, 'running', 'leased', 'running', lease_token, '{}'::jsonb
    FROM claimed WHERE state = 'running'
), counted AS (
    INSERT INTO engine_counters AS c (name, owner, n)
    SELECT 'claims', %(worker_id)s, count(*) FROM claimed HAVING count(*) > 0
    ON CONFLICT (name, owner) DO UPDATE SET n = c.n + excluded.n
)
SELECT *, state = 'running' AS started FROM claimed ORDER BY priority, run_after, id;

-- The whole claim is this one statement: pick eligible rows in claim order, skipping rows
-- another worker has locked; lease them (the attempt is counted here, before any job code
-- runs); record the attempt and the 'leased' event, and count the claims in the worker's own
-- engine_counters row. With %(start)s, a first attempt also begins here ('running', its own
-- event); a re-attempt stays 'leased' because its start must first settle what the earlier
-- attempt left open. picked's WHERE and ORDER BY are exactly the jobs_claimable index
-- (state = 'queued'; priority, run_after, id); the queue and type filters (the worker's
-- queues and the types its app registers) are checked on the rows that index walk finds.
-- Its transaction's settings (PgTx.claim, CLAIM_PLAN) keep this plan and commit it without
-- waiting for the WAL flush. Flow control (docs/flow-control.md): no job of a paused queue or
-- type; held counts the slots each limit's keys hold now, the walk skips a job whose key or
-- limit is full, and the window (four times the limit while limits exist) loses the
-- candidates that would fill one past its limit within this batch (per_key_over, then
-- total_over; locked until the commit, then free). When any limit exists the claim
-- runs after flow_lock, so its snapshot holds every earlier claim's slots; its clock is
-- statement_timestamp(), read after that lock is granted (now() would date the claim at
-- BEGIN, before a slot it takes was freed).
-- name: claim_jobs
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, statement_timestamp()) AS now
), held AS MATERIALIZED (
    SELECT l.scope, l.name,
           CASE WHEN l.key_field IS NULL THEN h.project
                             ELSE coalesce(h.payload ->> l.key_field, h.project) END AS key,
           count(*) AS n
    FROM flow_limits l JOIN jobs h
      ON (l.scope = 'queue' AND h.queue = l.name) OR (l.scope = 'type' AND h.type = l.name)
    WHERE h.state IN ('leased', 'running', 'pausing', 'cancelling')
    GROUP BY 1, 2, 3
), picked AS (
    SELECT j.id, j.queue, j.type, j.project, j.payload, j.priority, j.run_after FROM jobs j
    WHERE j.state = 'queued' AND j.run_after <= (SELECT now FROM clock)
      AND (%(queues)s::text[] IS NULL OR j.queue = ANY (%(queues)s::text[]))
      AND (%(types)s::text[] IS NULL OR j.type = ANY (%(types)s::text[])
           OR j.type || '@' || j.version = ANY (%(versions)s::text[]))
      AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = j.queue AND q.paused)
      AND NOT EXISTS (SELECT 1 FROM job_types t WHERE t.name = j.type AND t.paused)
      AND NOT EXISTS (
          SELECT 1 FROM flow_limits l
          WHERE ((l.scope = 'queue' AND l.name = j.queue) OR (l.scope = 'type' AND l.name = j.type))
            AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                             WHERE held.scope = l.scope AND held.name = l.name)
                 OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                  WHERE held.scope = l.scope AND held.name = l.name
                                    AND held.key = CASE WHEN l.key_field IS NULL THEN j.project
                             ELSE coalesce(j.payload ->> l.key_field, j.project) END)))
    ORDER BY j.priority, j.run_after, j.id
    LIMIT %(limit)s * CASE WHEN EXISTS (SELECT 1 FROM flow_limits) THEN 4 ELSE 1 END
    FOR UPDATE OF j SKIP LOCKED
), keyed AS (
    SELECT p.id, p.priority, p.run_after, l.scope, l.name, l.per_key, l.total,
           CASE WHEN l.key_field IS NULL THEN p.project
                             ELSE coalesce(p.payload ->> l.key_field, p.project) END AS key
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
    ORDER BY priority, run_after, id LIMIT %(limit)s
),
-- include: claim_tail

-- claim_jobs with fair dispatch and aging (docs/flow-control.md): levels walks jobs_fair to
-- each (project, priority) with queued jobs and its first live entry (a plain index scan,
-- which marks the entries of claimed jobs it passes as dead; heads and picked seek from that
-- entry, so a level's claimed jobs are passed once a claim); heads reads each level's first
-- claimable job,
-- the least of its level in claim order, so only the :limit levels with the least heads
-- (top_levels) can give the batch a job; picked takes (and locks) the first jobs of those,
-- and the batch is chosen by aged priority (ep: priority less one per %(aging_s)s waited),
-- then share (the project's jobs holding a slot plus this one's place among its picked), so
-- projects of one priority are served round-robin. The candidates not chosen stay locked
-- until the commit. fair_held is read only when more than one project has queued jobs: with
-- one, the share orders nothing. Flow control as in claim_jobs.
-- name: claim_jobs_fair
WITH RECURSIVE clock AS (
    SELECT coalesce(%(now)s::timestamptz, statement_timestamp()) AS now
), levels AS (
    (SELECT project, priority, run_after, id, queue FROM jobs WHERE state = 'queued'
     ORDER BY project, priority, run_after, id LIMIT 1)
    UNION ALL
    SELECT n.* FROM levels l, LATERAL (
        SELECT j.project, j.priority, j.run_after, j.id, j.queue FROM jobs j
        WHERE j.state = 'queued' AND (j.project, j.priority) > (l.project, l.priority)
        ORDER BY j.project, j.priority, j.run_after, j.id LIMIT 1) n
), held AS MATERIALIZED (
    SELECT l.scope, l.name,
           CASE WHEN l.key_field IS NULL THEN h.project
                             ELSE coalesce(h.payload ->> l.key_field, h.project) END AS key,
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
    SELECT lv.project, lv.priority, lv.run_after, lv.id, h.run_after AS head
    FROM levels lv, LATERAL (
        SELECT j.run_after FROM jobs j
        WHERE j.state = 'queued' AND j.project = lv.project AND j.priority = lv.priority
          AND (j.run_after, j.id) >= (lv.run_after, lv.id)
          AND j.run_after <= (SELECT now FROM clock)
          AND (%(queues)s::text[] IS NULL OR j.queue = ANY (%(queues)s::text[]))
          AND (%(types)s::text[] IS NULL OR j.type = ANY (%(types)s::text[])
               OR j.type || '@' || j.version = ANY (%(versions)s::text[]))
          AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = j.queue AND q.paused)
          AND NOT EXISTS (SELECT 1 FROM job_types t WHERE t.name = j.type AND t.paused)
          AND NOT EXISTS (
              SELECT 1 FROM flow_limits l
              WHERE ((l.scope = 'queue' AND l.name = j.queue) OR (l.scope = 'type' AND l.name = j.type))
                AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                                 WHERE held.scope = l.scope AND held.name = l.name)
                     OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                      WHERE held.scope = l.scope AND held.name = l.name
                                        AND held.key = CASE WHEN l.key_field IS NULL THEN j.project
                                 ELSE coalesce(j.payload ->> l.key_field, j.project) END)))
        ORDER BY j.run_after, j.id LIMIT 1) h
), top_levels AS (
    SELECT h.project, h.priority, h.run_after, h.id FROM heads h
    ORDER BY h.priority - floor(extract(epoch FROM (SELECT now FROM clock) - h.head)
                                / %(aging_s)s)::integer,
             coalesce((SELECT n FROM fair_held f WHERE f.project = h.project), 0), h.head
    LIMIT %(limit)s
), picked AS (
    SELECT c.*, c.priority - floor(extract(epoch FROM (SELECT now FROM clock) - c.run_after)
                                   / %(aging_s)s)::integer AS ep
    FROM top_levels lv, LATERAL (
        SELECT j.id, j.queue, j.type, j.project, j.payload, j.priority, j.run_after FROM jobs j
        WHERE j.state = 'queued' AND j.project = lv.project AND j.priority = lv.priority
          AND (j.run_after, j.id) >= (lv.run_after, lv.id)
          AND j.run_after <= (SELECT now FROM clock)
          AND (%(queues)s::text[] IS NULL OR j.queue = ANY (%(queues)s::text[]))
          AND (%(types)s::text[] IS NULL OR j.type = ANY (%(types)s::text[])
               OR j.type || '@' || j.version = ANY (%(versions)s::text[]))
          AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = j.queue AND q.paused)
          AND NOT EXISTS (SELECT 1 FROM job_types t WHERE t.name = j.type AND t.paused)
          AND NOT EXISTS (
              SELECT 1 FROM flow_limits l
              WHERE ((l.scope = 'queue' AND l.name = j.queue) OR (l.scope = 'type' AND l.name = j.type))
                AND (l.total <= (SELECT coalesce(sum(n), 0) FROM held
                                 WHERE held.scope = l.scope AND held.name = l.name)
                     OR l.per_key <= (SELECT coalesce(sum(n), 0) FROM held
                                      WHERE held.scope = l.scope AND held.name = l.name
                                        AND held.key = CASE WHEN l.key_field IS NULL THEN j.project
                                 ELSE coalesce(j.payload ->> l.key_field, j.project) END)))
        ORDER BY j.run_after, j.id
        LIMIT %(limit)s * CASE WHEN EXISTS (SELECT 1 FROM flow_limits) THEN 4 ELSE 1 END
        FOR UPDATE OF j SKIP LOCKED) c
), ranked AS (
    SELECT p.*, coalesce((SELECT n FROM fair_held f WHERE f.project = p.project), 0)
                + row_number() OVER (PARTITION BY p.project
                                     ORDER BY p.ep, p.run_after, p.id) AS share
    FROM picked p
), keyed AS (
    SELECT p.id, p.ep, p.share, p.run_after, l.scope, l.name, l.per_key, l.total,
           CASE WHEN l.key_field IS NULL THEN p.project
                             ELSE coalesce(p.payload ->> l.key_field, p.project) END AS key
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
    ORDER BY ep, share, run_after, id LIMIT %(limit)s
),
-- include: claim_tail

-- One claim at a time while any concurrency limit exists: the claims that count slots see
-- each other's (claim_jobs reads them in a snapshot taken after this lock is granted; it is
-- released at the claim's commit). Without limits no claim takes it.
-- name: flow_lock
SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.tether_flow_limits'))
FROM (SELECT 1 FROM flow_limits LIMIT 1) l;

-- name: insert_attempt
INSERT INTO job_attempts (job_id, attempt, worker_id, claimed_at, started_at)
VALUES (%(job_id)s, %(attempt)s, %(worker_id)s, %(claimed_at)s, %(started_at)s);

-- name: start_attempt
UPDATE job_attempts SET started_at = %(now)s
WHERE job_id = %(job_id)s AND attempt = %(attempt)s;

-- name: finish_attempt
UPDATE job_attempts
SET finished_at = %(now)s, outcome = %(outcome)s, error_code = %(error_code)s,
    error_summary = %(error_summary)s
WHERE job_id = %(job_id)s AND attempt = %(attempt)s AND finished_at IS NULL;

-- One statement renews every lease the worker holds (jobs_lease_owner).
-- name: heartbeat
UPDATE jobs SET lease_expires_at = %(now)s + make_interval(secs => %(lease_ttl)s)
WHERE lease_owner = %(worker_id)s AND lease_token IS NOT NULL
  AND (%(jobs)s::bigint[] IS NULL OR id = ANY (%(jobs)s::bigint[]))
RETURNING id, lease_token, state;

-- name: touch_worker
UPDATE workers SET last_heartbeat_at = %(now)s WHERE id = %(worker_id)s;

-- name: set_stage
UPDATE jobs SET stage = %(stage)s, updated_at = %(now)s
WHERE id = %(id)s AND lease_token = %(token)s AND state IN ('running', 'pausing', 'cancelling');

-- name: lease_state
SELECT state, lease_token FROM jobs WHERE id = %(id)s;

-- Locked rows belong to a worker writing them right now (finishing, heartbeating): skip them;
-- a row whose lease was renewed meanwhile no longer matches when re-checked under the lock.
-- name: expired_leases
SELECT * FROM jobs
WHERE lease_token IS NOT NULL AND lease_expires_at < %(now)s
ORDER BY lease_expires_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: due_retries
SELECT * FROM jobs WHERE state = 'retry_wait' AND run_after <= %(now)s
ORDER BY run_after LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

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

-- name: set_queue_paused
INSERT INTO queues (name, paused, updated_at) VALUES (%(name)s, %(paused)s, %(now)s)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

-- name: set_type_paused
INSERT INTO job_types (name, paused, updated_at) VALUES (%(name)s, %(paused)s, %(now)s)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

-- Job types that have a row (paused once) or jobs, with their jobs counted by state.
-- name: list_types
SELECT t.name AS name, coalesce(p.paused, false) AS paused, c.state AS state, c.n AS n
FROM (SELECT name FROM job_types UNION SELECT DISTINCT type FROM jobs) t
LEFT JOIN job_types p ON p.name = t.name
LEFT JOIN (SELECT type, state, count(*) AS n FROM jobs GROUP BY type, state) c ON c.type = t.name
ORDER BY t.name, c.state;

-- Paused flags alone, read without counting jobs (/metrics).
-- name: type_flags
SELECT name, paused FROM job_types ORDER BY name;

-- name: put_flow_limit
INSERT INTO flow_limits (scope, name, key_field, per_key, total, updated_at)
VALUES (%(scope)s, %(name)s, %(key_field)s, %(per_key)s, %(total)s, %(now)s)
ON CONFLICT (scope, name) DO UPDATE SET key_field = excluded.key_field,
    per_key = excluded.per_key, total = excluded.total, updated_at = excluded.updated_at;

-- name: delete_flow_limit
DELETE FROM flow_limits WHERE scope = %(scope)s AND name = %(name)s;

-- name: list_flow_limits
SELECT scope, name, key_field, per_key, total FROM flow_limits ORDER BY scope, name;

-- The slots each limit's keys hold now: claim_jobs' held, read alone.
-- name: flow_usage
SELECT l.scope, l.name, CASE WHEN l.key_field IS NULL THEN h.project
            ELSE coalesce(h.payload ->> l.key_field, h.project) END AS key,
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
-- counted up to %(cap)s jobs a queue through jobs_queue_finished (estimate_jobs beyond that;
-- the index holds finished jobs only, so the statement says the states it may be asked for).
-- name: count_live_jobs
SELECT queue, state, count(*) AS n FROM jobs
WHERE state = ANY (%(states)s::text[])
GROUP BY queue, state;

-- name: count_finished_jobs
SELECT q.name AS queue, q.paused AS paused, s.state AS state,
       (SELECT count(*) FROM (SELECT 1 FROM jobs j WHERE j.queue = q.name AND j.state = s.state
                                AND j.state IN ('succeeded', 'failed', 'cancelled')
                              LIMIT %(cap)s) c) AS n
FROM queues q CROSS JOIN unnest(%(states)s::text[]) AS s(state);

-- The planner's estimate of a queue's jobs in one state (its statistics of the two columns).
-- name: estimate_jobs
EXPLAIN (FORMAT JSON) SELECT 1 FROM jobs WHERE queue = %(queue)s::text AND state = %(state)s::text;

-- name: upsert_worker
INSERT INTO workers (id, hostname, pid, queues, types, versions, lease_ttl, concurrency,
                     started_at, last_heartbeat_at)
VALUES (%(id)s, %(hostname)s, %(pid)s, %(queues)s::jsonb, %(types)s::jsonb, %(versions)s::jsonb,
        %(lease_ttl)s, %(concurrency)s, %(now)s, %(now)s)
ON CONFLICT (id) DO UPDATE SET last_heartbeat_at = excluded.last_heartbeat_at, stopped_at = NULL,
                               types = excluded.types, versions = excluded.versions,
                               lease_ttl = excluded.lease_ttl;

-- name: stop_worker
UPDATE workers SET stopped_at = %(now)s WHERE id = %(id)s;

-- Live workers: not stopped, and heard from within their lease TTL (the silence after which
-- their leases expire too; %(default_ttl)s for a row from before workers recorded it).
-- name: live_workers
SELECT types, queues, versions FROM workers
WHERE stopped_at IS NULL
  AND last_heartbeat_at >= %(now)s - make_interval(secs => coalesce(lease_ttl, %(default_ttl)s));

-- Queued jobs by queue, type and version, for the jobs no live worker serves (jobs_state).
-- name: count_queued_by_type
SELECT queue, type, version, count(*) AS n FROM jobs WHERE state = 'queued'
GROUP BY queue, type, version;

-- name: list_workers
SELECT w.*, (SELECT count(*) FROM jobs j
             WHERE j.lease_owner = w.id AND j.lease_token IS NOT NULL) AS leases
FROM workers w
WHERE %(include_stopped)s::boolean OR w.stopped_at IS NULL
ORDER BY w.started_at DESC;

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

-- name: applied_migrations
SELECT version FROM schema_migrations ORDER BY version;

-- name: insert_token
INSERT INTO api_tokens (id, name, token_hash, projects, admin, created_at)
VALUES (%(id)s, %(name)s, %(token_hash)s, %(projects)s::jsonb, %(admin)s, %(now)s);

-- name: token_by_hash
SELECT * FROM api_tokens WHERE token_hash = %(token_hash)s AND revoked_at IS NULL;

-- name: list_tokens
SELECT * FROM api_tokens ORDER BY created_at;

-- name: revoke_token
UPDATE api_tokens SET revoked_at = %(now)s WHERE id = %(id)s AND revoked_at IS NULL;

-- ---- budgets, journal, ledger ------------------------------------------------

-- name: job_budget
SELECT * FROM budgets WHERE scope = 'job' AND key = %(key)s;

-- name: project_budget
SELECT * FROM budgets WHERE scope = 'project' AND key = %(key)s;

-- name: budget_row
SELECT * FROM budgets WHERE scope = %(scope)s AND key = %(key)s;

-- name: ensure_budget
INSERT INTO budgets (scope, key, updated_at) VALUES (%(scope)s, %(key)s, %(now)s)
ON CONFLICT (scope, key) DO NOTHING;

-- Reserve and settle read-modify-write the accumulators: the row stays locked until commit.
-- name: lock_budget
SELECT * FROM budgets WHERE scope = %(scope)s AND key = %(key)s FOR UPDATE;

-- name: set_budget_limits
INSERT INTO budgets (scope, key, limits, updated_at)
VALUES (%(scope)s, %(key)s, %(limits)s::jsonb, %(now)s)
ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits, updated_at = excluded.updated_at;

-- name: journal_get
SELECT * FROM call_journal WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: journal_list
SELECT * FROM call_journal WHERE job_id = %(job_id)s ORDER BY created_at, key;

-- name: journal_reserve
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          fingerprint, reserved_usd, reserved_input_tokens,
                          reserved_output_tokens, created_at, updated_at)
VALUES (%(job_id)s, %(key)s, %(stage)s, 'reserved', %(attempt)s, %(provider)s, %(model)s,
        %(request_hash)s, %(fingerprint)s, %(reserved_usd)s::numeric, %(reserved_input_tokens)s,
        %(reserved_output_tokens)s, %(now)s, %(now)s)
ON CONFLICT (job_id, key) DO UPDATE
SET stage = excluded.stage, status = 'reserved', attempt = excluded.attempt,
    provider = excluded.provider, model = excluded.model, request_hash = excluded.request_hash,
    fingerprint = excluded.fingerprint, reserved_usd = excluded.reserved_usd,
    reserved_input_tokens = excluded.reserved_input_tokens,
    reserved_output_tokens = excluded.reserved_output_tokens, result = NULL, usage = NULL,
    cost_usd = NULL, error_code = NULL, error_summary = NULL, updated_at = excluded.updated_at
WHERE call_journal.status IN ('failed', 'unconfirmed');

-- A reservation in one statement, for the common case only (store/postgres/onetrip.py): a
-- job without parent or limits of its own, in a project without limits, whose accumulator
-- rows exist, reserving a key it has never journaled. The job row and its own accumulator
-- are locked (SKIP LOCKED: a row another transaction holds is never waited for), the
-- project's row is read unlocked, as lock_calls reads it; the journal row is inserted and
-- the reservation added to both accumulators (own row first, the lock order of every path)
-- only if every condition holds, else nothing is written and applied is 0: the caller then
-- writes the reservation the general way (store/calls.py), which tells why.
-- %(now)s NULL: the statement's own now().
-- name: reserve_call
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), j AS MATERIALIZED (
    SELECT project FROM jobs
    WHERE id = %(job_id)s AND lease_token = %(attempt)s AND state = 'running'
      AND parent_id IS NULL AND budget = '{}'::jsonb
    FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT key FROM budgets
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM j)
    FOR UPDATE SKIP LOCKED
), go AS MATERIALIZED (
    SELECT project FROM j
    WHERE EXISTS (SELECT FROM own)
      AND EXISTS (SELECT FROM budgets WHERE scope = 'project' AND key = (SELECT project FROM j)
                                        AND limits = '{}'::jsonb)
      AND NOT EXISTS (SELECT FROM call_journal WHERE job_id = %(job_id)s AND key = %(key)s)
), r AS MATERIALIZED (
    INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model,
                              request_hash, fingerprint, reserved_usd, reserved_input_tokens,
                              reserved_output_tokens, created_at, updated_at)
    SELECT %(job_id)s, %(key)s, %(stage)s, 'reserved', %(attempt)s, %(provider)s, %(model)s,
           %(request_hash)s, %(fingerprint)s, %(reserved_usd)s::numeric,
           %(reserved_input_tokens)s, %(reserved_output_tokens)s, clock.now, clock.now
    FROM go, clock
    ON CONFLICT (job_id, key) DO NOTHING
    RETURNING job_id
), own_add AS MATERIALIZED (
    UPDATE budgets
    SET reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
        reserved_calls = reserved_calls + 1,
        reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
        reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
        updated_at = (SELECT now FROM clock)
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM r)
    RETURNING 1
), project_add AS (
    UPDATE budgets
    SET reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
        reserved_calls = reserved_calls + 1,
        reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
        reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
        updated_at = (SELECT now FROM clock)
    WHERE scope = 'project' AND key = (SELECT project FROM go) AND EXISTS (SELECT FROM own_add)
    RETURNING 1
)
SELECT (SELECT count(*) FROM r) AS applied, (SELECT count(*) FROM project_add) AS rows,
       (SELECT project FROM j) AS project;

-- A settlement in one statement, for the same common case as reserve_call: attempt
-- %(attempt)s holds the job and reserved the key, and the usage is within the reservation
-- (an overrun appends an event: the general way). The journal row is finished, the
-- reservation replaced by the cost in both accumulators (own row, then the project's), the
-- confirmed ledger row inserted and the spend counted in the project's totals (after its
-- accumulator, the order every writer of those totals follows); or nothing, applied 0.
-- A settlement that already happened matches no reserved row: nothing is written twice.
-- name: settle_call
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), j AS MATERIALIZED (
    SELECT project FROM jobs
    WHERE id = %(job_id)s AND lease_token = %(attempt)s AND parent_id IS NULL
      AND budget = '{}'::jsonb
    FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT key FROM budgets
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM j)
    FOR UPDATE SKIP LOCKED
), f AS MATERIALIZED (
    UPDATE call_journal
    SET status = %(status)s, result = %(result)s::jsonb, usage = %(usage)s::jsonb,
        cost_usd = %(cost_usd)s::numeric, error_code = %(error_code)s,
        error_summary = %(error_summary)s, updated_at = (SELECT now FROM clock)
    WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'reserved'
      AND attempt = %(attempt)s AND reserved_input_tokens >= %(input_tokens)s
      AND reserved_output_tokens >= %(output_tokens)s AND EXISTS (SELECT FROM own)
      AND EXISTS (SELECT FROM budgets WHERE scope = 'project' AND key = (SELECT project FROM j)
                                        AND limits = '{}'::jsonb)
    RETURNING stage, attempt, provider, model, reserved_usd, reserved_input_tokens,
              reserved_output_tokens
), own_add AS MATERIALIZED (
    UPDATE budgets b
    SET reserved_usd = b.reserved_usd - f.reserved_usd, reserved_calls = b.reserved_calls - 1,
        reserved_input_tokens = b.reserved_input_tokens - f.reserved_input_tokens,
        reserved_output_tokens = b.reserved_output_tokens - f.reserved_output_tokens,
        spent_usd = b.spent_usd + %(cost_usd)s::numeric, calls = b.calls + 1,
        input_tokens = b.input_tokens + %(input_tokens)s,
        output_tokens = b.output_tokens + %(output_tokens)s, updated_at = (SELECT now FROM clock)
    FROM f
    WHERE b.scope = 'job' AND b.key = %(job_key)s
    RETURNING 1
), project_add AS MATERIALIZED (
    UPDATE budgets b
    SET reserved_usd = b.reserved_usd - f.reserved_usd, reserved_calls = b.reserved_calls - 1,
        reserved_input_tokens = b.reserved_input_tokens - f.reserved_input_tokens,
        reserved_output_tokens = b.reserved_output_tokens - f.reserved_output_tokens,
        spent_usd = b.spent_usd + %(cost_usd)s::numeric, calls = b.calls + 1,
        input_tokens = b.input_tokens + %(input_tokens)s,
        output_tokens = b.output_tokens + %(output_tokens)s, updated_at = (SELECT now FROM clock)
    FROM f
    WHERE b.scope = 'project' AND b.key = (SELECT project FROM j) AND EXISTS (SELECT FROM own_add)
    RETURNING 1
), l AS (
    INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model,
                             input_tokens, output_tokens, cached_input_tokens, reasoning_tokens,
                             cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                             output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                             cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                             confirmed, overrun, created_at)
    SELECT %(job_id)s, (SELECT project FROM j), f.stage, %(key)s, f.attempt, f.provider,
           f.model, %(input_tokens)s, %(output_tokens)s, %(cached_input_tokens)s,
           %(reasoning_tokens)s, %(cache_write_tokens)s, %(cache_write_1h_tokens)s,
           %(input_per_mtok)s::numeric, %(output_per_mtok)s::numeric,
           %(cached_input_per_mtok)s::numeric, %(cache_write_per_mtok)s::numeric,
           %(cache_write_1h_per_mtok)s::numeric, %(price_profile)s, %(cost_usd)s::numeric,
           f.reserved_usd, true, false, (SELECT now FROM clock)
    FROM f
    RETURNING 1
), t AS (
    INSERT INTO spend_totals AS t (project, provider, model, calls, input_tokens,
                                   output_tokens, cost_usd, unconfirmed_calls)
    SELECT (SELECT project FROM j), f.provider, f.model, 1, %(input_tokens)s,
           %(output_tokens)s, %(cost_usd)s::numeric, 0
    FROM f WHERE EXISTS (SELECT FROM project_add)
    ON CONFLICT (project, provider, model) DO UPDATE
    SET calls = t.calls + 1, input_tokens = t.input_tokens + excluded.input_tokens,
        output_tokens = t.output_tokens + excluded.output_tokens,
        cost_usd = t.cost_usd + excluded.cost_usd
    RETURNING 1
)
SELECT (SELECT count(*) FROM f) AS applied, (SELECT count(*) FROM t) AS rows,
       (SELECT project FROM j) AS project;

-- name: journal_finish
UPDATE call_journal
SET status = %(status)s, result = %(result)s::jsonb, usage = %(usage)s::jsonb,
    cost_usd = %(cost_usd)s::numeric, error_code = %(error_code)s,
    error_summary = %(error_summary)s, updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'reserved' AND attempt = %(attempt)s;

-- name: journal_open
SELECT * FROM call_journal WHERE job_id = %(job_id)s AND status = 'reserved';

-- name: journal_cached
SELECT j.result AS result, j.usage AS usage FROM call_journal j JOIN jobs o ON o.id = j.job_id
WHERE j.request_hash = %(request_hash)s AND j.request_hash IS NOT NULL AND j.status = 'done'
  AND o.project = %(project)s
LIMIT 1;

-- name: insert_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at)
VALUES (%(job_id)s, %(project)s, %(stage)s, %(key)s, %(attempt)s, %(provider)s, %(model)s,
        %(input_tokens)s, %(output_tokens)s, %(cached_input_tokens)s, %(reasoning_tokens)s,
        %(cache_write_tokens)s, %(cache_write_1h_tokens)s,
        %(input_per_mtok)s::numeric, %(output_per_mtok)s::numeric,
        %(cached_input_per_mtok)s::numeric, %(cache_write_per_mtok)s::numeric,
        %(cache_write_1h_per_mtok)s::numeric, %(price_profile)s, %(cost_usd)s::numeric,
        %(reserved_usd)s::numeric, %(confirmed)s, %(overrun)s, %(now)s);

-- ---- calls: reserve and settle, many at once (store/calls.py) --------------------------------

-- What a batch of one job's calls reads first: the job's lease and limits, and the job's and the
-- project's accumulators (one row each). The job row is locked FOR NO KEY UPDATE (a batch may
-- append an event, which writes it; inserts that reference it are not blocked), then the job's
-- own accumulator FOR UPDATE (the CTE reads after the job row). The project's row is only read:
-- a batch adds its differences to it (add_budget_row), and locks it first (lock_budget_keys)
-- only when the project has limits to check. One job's calls are serialised by its worker's
-- CallBatcher anyway, so a weaker lock on the job row would let nothing more run at once.
-- Fewer than two rows: the job or a budget row is missing.
-- name: lock_calls
WITH j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile FROM jobs
    WHERE id = %(job_id)s FOR NO KEY UPDATE
), own AS MATERIALIZED (
    SELECT b.* FROM j JOIN budgets b ON b.scope = 'job' AND b.key = %(job_key)s
    FOR UPDATE OF b
)
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, b.*
FROM j, LATERAL (SELECT * FROM own
                 UNION ALL
                 SELECT * FROM budgets p WHERE p.scope = 'project' AND p.key = j.project) b
ORDER BY b.scope;

-- The shared accumulators (an ancestor's, the project's) whose limits a call is checked
-- against, locked in (scope, key) order after ``lock_calls``: only those are, so calls of
-- projects without limits never queue on their project's row.
-- name: lock_budget_keys
SELECT * FROM budgets
WHERE (scope, key) IN (SELECT * FROM unnest(%(scopes)s::text[], %(keys)s::text[]))
ORDER BY scope, key
FOR UPDATE;

-- The journal rows of a batch's keys: what a reserve or a settle needs (read under the job
-- row's lock: no other write of this job's journal can interleave).
-- name: journal_keys
SELECT key, status, attempt, stage, provider, model, reserved_usd, reserved_input_tokens,
       reserved_output_tokens, request_hash, created_at
FROM call_journal WHERE job_id = %(job_id)s AND key = ANY (%(keys)s::text[]);

-- The same for several jobs at once (a group of calls of many jobs, store/postgres/group.py),
-- each row naming its job (job_id); job_keys: the same ids as text (the budgets key). Job
-- rows another transaction holds (a heartbeat, an operator's cancel) are skipped, never
-- waited for: a group never waits on a job row while holding others, so it cannot deadlock
-- with writers that lock several job rows in another order; the caller runs a skipped job's
-- calls in a transaction of their own.
-- name: lock_calls_many
WITH j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile FROM jobs
    WHERE id = ANY (%(job_ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT b.* FROM budgets b
    WHERE b.scope = 'job' AND b.key = ANY (%(job_keys)s::text[])
      AND b.key IN (SELECT id::text FROM j)
    FOR UPDATE
)
SELECT j.id AS job_id, j.project AS job_project, j.state AS job_state,
       j.lease_token AS lease_token, j.budget AS budget, j.price_profile AS price_profile, b.*
FROM j, LATERAL (SELECT * FROM own WHERE own.key = j.id::text
                 UNION ALL
                 SELECT * FROM budgets p WHERE p.scope = 'project' AND p.key = j.project) b;

-- The journal rows of a group's (job, key) pairs, read after lock_calls_many.
-- name: journal_keys_many
SELECT c.job_id, c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM unnest(%(job_ids)s::bigint[], %(keys)s::text[]) AS w(job_id, key)
JOIN call_journal c ON c.job_id = w.job_id AND c.key = w.key;

-- The ledger row a settle just wrote.
-- name: ledger_last
SELECT * FROM cost_ledger WHERE job_id = %(job_id)s AND key = %(key)s ORDER BY id DESC LIMIT 1;

-- name: ensure_call_budgets
INSERT INTO budgets (scope, key, updated_at)
SELECT 'job', id::text, %(now)s FROM jobs WHERE id = %(job_id)s
UNION ALL
SELECT 'project', project, %(now)s FROM jobs WHERE id = %(job_id)s
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets
SELECT * FROM budgets
WHERE (scope = 'job' AND key = %(job_key)s) OR (scope = 'project' AND key = %(project)s)
ORDER BY scope
FOR UPDATE;

-- A child job draws on its ancestors' budgets too (a gather's fan-out cannot overspend the
-- parent): the *_tree forms add every ancestor's job accumulator, with that ancestor's limits
-- (owner_budget) and how many ancestors there are (ancestors: to tell a missing row). Rows come
-- in (scope, key) order, the one lock order of every path that takes several budget rows.
-- name: job_parent
SELECT parent_id FROM jobs WHERE id = %(job_id)s;

-- name: lock_calls_tree
WITH RECURSIVE j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile, parent_id FROM jobs
    WHERE id = %(job_id)s FOR NO KEY UPDATE
), own AS MATERIALIZED (
    SELECT b.* FROM j JOIN budgets b ON b.scope = 'job' AND b.key = %(job_key)s
    FOR UPDATE OF b
), up(id, parent_id, budget, depth) AS (
    SELECT p.id, p.parent_id, p.budget, 1 FROM j JOIN jobs p ON p.id = j.parent_id
    UNION ALL
    SELECT p.id, p.parent_id, p.budget, up.depth + 1 FROM up JOIN jobs p ON p.id = up.parent_id
    WHERE up.depth < 64
), chain AS MATERIALIZED (SELECT id::text AS key, budget FROM up)
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, chain.budget AS owner_budget,
       (SELECT count(*) FROM chain) AS ancestors, b.*
FROM j, LATERAL (SELECT * FROM own
                 UNION ALL
                 SELECT * FROM budgets p WHERE (p.scope = 'project' AND p.key = j.project)
                                            OR (p.scope = 'job' AND p.key IN (SELECT key FROM chain))) b
LEFT JOIN chain ON b.scope = 'job' AND b.key = chain.key
ORDER BY b.scope, b.key;

-- name: ensure_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = %(job_id)s
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
INSERT INTO budgets (scope, key, updated_at)
SELECT 'job', id::text, %(now)s FROM chain
UNION ALL
SELECT 'project', project, %(now)s FROM jobs WHERE id = %(job_id)s
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = %(job_id)s
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
SELECT b.*, (SELECT count(*) FROM chain) - 1 AS ancestors FROM budgets b
WHERE (b.scope = 'job' AND b.key IN (SELECT id::text FROM chain))
   OR (b.scope = 'project' AND b.key = %(project)s)
ORDER BY b.scope, b.key
FOR UPDATE;

-- One accumulator row (a job's or a project's, locked earlier in the same transaction); the
-- store writes both rows of a call as two of these in one batch.
-- name: update_budget_row
UPDATE budgets
SET spent_usd = %(spent_usd)s::numeric, reserved_usd = %(reserved_usd)s::numeric,
    calls = %(calls)s, reserved_calls = %(reserved_calls)s, input_tokens = %(input_tokens)s,
    output_tokens = %(output_tokens)s, reserved_input_tokens = %(reserved_input_tokens)s,
    reserved_output_tokens = %(reserved_output_tokens)s, examples = %(examples)s,
    updated_at = %(now)s
WHERE scope = %(scope)s AND key = %(key)s;

-- A call's change to an accumulator, as a difference: concurrent calls of other jobs add to
-- the same project or parent row without reading it first.
-- name: add_budget_row
UPDATE budgets
SET spent_usd = spent_usd + %(spent_usd)s::numeric,
    reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
    calls = calls + %(calls)s, reserved_calls = reserved_calls + %(reserved_calls)s,
    input_tokens = input_tokens + %(input_tokens)s,
    output_tokens = output_tokens + %(output_tokens)s,
    reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
    reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
    examples = examples + %(examples)s, updated_at = %(now)s
WHERE scope = %(scope)s AND key = %(key)s;

-- name: list_ledger
SELECT * FROM cost_ledger WHERE job_id = %(job_id)s ORDER BY id;

-- From the running totals (spend_totals: a row per project, provider and model), never the
-- ledger itself.
-- name: spend_totals
SELECT provider, model, sum(calls) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, string_agg(cost_usd::text, ' ') AS costs,
       sum(unconfirmed_calls) AS unconfirmed
FROM spend_totals
WHERE %(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[])
GROUP BY provider, model ORDER BY provider, model;

-- name: spent_projects
SELECT DISTINCT project FROM spend_totals ORDER BY project;

-- name: count_spend
INSERT INTO spend_totals AS t (project, provider, model, calls, input_tokens, output_tokens,
                               cost_usd, unconfirmed_calls)
VALUES (%(project)s, %(provider)s, %(model)s, %(calls)s, %(input_tokens)s, %(output_tokens)s,
        %(cost_usd)s::numeric, %(unconfirmed_calls)s)
ON CONFLICT (project, provider, model) DO UPDATE
SET calls = t.calls + excluded.calls, input_tokens = t.input_tokens + excluded.input_tokens,
    output_tokens = t.output_tokens + excluded.output_tokens,
    cost_usd = t.cost_usd + excluded.cost_usd,
    unconfirmed_calls = t.unconfirmed_calls + excluded.unconfirmed_calls;

-- What settled in one period of a project (store/accounting.py, ``_recount_period``): calls
-- made, so not the rows a fork carried.
-- name: period_ledger
SELECT count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       coalesce(sum(cost_usd), 0) AS spent_usd
FROM cost_ledger
WHERE project = %(project)s AND created_at >= %(since)s AND created_at < %(until)s
  AND reused_from IS NULL;

-- Spend report (store/spend.py): the ledger grouped by the dimensions switched on, each other
-- dimension a constant NULL, so one statement serves every grouping. Calendar buckets are
-- taken in the report's zone (:tz, 'UTC' by default); numeric sums are exact.
-- Rows a fork carried (reused_from) are left out: the job that paid counts those calls.
-- name: spend_report
SELECT CASE WHEN %(by_project)s::boolean THEN project END AS project,
       CASE WHEN %(by_provider)s::boolean THEN provider END AS provider,
       CASE WHEN %(by_model)s::boolean THEN model END AS model,
       CASE WHEN %(by_job_type)s::boolean THEN (SELECT j.type FROM jobs j WHERE j.id = l.job_id)
           END AS job_type,
       CASE WHEN %(by_stage)s::boolean THEN stage END AS stage,
       CASE WHEN %(by_day)s::boolean THEN to_char(local_ts, 'YYYY-MM-DD') END AS day,
       CASE WHEN %(by_week)s::boolean THEN to_char(date_trunc('week', local_ts), 'YYYY-MM-DD')
           END AS week,
       CASE WHEN %(by_month)s::boolean THEN to_char(local_ts, 'YYYY-MM') END AS month,
       count(*) AS calls, count(*) FILTER (WHERE NOT confirmed) AS unconfirmed_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(cost_usd) AS cost_usd, sum(reserved_usd) AS reserved_usd
FROM (SELECT *, created_at AT TIME ZONE %(tz)s::text AS local_ts
      FROM cost_ledger
      WHERE (%(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[]))
        AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s::timestamptz)
        AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s::timestamptz)
        AND reused_from IS NULL) AS l
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;

-- name: first_start
SELECT min(started_at) AS started_at FROM job_attempts WHERE job_id = %(job_id)s;

-- ---- checkpoints and blobs -------------------------------------------------------------------

-- name: get_checkpoint
SELECT * FROM checkpoints WHERE job_id = %(job_id)s AND stage = %(stage)s;

-- name: list_checkpoints
SELECT * FROM checkpoints WHERE job_id = %(job_id)s ORDER BY position, created_at;

-- name: insert_checkpoint
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, version)
VALUES (%(job_id)s, %(stage)s, %(position)s, %(blob)s, %(size)s, %(attempt)s, %(now)s,
        %(version)s);

-- name: put_blob
INSERT INTO blobs (sha256, data, size, created_at)
VALUES (%(sha256)s, %(data)s, %(size)s, %(now)s)
ON CONFLICT (sha256) DO NOTHING;

-- name: get_blob
SELECT data FROM blobs WHERE sha256 = %(sha256)s;

-- name: prune_blobs
DELETE FROM blobs b
WHERE b.created_at < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.blob = b.sha256);

-- name: save_profile
INSERT INTO price_profiles (id, name, effective_date, body, created_at)
VALUES (%(id)s, %(name)s, %(effective_date)s, %(body)s, %(now)s)
ON CONFLICT (id) DO NOTHING;

-- name: get_profile
SELECT * FROM price_profiles WHERE id = %(id)s;

-- ---- shared rate limits ----------------------------------------------------------------------

-- name: rate_lock
SELECT pg_advisory_xact_lock(hashtextextended('tether.rate:' || %(scope)s, 0));

-- name: rate_window
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens, min(at) AS oldest
FROM rate_limit_events WHERE scope = %(scope)s AND at > %(since)s;

-- name: rate_oldest_until
SELECT at, tokens FROM rate_limit_events WHERE scope = %(scope)s AND at > %(since)s ORDER BY at;

-- name: rate_insert
INSERT INTO rate_limit_events (scope, at, tokens, job_id, key)
VALUES (%(scope)s, %(now)s, %(tokens)s, %(job_id)s, %(key)s);

-- name: rate_settle
UPDATE rate_limit_events SET tokens = coalesce(%(tokens)s::bigint, tokens), settled = true
WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: rate_in_flight
-- The calls of a scope granted up to %(at)s (since %(since)s) whose answers had not come back.
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens FROM rate_limit_events
WHERE scope = %(scope)s AND at <= %(at)s AND at > %(since)s AND NOT settled;

-- name: rate_prune
DELETE FROM rate_limit_events WHERE at < %(before)s;

-- name: rate_calls
SELECT at FROM rate_limit_events WHERE scope = %(scope)s ORDER BY at;

-- name: journal_record_cached
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, fingerprint)
VALUES (%(job_id)s, %(key)s, %(stage)s, 'done', %(attempt)s, %(provider)s, %(model)s,
        %(request_hash)s, 0, 0, 0, %(result)s, %(usage)s, 0, %(now)s, %(now)s,
        %(fingerprint)s)
ON CONFLICT (job_id, key) DO NOTHING;

-- ---- engine statistics -----------------------------------------------------------------------

-- Sums over owners (engine_counters: a few rows a worker, never the attempts).
-- name: engine_counts
SELECT coalesce(sum(n) FILTER (WHERE name = 'claims'), 0) AS claims,
       coalesce(sum(n) FILTER (WHERE name = 'lease_expiries'), 0) AS lease_expiries,
       coalesce(sum(n) FILTER (WHERE name = 'budget_pauses'), 0) AS budget_pauses,
       coalesce(sum(n) FILTER (WHERE name = 'budget_thresholds'), 0) AS budget_thresholds
FROM engine_counters;

-- Prune's last step forgets the workers gone before the cutoff: stopped then, or silent since
-- (killed), and holding no lease; then it takes their counter rows (``take_counters``; the
-- caller adds them to owner ''), so both tables keep a row per live worker, not per worker
-- ever run. A worker that comes back registers again at its next heartbeat.
-- name: forget_gone_workers
DELETE FROM workers w
WHERE coalesce(w.stopped_at, w.last_heartbeat_at) < %(cutoff)s
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.lease_owner = w.id AND j.lease_token IS NOT NULL)
RETURNING w.id;

-- name: take_counters
DELETE FROM engine_counters WHERE owner = ANY (%(owners)s::text[])
RETURNING name, n;

-- name: count_engine
INSERT INTO engine_counters AS c (name, owner, n) VALUES (%(name)s, %(owner)s, %(n)s)
ON CONFLICT (name, owner) DO UPDATE SET n = c.n + excluded.n;

-- name: recent_claim_latency
SELECT (e.data ->> 'waited_s')::float8 AS latency
FROM (SELECT job_id, attempt FROM job_attempts ORDER BY job_id DESC, attempt DESC
      LIMIT %(limit)s) a
JOIN job_events e ON e.job_id = a.job_id AND e.attempt = a.attempt AND e.kind = 'leased';

-- ---- batched completion (the common case: running jobs that succeeded) ------------------------

-- name: succeed_many
-- A child's end is counted in the open gathers that wait for it (counted); the gathers this
-- completes come back as ``wake`` rows (their parents wake next).
-- Plain successes of running jobs with no call left open, set-wise in one statement: rows are
-- locked in id order first (as every multi-row lock here is), so a concurrent cancel either
-- committed before (the row no longer matches and takes the one-by-one path) or waits.
-- The batch's rows (jobs and attempts) are found by primary key alone, whatever the statistics
-- say: %(pos)s maps each id to its place in the arrays, so no join with the input is planned,
-- and the state and token tests are written `(...) IS TRUE` so that no index on them can be
-- chosen. Joined
-- with the input as a set, the planner scanned every running job of every worker to find the
-- batch's (10,240 rows for a batch of 256).
-- %(now)s NULL: the statement's own now(), so a batch needs no transaction around it.
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), locked AS (
    SELECT j.id FROM jobs j
    WHERE j.id = ANY (%(ids)s::bigint[])
      AND (j.state = 'running') IS TRUE
      AND (j.lease_token = (%(tokens)s::integer[])[(%(pos)s::jsonb ->> j.id::text)::int])
          IS TRUE
      AND NOT EXISTS (SELECT 1 FROM call_journal c
                      WHERE c.job_id = j.id AND c.status = 'reserved')
    ORDER BY j.id
    FOR UPDATE OF j
), done AS (
    UPDATE jobs j
    SET state = 'succeeded',
        result = ((%(results)s::text[])[(%(pos)s::jsonb ->> j.id::text)::int])::jsonb,
        error_code = NULL, error_summary = NULL,
        lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
        finished_at = clock.now, updated_at = clock.now, event_seq = j.event_seq + 1
    FROM clock
    WHERE j.id = ANY (ARRAY(SELECT id FROM locked))
    RETURNING j.id, j.event_seq, j.parent_id,
              (%(tokens)s::integer[])[(%(pos)s::jsonb ->> j.id::text)::int] AS token,
              (%(data)s::text[])[(%(pos)s::jsonb ->> j.id::text)::int] AS data, clock.now
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, event_seq, now, 'succeeded', 'running', 'succeeded', token, data::jsonb
    FROM done
), attempts AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'succeeded', error_code = NULL,
        error_summary = NULL
    WHERE a.job_id = ANY (ARRAY(SELECT id FROM done))
      AND a.attempt = (%(tokens)s::integer[])[(%(pos)s::jsonb ->> a.job_id::text)::int]
      AND a.finished_at IS NULL
), counted AS (
    UPDATE job_waits w
    SET pending = w.pending - c.n
    FROM (SELECT job_id, key, count(*) AS n FROM wait_children
          WHERE child_id = ANY (ARRAY(SELECT id FROM done WHERE parent_id IS NOT NULL))
          GROUP BY job_id, key) c
    WHERE w.job_id = c.job_id AND w.key = c.key AND w.status = 'open' AND w.kind = 'children'
    RETURNING w.job_id, w.pending
)
SELECT id, NULL::bigint AS wake FROM done
UNION ALL SELECT NULL, job_id FROM counted WHERE pending <= 0;

-- name: due_period_resumes
-- Jobs paused by a periodic project limit whose period has ended (run_after: its end).
SELECT * FROM jobs
WHERE state = 'paused' AND error_code = 'period_budget_exhausted' AND run_after <= %(now)s
ORDER BY run_after LIMIT %(limit)s FOR UPDATE SKIP LOCKED;

-- --- waits (store/waits.py) ------------------------------------------------------------------

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

-- --- callback URLs (store/callbacks.py) -----------------------------------------------------

-- name: callback_insert
INSERT INTO wait_callbacks (id, job_id, wait_key, signal, token_hash, issued_by, created_at,
                            expires_at)
VALUES (%(id)s, %(job_id)s, %(key)s, %(signal)s, %(token_hash)s, %(issued_by)s, %(now)s,
        %(expires_at)s);

-- name: callback_get
SELECT * FROM wait_callbacks WHERE id = %(id)s;

-- name: callbacks_of
SELECT * FROM wait_callbacks WHERE job_id = %(job_id)s ORDER BY created_at, id;

-- name: callbacks_of_wait
SELECT * FROM wait_callbacks WHERE job_id = %(job_id)s AND wait_key = %(key)s
ORDER BY created_at, id;

-- name: callback_handed_exists
SELECT 1 AS handed FROM wait_callbacks
WHERE job_id = %(job_id)s AND wait_key = %(key)s AND issued_by = 'job' AND handed_at IS NOT NULL
LIMIT 1;

-- name: callback_handed
UPDATE wait_callbacks SET handed_at = %(now)s WHERE id = %(id)s AND job_id = %(job_id)s;

-- name: callback_answered
SELECT 1 AS answered FROM wait_callbacks
WHERE job_id = %(job_id)s AND wait_key = %(key)s AND used_at IS NOT NULL LIMIT 1;

-- name: callback_use
UPDATE wait_callbacks SET used_at = %(now)s WHERE id = %(id)s AND used_at IS NULL;

-- name: live_children
SELECT * FROM jobs
WHERE parent_id = %(id)s AND NOT detached
  AND state NOT IN ('succeeded', 'failed', 'cancelled', 'cancelling')
ORDER BY id FOR UPDATE;

-- ---- forks and retries from a stage (store/forks.py) ----------------------------------------
-- %(stages)s / %(kept)s are text arrays of stage names. A carried row names the job that paid
-- for it (the source, or the source's own source when the source was itself a fork). A call
-- made before the job's first stage (stage null) is carried by every fork.

-- name: fork_checkpoints
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, reused_from,
                         version)
SELECT %(job_id)s, stage, position, blob, size, 0, %(now)s, coalesce(reused_from, job_id),
       version
FROM checkpoints
WHERE job_id = %(source_id)s AND stage = ANY (%(stages)s::text[]);

-- name: fork_journal
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, reused_from, fingerprint)
SELECT %(job_id)s, key, stage, 'done', 0, provider, model, request_hash, 0, 0, 0, result, usage,
       0, %(now)s, %(now)s, coalesce(reused_from, job_id), fingerprint
FROM call_journal
WHERE job_id = %(source_id)s AND status = 'done'
  AND (stage IS NULL OR stage = ANY (%(stages)s::text[]));

-- The confirmed ledger rows of the carried calls, at cost 0, with the payer's cost beside.
-- name: fork_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at, reused_from, reused_cost_usd)
SELECT %(job_id)s, l.project, l.stage, l.key, 0, l.provider, l.model, l.input_tokens,
       l.output_tokens, l.cached_input_tokens, l.reasoning_tokens, l.cache_write_tokens,
       l.cache_write_1h_tokens, l.input_per_mtok, l.output_per_mtok, l.cached_input_per_mtok,
       l.cache_write_per_mtok, l.cache_write_1h_per_mtok, l.price_profile, 0, 0, true, false,
       %(now)s, coalesce(l.reused_from, l.job_id), coalesce(l.reused_cost_usd, l.cost_usd)
FROM cost_ledger l
JOIN call_journal c ON c.job_id = l.job_id AND c.key = l.key AND c.status = 'done'
WHERE l.job_id = %(source_id)s AND l.confirmed
  AND (l.stage IS NULL OR l.stage = ANY (%(stages)s::text[]))
ORDER BY l.id;

-- name: drop_checkpoints
DELETE FROM checkpoints
WHERE job_id = %(job_id)s AND stage <> ALL (%(kept)s::text[]);

-- The answers a retry from a stage drops: each gets a call_repaid event.
-- name: dropped_answers
SELECT * FROM call_journal
WHERE job_id = %(job_id)s AND status = 'done' AND stage IS NOT NULL
  AND stage <> ALL (%(kept)s::text[])
ORDER BY created_at, key;

-- Finished calls of the dropped stages (a call still reserved stays: its money is open).
-- name: drop_journal
DELETE FROM call_journal
WHERE job_id = %(job_id)s AND status <> 'reserved' AND stage IS NOT NULL
  AND stage <> ALL (%(kept)s::text[]);

-- ---- schedules (store/schedules.py) ------------------------------------------------------------

-- name: lock_schedule
SELECT * FROM schedules WHERE name = %(name)s FOR UPDATE;

-- name: get_schedule
SELECT * FROM schedules WHERE name = %(name)s;

-- name: insert_schedule
INSERT INTO schedules (name, cron, timezone, catch_up, type, project, queue, priority,
                       max_attempts, safe_to_retry, payload, budget, input_config_hash,
                       price_profile, estimated_cost_usd, paused, next_run_at, created_at,
                       updated_at)
VALUES (%(name)s, %(cron)s, %(timezone)s, %(catch_up)s, %(type)s, %(project)s, %(queue)s,
        %(priority)s, %(max_attempts)s, %(safe_to_retry)s, %(payload)s, %(budget)s,
        %(input_config_hash)s, %(price_profile)s, %(estimated_cost_usd)s, false,
        %(next_run_at)s, %(now)s, %(now)s)
ON CONFLICT (name) DO NOTHING;

-- name: redefine_schedule
UPDATE schedules
SET cron = %(cron)s, timezone = %(timezone)s, catch_up = %(catch_up)s, type = %(type)s,
    project = %(project)s, queue = %(queue)s, priority = %(priority)s,
    max_attempts = %(max_attempts)s, safe_to_retry = %(safe_to_retry)s, payload = %(payload)s,
    budget = %(budget)s, input_config_hash = %(input_config_hash)s,
    price_profile = %(price_profile)s, estimated_cost_usd = %(estimated_cost_usd)s,
    next_run_at = %(next_run_at)s, updated_at = %(now)s
WHERE name = %(name)s;

-- name: list_schedules
SELECT * FROM schedules
WHERE (%(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[]))
ORDER BY name;

-- name: set_schedule_paused
UPDATE schedules SET paused = %(paused)s, next_run_at = %(next_run_at)s, updated_at = %(now)s
WHERE name = %(name)s;

-- name: delete_schedule
DELETE FROM schedules WHERE name = %(name)s;

-- name: any_due_schedule
-- A read before the step's write transaction: most steps find nothing due.
SELECT 1 AS due FROM schedules WHERE NOT paused AND next_run_at <= %(now)s LIMIT 1;

-- name: claim_due_schedules
-- Due schedules, oldest tick first, locked for this step; another scheduler's step skips
-- them (SKIP LOCKED) and, once this one commits, sees next_run_at already advanced.
SELECT * FROM schedules
WHERE NOT paused AND next_run_at <= %(now)s
ORDER BY next_run_at, name LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: advance_schedule
UPDATE schedules
SET next_run_at = %(next_run_at)s, last_run_at = coalesce(%(last_run_at)s, last_run_at),
    last_job_id = coalesce(%(last_job_id)s::bigint, last_job_id), updated_at = %(now)s
WHERE name = %(name)s;
-- name: event_seqs
-- The last event seq of each of these jobs (the live streams' change check: one read for all).
SELECT id, event_seq FROM jobs WHERE id = ANY (%(ids)s::bigint[]);

-- name: event_horizon
-- The feed's horizon, in microseconds since the epoch: an event's `at` is its transaction's
-- now(), i.e. its start, so no transaction still open can commit an event older than the
-- oldest open transaction's start. Events before the horizon are final; the feed stops there.
-- A transaction open longer than :max_lag_s (say, a caller's submit(conn=...) left open) does
-- not hold the feed back beyond that.
SELECT (extract(epoch FROM greatest(now() - make_interval(secs => %(max_lag_s)s),
        least(now(), coalesce(min(xact_start), now())))) * 1000000)::bigint AS horizon_us
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
  AND state <> 'idle';

-- name: event_feed
-- Events of every project (or of %(projects)s) after the cursor (at_us, job_id, seq) and before
-- the horizon, in that order; job_events_feed (0013) makes it a range scan from the cursor.
SELECT e.*, j.project, (extract(epoch FROM e.at) * 1000000)::bigint AS feed_at
FROM job_events e JOIN jobs j ON j.id = e.job_id
WHERE (e.at, e.job_id, e.seq) > (timestamptz 'epoch' + %(at_us)s * interval '1 microsecond',
                                 %(job_id)s, %(seq)s)
  AND (%(horizon_us)s::bigint IS NULL
       OR e.at < timestamptz 'epoch' + %(horizon_us)s * interval '1 microsecond')
  AND (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
ORDER BY e.at, e.job_id, e.seq LIMIT %(limit)s;

-- name: event_feed_head
SELECT (extract(epoch FROM at) * 1000000)::bigint AS feed_at, job_id, seq FROM job_events
WHERE %(horizon_us)s::bigint IS NULL
   OR at < timestamptz 'epoch' + %(horizon_us)s * interval '1 microsecond'
ORDER BY at DESC, job_id DESC, seq DESC LIMIT 1;

-- ---- replays that notice change (store/replays.py) -------------------------------------------

-- The last resume with a decision (data.on_change) or the last wait, pause or end, whichever
-- came last: a decision holds for the replay that follows its resume, until the job parks.
-- name: replay_decision
SELECT kind, data FROM job_events
WHERE job_id = %(job_id)s
  AND (kind = 'resume' OR to_state IN ('waiting', 'paused', 'succeeded', 'failed', 'cancelled'))
ORDER BY seq DESC LIMIT 1;

-- A changed call reused: its recorded answer now stands for the new request.
-- name: journal_refingerprint
UPDATE call_journal SET fingerprint = %(fingerprint)s, updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'done';

-- A changed call to be paid again: its old answer is in the call_repaid event, and the row is
-- reserved again as a failed one is (journal_reserve).
-- name: journal_supersede
UPDATE call_journal
SET status = 'failed', error_code = 'journal_mismatch',
    error_summary = 'changed since recorded; paid again', updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'done';

-- name: checkpoint_version
UPDATE checkpoints SET version = %(version)s
WHERE job_id = %(job_id)s AND stage = %(stage)s;

-- name: drop_checkpoint
DELETE FROM checkpoints WHERE job_id = %(job_id)s AND stage = %(stage)s;

-- name: batch_get
SELECT * FROM provider_batches WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: batches_of
SELECT * FROM provider_batches WHERE job_id = %(job_id)s ORDER BY created_at, key;

-- name: batch_status
SELECT status FROM provider_batches WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: batch_insert
INSERT INTO provider_batches (job_id, key, stage, attempt, provider, model, tether_key, status, items, price, standard_price, price_profile, reserved_usd, reserved_input_tokens, reserved_output_tokens, items_total, created_at, updated_at)
VALUES (%(job_id)s, %(key)s, %(stage)s, %(attempt)s, %(provider)s, %(model)s, %(tether_key)s, 'submitting', %(items)s, %(price)s, %(standard_price)s, %(price_profile)s, %(reserved_usd)s, %(reserved_input_tokens)s, %(reserved_output_tokens)s, %(items_total)s, %(now)s, %(now)s);

-- name: batch_submitted
UPDATE provider_batches SET status = 'submitted', remote_id = %(remote_id)s,
    next_poll_at = %(wake_at)s, updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'submitting';

-- name: batches_claim_due
-- Due batches, their next poll moved out first so no other sweep polls them at once.
UPDATE provider_batches SET next_poll_at = %(wake_at)s
WHERE (job_id, key) IN (SELECT job_id, key FROM provider_batches
                        WHERE status = 'submitted' AND next_poll_at <= %(now)s
                        ORDER BY next_poll_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)
RETURNING *;

-- name: batch_polled
UPDATE provider_batches SET remote_status = %(remote_status)s, items_done = %(items_done)s,
    items_failed = %(items_failed)s, polls = polls + 1, next_poll_at = %(wake_at)s,
    updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'submitted';

-- name: batch_settle
UPDATE provider_batches SET status = %(status)s, remote_status = %(remote_status)s,
    settled_usd = %(settled_usd)s, standard_usd = %(standard_usd)s,
    items_done = %(items_done)s, items_failed = %(items_failed)s, error = %(error)s,
    next_poll_at = NULL, settled_at = %(now)s, updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status IN ('submitting', 'submitted');

-- name: batch_uploading
UPDATE provider_batches SET remote_status = 'uploading', updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'submitting';

-- name: batches_unsent
-- A job's batches reserved and never sent (unmarked: store/batches.py ``batch_uploading``).
SELECT * FROM provider_batches
WHERE job_id = %(job_id)s AND status = 'submitting' AND remote_status IS NULL;

-- name: batches_orphaned
-- Batches reserved, not known to be at the provider, whose jobs ended: no replay will settle
-- them (the sweep does, worker/batch_poller.py).
SELECT b.* FROM provider_batches b JOIN jobs j ON j.id = b.job_id
WHERE b.status = 'submitting' AND j.state IN ('succeeded', 'failed', 'cancelled')
ORDER BY b.created_at LIMIT %(limit)s;

-- name: batch_answers_insert
-- A settled batch's answers, in its order (%(answers)s: a JSON array of objects).
INSERT INTO provider_batch_answers (job_id, key, pos, item, ok, value, error_code,
                                    error_summary, retryable)
SELECT %(job_id)s, %(key)s, (a ->> 'pos')::int, a ->> 'item', (a ->> 'ok')::boolean,
       a -> 'value', a ->> 'error_code', a ->> 'error_summary', (a ->> 'retryable')::boolean
FROM jsonb_array_elements(%(answers)s::jsonb) a;

-- name: batch_answers
SELECT item, ok, value, error_code, error_summary, retryable FROM provider_batch_answers
WHERE job_id = %(job_id)s AND key = %(key)s ORDER BY pos;

-- name: batch_delete_unsent
DELETE FROM provider_batches
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'submitting';

-- name: batches_open
-- Batches not settled yet, for /metrics: few at a time (each holds many items).
SELECT provider, reserved_usd FROM provider_batches
WHERE status IN ('submitting', 'submitted');

-- ---- patches (job/patches.py) -------------------------------------------------------------
-- name: patch_markers
SELECT data FROM job_events WHERE job_id = %(job_id)s AND kind = 'patched' ORDER BY seq;

-- Whether an attempt before %(attempt)s recorded progress, or a fork carried some.
-- name: earlier_progress
SELECT EXISTS (SELECT 1 FROM call_journal WHERE job_id = %(job_id)s
               AND (attempt < %(attempt)s OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM checkpoints WHERE job_id = %(job_id)s
               AND (attempt < %(attempt)s OR reused_from IS NOT NULL))
    OR EXISTS (SELECT 1 FROM job_waits WHERE job_id = %(job_id)s AND attempt < %(attempt)s)
    AS progressed;

-- ---- budget thresholds (store/thresholds.py) ---------------------------------------------
-- A crossing, once: a row only when no other transaction recorded this threshold of this
-- budget, limit value and period (the primary key), and then it is returned.
-- name: insert_crossing
INSERT INTO budget_crossings (scope, key, limit_name, threshold, limit_value, period, project,
                              metric, used, period_start, job_id, crossed_at)
VALUES (%(scope)s, %(key)s, %(limit_name)s, %(threshold)s, %(limit_value)s, %(period)s, %(project)s, %(metric)s, %(used)s, %(period_start)s, %(job_id)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING scope;

-- The limits of a child's ancestors, whose thresholds an orphan's settlement may cross.
-- name: ancestor_limits
SELECT id::text AS key, budget FROM jobs WHERE id = ANY(%(ids)s);

-- name: budget_crossings
-- A project's crossings, newest first: its own budget's and its jobs' (scope, key narrow it).
SELECT * FROM budget_crossings
WHERE project = %(project)s AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
  AND (%(key)s::text IS NULL OR key = %(key)s::text)
ORDER BY crossed_at DESC, key, limit_name, threshold
LIMIT %(limit)s;

-- ---- singleton and debounce (core/flowkeys.py) --------------------------------------------

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

-- ---- provider headroom (core/headroom.py) --------------------------------------------------

-- name: rate_headroom
-- A scope's stored headroom, with the calls and tokens granted after the call that brought it.
SELECT p.*,
       (SELECT count(*) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS calls_since,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS tokens_since
FROM provider_limits p WHERE p.scope = %(scope)s;

-- name: rate_granted_at
SELECT at FROM rate_limit_events
WHERE job_id = %(job_id)s AND key = %(key)s AND scope = %(scope)s
ORDER BY at DESC LIMIT 1;

-- name: rate_headroom_save
INSERT INTO provider_limits (scope, observed_at, requests_limit, requests_remaining,
                             requests_reset_at, tokens_limit, tokens_remaining, tokens_reset_at,
                             retry_at, requests_in_flight, tokens_in_flight, updated_at)
VALUES (%(scope)s, %(observed_at)s, %(requests_limit)s, %(requests_remaining)s,
        %(requests_reset_at)s, %(tokens_limit)s, %(tokens_remaining)s, %(tokens_reset_at)s,
        %(retry_at)s, %(requests_in_flight)s, %(tokens_in_flight)s, %(now)s)
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
        WHERE e.scope = s.scope AND e.at > %(since)s) AS calls,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = s.scope AND e.at > %(since)s) AS tokens
FROM (SELECT DISTINCT scope FROM rate_limit_events WHERE at > %(since)s
      UNION SELECT scope FROM provider_limits) s
ORDER BY s.scope;

-- ---- webhooks (store/webhooks.py) --------------------------------------------------------------

-- name: webhook_insert
INSERT INTO webhook_subscriptions (id, project, url, kinds, secret, description, created_at)
VALUES (%(id)s, %(project)s, %(url)s, %(kinds)s, %(secret)s, %(description)s, %(now)s);

-- name: webhook_get
SELECT * FROM webhook_subscriptions WHERE id = %(id)s;

-- name: webhook_list
-- An admin-wide subscription (project NULL) is listed only when no %(projects)s scope is given.
SELECT * FROM webhook_subscriptions
WHERE %(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[])
ORDER BY created_at, id;

-- name: webhook_delete
DELETE FROM webhook_subscriptions WHERE id = %(id)s;

-- name: webhook_cursor_get
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_lock
-- Outbox steps of many workers meet here: the second waits, then finds the cursor moved.
SELECT position FROM webhook_cursor WHERE name = 'events' FOR UPDATE;

-- name: webhook_cursor_set
UPDATE webhook_cursor SET position = %(position)s WHERE name = 'events';

-- name: webhook_event_jobs
SELECT id, type, project, queue, state, error_code, error_summary FROM jobs
WHERE id = ANY (%(ids)s::bigint[]);

-- name: schedule_miss_insert
INSERT INTO schedule_misses (schedule, project, first_tick, last_tick, missed, at)
VALUES (%(schedule)s, %(project)s, %(first_tick)s, %(last_tick)s, %(missed)s, %(now)s);

-- name: schedule_misses_pending
-- Under the cursor's lock (webhook_cursor_lock): one step at a time reads and dispatches them.
SELECT * FROM schedule_misses WHERE dispatched_at IS NULL ORDER BY id LIMIT %(limit)s;

-- name: schedule_misses_dispatched
UPDATE schedule_misses SET dispatched_at = %(now)s WHERE id = ANY (%(ids)s::bigint[]);

-- name: webhook_delivery_insert
INSERT INTO webhook_deliveries (id, subscription_id, project, owner, kind, url, job_id, sends,
                                body, created_at)
VALUES (%(id)s, %(subscription_id)s, %(project)s, %(owner)s, %(kind)s, %(url)s, %(job_id)s, 1,
        %(body)s, %(now)s)
ON CONFLICT (id) DO NOTHING;

-- name: webhook_deliveries
-- Newest first; %(state)s filters by the current delivery job's state.
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE (%(subscription_id)s::text IS NULL OR d.subscription_id = %(subscription_id)s)
  AND (%(projects)s::text[] IS NULL OR d.owner = ANY (%(projects)s::text[]))
  AND (%(state)s::text IS NULL OR j.state = %(state)s)
ORDER BY d.created_at DESC, d.id LIMIT %(limit)s;

-- name: webhook_delivery_get
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = %(id)s;

-- name: webhook_delivery_lock
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = %(id)s FOR UPDATE OF d;

-- name: webhook_delivery_resent
UPDATE webhook_deliveries SET job_id = %(job_id)s, sends = %(sends)s WHERE id = %(id)s;

-- name: webhook_attempts
SELECT * FROM webhook_attempts WHERE delivery_id = %(id)s ORDER BY n;

-- name: webhook_attempt_insert
INSERT INTO webhook_attempts (delivery_id, n, job_id, at, status, error, duration_ms)
SELECT %(id)s, coalesce(max(n), 0) + 1, %(job_id)s, %(now)s, %(status)s, %(error)s,
       %(duration_ms)s
FROM webhook_attempts WHERE delivery_id = %(id)s;

-- name: schedule_misses_any
SELECT 1 AS one FROM schedule_misses WHERE dispatched_at IS NULL LIMIT 1;

-- name: prune_webhook_attempts
DELETE FROM webhook_attempts WHERE delivery_id IN (
    SELECT d.id FROM webhook_deliveries d
    WHERE d.created_at < %(cutoff)s AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id));

-- name: prune_webhook_deliveries
DELETE FROM webhook_deliveries d
WHERE d.created_at < %(cutoff)s AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id);

-- name: prune_schedule_misses
DELETE FROM schedule_misses WHERE at < %(cutoff)s;
