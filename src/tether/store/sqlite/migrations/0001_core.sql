-- Core engine: jobs, their events and attempts, queues, workers.
-- Times are unix seconds (REAL); the single machine's clock is the database clock.

CREATE TABLE queues (
    name        TEXT PRIMARY KEY,
    paused      INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL NOT NULL
);

CREATE TABLE jobs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    type               TEXT NOT NULL,
    project            TEXT NOT NULL,
    queue              TEXT NOT NULL,
    state              TEXT NOT NULL,
    stage              TEXT,
    priority           INTEGER NOT NULL DEFAULT 0,
    run_after          REAL NOT NULL,
    attempt_count      INTEGER NOT NULL DEFAULT 0,
    max_attempts       INTEGER NOT NULL,
    safe_to_retry      INTEGER NOT NULL,
    idempotency_key    TEXT,
    input_config_hash  TEXT NOT NULL,
    payload            TEXT NOT NULL,
    result             TEXT,
    error_code         TEXT,
    error_summary      TEXT,
    budget             TEXT NOT NULL DEFAULT '{}',
    price_profile      TEXT,
    estimated_cost_usd TEXT,
    parent_id          INTEGER,
    lease_owner        TEXT,
    lease_expires_at   REAL,
    lease_token        INTEGER,
    event_seq          INTEGER NOT NULL DEFAULT 0,
    created_at         REAL NOT NULL,
    updated_at         REAL NOT NULL,
    finished_at        REAL,
    CHECK (state IN ('queued', 'leased', 'running', 'retry_wait', 'pausing', 'paused',
                     'cancelling', 'cancelled', 'interrupted', 'succeeded', 'failed')),
    CHECK (max_attempts >= 1),
    CHECK (json_valid(payload))
);

CREATE UNIQUE INDEX jobs_idempotency ON jobs (project, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_claimable ON jobs (priority, run_after, id) WHERE state = 'queued';
CREATE INDEX jobs_retry_due ON jobs (run_after) WHERE state = 'retry_wait';
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE lease_token IS NOT NULL;
CREATE INDEX jobs_lease_owner ON jobs (lease_owner) WHERE lease_token IS NOT NULL;
CREATE INDEX jobs_project_state ON jobs (project, state, id);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_queue_state ON jobs (queue, state);
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;

CREATE TABLE job_events (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    at          REAL NOT NULL,
    kind        TEXT NOT NULL,
    from_state  TEXT,
    to_state    TEXT,
    attempt     INTEGER,
    data        TEXT,
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TABLE job_attempts (
    job_id         INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt        INTEGER NOT NULL,
    worker_id      TEXT NOT NULL,
    claimed_at     REAL NOT NULL,
    started_at     REAL,
    finished_at    REAL,
    outcome        TEXT,
    error_code     TEXT,
    error_summary  TEXT,
    PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;

CREATE TABLE workers (
    id                 TEXT PRIMARY KEY,
    hostname           TEXT NOT NULL,
    pid                INTEGER NOT NULL,
    queues             TEXT NOT NULL,
    concurrency        INTEGER NOT NULL,
    started_at         REAL NOT NULL,
    last_heartbeat_at  REAL NOT NULL,
    stopped_at         REAL
);
