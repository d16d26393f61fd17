-- Provider batches (OpenAI's Batch API, Anthropic's Message Batches): one row per batch a job
-- sends, written with the batch's reservation before anything is uploaded. It records the
-- items (their keys, request hashes and reservations), the batch price, the provider's batch
-- id once known, and after settlement each item's answer. A job waits on it (wait kind
-- 'provider_batch'); workers' sweeps poll the rows whose next poll is due.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql, 'CHECK (kind IN (''children'', ''timer'', ''signal''))',
                  'CHECK (kind IN (''children'', ''timer'', ''signal'', ''provider_batch''))')
WHERE type = 'table' AND name = 'job_waits';
PRAGMA writable_schema = OFF;

CREATE TABLE provider_batches (
    job_id                 INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key                    TEXT NOT NULL,
    stage                  TEXT,
    attempt                INTEGER NOT NULL,
    provider               TEXT NOT NULL,
    model                  TEXT NOT NULL,
    tether_key             TEXT NOT NULL,
    status                 TEXT NOT NULL,
    remote_id              TEXT,
    remote_status          TEXT,
    items                  TEXT NOT NULL,
    price                  TEXT NOT NULL,
    standard_price         TEXT NOT NULL,
    price_profile          TEXT NOT NULL,
    reserved_usd           TEXT NOT NULL,
    reserved_input_tokens  INTEGER NOT NULL,
    reserved_output_tokens INTEGER NOT NULL,
    settled_usd            TEXT,
    standard_usd           TEXT,
    items_total            INTEGER NOT NULL,
    items_done             INTEGER NOT NULL DEFAULT 0,
    items_failed           INTEGER NOT NULL DEFAULT 0,
    results                TEXT,
    polls                  INTEGER NOT NULL DEFAULT 0,
    next_poll_at           REAL,
    error                  TEXT,
    created_at             REAL NOT NULL,
    updated_at             REAL NOT NULL,
    settled_at             REAL,
    PRIMARY KEY (job_id, key),
    CHECK (status IN ('submitting', 'submitted', 'settled', 'unconfirmed'))
) WITHOUT ROWID;
CREATE INDEX provider_batches_due ON provider_batches (next_poll_at) WHERE status = 'submitted';
