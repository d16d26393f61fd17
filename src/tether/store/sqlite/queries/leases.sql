-- Claims, attempts, heartbeats and expired leases (store/leases.py).

-- name: claim_jobs
-- With :start, first attempts go straight to 'running' (two events: seq - 1 and seq).
-- Flow control (docs/flow-control.md): no job of a paused queue or type; held counts the
-- slots each limit's keys hold now, the walk skips a job whose key or limit is full, and
-- the window (four times :limit while limits exist) loses the candidates that would fill
-- one past its limit within this batch (per_key_over, then total_over).
UPDATE jobs
SET state = CASE WHEN :start AND attempt_count = 0 THEN 'running' ELSE 'leased' END,
    attempt_count = attempt_count + 1, lease_attempt = attempt_count + 1,
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
    attempt_count = attempt_count + 1, lease_attempt = attempt_count + 1,
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
WHERE lease_owner = :worker_id AND lease_attempt IS NOT NULL
  AND (:jobs IS NULL OR id IN (SELECT value FROM json_each(:jobs)))
RETURNING id, lease_attempt, state;

-- name: touch_worker
UPDATE workers SET last_heartbeat_at = :now WHERE id = :worker_id;

-- name: set_stage
UPDATE jobs SET stage = :stage, updated_at = :now
WHERE id = :id AND lease_attempt = :attempt AND state IN ('running', 'pausing', 'cancelling');

-- name: lease_state
SELECT state, lease_attempt FROM jobs WHERE id = :id;

-- name: expired_leases
SELECT * FROM jobs
WHERE lease_attempt IS NOT NULL AND lease_expires_at < :now
ORDER BY lease_expires_at LIMIT :limit;

-- name: job_budget
SELECT * FROM budgets WHERE scope = 'job' AND key = :key;
