-- Callback URLs (store/callbacks.py).

-- name: callback_insert
INSERT INTO wait_callbacks (id, job_id, wait_key, signal, token_hash, issued_by, created_at,
                            expires_at)
VALUES (:id, :job_id, :key, :signal, :token_hash, :issued_by, :now, :expires_at);

-- name: callback_get
SELECT * FROM wait_callbacks WHERE id = :id;

-- name: callbacks_of
SELECT * FROM wait_callbacks WHERE job_id = :job_id ORDER BY created_at, id;

-- name: callbacks_of_wait
SELECT * FROM wait_callbacks WHERE job_id = :job_id AND wait_key = :key
ORDER BY created_at, id;

-- name: callback_handed_exists
SELECT 1 AS handed FROM wait_callbacks
WHERE job_id = :job_id AND wait_key = :key AND issued_by = 'job' AND handed_at IS NOT NULL
LIMIT 1;

-- name: callback_handed
UPDATE wait_callbacks SET handed_at = :now WHERE id = :id AND job_id = :job_id;

-- name: callback_answered
SELECT 1 AS answered FROM wait_callbacks
WHERE job_id = :job_id AND wait_key = :key AND used_at IS NOT NULL LIMIT 1;

-- name: callback_use
UPDATE wait_callbacks SET used_at = :now WHERE id = :id AND used_at IS NULL;
