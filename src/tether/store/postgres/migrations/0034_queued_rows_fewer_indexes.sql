-- A job is written into every index whose predicate its row meets: at submit, and again at each
-- change of state (state is an indexed column, so no update of it is a HOT update). Two of the
-- indexes that held every job gave queued rows nothing their queries read:
-- jobs_queue_state is read only to count a queue's finished jobs (count_finished_jobs), so it
-- now holds finished jobs only, and running ones no longer either; jobs_project_state lists a
-- project's jobs in one state, and a project's queued jobs are listed from jobs_fair (which
-- holds every queued job, by project) or jobs_state instead. A queued job is now four index
-- entries (the primary key, jobs_claimable, jobs_fair, jobs_state) where it was six.
DROP INDEX jobs_queue_state;
CREATE INDEX jobs_queue_finished ON jobs (queue, state)
    WHERE state IN ('succeeded', 'failed', 'cancelled');
DROP INDEX jobs_project_state;
CREATE INDEX jobs_project_state ON jobs (project, state, id) WHERE state <> 'queued';
