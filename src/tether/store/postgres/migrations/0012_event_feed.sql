-- The live event feed (GET /api/v1/events/stream) reads every project's events in time order
-- after a cursor (at, job_id, seq): this index makes that a range scan from the cursor instead
-- of a scan of the whole log. One more index entry per event. Deliberately no NOTIFY trigger
-- on job_events: every notifying transaction takes the server's notify-queue lock at commit,
-- which measurably slowed concurrent event writes (the figures: docs/observability.md).
CREATE INDEX job_events_feed ON job_events (at, job_id, seq);
