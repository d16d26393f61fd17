-- The job type's version each job was submitted at ('' unversioned), and the versions each
-- worker serves: an object from type to the versions it claims, a type left out claiming
-- every version. Jobs and workers from before this are unversioned and any-version.
ALTER TABLE jobs ADD COLUMN version text NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN versions jsonb;
-- Statistics (no index) on what a claim matches a versioned job by, so that after ANALYZE the
-- planner knows how many queued jobs a worker's keys match, as it does for a type.
CREATE STATISTICS jobs_version_key ON ((type || '@' || version)) FROM jobs;
