-- What each rate-limit scope's provider last said is left (core/headroom.py): requests and
-- tokens remaining, when each is refilled, and until when a refusal asked to stay away.
-- observed_at is when the call that brought it was granted: calls granted later are not yet
-- in the provider's count, and the limiter subtracts them (rate_limit_events).
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
    updated_at          REAL NOT NULL
);
