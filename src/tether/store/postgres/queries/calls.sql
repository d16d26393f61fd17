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

-- A reservation in one statement, for the common case only (store/postgres/onetrip.py): a
-- job without parent or limits of its own, in a project without limits, whose accumulator
-- rows exist, reserving a key it has never journaled. The job row and its own accumulator
-- are locked (SKIP LOCKED: a row another transaction holds is never waited for), the
-- project's row is read unlocked, as lock_calls reads it; the journal row is inserted and
-- the reservation added to both accumulators (own row first, the lock order of every path)
-- only if every condition holds, else nothing is written and applied is 0: the caller then
-- writes the reservation the general way (store/calls.py), which tells why.
-- %(now)s NULL: the statement's own now().
-- name: reserve_call
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), j AS MATERIALIZED (
    SELECT project FROM jobs
    WHERE id = %(job_id)s AND lease_attempt = %(attempt)s AND state = 'running'
      AND parent_id IS NULL AND budget = '{}'::jsonb
    FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT key FROM budgets
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM j)
    FOR UPDATE SKIP LOCKED
), go AS MATERIALIZED (
    SELECT project FROM j
    WHERE EXISTS (SELECT FROM own)
      AND EXISTS (SELECT FROM budgets WHERE scope = 'project' AND key = (SELECT project FROM j)
                                        AND limits = '{}'::jsonb)
      AND NOT EXISTS (SELECT FROM call_journal WHERE job_id = %(job_id)s AND key = %(key)s)
), r AS MATERIALIZED (
    INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model,
                              request_hash, fingerprint, reserved_usd, reserved_input_tokens,
                              reserved_output_tokens, created_at, updated_at)
    SELECT %(job_id)s, %(key)s, %(stage)s, 'reserved', %(attempt)s, %(provider)s, %(model)s,
           %(request_hash)s, %(fingerprint)s, %(reserved_usd)s::numeric,
           %(reserved_input_tokens)s, %(reserved_output_tokens)s, clock.now, clock.now
    FROM go, clock
    ON CONFLICT (job_id, key) DO NOTHING
    RETURNING job_id
), own_add AS MATERIALIZED (
    UPDATE budgets
    SET reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
        reserved_calls = reserved_calls + 1,
        reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
        reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
        updated_at = (SELECT now FROM clock)
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM r)
    RETURNING 1
), project_add AS (
    UPDATE budgets
    SET reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
        reserved_calls = reserved_calls + 1,
        reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
        reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
        updated_at = (SELECT now FROM clock)
    WHERE scope = 'project' AND key = (SELECT project FROM go) AND EXISTS (SELECT FROM own_add)
    RETURNING 1
)
SELECT (SELECT count(*) FROM r) AS applied, (SELECT count(*) FROM project_add) AS rows,
       (SELECT project FROM j) AS project;

