-- Bearer tokens for the REST API, MCP over HTTP and the dashboard. Only a hash is stored.
CREATE TABLE api_tokens (
    id            text PRIMARY KEY,
    name          text,
    token_hash    text NOT NULL UNIQUE,
    projects      jsonb NOT NULL DEFAULT '[]',
    admin         boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    revoked_at    timestamptz
);
