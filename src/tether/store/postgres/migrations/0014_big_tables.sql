-- Big tables: millions of finished jobs kept (the big-tables workload, bench/README.md).
-- Deleting a job (tether prune) deletes its signals by foreign key: each deleted job looks up
-- job_signals by job_id. The mailbox index holds only unconsumed signals, so without this one
-- every deleted job scanned the whole table of signals.
CREATE INDEX job_signals_job ON job_signals (job_id);
-- A search for an idempotency key without its project (the dashboard's and the API's search
-- box): jobs_idempotency leads with the project, so the search read every job.
CREATE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
-- The planner takes project and state as independent: for a project with few jobs in a state
-- it expected to find them soon reading the primary key backwards, and read every job. With
-- their joint frequencies it reads jobs_project_state instead.
CREATE STATISTICS jobs_project_state_mcv (mcv) ON project, state FROM jobs;
