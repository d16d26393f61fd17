-- A finish notifies 'tether.done:<schema>' only while somebody listens there. PostgreSQL
-- serialises the commits of every notifying transaction on one cluster-wide lock, held through
-- the commit's WAL flush, so a NOTIFY per finish made concurrent workers' finishes commit one
-- after another although nobody was waiting for them. Each listener on that channel (an API
-- server's streams and ?wait=, `tether job follow`) keeps a row here while it listens, renewed
-- before `until`; the trigger reads the table (a few rows) and notifies only when one is live.
-- A listener that registers waits for the transactions already running to end before it
-- counts as listening (notify.py), since they may have looked before its row was there.
CREATE TABLE finish_listeners (
    id    text PRIMARY KEY,
    until timestamptz NOT NULL
);

CREATE OR REPLACE FUNCTION tether_notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM finish_listeners WHERE until > now()) THEN
        PERFORM pg_notify(left('tether.done:' || TG_TABLE_SCHEMA, 63), NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;
