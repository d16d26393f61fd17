-- A job is written into every index whose predicate its row meets: at submit, and again at each
-- change of state. jobs_queue_state is read only to count a queue's finished jobs
-- (count_finished_jobs, estimate_jobs), so it now holds finished jobs only: a queued or running
-- job is one index entry fewer. (jobs_project_state keeps every job here: the list statements
-- name it with INDEXED BY, for every state.)
DROP INDEX jobs_queue_state;
CREATE INDEX jobs_queue_finished ON jobs (queue, state)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
