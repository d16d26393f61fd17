-- Budget thresholds: one row per threshold crossed, written in the transaction that settled
-- the use that crossed it. The primary key is the guard that makes each threshold fire once
-- per budget (scope, key), limit and its value, and period ('' for an all-time budget), however
-- many workers settle at once; job_id is the job whose call crossed it.
CREATE TABLE budget_crossings (
    scope         text NOT NULL CHECK (scope IN ('job', 'project')),
    key           text NOT NULL,
    limit_name    text NOT NULL,
    threshold     text NOT NULL,
    limit_value   text NOT NULL,
    period        text NOT NULL DEFAULT '',
    project       text NOT NULL,
    metric        text NOT NULL,
    used          text NOT NULL,
    period_start  timestamptz,
    job_id        bigint NOT NULL,
    crossed_at    timestamptz NOT NULL,
    PRIMARY KEY (scope, key, limit_name, threshold, limit_value, period)
);
CREATE INDEX budget_crossings_project ON budget_crossings (project, crossed_at);

-- A pruned job's own crossings go with its budget row; a project's stay.
CREATE OR REPLACE FUNCTION tether_forget_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_events e USING gone g WHERE e.job_id = g.id;
    DELETE FROM job_attempts a USING gone g WHERE a.job_id = g.id;
    DELETE FROM budgets b USING gone g WHERE b.scope = 'job' AND b.key = g.id::text;
    DELETE FROM budget_crossings c USING gone g WHERE c.scope = 'job' AND c.key = g.id::text;
    RETURN NULL;
END
$$;
