-- A pruned job's own budget row (scope 'job', written by its first call) goes with it, as its
-- events and attempts do: before this, every job that ever made a call kept one row in
-- budgets for good, however often the history was pruned. The project budgets stay. Rows
-- left behind by earlier prunes are removed once, here.
CREATE OR REPLACE FUNCTION tether_forget_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM job_events e USING gone g WHERE e.job_id = g.id;
    DELETE FROM job_attempts a USING gone g WHERE a.job_id = g.id;
    DELETE FROM budgets b USING gone g WHERE b.scope = 'job' AND b.key = g.id::text;
    RETURN NULL;
END
$$;

DELETE FROM budgets b
WHERE b.scope = 'job' AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = b.key::bigint);
