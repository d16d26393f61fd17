-- Webhooks, their deliveries and attempts (store/webhooks.py).

-- name: webhook_insert
INSERT INTO webhook_subscriptions (id, project, url, kinds, secret, description, created_at)
VALUES (:id, :project, :url, :kinds, :secret, :description, :now);

-- name: webhook_get
SELECT * FROM webhook_subscriptions WHERE id = :id;

-- name: webhook_list
-- An admin-wide subscription (project NULL) is listed only when no :projects scope is given.
SELECT * FROM webhook_subscriptions
WHERE :projects IS NULL OR project IN (SELECT value FROM json_each(:projects))
ORDER BY created_at, id;

-- name: webhook_delete
DELETE FROM webhook_subscriptions WHERE id = :id;

-- name: webhook_cursor_get
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_lock
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_set
UPDATE webhook_cursor SET position = :position WHERE name = 'events';

-- name: webhook_event_jobs
SELECT id, type, project, queue, state, error_code, error_summary FROM jobs
WHERE id IN (SELECT value FROM json_each(:ids));

-- name: schedule_misses_pending
SELECT * FROM schedule_misses WHERE dispatched_at IS NULL ORDER BY id LIMIT :limit;

-- name: schedule_misses_dispatched
UPDATE schedule_misses SET dispatched_at = :now WHERE id IN (SELECT value FROM json_each(:ids));

-- name: webhook_delivery_insert
INSERT INTO webhook_deliveries (id, subscription_id, project, owner, kind, url, job_id, sends,
                                body, created_at)
VALUES (:id, :subscription_id, :project, :owner, :kind, :url, :job_id, 1, :body, :now)
ON CONFLICT (id) DO NOTHING;

-- name: webhook_deliveries
-- Newest first; :state filters by the current delivery job's state.
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE (:subscription_id IS NULL OR d.subscription_id = :subscription_id)
  AND (:projects IS NULL OR d.owner IN (SELECT value FROM json_each(:projects)))
  AND (:state IS NULL OR j.state = :state)
ORDER BY d.created_at DESC, d.id LIMIT :limit;

-- name: webhook_delivery_get
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = :id;

-- name: webhook_delivery_lock
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = :id;

-- name: webhook_delivery_resent
UPDATE webhook_deliveries SET job_id = :job_id, sends = :sends WHERE id = :id;

-- name: webhook_attempts
SELECT * FROM webhook_attempts WHERE delivery_id = :id ORDER BY n;

-- name: webhook_attempt_insert
INSERT INTO webhook_attempts (delivery_id, n, job_id, at, status, error, duration_ms)
SELECT :id, coalesce(max(n), 0) + 1, :job_id, :now, :status, :error, :duration_ms
FROM webhook_attempts WHERE delivery_id = :id;

-- name: schedule_misses_any
SELECT 1 AS one FROM schedule_misses WHERE dispatched_at IS NULL LIMIT 1;
