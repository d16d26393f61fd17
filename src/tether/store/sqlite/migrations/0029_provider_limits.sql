-- What each rate-limit scope's provider last said is left (core/headroom.py): requests and
-- tokens remaining, when each is refilled, and until when a refusal asked to stay away.
-- observed_at is when the call that brought it was granted: calls granted later are not yet
-- in the provider's count, and the limiter subtracts them (rate_limit_events); so are the
-- calls granted before it and still unanswered then (in flight), which may have reached the
-- provider after it. A call's event is settled once its answer (or error) came back.
CREATE TABLE provider_limits (
    scope               TEXT PRIMARY KEY,
    observed_at         REAL NOT NULL,
    requests_limit      INTEGER,
    requests_remaining  INTEGER,
    requests_reset_at   REAL,
    tokens_limit        INTEGER,
    tokens_remaining    INTEGER,
    tokens_reset_at     REAL,
    retry_at            REAL,
    requests_in_flight  INTEGER NOT NULL DEFAULT 0,
    tokens_in_flight    INTEGER NOT NULL DEFAULT 0,
    updated_at          REAL NOT NULL
);
ALTER TABLE rate_limit_events ADD COLUMN settled INTEGER NOT NULL DEFAULT 0;
