-- Durable schedules: each tick of `cron` in `timezone` enqueues one job, resolved when the
-- schedule was stored (type, project, queue, priority, attempts, payload, budget, hash and
-- price profile), with the idempotency key schedule:<name>:<tick as UTC>. A scheduler step
-- claims due rows (next_run_at <= now, not paused), enqueues and advances next_run_at in one
-- transaction.
CREATE TABLE schedules (
    name               TEXT PRIMARY KEY,
    cron               TEXT NOT NULL,
    timezone           TEXT NOT NULL,
    catch_up           TEXT NOT NULL CHECK (catch_up IN ('latest', 'all', 'none')),
    type               TEXT NOT NULL,
    project            TEXT NOT NULL,
    queue              TEXT NOT NULL,
    priority           INTEGER NOT NULL,
    max_attempts       INTEGER NOT NULL,
    safe_to_retry      INTEGER NOT NULL,
    payload            TEXT NOT NULL,
    budget             TEXT NOT NULL,
    input_config_hash  TEXT NOT NULL,
    price_profile      TEXT,
    estimated_cost_usd TEXT,
    paused             INTEGER NOT NULL DEFAULT 0,
    next_run_at        REAL NOT NULL,
    last_run_at        REAL,
    last_job_id        INTEGER,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL
);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE paused = 0;
