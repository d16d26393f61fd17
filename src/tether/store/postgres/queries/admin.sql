-- Workers, queues, API tokens, migrations and engine statistics (store/admin.py).

-- name: set_queue_paused
INSERT INTO queues (name, paused, updated_at) VALUES (%(name)s, %(paused)s, %(now)s)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

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
             WHERE j.lease_owner = w.id AND j.lease_attempt IS NOT NULL) AS leases
FROM workers w
WHERE %(include_stopped)s::boolean OR w.stopped_at IS NULL
ORDER BY w.started_at DESC;

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

-- Sums over owners (engine_counters: a few rows a worker, never the attempts).
-- name: engine_counts
SELECT coalesce(sum(n) FILTER (WHERE name = 'claims'), 0) AS claims,
       coalesce(sum(n) FILTER (WHERE name = 'lease_expiries'), 0) AS lease_expiries,
       coalesce(sum(n) FILTER (WHERE name = 'budget_pauses'), 0) AS budget_pauses,
       coalesce(sum(n) FILTER (WHERE name = 'budget_thresholds'), 0) AS budget_thresholds
FROM engine_counters;

-- name: recent_claim_latency
SELECT (e.data ->> 'waited_s')::float8 AS latency
FROM (SELECT job_id, attempt FROM job_attempts ORDER BY job_id DESC, attempt DESC
      LIMIT %(limit)s) a
JOIN job_events e ON e.job_id = a.job_id AND e.attempt = a.attempt AND e.kind = 'leased';
