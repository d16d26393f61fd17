-- Event streams: the feed and its horizon (store/feed.py).

-- name: event_seqs
-- The last event seq of each of these jobs (the live streams' change check: one read for all).
SELECT id, event_seq FROM jobs WHERE id = ANY (%(ids)s::bigint[]);

-- name: event_horizon
-- The feed's horizon, in microseconds since the epoch: an event's `at` is its transaction's
-- now(), i.e. its start, so no transaction still open can commit an event older than the
-- oldest open transaction's start. Events before the horizon are final; the feed stops there.
-- A transaction open longer than :max_lag_s (say, a caller's submit(conn=...) left open) does
-- not hold the feed back beyond that.
SELECT (extract(epoch FROM greatest(now() - make_interval(secs => %(max_lag_s)s),
        least(now(), coalesce(min(xact_start), now())))) * 1000000)::bigint AS horizon_us
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
  AND state <> 'idle';

-- name: event_feed
-- Events of every project (or of %(projects)s) after the cursor (at_us, job_id, seq) and before
-- the horizon, in that order; job_events_feed (0013) makes it a range scan from the cursor.
SELECT e.*, j.project, (extract(epoch FROM e.at) * 1000000)::bigint AS feed_at
FROM job_events e JOIN jobs j ON j.id = e.job_id
WHERE (e.at, e.job_id, e.seq) > (timestamptz 'epoch' + %(at_us)s * interval '1 microsecond',
                                 %(job_id)s, %(seq)s)
  AND (%(horizon_us)s::bigint IS NULL
       OR e.at < timestamptz 'epoch' + %(horizon_us)s * interval '1 microsecond')
  AND (%(projects)s::text[] IS NULL OR j.project = ANY (%(projects)s::text[]))
ORDER BY e.at, e.job_id, e.seq LIMIT %(limit)s;

-- name: event_feed_head
SELECT (extract(epoch FROM at) * 1000000)::bigint AS feed_at, job_id, seq FROM job_events
WHERE %(horizon_us)s::bigint IS NULL
   OR at < timestamptz 'epoch' + %(horizon_us)s * interval '1 microsecond'
ORDER BY at DESC, job_id DESC, seq DESC LIMIT 1;
