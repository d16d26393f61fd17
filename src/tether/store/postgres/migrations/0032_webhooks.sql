-- Outbound webhooks. A subscription (project NULL: every project, an admin's) names a URL,
-- the public event kinds it wants and its signing secret. The outbox step reads job events
-- after the cursor ('events': a feed position) and schedule misses not yet dispatched, and
-- for each (subscription, event) writes one delivery row and one delivery job (type
-- tether.webhook) in one transaction. A delivery's project is its event's; its owner is its
-- subscription's project (NULL: an admin's), which scoped reads go by. Each HTTP try of a
-- delivery job is one attempt row.
CREATE TABLE webhook_subscriptions (
    id          text PRIMARY KEY,
    project     text,
    url         text NOT NULL,
    kinds       jsonb NOT NULL,
    secret      text NOT NULL,
    description text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL
);
CREATE INDEX webhook_subscriptions_project ON webhook_subscriptions (project);

CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    subscription_id text NOT NULL,
    project         text NOT NULL,
    owner           text,
    kind            text NOT NULL,
    url             text NOT NULL,
    job_id          bigint NOT NULL,
    sends           integer NOT NULL DEFAULT 1,
    body            text NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, created_at);
CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner, created_at);

CREATE TABLE webhook_attempts (
    delivery_id text NOT NULL,
    n           integer NOT NULL,
    job_id      bigint NOT NULL,
    at          timestamptz NOT NULL,
    status      integer,
    error       text,
    duration_ms double precision NOT NULL,
    PRIMARY KEY (delivery_id, n)
);

CREATE TABLE webhook_cursor (
    name     text PRIMARY KEY,
    position text NOT NULL
);
INSERT INTO webhook_cursor (name, position) VALUES ('events', '');

-- A scheduler step that skipped ticks (catch_up 'latest' or 'none' after a gap) records
-- them here, in its own transaction; the webhook outbox dispatches each row once.
CREATE TABLE schedule_misses (
    id            bigserial PRIMARY KEY,
    schedule      text NOT NULL,
    project       text NOT NULL,
    first_tick    timestamptz NOT NULL,
    last_tick     timestamptz NOT NULL,
    missed        integer NOT NULL,
    at            timestamptz NOT NULL,
    dispatched_at timestamptz
);
CREATE INDEX schedule_misses_pending ON schedule_misses (id) WHERE dispatched_at IS NULL;
