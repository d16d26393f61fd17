-- Claims, attempts, heartbeats and expired leases (store/leases.py).

-- The end both claims share: the chosen jobs leased (and started with :start), their
-- attempt rows, events and the claims counter; the batch in claim order.
-- fragment: claim_tail
claimed AS (
    UPDATE jobs j
    SET state = CASE WHEN %(start)s::boolean AND j.attempt_count = 0
                     THEN 'running' ELSE 'leased' END,
        attempt_count = j.attempt_count + 1,
        lease_attempt = j.attempt_count + 1, lease_owner = %(worker_id)s,
        lease_expires_at = clock.now + make_interval(secs => %(lease_ttl)s),
        updated_at = clock.now,
        event_seq = j.event_seq + CASE WHEN %(start)s::boolean AND j.attempt_count = 0
                                       THEN 2 ELSE 1 END
    FROM picked, clock
    WHERE j.id = picked.id AND picked.id IN (SELECT id FROM chosen)
    RETURNING j.*, clock.now AS claimed_at
), attempts AS (
    INSERT INTO job_attempts (job_id, attempt, worker_id, claimed_at, started_at)
    SELECT id, lease_attempt, %(worker_id)s, claimed_at,
           CASE WHEN state = 'running' THEN claimed_at END
    FROM claimed
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, event_seq - CASE WHEN state = 'running' THEN 1 ELSE 0 END, claimed_at,
           'leased', 'queued', 'leased', lease_attempt,
           jsonb_build_object('worker_id', %(worker_id)s::text, 'waited_s',
                              round(extract(epoch FROM claimed_at - run_after)::numeric, 6))
    FROM claimed
    UNION ALL
    SELECT id, event_seq, claimed_at, 'running', 'leased', 'running', lease_attempt, '{}'::jsonb
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
WHERE lease_owner = %(worker_id)s AND lease_attempt IS NOT NULL
  AND (%(jobs)s::bigint[] IS NULL OR id = ANY (%(jobs)s::bigint[]))
RETURNING id, lease_attempt, state;

-- name: touch_worker
UPDATE workers SET last_heartbeat_at = %(now)s WHERE id = %(worker_id)s;

-- name: set_stage
UPDATE jobs SET stage = %(stage)s, updated_at = %(now)s
WHERE id = %(id)s AND lease_attempt = %(attempt)s AND state IN ('running', 'pausing', 'cancelling');

-- name: lease_state
SELECT state, lease_attempt FROM jobs WHERE id = %(id)s;

-- Locked rows belong to a worker writing them right now (finishing, heartbeating): skip them;
-- a row whose lease was renewed meanwhile no longer matches when re-checked under the lock.
-- name: expired_leases
SELECT * FROM jobs
WHERE lease_attempt IS NOT NULL AND lease_expires_at < %(now)s
ORDER BY lease_expires_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: job_budget
SELECT * FROM budgets WHERE scope = 'job' AND key = %(key)s;
