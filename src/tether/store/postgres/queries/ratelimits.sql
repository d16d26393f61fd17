-- Shared rate limits and provider headroom (store/ratelimits.py).

-- name: rate_lock
SELECT pg_advisory_xact_lock(hashtextextended('tether.rate:' || %(scope)s, 0));

-- name: rate_window
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens, min(at) AS oldest
FROM rate_limit_events WHERE scope = %(scope)s AND at > %(since)s;

-- name: rate_oldest_until
SELECT at, tokens FROM rate_limit_events WHERE scope = %(scope)s AND at > %(since)s ORDER BY at;

-- name: rate_insert
INSERT INTO rate_limit_events (scope, at, tokens, job_id, key)
VALUES (%(scope)s, %(now)s, %(tokens)s, %(job_id)s, %(key)s);

-- name: rate_settle
UPDATE rate_limit_events SET tokens = coalesce(%(tokens)s::bigint, tokens), settled = true
WHERE job_id = %(job_id)s AND key = %(key)s;

-- name: rate_in_flight
-- The calls of a scope granted up to %(at)s (since %(since)s) whose answers had not come back.
SELECT count(*) AS calls, coalesce(sum(tokens), 0) AS tokens FROM rate_limit_events
WHERE scope = %(scope)s AND at <= %(at)s AND at > %(since)s AND NOT settled;

-- name: rate_prune
DELETE FROM rate_limit_events WHERE at < %(before)s;

-- name: rate_calls
SELECT at FROM rate_limit_events WHERE scope = %(scope)s ORDER BY at;

-- name: rate_headroom
-- A scope's stored headroom, with the calls and tokens granted after the call that brought it.
SELECT p.*,
       (SELECT count(*) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS calls_since,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = p.scope AND e.at > p.observed_at) AS tokens_since
FROM provider_limits p WHERE p.scope = %(scope)s;

-- name: rate_granted_at
SELECT at FROM rate_limit_events
WHERE job_id = %(job_id)s AND key = %(key)s AND scope = %(scope)s
ORDER BY at DESC LIMIT 1;

-- name: rate_headroom_save
INSERT INTO provider_limits (scope, observed_at, requests_limit, requests_remaining,
                             requests_reset_at, tokens_limit, tokens_remaining, tokens_reset_at,
                             retry_at, requests_in_flight, tokens_in_flight, updated_at)
VALUES (%(scope)s, %(observed_at)s, %(requests_limit)s, %(requests_remaining)s,
        %(requests_reset_at)s, %(tokens_limit)s, %(tokens_remaining)s, %(tokens_reset_at)s,
        %(retry_at)s, %(requests_in_flight)s, %(tokens_in_flight)s, %(now)s)
ON CONFLICT (scope) DO UPDATE SET
    observed_at = excluded.observed_at, requests_limit = excluded.requests_limit,
    requests_remaining = excluded.requests_remaining,
    requests_reset_at = excluded.requests_reset_at, tokens_limit = excluded.tokens_limit,
    tokens_remaining = excluded.tokens_remaining, tokens_reset_at = excluded.tokens_reset_at,
    retry_at = excluded.retry_at, requests_in_flight = excluded.requests_in_flight,
    tokens_in_flight = excluded.tokens_in_flight, updated_at = excluded.updated_at;

-- name: rate_scopes
-- Every scope with calls in the window or a stored headroom: what the interfaces show.
SELECT s.scope,
       (SELECT count(*) FROM rate_limit_events e
        WHERE e.scope = s.scope AND e.at > %(since)s) AS calls,
       (SELECT coalesce(sum(e.tokens), 0) FROM rate_limit_events e
        WHERE e.scope = s.scope AND e.at > %(since)s) AS tokens
FROM (SELECT DISTINCT scope FROM rate_limit_events WHERE at > %(since)s
      UNION SELECT scope FROM provider_limits) s
ORDER BY s.scope;
