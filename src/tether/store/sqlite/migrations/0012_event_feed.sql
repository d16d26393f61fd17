-- The live event feed (GET /api/v1/events/stream) reads every project's events in time order
-- after a cursor (at, job_id, seq): this index makes that a range scan from the cursor instead
-- of a scan of the whole log. One more index entry per event; no trigger, no notification.
CREATE INDEX job_events_feed ON job_events (at, job_id, seq);
