-- Waits (running -> waiting -> queued). A job waits for its children, a timer or a
-- signal without a lease; the wait is a journaled step: its row records what it waits for and,
-- once satisfied, the value the job's replay receives.
--
-- The jobs CHECK constraint grows a state. SQLite cannot alter a CHECK, and rebuilding the
-- jobs table would rewrite every row; widening the list of accepted values changes no stored
-- data, so the table's definition is edited in place (SQLite's documented procedure for
-- constraint changes that leave the file format alone; the runner bumps schema_version).
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, '''succeeded'', ''failed'')', '''succeeded'', ''failed'', ''waiting'')')
WHERE type = 'table' AND name = 'jobs';
-- The budgets scope list grows too: a periodic project budget keeps one accumulator per
-- period (scope 'project_period').
UPDATE sqlite_master
SET sql = replace(sql, 'CHECK (scope IN (''job'', ''project''))',
                  'CHECK (scope IN (''job'', ''project'', ''project_period''))')
WHERE type = 'table' AND name = 'budgets';
PRAGMA writable_schema = OFF;

ALTER TABLE jobs ADD COLUMN detached INTEGER NOT NULL DEFAULT 0;

CREATE INDEX jobs_waiting_due ON jobs (run_after) WHERE state = 'waiting';
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE job_waits (
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    kind        TEXT NOT NULL,
    status      TEXT NOT NULL DEFAULT 'open',
    wake_at     REAL,
    children    TEXT,
    fail_mode   TEXT,
    signal      TEXT,
    prompt      TEXT,
    schema      TEXT,
    outcome     TEXT,
    value       TEXT,
    attempt     INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    done_at     REAL,
    PRIMARY KEY (job_id, key),
    CHECK (kind IN ('children', 'timer', 'signal')),
    CHECK (status IN ('open', 'done'))
) WITHOUT ROWID;

CREATE TABLE job_signals (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id       INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    value        TEXT,
    sent_at      REAL NOT NULL,
    consumed_at  REAL,
    consumed_by  TEXT
);
CREATE INDEX job_signals_mailbox ON job_signals (job_id, name, id) WHERE consumed_at IS NULL
