-- A job that reaches a terminal state (succeeded, failed, cancelled) notifies the channel
-- 'tether.done:<schema>' with its id as payload: one NOTIFY per finish, delivered at commit.
-- The API's waiters (POST /jobs?wait=) listen there instead of polling. A channel of its own,
-- so workers listening for queued jobs are not woken by every finish.
CREATE FUNCTION tether_notify_finished() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(left('tether.done:' || TG_TABLE_SCHEMA, 63), NEW.id::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_finished AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.state IN ('succeeded', 'failed', 'cancelled')
                       AND OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION tether_notify_finished();
