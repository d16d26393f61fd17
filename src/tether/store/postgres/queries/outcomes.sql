-- The end of an attempt, many at once (store/outcomes.py).

-- name: succeed_many
-- A child's end is counted in the open gathers that wait for it (counted); the gathers this
-- completes come back as ``wake`` rows (their parents wake next).
-- Plain successes of running jobs with no call left open, set-wise in one statement: rows are
-- locked in id order first (as every multi-row lock here is), so a concurrent cancel either
-- committed before (the row no longer matches and takes the one-by-one path) or waits.
-- The batch's rows (jobs and attempts) are found by primary key alone, whatever the statistics
-- say: %(pos)s maps each id to its place in the arrays, so no join with the input is planned,
-- and the state and attempt tests are written `(...) IS TRUE` so that no index on them can be
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
      AND (j.lease_attempt = (%(attempts)s::integer[])[(%(pos)s::jsonb ->> j.id::text)::int])
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
        lease_owner = NULL, lease_expires_at = NULL, lease_attempt = NULL,
        finished_at = clock.now, updated_at = clock.now, event_seq = j.event_seq + 1
    FROM clock
    WHERE j.id = ANY (ARRAY(SELECT id FROM locked))
    RETURNING j.id, j.event_seq, j.parent_id,
              (%(attempts)s::integer[])[(%(pos)s::jsonb ->> j.id::text)::int] AS attempt,
              (%(data)s::text[])[(%(pos)s::jsonb ->> j.id::text)::int] AS data, clock.now
), events AS (
    INSERT INTO job_events (job_id, seq, at, kind, from_state, to_state, attempt, data)
    SELECT id, event_seq, now, 'succeeded', 'running', 'succeeded', attempt, data::jsonb
    FROM done
), attempts AS (
    UPDATE job_attempts a
    SET finished_at = (SELECT now FROM clock), outcome = 'succeeded', error_code = NULL,
        error_summary = NULL
    WHERE a.job_id = ANY (ARRAY(SELECT id FROM done))
      AND a.attempt = (%(attempts)s::integer[])[(%(pos)s::jsonb ->> a.job_id::text)::int]
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
