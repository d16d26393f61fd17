-- The call cache finds done rows by request hash, and only calls made with cache=True have one:
-- the index holds just those rows, so settling a call without a hash writes no page of it.
DROP INDEX call_journal_cache;
CREATE INDEX call_journal_cache ON call_journal (request_hash)
    WHERE status = 'done' AND request_hash IS NOT NULL;
