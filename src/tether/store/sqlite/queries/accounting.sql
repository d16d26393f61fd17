-- Budgets, their accumulators and ledger rows (store/accounting.py).

-- name: project_budget
SELECT * FROM budgets WHERE scope = 'project' AND key = :key;

-- name: budget_row
SELECT * FROM budgets WHERE scope = :scope AND key = :key;

-- name: ensure_budget
INSERT INTO budgets (scope, key, updated_at) VALUES (:scope, :key, :now)
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_budget
SELECT * FROM budgets WHERE scope = :scope AND key = :key;

-- name: set_budget_limits
INSERT INTO budgets (scope, key, limits, updated_at) VALUES (:scope, :key, :limits, :now)
ON CONFLICT (scope, key) DO UPDATE SET limits = excluded.limits, updated_at = excluded.updated_at;

-- name: journal_open
SELECT * FROM call_journal WHERE job_id = :job_id AND status = 'reserved';

-- name: insert_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at)
VALUES (:job_id, :project, :stage, :key, :attempt, :provider, :model, :input_tokens,
        :output_tokens, :cached_input_tokens, :reasoning_tokens, :cache_write_tokens,
        :cache_write_1h_tokens, :input_per_mtok, :output_per_mtok, :cached_input_per_mtok,
        :cache_write_per_mtok, :cache_write_1h_per_mtok, :price_profile, :cost_usd,
        :reserved_usd, :confirmed, :overrun, :now);

-- name: ensure_call_budgets
INSERT INTO budgets (scope, key, updated_at)
SELECT scope, key, :now FROM (
    SELECT 'job' AS scope, CAST(id AS TEXT) AS key FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT 'project', project FROM jobs WHERE id = :job_id) WHERE true
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets
SELECT * FROM budgets WHERE scope = 'job' AND key = :job_key
UNION ALL
SELECT * FROM budgets WHERE scope = 'project' AND key = :project;

-- name: ensure_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
INSERT INTO budgets (scope, key, updated_at)
SELECT scope, key, :now FROM (
    SELECT 'job' AS scope, CAST(id AS TEXT) AS key FROM chain
    UNION ALL
    SELECT 'project', project FROM jobs WHERE id = :job_id) WHERE true
ON CONFLICT (scope, key) DO NOTHING;

-- name: lock_call_budgets_tree
WITH RECURSIVE chain(id, parent_id, depth) AS (
    SELECT id, parent_id, 0 FROM jobs WHERE id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, chain.depth + 1 FROM chain JOIN jobs p ON p.id = chain.parent_id
    WHERE chain.depth < 64
)
SELECT b.*, (SELECT count(*) FROM chain) - 1 AS ancestors FROM budgets b
WHERE (b.scope = 'job' AND b.key IN (SELECT CAST(id AS TEXT) FROM chain))
   OR (b.scope = 'project' AND b.key = :project)
ORDER BY b.scope, b.key;

-- One accumulator row (a job's or a project's, locked earlier in the same transaction); the
-- store writes both rows of a call as two of these in one batch.
-- name: update_budget_row
UPDATE budgets
SET spent_usd = :spent_usd, reserved_usd = :reserved_usd, calls = :calls,
    reserved_calls = :reserved_calls, input_tokens = :input_tokens,
    output_tokens = :output_tokens, reserved_input_tokens = :reserved_input_tokens,
    reserved_output_tokens = :reserved_output_tokens, examples = :examples, updated_at = :now
WHERE scope = :scope AND key = :key;

-- A call's change as a difference (PostgreSQL's path for concurrent writers; here one writer
-- at a time writes values, update_budget_row). Money adds as exact decimals.
-- name: add_budget_row
UPDATE budgets
SET spent_usd = (SELECT tether_decimal_sum(v) FROM (SELECT spent_usd AS v
                                                    UNION ALL SELECT :spent_usd)),
    reserved_usd = (SELECT tether_decimal_sum(v) FROM (SELECT reserved_usd AS v
                                                       UNION ALL SELECT :reserved_usd)),
    calls = calls + :calls, reserved_calls = reserved_calls + :reserved_calls,
    input_tokens = input_tokens + :input_tokens, output_tokens = output_tokens + :output_tokens,
    reserved_input_tokens = reserved_input_tokens + :reserved_input_tokens,
    reserved_output_tokens = reserved_output_tokens + :reserved_output_tokens,
    examples = examples + :examples, updated_at = :now
WHERE scope = :scope AND key = :key;

-- The accumulators a call checks limits against, read again (one writer: nothing to lock).
-- name: lock_budget_keys
SELECT b.* FROM json_each(:scopes) s JOIN json_each(:keys) k ON k.key = s.key
JOIN budgets b ON b.scope = s.value AND b.key = k.value
ORDER BY b.scope, b.key;

-- What settled in one period of a project (store/accounting.py, ``_recount_period``): calls
-- made, so not the rows a fork carried.
-- name: period_ledger
SELECT count(*) AS calls, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       tether_decimal_sum(cost_usd) AS spent_usd
FROM cost_ledger
WHERE project = :project AND created_at >= :since AND created_at < :until
  AND reused_from IS NULL;

-- The limits of a child's ancestors, whose thresholds an orphan's settlement may cross.
-- name: ancestor_limits
SELECT CAST(id AS TEXT) AS key, budget FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids));
