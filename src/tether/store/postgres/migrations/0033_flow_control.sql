-- Flow control at claim time (docs/flow-control.md). job_types: a job type paused on its own,
-- beside its queue; claim_jobs claims no job of a paused type. flow_limits: at most per_key
-- jobs holding a slot (leased, running, pausing, cancelling) per key of a queue or a job type,
-- and at most total of them in it; the key is the job's project, or the payload's key_field
-- (a job without that field counts under its project). Both are read by every claim, so a
-- change takes effect at the next claim of every worker; a claim that a limit may restrict
-- first takes the flow lock (PgTx.claim), so concurrent claims count each other's slots.
CREATE TABLE job_types (
    name        text PRIMARY KEY,
    paused      boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE flow_limits (
    scope       text NOT NULL CHECK (scope IN ('queue', 'type')),
    name        text NOT NULL,
    key_field   text,
    per_key     integer CHECK (per_key >= 1),
    total       integer CHECK (total >= 1),
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (scope, name)
);

-- Fair dispatch (claim_jobs_fair): the claim walks this index to each (project, priority)
-- with queued jobs, then each one's first jobs in run_after order.
CREATE INDEX jobs_fair ON jobs (project, priority, run_after, id) WHERE state = 'queued';
