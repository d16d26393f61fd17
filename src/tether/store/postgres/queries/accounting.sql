-- Budgets, their accumulators and ledger rows (store/accounting.py).

-- name: project_budget
SELECT * FROM budgets WHERE scope = 'project' AND key = %(key)s;

-- name: budget_row
SELECT * FROM budgets WHERE scope = %(scope)s AND key = %(key)s;

-- name: ensure_budget
INSERT INTO budgets (scope, key, updated_at) VALUES (%(scope)s, %(key)s, %(now)s)
ON CONFLICT (scope, key) DO NOTHING;

-- Reserve and settle read-modify-write the accumulators: the row stays locked until commit.
-- name: lock_budget
SELECT * FROM budgets WHERE scope = %(scope)s AND key = %(key)s FOR UPDATE;

-- name: set_budget_limits
INSERT INTO budgets (scope, key, limits, updated_at)
VALUES (%(scope)s, %(key)s, %(limits)s::jsonb, %(now)s)
ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits, updated_at = excluded.updated_at;

-- name: journal_open
SELECT * FROM call_journal WHERE job_id = %(job_id)s AND status = 'reserved';

-- name: insert_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at)
VALUES (%(job_id)s, %(project)s, %(stage)s, %(key)s, %(attempt)s, %(provider)s, %(model)s,
        %(input_tokens)s, %(output_tokens)s, %(cached_input_tokens)s, %(reasoning_tokens)s,
        %(cache_write_tokens)s, %(cache_write_1h_tokens)s,
        %(input_per_mtok)s::numeric, %(output_per_mtok)s::numeric,
        %(cached_input_per_mtok)s::numeric, %(cache_write_per_mtok)s::numeric,
        %(cache_write_1h_per_mtok)s::numeric, %(price_profile)s, %(cost_usd)s::numeric,
        %(reserved_usd)s::numeric, %(confirmed)s, %(overrun)s, %(now)s);

-- The shared accumulators (an ancestor's, the project's) whose limits a call is checked
-- against, locked in (scope, key) order after ``lock_calls``: only those are, so calls of
-- projects without limits never queue on their project's row.
-- name: lock_budget_keys
SELECT * FROM budgets
WHERE (scope, key) IN (SELECT * FROM unnest(%(scopes)s::text[], %(keys)s::text[]))
ORDER BY scope, key
FOR UPDATE;

-- name: ensure_call_budgets
INSERT INTO budgets (scope, key, updated_at)
SELECT 'job', id::text, %(now)s FROM jobs WHERE id = %(job_id)s
UNION ALL
SELECT 'project', project, %(now)s FROM jobs WHERE id = %(job_id)s
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets
SELECT * FROM budgets
WHERE (scope = 'job' AND key = %(job_key)s) OR (scope = 'project' AND key = %(project)s)
ORDER BY scope
FOR UPDATE;

-- name: ensure_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = %(job_id)s
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
INSERT INTO budgets (scope, key, updated_at)
SELECT 'job', id::text, %(now)s FROM chain
UNION ALL
SELECT 'project', project, %(now)s FROM jobs WHERE id = %(job_id)s
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = %(job_id)s
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
SELECT b.*, (SELECT count(*) FROM chain) - 1 AS ancestors FROM budgets b
WHERE (b.scope = 'job' AND b.key IN (SELECT id::text FROM chain))
   OR (b.scope = 'project' AND b.key = %(project)s)
ORDER BY b.scope, b.key
FOR UPDATE;

-- One accumulator row (a job's or a project's, locked earlier in the same transaction); the
-- store writes both rows of a call as two of these in one batch.
-- name: update_budget_row
UPDATE budgets
SET spent_usd = %(spent_usd)s::numeric, reserved_usd = %(reserved_usd)s::numeric,
    calls = %(calls)s, reserved_calls = %(reserved_calls)s, input_tokens = %(input_tokens)s,
    output_tokens = %(output_tokens)s, reserved_input_tokens = %(reserved_input_tokens)s,
    reserved_output_tokens = %(reserved_output_tokens)s, examples = %(examples)s,
    updated_at = %(now)s
WHERE scope = %(scope)s AND key = %(key)s;

-- A call's change to an accumulator, as a difference: concurrent calls of other jobs add to
-- the same project or parent row without reading it first.
-- name: add_budget_row
UPDATE budgets
SET spent_usd = spent_usd + %(spent_usd)s::numeric,
    reserved_usd = reserved_usd + %(reserved_usd)s::numeric,
    calls = calls + %(calls)s, reserved_calls = reserved_calls + %(reserved_calls)s,
    input_tokens = input_tokens + %(input_tokens)s,
    output_tokens = output_tokens + %(output_tokens)s,
    reserved_input_tokens = reserved_input_tokens + %(reserved_input_tokens)s,
    reserved_output_tokens = reserved_output_tokens + %(reserved_output_tokens)s,
    examples = examples + %(examples)s, updated_at = %(now)s
WHERE scope = %(scope)s AND key = %(key)s;

-- What settled in one period of a project (store/accounting.py, ``_recount_period``): calls
-- made, so not the rows a fork carried.
-- name: period_ledger
SELECT count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       coalesce(sum(cost_usd), 0) AS spent_usd
FROM cost_ledger
WHERE project = %(project)s AND created_at >= %(since)s AND created_at < %(until)s
  AND reused_from IS NULL;

-- The limits of a child's ancestors, whose thresholds an orphan's settlement may cross.
-- name: ancestor_limits
SELECT id::text AS key, budget FROM jobs WHERE id = ANY(%(ids)s);
