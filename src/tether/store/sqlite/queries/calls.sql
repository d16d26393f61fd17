-- Reserving and settling calls: the journal and accumulators a batch locks (store/calls.py, store/book.py).

-- name: journal_reserve
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          fingerprint, reserved_usd, reserved_input_tokens,
                          reserved_output_tokens, created_at, updated_at)
VALUES (:job_id, :key, :stage, 'reserved', :attempt, :provider, :model, :request_hash,
        :fingerprint, :reserved_usd, :reserved_input_tokens, :reserved_output_tokens, :now, :now)
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
SET status = :status, result = :result, usage = :usage, cost_usd = :cost_usd,
    error_code = :error_code, error_summary = :error_summary, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'reserved' AND attempt = :attempt;

-- What a batch of one job's calls reads first: the job's lease and limits, and the job's and the
-- project's accumulators (one row each). The write lock is already held (BEGIN IMMEDIATE).
-- Fewer than two rows: the job or a budget row is missing (ensure_call_budgets creates them).
-- name: lock_calls
SELECT j.project AS job_project, j.state AS job_state, j.lease_attempt AS lease_attempt,
       j.budget AS budget, j.price_profile AS price_profile, b.*
FROM jobs j JOIN budgets b ON (b.scope = 'job' AND b.key = :job_key)
                           OR (b.scope = 'project' AND b.key = j.project)
WHERE j.id = :job_id;

-- The journal rows of a batch's keys (:keys: a JSON array): what a reserve or a settle needs.
-- name: journal_keys
SELECT c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM json_each(:keys) k CROSS JOIN call_journal c
WHERE c.job_id = :job_id AND c.key = k.value;

-- lock_calls and journal_keys for several jobs at once, each row naming its job: PostgreSQL's
-- group of many jobs' calls (store/postgres/group.py). SQLite's group commit already shares one
-- transaction across jobs through the one-job statements; these keep the backends at parity
-- (:job_ids, :keys: JSON arrays; the i-th key belongs to the i-th job id).
-- name: lock_calls_many
SELECT j.id AS job_id, j.project AS job_project, j.state AS job_state,
       j.lease_attempt AS lease_attempt, j.budget AS budget, j.price_profile AS price_profile, b.*
FROM json_each(:job_ids) w JOIN jobs j ON j.id = w.value
JOIN budgets b ON (b.scope = 'job' AND b.key = CAST(j.id AS TEXT))
               OR (b.scope = 'project' AND b.key = j.project);

-- name: journal_keys_many
SELECT c.job_id, c.key, c.status, c.attempt, c.stage, c.provider, c.model, c.reserved_usd,
       c.reserved_input_tokens, c.reserved_output_tokens, c.request_hash, c.created_at
FROM json_each(:job_ids) w JOIN json_each(:keys) k ON k.key = w.key
JOIN call_journal c ON c.job_id = w.value AND c.key = k.value;

-- The ledger row a settle just wrote.
-- name: ledger_last
SELECT * FROM cost_ledger WHERE job_id = :job_id AND key = :key ORDER BY id DESC LIMIT 1;

-- A child job draws on its ancestors' budgets too (a gather's fan-out cannot overspend the
-- parent): the *_tree forms add every ancestor's job accumulator, with that ancestor's limits
-- (owner_budget) and how many ancestors there are (ancestors: to tell a missing row). Rows come
-- in (scope, key) order, the one lock order of every path that takes several budget rows.
-- name: job_parent
SELECT parent_id FROM jobs WHERE id = :job_id;

-- name: lock_calls_tree
WITH RECURSIVE up(id, parent_id, budget, depth) AS (
    SELECT p.id, p.parent_id, p.budget, 1 FROM jobs c JOIN jobs p ON p.id = c.parent_id
    WHERE c.id = :job_id
    UNION ALL
    SELECT p.id, p.parent_id, p.budget, up.depth + 1 FROM up JOIN jobs p ON p.id = up.parent_id
    WHERE up.depth < 64
)
SELECT j.project AS job_project, j.state AS job_state, j.lease_attempt AS lease_attempt,
       j.budget AS budget, j.price_profile AS price_profile, up.budget AS owner_budget,
       (SELECT count(*) FROM up) AS ancestors, b.*
FROM jobs j JOIN budgets b ON (b.scope = 'job' AND b.key = :job_key)
                           OR (b.scope = 'project' AND b.key = j.project)
                           OR (b.scope = 'job' AND b.key IN (SELECT CAST(id AS TEXT) FROM up))
LEFT JOIN up ON b.scope = 'job' AND b.key = CAST(up.id AS TEXT)
WHERE j.id = :job_id
ORDER BY b.scope, b.key;

-- name: first_start
SELECT min(started_at) AS started_at FROM job_attempts WHERE job_id = :job_id;
