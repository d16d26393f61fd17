-- Big tables: millions of finished jobs kept (the big-tables workload, bench/README.md).
-- Deleting a job (tether prune) deletes its signals by foreign key: each deleted job looks up
-- job_signals by job_id. The mailbox index holds only unconsumed signals, so without this one
-- every deleted job scanned the whole table of signals.
CREATE INDEX job_signals_job ON job_signals (job_id);
-- A search for an idempotency key without its project (the dashboard's and the API's search
-- box): jobs_idempotency leads with the project, so the search read every job.
CREATE INDEX jobs_idempotency_key ON jobs (idempotency_key) WHERE idempotency_key IS NOT NULL;
