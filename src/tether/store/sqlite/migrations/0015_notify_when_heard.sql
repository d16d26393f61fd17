-- PostgreSQL's 0015 makes its finish NOTIFY conditional on a live listener. SQLite has no
-- NOTIFY (waiters watch PRAGMA data_version). This keeps both backends at the same version.
SELECT 1;
