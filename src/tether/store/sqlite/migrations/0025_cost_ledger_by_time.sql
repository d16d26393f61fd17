-- Spend reports over a time window (``since``/``until``, store/spend.py) read the ledger rows
-- of that window only, not every row ever recorded: the existing (project, created_at) index
-- serves only a report narrowed to projects.
CREATE INDEX cost_ledger_created ON cost_ledger (created_at);
