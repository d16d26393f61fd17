-- Webhooks, their deliveries and attempts (store/webhooks.py).

-- name: webhook_insert
INSERT INTO webhook_subscriptions (id, project, url, kinds, secret, description, created_at)
VALUES (%(id)s, %(project)s, %(url)s, %(kinds)s, %(secret)s, %(description)s, %(now)s);

-- name: webhook_get
SELECT * FROM webhook_subscriptions WHERE id = %(id)s;

-- name: webhook_list
-- An admin-wide subscription (project NULL) is listed only when no %(projects)s scope is given.
SELECT * FROM webhook_subscriptions
WHERE %(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[])
ORDER BY created_at, id;

-- name: webhook_delete
DELETE FROM webhook_subscriptions WHERE id = %(id)s;

-- name: webhook_cursor_get
SELECT position FROM webhook_cursor WHERE name = 'events';

-- name: webhook_cursor_lock
-- Outbox steps of many workers meet here: the second waits, then finds the cursor moved.
SELECT position FROM webhook_cursor WHERE name = 'events' FOR UPDATE;

-- name: webhook_cursor_set
UPDATE webhook_cursor SET position = %(position)s WHERE name = 'events';

-- name: webhook_event_jobs
SELECT id, type, project, queue, state, error_code, error_summary FROM jobs
WHERE id = ANY (%(ids)s::bigint[]);

-- name: schedule_misses_pending
-- Under the cursor's lock (webhook_cursor_lock): one step at a time reads and dispatches them.
SELECT * FROM schedule_misses WHERE dispatched_at IS NULL ORDER BY id LIMIT %(limit)s;

-- name: schedule_misses_dispatched
UPDATE schedule_misses SET dispatched_at = %(now)s WHERE id = ANY (%(ids)s::bigint[]);

-- name: webhook_delivery_insert
INSERT INTO webhook_deliveries (id, subscription_id, project, owner, kind, url, job_id, sends,
                                body, created_at)
VALUES (%(id)s, %(subscription_id)s, %(project)s, %(owner)s, %(kind)s, %(url)s, %(job_id)s, 1,
        %(body)s, %(now)s)
ON CONFLICT (id) DO NOTHING;

-- name: webhook_deliveries
-- Newest first; %(state)s filters by the current delivery job's state.
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE (%(subscription_id)s::text IS NULL OR d.subscription_id = %(subscription_id)s)
  AND (%(projects)s::text[] IS NULL OR d.owner = ANY (%(projects)s::text[]))
  AND (%(state)s::text IS NULL OR j.state = %(state)s)
ORDER BY d.created_at DESC, d.id LIMIT %(limit)s;

-- name: webhook_delivery_get
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = %(id)s;

-- name: webhook_delivery_lock
SELECT d.*, j.state FROM webhook_deliveries d LEFT JOIN jobs j ON j.id = d.job_id
WHERE d.id = %(id)s FOR UPDATE OF d;

-- name: webhook_delivery_resent
UPDATE webhook_deliveries SET job_id = %(job_id)s, sends = %(sends)s WHERE id = %(id)s;

-- name: webhook_attempts
SELECT * FROM webhook_attempts WHERE delivery_id = %(id)s ORDER BY n;

-- name: webhook_attempt_insert
INSERT INTO webhook_attempts (delivery_id, n, job_id, at, status, error, duration_ms)
SELECT %(id)s, coalesce(max(n), 0) + 1, %(job_id)s, %(now)s, %(status)s, %(error)s,
       %(duration_ms)s
FROM webhook_attempts WHERE delivery_id = %(id)s;

-- name: schedule_misses_any
SELECT 1 AS one FROM schedule_misses WHERE dispatched_at IS NULL LIMIT 1;
