-- A pruned job's own budget row (scope 'job', written by its first call) goes with it, as its
-- events and attempts do (their foreign keys cascade; the budget row has no key to cascade
-- by): before this, every job that ever made a call kept one row in budgets for good. The
-- project budgets stay. Rows left behind by earlier prunes are removed once, here.
CREATE TRIGGER jobs_forget_budget AFTER DELETE ON jobs
BEGIN
    DELETE FROM budgets WHERE scope = 'job' AND key = CAST(OLD.id AS TEXT);
END;

DELETE FROM budgets
WHERE scope = 'job'
  AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = CAST(budgets.key AS INTEGER));
