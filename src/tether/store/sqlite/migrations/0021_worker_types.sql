-- What each worker serves: the job types its app registers (a worker claims only those) and
-- its lease TTL, the silence after which it no longer counts as live. A row written before
-- this has neither: that worker claims every type, and is live for the default 30 s.
ALTER TABLE workers ADD COLUMN types TEXT;
ALTER TABLE workers ADD COLUMN lease_ttl REAL;
