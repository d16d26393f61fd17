-- A gather's children as rows (wait_children: position, child), not one JSON list, and the
-- wait's counts of children not yet finished (pending) and failed: a child's end decrements
-- them in its own transaction, so a gather is decided in O(1) per child. The counts are a
-- cache of the children's rows: the parent's park and the sweep count them again.
ALTER TABLE job_waits ADD COLUMN child_count INTEGER;
ALTER TABLE job_waits ADD COLUMN pending INTEGER;
ALTER TABLE job_waits ADD COLUMN failed INTEGER;

CREATE TABLE wait_children (
    job_id    INTEGER NOT NULL,
    key       TEXT NOT NULL,
    pos       INTEGER NOT NULL,
    child_id  INTEGER NOT NULL,
    PRIMARY KEY (job_id, key, pos),
    FOREIGN KEY (job_id, key) REFERENCES job_waits (job_id, key) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX wait_children_child ON wait_children (child_id, job_id, key);

INSERT INTO wait_children (job_id, key, pos, child_id)
SELECT w.job_id, w.key, CAST(c.key AS INTEGER), CAST(c.value AS INTEGER)
FROM job_waits w, json_each(w.children) c
WHERE w.kind = 'children' AND w.children IS NOT NULL;

UPDATE job_waits
SET child_count = json_array_length(children),
    pending = (SELECT count(*) FROM wait_children c JOIN jobs j ON j.id = c.child_id
               WHERE c.job_id = job_waits.job_id AND c.key = job_waits.key
                 AND j.state NOT IN ('succeeded', 'failed', 'cancelled')),
    failed = (SELECT count(*) FROM wait_children c LEFT JOIN jobs j ON j.id = c.child_id
              WHERE c.job_id = job_waits.job_id AND c.key = job_waits.key
                AND (j.id IS NULL OR j.state IN ('failed', 'cancelled'))),
    children = NULL
WHERE kind = 'children' AND children IS NOT NULL;
