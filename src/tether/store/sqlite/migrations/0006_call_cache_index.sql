-- The call cache finds done rows by request hash, and only calls made with cache=True have one:
-- the index now holds just those rows instead of every done call. Settling a batch of eight
-- calls without a hash wrote two pages of this index (of 14) for entries nothing could find.
DROP INDEX call_journal_cache;
CREATE INDEX call_journal_cache ON call_journal (request_hash)
    WHERE status = 'done' AND request_hash IS NOT NULL;
