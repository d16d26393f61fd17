-- Prompt-cache writes are billed apart (Anthropic: 1.25x input for a 5-minute entry, 2x for a
-- 1-hour one): each ledger row records how many input tokens were written and at what rates.
ALTER TABLE cost_ledger ADD COLUMN cache_write_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE cost_ledger ADD COLUMN cache_write_1h_tokens bigint NOT NULL DEFAULT 0;
ALTER TABLE cost_ledger ADD COLUMN cache_write_per_mtok numeric;
ALTER TABLE cost_ledger ADD COLUMN cache_write_1h_per_mtok numeric;
