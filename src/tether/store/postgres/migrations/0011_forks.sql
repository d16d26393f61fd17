-- Fork from a stage (store/forks.py): a fork carries the source's finished stages and their
-- done calls over. The rows it copies name the job that paid for them; a ledger row of a
-- carried call costs 0 in the fork and keeps the payer's cost for information only.
ALTER TABLE checkpoints ADD COLUMN reused_from bigint;
ALTER TABLE call_journal ADD COLUMN reused_from bigint;
ALTER TABLE cost_ledger ADD COLUMN reused_from bigint;
ALTER TABLE cost_ledger ADD COLUMN reused_cost_usd numeric;
