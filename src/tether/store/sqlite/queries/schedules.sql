-- Schedules and their misses (store/schedules.py).

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

-- name: schedule_miss_insert
INSERT INTO schedule_misses (schedule, project, first_tick, last_tick, missed, at)
VALUES (:schedule, :project, :first_tick, :last_tick, :missed, :now);
