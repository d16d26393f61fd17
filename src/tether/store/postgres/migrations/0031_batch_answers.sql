-- A settled provider batch's answers, one row per item in the batch's order, instead of one
-- JSON value in its provider_batches row: status pages, polls and claims read the batch row
-- without every answer, and only the replay that returns them reads them. Answers recorded
-- before are moved here.
-- The key points at the job, not at the batch's row: checking each answer against a row that
-- holds every item (its overflow pages) made a 10,000-item settlement take seconds.
CREATE TABLE provider_batch_answers (
    job_id         bigint NOT NULL,
    key            text NOT NULL,
    pos            integer NOT NULL,
    item           text NOT NULL,
    ok             boolean NOT NULL,
    value          jsonb,
    error_code     text,
    error_summary  text,
    retryable      boolean NOT NULL,
    PRIMARY KEY (job_id, key, pos),
    FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE
);

INSERT INTO provider_batch_answers (job_id, key, pos, item, ok, value, error_code,
                                    error_summary, retryable)
SELECT b.job_id, b.key, i.ord - 1, i.item ->> 'key',
       coalesce((b.results::jsonb -> (i.item ->> 'key') ->> 'ok')::boolean, false),
       b.results::jsonb -> (i.item ->> 'key') -> 'value',
       b.results::jsonb -> (i.item ->> 'key') ->> 'error_code',
       b.results::jsonb -> (i.item ->> 'key') ->> 'error_summary',
       coalesce((b.results::jsonb -> (i.item ->> 'key') ->> 'retryable')::boolean, false)
FROM provider_batches b, jsonb_array_elements(b.items::jsonb) WITH ORDINALITY AS i (item, ord)
WHERE b.results IS NOT NULL;

ALTER TABLE provider_batches DROP COLUMN results;
