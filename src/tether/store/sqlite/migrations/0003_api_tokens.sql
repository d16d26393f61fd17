-- Bearer tokens for the REST API, MCP over HTTP and the dashboard. Only a hash is stored.
CREATE TABLE api_tokens (
    id            TEXT PRIMARY KEY,
    name          TEXT,
    token_hash    TEXT NOT NULL UNIQUE,
    projects      TEXT NOT NULL DEFAULT '[]',
    admin         INTEGER NOT NULL DEFAULT 0,
    created_at    REAL NOT NULL,
    last_used_at  REAL,
    revoked_at    REAL
);
