-- PostgreSQL's 0017 changes its finish NOTIFY trigger; SQLite has no NOTIFY. This keeps both
-- backends at the same version.
SELECT 1;
