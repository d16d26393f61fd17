-- Reserving and settling calls: the journal and accumulators a batch locks (store/calls.py, store/book.py).

-- name: journal_reserve
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          fingerprint, reserved_usd, reserved_input_tokens,
                          reserved_output_tokens, created_at, updated_at)
VALUES (%(job_id)s, %(key)s, %(stage)s, 'reserved', %(attempt)s, %(provider)s, %(model)s,
        %(request_hash)s, %(fingerprint)s, %(reserved_usd)s::numeric, %(reserved_input_tokens)s,
        %(reserved_output_tokens)s, %(now)s, %(now)s)
ON CONFLICT (job_id, key) DO UPDATE
SET stage = excluded.stage, status = 'reserved', attempt = excluded.attempt,
    provider = excluded.provider, model = excluded.model, request_hash = excluded.request_hash,
    fingerprint = excluded.fingerprint, reserved_usd = excluded.reserved_usd,
    reserved_input_tokens = excluded.reserved_input_tokens,
    reserved_output_tokens = excluded.reserved_output_tokens, result = NULL, usage = NULL,
    cost_usd = NULL, error_code = NULL, error_summary = NULL, updated_at = excluded.updated_at
WHERE call_journal.status IN ('failed', 'unconfirmed');

-- name: journal_finish
UPDATE call_journal
SET status = %(status)s, result = %(result)s::jsonb, usage = %(usage)s::jsonb,
    cost_usd = %(cost_usd)s::numeric, error_code = %(error_code)s,
    error_summary = %(error_summary)s, updated_at = %(now)s
WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'reserved' AND attempt = %(attempt)s;

-- What a batch of one job's calls reads first: the job's lease and limits, and the job's and the
-- project's accumulators (one row each). The job row is locked FOR NO KEY UPDATE (a batch may
-- append an event, which writes it; inserts that reference it are not blocked), then the job's
-- own accumulator FOR UPDATE (the CTE reads after the job row). The project's row is only read:
-- a batch adds its differences to it (add_budget_row), and locks it first (lock_budget_keys)
-- only when the project has limits to check. One job's calls are serialised by its worker's
-- CallBatcher anyway, so a weaker lock on the job row would let nothing more run at once.
-- Fewer than two rows: the job or a budget row is missing.
-- name: lock_calls
WITH j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile FROM jobs
    WHERE id = %(job_id)s FOR NO KEY UPDATE
), own AS MATERIALIZED (
    SELECT b.* FROM j JOIN budgets b ON b.scope = 'job' AND b.key = %(job_key)s
    FOR UPDATE OF b
)
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, b.*
FROM j, LATERAL (SELECT * FROM own
                 UNION ALL
                 SELECT * FROM budgets p WHERE p.scope = 'project' AND p.key = j.project) b
ORDER BY b.scope;

-- The journal rows of a batch's keys: what a reserve or a settle needs (read under the job
-- row's lock: no other write of this job's journal can interleave).
-- name: journal_keys
SELECT key, status, attempt, stage, provider, model, reserved_usd, reserved_input_tokens,
       reserved_output_tokens, request_hash, created_at
FROM call_journal WHERE job_id = %(job_id)s AND key = ANY (%(keys)s::text[]);

-- The same for several jobs at once (a group of calls of many jobs, store/postgres/group.py),
-- each row naming its job (job_id); job_keys: the same ids as text (the budgets key). Job
-- rows another transaction holds (a heartbeat, an operator's cancel) are skipped, never
-- waited for: a group never waits on a job row while holding others, so it cannot deadlock
-- with writers that lock several job rows in another order; the caller runs a skipped job's
-- calls in a transaction of their own.
-- name: lock_calls_many
WITH j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile FROM jobs
    WHERE id = ANY (%(job_ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT b.* FROM budgets b
    WHERE b.scope = 'job' AND b.key = ANY (%(job_keys)s::text[])
      AND b.key IN (SELECT id::text FROM j)
    FOR UPDATE
)
SELECT j.id AS job_id, j.project AS job_project, j.state AS job_state,
       j.lease_token AS lease_token, j.budget AS budget, j.price_profile AS price_profile, b.*
FROM j, LATERAL (SELECT * FROM own WHERE own.key = j.id::text
                 UNION ALL
                 SELECT * FROM budgets p WHERE p.scope = 'project' AND p.key = j.project) b;

-- The journal rows of a group's (job, key) pairs, read after lock_calls_many.
-- name: journal_keys_many
SELECT c.job_id, c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM unnest(%(job_ids)s::bigint[], %(keys)s::text[]) AS w(job_id, key)
JOIN call_journal c ON c.job_id = w.job_id AND c.key = w.key;

-- The ledger row a settle just wrote.
-- name: ledger_last
SELECT * FROM cost_ledger WHERE job_id = %(job_id)s AND key = %(key)s ORDER BY id DESC LIMIT 1;

-- A child job draws on its ancestors' budgets too (a gather's fan-out cannot overspend the
-- parent): the *_tree forms add every ancestor's job accumulator, with that ancestor's limits
-- (owner_budget) and how many ancestors there are (ancestors: to tell a missing row). Rows come
-- in (scope, key) order, the one lock order of every path that takes several budget rows.
-- name: job_parent
SELECT parent_id FROM jobs WHERE id = %(job_id)s;

-- name: lock_calls_tree
WITH RECURSIVE j AS MATERIALIZED (
    SELECT id, project, state, lease_token, budget, price_profile, parent_id FROM jobs
    WHERE id = %(job_id)s FOR NO KEY UPDATE
), own AS MATERIALIZED (
    SELECT b.* FROM j JOIN budgets b ON b.scope = 'job' AND b.key = %(job_key)s
    FOR UPDATE OF b
), up(id, parent_id, budget, depth) AS (
    SELECT p.id, p.parent_id, p.budget, 1 FROM j JOIN jobs p ON p.id = j.parent_id
    UNION ALL
    SELECT p.id, p.parent_id, p.budget, up.depth + 1 FROM up JOIN jobs p ON p.id = up.parent_id
    WHERE up.depth < 64
), chain AS MATERIALIZED (SELECT id::text AS key, budget FROM up)
SELECT j.project AS job_project, j.state AS job_state, j.lease_token AS lease_token,
       j.budget AS budget, j.price_profile AS price_profile, chain.budget AS owner_budget,
       (SELECT count(*) FROM chain) AS ancestors, b.*
FROM j, LATERAL (SELECT * FROM own
                 UNION ALL
                 SELECT * FROM budgets p WHERE (p.scope = 'project' AND p.key = j.project)
                                            OR (p.scope = 'job' AND p.key IN (SELECT key FROM chain))) b
LEFT JOIN chain ON b.scope = 'job' AND b.key = chain.key
ORDER BY b.scope, b.key;

-- name: first_start
SELECT min(started_at) AS started_at FROM job_attempts WHERE job_id = %(job_id)s;
