-- Singleton and debounce per key (core/flowkeys.py): a job's flow mode and key, and the two
-- unique partial indexes that make concurrent submitters agree. A singleton key has at most
-- one live job (any state but succeeded, failed, cancelled); a debounced key at most one
-- pending job (queued and never claimed: a claim counts an attempt, so attempt_count = 0).
ALTER TABLE jobs ADD COLUMN flow_mode text;
ALTER TABLE jobs ADD COLUMN flow_key text;
CREATE UNIQUE INDEX jobs_singleton ON jobs (project, type, flow_key)
    WHERE flow_mode = 'singleton' AND state NOT IN ('succeeded', 'failed', 'cancelled');
CREATE UNIQUE INDEX jobs_debounce ON jobs (project, type, flow_key)
    WHERE flow_mode = 'debounce' AND state = 'queued' AND attempt_count = 0;
