-- PostgreSQL's 0007 adds a NOTIFY when a job finishes. SQLite has no NOTIFY: the API's waiters
-- watch PRAGMA data_version instead. This keeps both backends at the same schema version.
SELECT 1;
