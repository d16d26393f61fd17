-- Outbound webhooks. A subscription (project NULL: every project, an admin's) names a URL,
-- the public event kinds it wants and its signing secret. The outbox step reads job events
-- after the cursor ('events': a feed position) and schedule misses not yet dispatched, and
-- for each (subscription, event) writes one delivery row and one delivery job (type
-- tether.webhook) in one transaction. A delivery's project is its event's; its owner is its
-- subscription's project (NULL: an admin's), which scoped reads go by. Each HTTP try of a
-- delivery job is one attempt row.
CREATE TABLE webhook_subscriptions (
    id          TEXT PRIMARY KEY,
    project     TEXT,
    url         TEXT NOT NULL,
    kinds       TEXT NOT NULL,
    secret      TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at  REAL NOT NULL
);
CREATE INDEX webhook_subscriptions_project ON webhook_subscriptions (project);

CREATE TABLE webhook_deliveries (
    id              TEXT PRIMARY KEY,
    subscription_id TEXT NOT NULL,
    project         TEXT NOT NULL,
    owner           TEXT,
    kind            TEXT NOT NULL,
    url             TEXT NOT NULL,
    job_id          INTEGER NOT NULL,
    sends           INTEGER NOT NULL DEFAULT 1,
    body            TEXT NOT NULL,
    created_at      REAL NOT NULL
);
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, created_at);
CREATE INDEX webhook_deliveries_owner ON webhook_deliveries (owner, created_at);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    job_id      INTEGER NOT NULL,
    at          REAL NOT NULL,
    status      INTEGER,
    error       TEXT,
    duration_ms REAL NOT NULL,
    PRIMARY KEY (delivery_id, n)
) WITHOUT ROWID;

CREATE TABLE webhook_cursor (
    name     TEXT PRIMARY KEY,
    position TEXT NOT NULL
);
INSERT INTO webhook_cursor (name, position) VALUES ('events', '');

-- A scheduler step that skipped ticks (catch_up 'latest' or 'none' after a gap) records
-- them here, in its own transaction; the webhook outbox dispatches each row once.
CREATE TABLE schedule_misses (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule      TEXT NOT NULL,
    project       TEXT NOT NULL,
    first_tick    REAL NOT NULL,
    last_tick     REAL NOT NULL,
    missed        INTEGER NOT NULL,
    at            REAL NOT NULL,
    dispatched_at REAL
);
CREATE INDEX schedule_misses_pending ON schedule_misses (id) WHERE dispatched_at IS NULL;
