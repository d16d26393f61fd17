-- Flow control at claim time (docs/flow-control.md). job_types: a job type paused on its own,
-- beside its queue; claim_jobs claims no job of a paused type. flow_limits: at most per_key
-- jobs holding a slot (leased, running, pausing, cancelling) per key of a queue or a job type,
-- and at most total of them in it; the key is the job's project, or the payload's key_field
-- (a job without that field counts under its project). Both are read by every claim, so a
-- change takes effect at the next claim of every worker.
CREATE TABLE job_types (
    name        TEXT PRIMARY KEY,
    paused      INTEGER NOT NULL DEFAULT 0,
    updated_at  REAL NOT NULL
);

CREATE TABLE flow_limits (
    scope       TEXT NOT NULL CHECK (scope IN ('queue', 'type')),
    name        TEXT NOT NULL,
    key_field   TEXT,
    per_key     INTEGER CHECK (per_key >= 1),
    total       INTEGER CHECK (total >= 1),
    updated_at  REAL NOT NULL,
    PRIMARY KEY (scope, name)
);

-- Fair dispatch (claim_jobs_fair): the claim walks this index to each (project, priority)
-- with queued jobs, then each one's first jobs in run_after order.
CREATE INDEX jobs_fair ON jobs (project, priority, run_after, id) WHERE state = 'queued';
