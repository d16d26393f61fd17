-- The job type's version each job was submitted at ('' unversioned), and the versions each
-- worker serves: an object from type to the versions it claims, a type left out claiming
-- every version. Jobs and workers from before this are unversioned and any-version.
ALTER TABLE jobs ADD COLUMN version TEXT NOT NULL DEFAULT '';
ALTER TABLE workers ADD COLUMN versions TEXT;
