-- Provider batches (store/batches.py).

-- name: batch_get
SELECT * FROM provider_batches WHERE job_id = :job_id AND key = :key;

-- name: batches_of
SELECT * FROM provider_batches WHERE job_id = :job_id ORDER BY created_at, key;

-- name: batch_insert
INSERT INTO provider_batches (job_id, key, stage, attempt, provider, model, tether_key, status, items, price, standard_price, price_profile, reserved_usd, reserved_input_tokens, reserved_output_tokens, items_total, created_at, updated_at)
VALUES (:job_id, :key, :stage, :attempt, :provider, :model, :tether_key, 'submitting', :items, :price, :standard_price, :price_profile, :reserved_usd, :reserved_input_tokens, :reserved_output_tokens, :items_total, :now, :now);

-- name: batch_submitted
UPDATE provider_batches SET status = 'submitted', remote_id = :remote_id,
    next_poll_at = :wake_at, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_claim_due
-- Due batches, their next poll moved out first so no other sweep polls them at once.
UPDATE provider_batches SET next_poll_at = :wake_at
WHERE (job_id, key) IN (SELECT job_id, key FROM provider_batches
                        WHERE status = 'submitted' AND next_poll_at <= :now
                        ORDER BY next_poll_at LIMIT :limit )
RETURNING *;

-- name: batch_polled
UPDATE provider_batches SET remote_status = :remote_status, items_done = :items_done,
    items_failed = :items_failed, polls = polls + 1, next_poll_at = :wake_at,
    updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitted';

-- name: batch_settle
UPDATE provider_batches SET status = :status, remote_status = :remote_status,
    settled_usd = :settled_usd, standard_usd = :standard_usd,
    items_done = :items_done, items_failed = :items_failed, error = :error,
    next_poll_at = NULL, settled_at = :now, updated_at = :now
WHERE job_id = :job_id AND key = :key AND status IN ('submitting', 'submitted');

-- name: batch_uploading
UPDATE provider_batches SET remote_status = 'uploading', updated_at = :now
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_unsent
-- A job's batches reserved and never sent (unmarked: store/batches.py ``batch_uploading``).
SELECT * FROM provider_batches
WHERE job_id = :job_id AND status = 'submitting' AND remote_status IS NULL;

-- name: batches_orphaned
-- Batches reserved, not known to be at the provider, whose jobs ended: no replay will settle
-- them (the sweep does, worker/batch_poller.py).
SELECT b.* FROM provider_batches b JOIN jobs j ON j.id = b.job_id
WHERE b.status = 'submitting' AND j.state IN ('succeeded', 'failed', 'cancelled')
ORDER BY b.created_at LIMIT :limit;

-- name: batch_answers_insert
-- A settled batch's answers, in its order (:answers: a JSON array of objects).
INSERT INTO provider_batch_answers (job_id, key, pos, item, ok, value, error_code,
                                    error_summary, retryable)
SELECT :job_id, :key, a.value ->> '$.pos', a.value ->> '$.item', a.value ->> '$.ok',
       a.value -> '$.value', a.value ->> '$.error_code', a.value ->> '$.error_summary',
       a.value ->> '$.retryable'
FROM json_each(:answers) a;

-- name: batch_answers
SELECT item, ok, value, error_code, error_summary, retryable FROM provider_batch_answers
WHERE job_id = :job_id AND key = :key ORDER BY pos;

-- name: batch_delete_unsent
DELETE FROM provider_batches
WHERE job_id = :job_id AND key = :key AND status = 'submitting';

-- name: batches_open
-- Batches not settled yet, for /metrics: few at a time (each holds many items).
SELECT provider, reserved_usd FROM provider_batches
WHERE status IN ('submitting', 'submitted');
