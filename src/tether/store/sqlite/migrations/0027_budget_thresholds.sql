-- Budget thresholds: one row per threshold crossed, written in the transaction that settled
-- the use that crossed it. The primary key is the guard that makes each threshold fire once
-- per budget (scope, key), limit and its value, and period ('' for an all-time budget), however
-- many workers settle at once; job_id is the job whose call crossed it.
CREATE TABLE budget_crossings (
    scope         TEXT NOT NULL CHECK (scope IN ('job', 'project')),
    key           TEXT NOT NULL,
    limit_name    TEXT NOT NULL,
    threshold     TEXT NOT NULL,
    limit_value   TEXT NOT NULL,
    period        TEXT NOT NULL DEFAULT '',
    project       TEXT NOT NULL,
    metric        TEXT NOT NULL,
    used          TEXT NOT NULL,
    period_start  REAL,
    job_id        INTEGER NOT NULL,
    crossed_at    REAL NOT NULL,
    PRIMARY KEY (scope, key, limit_name, threshold, limit_value, period)
) WITHOUT ROWID;
CREATE INDEX budget_crossings_project ON budget_crossings (project, crossed_at);

-- A pruned job's own crossings go with its budget row; a project's stay.
CREATE TRIGGER jobs_forget_crossings AFTER DELETE ON jobs
BEGIN
    DELETE FROM budget_crossings WHERE scope = 'job' AND key = CAST(OLD.id AS TEXT);
END;
