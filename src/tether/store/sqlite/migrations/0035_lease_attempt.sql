-- The fencing value of a lease is the attempt number that holds it: name the column for
-- that (the word token is kept for API and callback tokens). Indexes follow the rename.
ALTER TABLE jobs RENAME COLUMN lease_token TO lease_attempt;
