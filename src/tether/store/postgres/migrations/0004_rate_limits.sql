-- Shared rate limits: one row per granted call per scope (provider or provider/model), kept
-- for the sliding 60-second window; tokens are the reservation, replaced by the actual count
-- when the call settles.
CREATE TABLE rate_limit_events (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope   text NOT NULL,
    at      timestamptz NOT NULL,
    tokens  bigint NOT NULL,
    job_id  bigint,
    key     text
);
CREATE INDEX rate_limit_events_scope ON rate_limit_events (scope, at);
CREATE INDEX rate_limit_events_call ON rate_limit_events (job_id, key);
