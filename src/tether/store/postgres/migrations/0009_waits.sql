-- Waits (running -> waiting -> queued). A job waits for its children, a timer or a
-- signal without a lease; the wait is a journaled step: its row records what it waits for and,
-- once satisfied, the value the job's replay receives.
ALTER TABLE jobs DROP CONSTRAINT jobs_state_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_state_check
    CHECK (state IN ('queued', 'leased', 'running', 'retry_wait', 'pausing', 'paused',
                     'cancelling', 'cancelled', 'interrupted', 'succeeded', 'failed',
                     'waiting'));
ALTER TABLE jobs ADD COLUMN detached boolean NOT NULL DEFAULT false;
-- A periodic project budget keeps one accumulator per period (scope 'project_period').
ALTER TABLE budgets DROP CONSTRAINT budgets_scope_check;
ALTER TABLE budgets ADD CONSTRAINT budgets_scope_check
    CHECK (scope IN ('job', 'project', 'project_period'));

CREATE INDEX jobs_waiting_due ON jobs (run_after) WHERE state = 'waiting';
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;

CREATE TABLE job_waits (
    job_id      bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key         text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('children', 'timer', 'signal')),
    status      text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'done')),
    wake_at     timestamptz,
    children    jsonb,
    fail_mode   text,
    signal      text,
    prompt      text,
    schema      jsonb,
    outcome     text,
    value       jsonb,
    attempt     integer NOT NULL,
    created_at  timestamptz NOT NULL,
    done_at     timestamptz,
    PRIMARY KEY (job_id, key)
);

CREATE TABLE job_signals (
    id           bigserial PRIMARY KEY,
    job_id       bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name         text NOT NULL,
    value        jsonb,
    sent_at      timestamptz NOT NULL,
    consumed_at  timestamptz,
    consumed_by  text
);
CREATE INDEX job_signals_mailbox ON job_signals (job_id, name, id) WHERE consumed_at IS NULL;
