-- A gather's children as rows (wait_children: position, child), not one JSON list, and the
-- wait's counts of children not yet finished (pending) and failed: a child's end decrements
-- them in its own transaction, so a gather is decided in O(1) per child. The counts are a
-- cache of the children's rows: the parent's park and the sweep count them again.
ALTER TABLE job_waits ADD COLUMN child_count integer;
ALTER TABLE job_waits ADD COLUMN pending integer;
ALTER TABLE job_waits ADD COLUMN failed integer;

CREATE TABLE wait_children (
    job_id    bigint NOT NULL,
    key       text NOT NULL,
    pos       integer NOT NULL,
    child_id  bigint NOT NULL,
    PRIMARY KEY (job_id, key, pos),
    FOREIGN KEY (job_id, key) REFERENCES job_waits (job_id, key) ON DELETE CASCADE
);
CREATE INDEX wait_children_child ON wait_children (child_id, job_id, key);

INSERT INTO wait_children (job_id, key, pos, child_id)
SELECT w.job_id, w.key, c.pos - 1, c.id::bigint
FROM job_waits w, jsonb_array_elements_text(w.children) WITH ORDINALITY AS c (id, pos)
WHERE w.kind = 'children' AND w.children IS NOT NULL;

UPDATE job_waits w
SET child_count = jsonb_array_length(w.children),
    pending = (SELECT count(*) FROM wait_children c JOIN jobs j ON j.id = c.child_id
               WHERE c.job_id = w.job_id AND c.key = w.key
                 AND j.state NOT IN ('succeeded', 'failed', 'cancelled')),
    failed = (SELECT count(*) FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
              WHERE c.job_id = w.job_id AND c.key = w.key
                AND (j.id IS NULL OR j.state IN ('failed', 'cancelled'))),
    children = NULL
WHERE w.kind = 'children' AND w.children IS NOT NULL;
