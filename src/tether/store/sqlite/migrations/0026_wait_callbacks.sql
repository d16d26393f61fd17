-- Callback URLs (core/callbacks.py): a single-use capability to answer one signal wait of one
-- job without an API token. Only the SHA-256 of the token is kept; the row names the job, the
-- wait and its signal, who made it, when it expires and when it was used. ``handed_at``: when
-- the job's own notify hook returned with it (a replay then makes no other).
CREATE TABLE wait_callbacks (
    id          TEXT PRIMARY KEY,
    job_id      INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    wait_key    TEXT NOT NULL,
    signal      TEXT NOT NULL,
    token_hash  TEXT NOT NULL,
    issued_by   TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    handed_at   REAL,
    used_at     REAL,
    FOREIGN KEY (job_id, wait_key) REFERENCES job_waits (job_id, key) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX wait_callbacks_wait ON wait_callbacks (job_id, wait_key);
