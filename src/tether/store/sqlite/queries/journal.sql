-- Reads of the call journal and the cost ledger; the call cache (store/journal.py).

-- name: journal_get
SELECT * FROM call_journal WHERE job_id = :job_id AND key = :key;

-- name: journal_list
SELECT * FROM call_journal WHERE job_id = :job_id ORDER BY created_at, key;

-- name: journal_cached
SELECT j.result AS result, j.usage AS usage FROM call_journal j JOIN jobs o ON o.id = j.job_id
WHERE j.request_hash = :request_hash AND j.request_hash IS NOT NULL AND j.status = 'done'
  AND o.project = :project
LIMIT 1;

-- name: list_ledger
SELECT * FROM cost_ledger WHERE job_id = :job_id ORDER BY id;

-- From the running totals (spend_totals: a row per project, provider and model), never the
-- ledger itself.
-- name: spend_totals
SELECT provider, model, sum(calls) AS calls, sum(input_tokens) AS input_tokens,
       sum(output_tokens) AS output_tokens, group_concat(cost_usd, ' ') AS costs,
       sum(unconfirmed_calls) AS unconfirmed
FROM spend_totals
WHERE :projects IS NULL OR project IN (SELECT value FROM json_each(:projects))
GROUP BY provider, model ORDER BY provider, model;

-- name: spent_projects
SELECT DISTINCT project FROM spend_totals ORDER BY project;

-- name: journal_record_cached
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, fingerprint)
VALUES (:job_id, :key, :stage, 'done', :attempt, :provider, :model, :request_hash, '0', 0, 0,
        :result, :usage, '0', :now, :now, :fingerprint)
ON CONFLICT (job_id, key) DO NOTHING;