-- A settlement in one statement, for the same common case as reserve_call: attempt
-- %(attempt)s holds the job and reserved the key, and the usage is within the reservation
-- (an overrun appends an event: the general way). The journal row is finished, the
-- reservation replaced by the cost in both accumulators (own row, then the project's), the
-- confirmed ledger row inserted and the spend counted in the project's totals (after its
-- accumulator, the order every writer of those totals follows); or nothing, applied 0.
-- A settlement that already happened matches no reserved row: nothing is written twice.
-- name: settle_call
WITH clock AS (
    SELECT coalesce(%(now)s::timestamptz, now()) AS now
), j AS MATERIALIZED (
    SELECT project FROM jobs
    WHERE id = %(job_id)s AND lease_attempt = %(attempt)s AND parent_id IS NULL
      AND budget = '{}'::jsonb
    FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT key FROM budgets
    WHERE scope = 'job' AND key = %(job_key)s AND EXISTS (SELECT FROM j)
    FOR UPDATE SKIP LOCKED
), f AS MATERIALIZED (
    UPDATE call_journal
    SET status = %(status)s, result = %(result)s::jsonb, usage = %(usage)s::jsonb,
        cost_usd = %(cost_usd)s::numeric, error_code = %(error_code)s,
        error_summary = %(error_summary)s, updated_at = (SELECT now FROM clock)
    WHERE job_id = %(job_id)s AND key = %(key)s AND status = 'reserved'
      AND attempt = %(attempt)s AND reserved_input_tokens >= %(input_tokens)s
      AND reserved_output_tokens >= %(output_tokens)s AND EXISTS (SELECT FROM own)
      AND EXISTS (SELECT FROM budgets WHERE scope = 'project' AND key = (SELECT project FROM j)
                                        AND limits = '{}'::jsonb)
    RETURNING stage, attempt, provider, model, reserved_usd, reserved_input_tokens,
              reserved_output_tokens
), own_add AS MATERIALIZED (
    UPDATE budgets b
    SET reserved_usd = b.reserved_usd - f.reserved_usd, reserved_calls = b.reserved_calls - 1,
        reserved_input_tokens = b.reserved_input_tokens - f.reserved_input_tokens,
        reserved_output_tokens = b.reserved_output_tokens - f.reserved_output_tokens,
        spent_usd = b.spent_usd + %(cost_usd)s::numeric, calls = b.calls + 1,
        input_tokens = b.input_tokens + %(input_tokens)s,
        output_tokens = b.output_tokens + %(output_tokens)s, updated_at = (SELECT now FROM clock)
    FROM f
    WHERE b.scope = 'job' AND b.key = %(job_key)s
    RETURNING 1
), project_add AS MATERIALIZED (
    UPDATE budgets b
    SET reserved_usd = b.reserved_usd - f.reserved_usd, reserved_calls = b.reserved_calls - 1,
        reserved_input_tokens = b.reserved_input_tokens - f.reserved_input_tokens,
        reserved_output_tokens = b.reserved_output_tokens - f.reserved_output_tokens,
        spent_usd = b.spent_usd + %(cost_usd)s::numeric, calls = b.calls + 1,
        input_tokens = b.input_tokens + %(input_tokens)s,
        output_tokens = b.output_tokens + %(output_tokens)s, updated_at = (SELECT now FROM clock)
    FROM f
    WHERE b.scope = 'project' AND b.key = (SELECT project FROM j) AND EXISTS (SELECT FROM own_add)
    RETURNING 1
), l AS (
    INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model,
                             input_tokens, output_tokens, cached_input_tokens, reasoning_tokens,
                             cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                             output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                             cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                             confirmed, overrun, created_at)
    SELECT %(job_id)s, (SELECT project FROM j), f.stage, %(key)s, f.attempt, f.provider,
           f.model, %(input_tokens)s, %(output_tokens)s, %(cached_input_tokens)s,
           %(reasoning_tokens)s, %(cache_write_tokens)s, %(cache_write_1h_tokens)s,
           %(input_per_mtok)s::numeric, %(output_per_mtok)s::numeric,
           %(cached_input_per_mtok)s::numeric, %(cache_write_per_mtok)s::numeric,
           %(cache_write_1h_per_mtok)s::numeric, %(price_profile)s, %(cost_usd)s::numeric,
           f.reserved_usd, true, false, (SELECT now FROM clock)
    FROM f
    RETURNING 1
), t AS (
    INSERT INTO spend_totals AS t (project, provider, model, calls, input_tokens,
                                   output_tokens, cost_usd, unconfirmed_calls)
    SELECT (SELECT project FROM j), f.provider, f.model, 1, %(input_tokens)s,
           %(output_tokens)s, %(cost_usd)s::numeric, 0
    FROM f WHERE EXISTS (SELECT FROM project_add)
    ON CONFLICT (project, provider, model) DO UPDATE
    SET calls = t.calls + 1, input_tokens = t.input_tokens + excluded.input_tokens,
        output_tokens = t.output_tokens + excluded.output_tokens,
        cost_usd = t.cost_usd + excluded.cost_usd
    RETURNING 1
)
SELECT (SELECT count(*) FROM f) AS applied, (SELECT count(*) FROM t) AS rows,
       (SELECT project FROM j) AS project;

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
    SELECT id, project, state, lease_attempt, budget, price_profile FROM jobs
    WHERE id = %(job_id)s FOR NO KEY UPDATE
), own AS MATERIALIZED (
    SELECT b.* FROM j JOIN budgets b ON b.scope = 'job' AND b.key = %(job_key)s
    FOR UPDATE OF b
)
SELECT j.project AS job_project, j.state AS job_state, j.lease_attempt AS lease_attempt,
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
    SELECT id, project, state, lease_attempt, budget, price_profile FROM jobs
    WHERE id = ANY (%(job_ids)s::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED
), own AS MATERIALIZED (
    SELECT b.* FROM budgets b
    WHERE b.scope = 'job' AND b.key = ANY (%(job_keys)s::text[])
      AND b.key IN (SELECT id::text FROM j)
    FOR UPDATE
)
SELECT j.id AS job_id, j.project AS job_project, j.state AS job_state,
       j.lease_attempt AS lease_attempt, j.budget AS budget, j.price_profile AS price_profile, b.*
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
    SELECT id, project, state, lease_attempt, budget, price_profile, parent_id FROM jobs
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
SELECT j.project AS job_project, j.state AS job_state, j.lease_attempt AS lease_attempt,
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
