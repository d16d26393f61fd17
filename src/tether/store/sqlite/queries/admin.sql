-- Workers, queues, API tokens, migrations and engine statistics (store/admin.py).

-- name: set_queue_paused
INSERT INTO queues (name, paused, updated_at) VALUES (:name, :paused, :now)
ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, updated_at = excluded.updated_at;

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
SELECT w.*, (SELECT count(*) FROM jobs j WHERE j.lease_owner = w.id AND j.lease_attempt IS NOT NULL) AS leases
FROM workers w
WHERE :include_stopped OR w.stopped_at IS NULL
ORDER BY w.started_at DESC;

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

-- Sums over owners (engine_counters: a few rows a worker, never the attempts).
-- name: engine_counts
SELECT coalesce(sum(CASE WHEN name = 'claims' THEN n END), 0) AS claims,
       coalesce(sum(CASE WHEN name = 'lease_expiries' THEN n END), 0) AS lease_expiries,
       coalesce(sum(CASE WHEN name = 'budget_pauses' THEN n END), 0) AS budget_pauses,
       coalesce(sum(CASE WHEN name = 'budget_thresholds' THEN n END), 0) AS budget_thresholds
FROM engine_counters;

-- name: recent_claim_latency
SELECT json_extract(e.data, '$.waited_s') AS latency
FROM (SELECT job_id, attempt FROM job_attempts ORDER BY job_id DESC, attempt DESC
      LIMIT :limit) a
JOIN job_events e ON e.job_id = a.job_id AND e.attempt = a.attempt AND e.kind = 'leased';
