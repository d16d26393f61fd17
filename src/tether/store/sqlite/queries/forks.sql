-- Forks and retries from a stage (store/forks.py).

-- :stages / :kept are JSON arrays of stage names. A carried row names the job that paid for
-- it (the source, or the source's own source when the source was itself a fork). A call made
-- before the job's first stage (stage null) is carried by every fork.

-- name: fork_checkpoints
INSERT INTO checkpoints (job_id, stage, position, blob, size, attempt, created_at, reused_from,
                         version)
SELECT :job_id, stage, position, blob, size, 0, :now, coalesce(reused_from, job_id),
       version
FROM checkpoints
WHERE job_id = :source_id AND stage IN (SELECT value FROM json_each(:stages));

-- name: fork_journal
INSERT INTO call_journal (job_id, key, stage, status, attempt, provider, model, request_hash,
                          reserved_usd, reserved_input_tokens, reserved_output_tokens, result,
                          usage, cost_usd, created_at, updated_at, reused_from, fingerprint)
SELECT :job_id, key, stage, 'done', 0, provider, model, request_hash, '0', 0, 0, result, usage,
       '0', :now, :now, coalesce(reused_from, job_id), fingerprint
FROM call_journal
WHERE job_id = :source_id AND status = 'done'
  AND (stage IS NULL OR stage IN (SELECT value FROM json_each(:stages)));

-- The confirmed ledger rows of the carried calls, at cost 0, with the payer's cost beside.
-- name: fork_ledger
INSERT INTO cost_ledger (job_id, project, stage, key, attempt, provider, model, input_tokens,
                         output_tokens, cached_input_tokens, reasoning_tokens,
                         cache_write_tokens, cache_write_1h_tokens, input_per_mtok,
                         output_per_mtok, cached_input_per_mtok, cache_write_per_mtok,
                         cache_write_1h_per_mtok, price_profile, cost_usd, reserved_usd,
                         confirmed, overrun, created_at, reused_from, reused_cost_usd)
SELECT :job_id, l.project, l.stage, l.key, 0, l.provider, l.model, l.input_tokens,
       l.output_tokens, l.cached_input_tokens, l.reasoning_tokens, l.cache_write_tokens,
       l.cache_write_1h_tokens, l.input_per_mtok, l.output_per_mtok, l.cached_input_per_mtok,
       l.cache_write_per_mtok, l.cache_write_1h_per_mtok, l.price_profile, '0', '0', 1, 0,
       :now, coalesce(l.reused_from, l.job_id), coalesce(l.reused_cost_usd, l.cost_usd)
FROM cost_ledger l
JOIN call_journal c ON c.job_id = l.job_id AND c.key = l.key AND c.status = 'done'
WHERE l.job_id = :source_id AND l.confirmed = 1
  AND (l.stage IS NULL OR l.stage IN (SELECT value FROM json_each(:stages)))
ORDER BY l.id;

-- name: drop_checkpoints
DELETE FROM checkpoints
WHERE job_id = :job_id AND stage NOT IN (SELECT value FROM json_each(:kept));

-- The answers a retry from a stage drops: each gets a call_repaid event.
-- name: dropped_answers
SELECT * FROM call_journal
WHERE job_id = :job_id AND status = 'done' AND stage IS NOT NULL
  AND stage NOT IN (SELECT value FROM json_each(:kept))
ORDER BY created_at, key;

-- Finished calls of the dropped stages (a call still reserved stays: its money is open).
-- name: drop_journal
DELETE FROM call_journal
WHERE job_id = :job_id AND status <> 'reserved' AND stage IS NOT NULL
  AND stage NOT IN (SELECT value FROM json_each(:kept));
