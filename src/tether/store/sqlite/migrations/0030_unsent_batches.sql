-- A reserved batch ('submitting') is marked remote_status = 'uploading' just before its upload
-- starts (store/batches.py): one still unmarked was never sent, so a cancel releases its
-- reservation at once and a replay uploads it without asking the provider. Rows written before
-- the mark existed may have been sent: they are marked. The index serves the sweep that settles
-- the unsent batches of jobs that ended (worker/batch_poller.py): few rows, whatever the
-- number of settled batches.
UPDATE provider_batches SET remote_status = 'uploading'
WHERE status = 'submitting' AND remote_status IS NULL;
CREATE INDEX provider_batches_unsent ON provider_batches (job_id) WHERE status = 'submitting';
