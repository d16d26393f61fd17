-- What each rate-limit scope's provider last said is left (core/headroom.py): requests and
-- tokens remaining, when each is refilled, and until when a refusal asked to stay away.
-- observed_at is when the call that brought it was granted: calls granted later are not yet
-- in the provider's count, and the limiter subtracts them (rate_limit_events); so are the
-- calls granted before it and still unanswered then (in flight), which may have reached the
-- provider after it. A call's event is settled once its answer (or error) came back.
CREATE TABLE provider_limits (
    scope               text PRIMARY KEY,
    observed_at         timestamptz NOT NULL,
    requests_limit      bigint,
    requests_remaining  bigint,
    requests_reset_at   timestamptz,
    tokens_limit        bigint,
    tokens_remaining    bigint,
    tokens_reset_at     timestamptz,
    retry_at            timestamptz,
    requests_in_flight  bigint NOT NULL DEFAULT 0,
    tokens_in_flight    bigint NOT NULL DEFAULT 0,
    updated_at          timestamptz NOT NULL
);
ALTER TABLE rate_limit_events ADD COLUMN settled boolean NOT NULL DEFAULT false;
