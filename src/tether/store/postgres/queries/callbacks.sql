-- Callback URLs (store/callbacks.py).

-- name: callback_insert
INSERT INTO wait_callbacks (id, job_id, wait_key, signal, token_hash, issued_by, created_at,
                            expires_at)
VALUES (%(id)s, %(job_id)s, %(key)s, %(signal)s, %(token_hash)s, %(issued_by)s, %(now)s,
        %(expires_at)s);

-- name: callback_get
SELECT * FROM wait_callbacks WHERE id = %(id)s;

-- name: callbacks_of
SELECT * FROM wait_callbacks WHERE job_id = %(job_id)s ORDER BY created_at, id;

-- name: callbacks_of_wait
SELECT * FROM wait_callbacks WHERE job_id = %(job_id)s AND wait_key = %(key)s
ORDER BY created_at, id;

-- name: callback_handed_exists
SELECT 1 AS handed FROM wait_callbacks
WHERE job_id = %(job_id)s AND wait_key = %(key)s AND issued_by = 'job' AND handed_at IS NOT NULL
LIMIT 1;

-- name: callback_handed
UPDATE wait_callbacks SET handed_at = %(now)s WHERE id = %(id)s AND job_id = %(job_id)s;

-- name: callback_answered
SELECT 1 AS answered FROM wait_callbacks
WHERE job_id = %(job_id)s AND wait_key = %(key)s AND used_at IS NOT NULL LIMIT 1;

-- name: callback_use
UPDATE wait_callbacks SET used_at = %(now)s WHERE id = %(id)s AND used_at IS NULL;
