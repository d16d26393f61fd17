-- Budget threshold crossings (store/thresholds.py).

-- A crossing, once: a row only when no other transaction recorded this threshold of this
-- budget, limit value and period (the primary key), and then it is returned.
-- name: insert_crossing
INSERT INTO budget_crossings (scope, key, limit_name, threshold, limit_value, period, project,
                              metric, used, period_start, job_id, crossed_at)
VALUES (%(scope)s, %(key)s, %(limit_name)s, %(threshold)s, %(limit_value)s, %(period)s, %(project)s, %(metric)s, %(used)s, %(period_start)s, %(job_id)s, %(now)s)
ON CONFLICT DO NOTHING
RETURNING scope;

-- name: budget_crossings
-- A project's crossings, newest first: its own budget's and its jobs' (scope, key narrow it).
SELECT * FROM budget_crossings
WHERE project = %(project)s AND (%(scope)s::text IS NULL OR scope = %(scope)s::text)
  AND (%(key)s::text IS NULL OR key = %(key)s::text)
ORDER BY crossed_at DESC, key, limit_name, threshold
LIMIT %(limit)s;
