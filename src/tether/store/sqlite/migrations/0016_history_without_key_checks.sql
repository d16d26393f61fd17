-- PostgreSQL's 0016 replaces the per-row foreign-key checks of job_events and job_attempts by
-- a delete trigger. SQLite checks a key with one in-process index lookup and keeps its foreign
-- keys. This keeps both backends at the same version.
SELECT 1;
