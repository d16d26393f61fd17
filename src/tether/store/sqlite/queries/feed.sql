-- Event streams: the feed and its horizon (store/feed.py).

-- name: event_seqs
-- The last event seq of each of these jobs (the live streams' change check: one read for all).
SELECT id, event_seq FROM jobs WHERE id IN (SELECT value FROM json_each(:ids));

-- name: event_horizon
-- The feed's horizon: none. A write takes the database's one write lock before it reads its
-- clock, so events commit in `at` order and every committed event is final.
SELECT NULL AS horizon_us;

-- name: event_feed
-- Events of every project (or of :projects) after the cursor (:at, :job_id, :seq), in that
-- order; job_events_feed (0013) makes it a range scan from the cursor.
SELECT e.*, j.project, e.at AS feed_at FROM job_events e JOIN jobs j ON j.id = e.job_id
WHERE e.at >= :at AND (e.at > :at OR e.job_id > :job_id OR (e.job_id = :job_id AND e.seq > :seq))
  AND (:horizon_us IS NULL OR e.at < :horizon_us / 1e6)
  AND (:projects IS NULL OR j.project IN (SELECT value FROM json_each(:projects)))
ORDER BY e.at, e.job_id, e.seq LIMIT :limit;

-- name: event_feed_head
SELECT at AS feed_at, job_id, seq FROM job_events
WHERE :horizon_us IS NULL OR at < :horizon_us / 1e6
ORDER BY at DESC, job_id DESC, seq DESC LIMIT 1;
