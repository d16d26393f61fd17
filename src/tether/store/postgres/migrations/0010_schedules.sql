-- Durable schedules: each tick of `cron` in `timezone` enqueues one job, resolved when the
-- schedule was stored (type, project, queue, priority, attempts, payload, budget, hash and
-- price profile), with the idempotency key schedule:<name>:<tick as UTC>. A scheduler step
-- claims due rows (FOR UPDATE SKIP LOCKED), enqueues and advances next_run_at in one
-- transaction. payload and budget are the canonical JSON text the hash was computed from.
CREATE TABLE schedules (
    name               text PRIMARY KEY,
    cron               text NOT NULL,
    timezone           text NOT NULL,
    catch_up           text NOT NULL CHECK (catch_up IN ('latest', 'all', 'none')),
    type               text NOT NULL,
    project            text NOT NULL,
    queue              text NOT NULL,
    priority           integer NOT NULL,
    max_attempts       integer NOT NULL,
    safe_to_retry      boolean NOT NULL,
    payload            text NOT NULL,
    budget             text NOT NULL,
    input_config_hash  text NOT NULL,
    price_profile      text,
    estimated_cost_usd text,
    paused             boolean NOT NULL DEFAULT false,
    next_run_at        timestamptz NOT NULL,
    last_run_at        timestamptz,
    last_job_id        bigint,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE NOT paused;
