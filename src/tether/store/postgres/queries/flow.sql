-- Paused types and concurrency limits (store/flow.py).

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
