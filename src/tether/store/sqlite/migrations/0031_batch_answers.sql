-- A settled provider batch's answers, one row per item in the batch's order, instead of one
-- JSON value in its provider_batches row: status pages, polls and claims read the batch row
-- without every answer, and only the replay that returns them reads them (value: the
-- answer's JSON). Answers recorded before are moved here.
-- The key points at the job, not at the batch's row: checking each answer against a row that
-- holds every item (its overflow pages) made a 10,000-item settlement take seconds.
CREATE TABLE provider_batch_answers (
    job_id         INTEGER NOT NULL,
    key            TEXT NOT NULL,
    pos            INTEGER NOT NULL,
    item           TEXT NOT NULL,
    ok             INTEGER NOT NULL,
    value          TEXT,
    error_code     TEXT,
    error_summary  TEXT,
    retryable      INTEGER NOT NULL,
    PRIMARY KEY (job_id, key, pos),
    FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE
) WITHOUT ROWID;

INSERT INTO provider_batch_answers (job_id, key, pos, item, ok, value, error_code,
                                    error_summary, retryable)
SELECT b.job_id, b.key, CAST(i.key AS INTEGER), i.value ->> '$.key',
       coalesce(r.value ->> '$.ok', 0), r.value -> '$.value', r.value ->> '$.error_code',
       r.value ->> '$.error_summary', coalesce(r.value ->> '$.retryable', 0)
FROM provider_batches b, json_each(b.items) i
LEFT JOIN json_each(b.results) r ON r.key = i.value ->> '$.key'
WHERE b.results IS NOT NULL;

ALTER TABLE provider_batches DROP COLUMN results;
