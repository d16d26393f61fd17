-- Provider batches (OpenAI's Batch API, Anthropic's Message Batches): one row per batch a job
-- sends, written with the batch's reservation before anything is uploaded. It records the
-- items (their keys, request hashes and reservations), the batch price, the provider's batch
-- id once known, and after settlement each item's answer. A job waits on it (wait kind
-- 'provider_batch'); workers' sweeps poll the rows whose next poll is due.
ALTER TABLE job_waits DROP CONSTRAINT job_waits_kind_check;
ALTER TABLE job_waits ADD CONSTRAINT job_waits_kind_check
    CHECK (kind IN ('children', 'timer', 'signal', 'provider_batch'));

CREATE TABLE provider_batches (
    job_id                 bigint NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    key                    text NOT NULL,
    stage                  text,
    attempt                integer NOT NULL,
    provider               text NOT NULL,
    model                  text NOT NULL,
    tether_key             text NOT NULL,
    status                 text NOT NULL
        CHECK (status IN ('submitting', 'submitted', 'settled', 'unconfirmed')),
    remote_id              text,
    remote_status          text,
    items                  text NOT NULL,
    price                  text NOT NULL,
    standard_price         text NOT NULL,
    price_profile          text NOT NULL,
    reserved_usd           numeric NOT NULL,
    reserved_input_tokens  bigint NOT NULL,
    reserved_output_tokens bigint NOT NULL,
    settled_usd            numeric,
    standard_usd           numeric,
    items_total            integer NOT NULL,
    items_done             integer NOT NULL DEFAULT 0,
    items_failed           integer NOT NULL DEFAULT 0,
    results                text,
    polls                  integer NOT NULL DEFAULT 0,
    next_poll_at           timestamptz,
    error                  text,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    settled_at             timestamptz,
    PRIMARY KEY (job_id, key)
);
CREATE INDEX provider_batches_due ON provider_batches (next_poll_at) WHERE status = 'submitted';
