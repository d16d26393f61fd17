-- Schedules and their misses (store/schedules.py).

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

-- name: schedule_miss_insert
INSERT INTO schedule_misses (schedule, project, first_tick, last_tick, missed, at)
VALUES (%(schedule)s, %(project)s, %(first_tick)s, %(last_tick)s, %(missed)s, %(now)s);
