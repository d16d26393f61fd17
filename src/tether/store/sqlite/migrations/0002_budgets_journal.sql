-- Budgets, the call journal, the cost ledger, checkpoints and blobs, pinned price profiles.
-- Money is TEXT holding an exact decimal; arithmetic happens in Python's Decimal under the
-- write lock (BEGIN IMMEDIATE), so nothing is ever rounded through a float.

-- Accumulators for a job (scope 'job', key = job id) or a project (scope 'project', key = name).
-- A job's limits live on jobs.budget; a project's limits live here.
CREATE TABLE budgets (
    scope                   TEXT NOT NULL CHECK (scope IN ('job', 'project')),
    key                     TEXT NOT NULL,
    limits                  TEXT NOT NULL DEFAULT '{}',
    spent_usd               TEXT NOT NULL DEFAULT '0',
    reserved_usd            TEXT NOT NULL DEFAULT '0',
    calls                   INTEGER NOT NULL DEFAULT 0,
    reserved_calls          INTEGER NOT NULL DEFAULT 0,
    input_tokens            INTEGER NOT NULL DEFAULT 0,
    output_tokens           INTEGER NOT NULL DEFAULT 0,
    reserved_input_tokens   INTEGER NOT NULL DEFAULT 0,
    reserved_output_tokens  INTEGER NOT NULL DEFAULT 0,
    examples                INTEGER NOT NULL DEFAULT 0,
    updated_at              REAL NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;

-- One row per ctx.call key: 'reserved' before the call, 'done' with its result after,
-- 'failed' when the provider refused it (nothing billed), 'unconfirmed' when a crash left
-- the outcome unknown (counted as spent).
CREATE TABLE call_journal (
    job_id                  INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key                     TEXT NOT NULL,
    stage                   TEXT,
    status                  TEXT NOT NULL CHECK (status IN ('reserved', 'done', 'failed',
                                                            'unconfirmed')),
    attempt                 INTEGER NOT NULL,
    provider                TEXT NOT NULL,
    model                   TEXT NOT NULL,
    request_hash            TEXT,
    reserved_usd            TEXT NOT NULL,
    reserved_input_tokens   INTEGER NOT NULL,
    reserved_output_tokens  INTEGER NOT NULL,
    result                  TEXT,
    usage                   TEXT,
    cost_usd                TEXT,
    error_code              TEXT,
    error_summary           TEXT,
    created_at              REAL NOT NULL,
    updated_at              REAL NOT NULL,
    PRIMARY KEY (job_id, key)
) WITHOUT ROWID;
CREATE INDEX call_journal_open ON call_journal (job_id) WHERE status = 'reserved';
CREATE INDEX call_journal_cache ON call_journal (request_hash) WHERE status = 'done';

-- One row per settled call: what was paid, at which unit prices, from which profile.
CREATE TABLE cost_ledger (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id                INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    project               TEXT NOT NULL,
    stage                 TEXT,
    key                   TEXT NOT NULL,
    attempt               INTEGER NOT NULL,
    provider              TEXT NOT NULL,
    model                 TEXT NOT NULL,
    input_tokens          INTEGER NOT NULL,
    output_tokens         INTEGER NOT NULL,
    cached_input_tokens   INTEGER NOT NULL DEFAULT 0,
    reasoning_tokens      INTEGER NOT NULL DEFAULT 0,
    input_per_mtok        TEXT NOT NULL,
    output_per_mtok       TEXT NOT NULL,
    cached_input_per_mtok TEXT,
    price_profile         TEXT NOT NULL,
    cost_usd              TEXT NOT NULL,
    reserved_usd          TEXT NOT NULL,
    confirmed             INTEGER NOT NULL,
    overrun               INTEGER NOT NULL DEFAULT 0,
    created_at            REAL NOT NULL
);
CREATE INDEX cost_ledger_job ON cost_ledger (job_id, id);
CREATE INDEX cost_ledger_project ON cost_ledger (project, created_at);

-- Finished stages. The blob a row names is durable before the row commits.
CREATE TABLE checkpoints (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    stage       TEXT NOT NULL,
    position    INTEGER NOT NULL,
    blob        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (job_id, stage)
) WITHOUT ROWID;

-- Content-addressed blobs kept in the database (the default blob store).
CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    data        BLOB NOT NULL,
    size        INTEGER NOT NULL,
    created_at  REAL NOT NULL
) WITHOUT ROWID;

-- Price profiles as pinned by jobs at submission (id = name@effective_date#sha-prefix).
CREATE TABLE price_profiles (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    effective_date  TEXT NOT NULL,
    body            TEXT NOT NULL,
    created_at      REAL NOT NULL
) WITHOUT ROWID;
