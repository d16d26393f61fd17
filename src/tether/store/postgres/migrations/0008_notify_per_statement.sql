-- A submit wakes workers once per queue it fed, not once per job: the insert trigger fires
-- once per statement and notifies each distinct queue of the queued rows it inserted, so a
-- bulk submit of thousands of jobs makes a handful of pg_notify calls (identical notifications
-- in one transaction were merged anyway; what a listener receives is unchanged).
DROP TRIGGER jobs_notify_inserted ON jobs;

CREATE FUNCTION tether_notify_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(left('tether:' || TG_TABLE_SCHEMA, 63), q.queue)
    FROM (SELECT DISTINCT queue FROM inserted_jobs WHERE state = 'queued') AS q;
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify_inserted AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS inserted_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION tether_notify_inserted();
