-- Running totals of spend and engine counters (store/totals.py).

-- Money adds as exact decimals.
-- name: count_spend
INSERT INTO spend_totals (project, provider, model, calls, input_tokens, output_tokens,
                          cost_usd, unconfirmed_calls)
VALUES (:project, :provider, :model, :calls, :input_tokens, :output_tokens, :cost_usd,
        :unconfirmed_calls)
ON CONFLICT (project, provider, model) DO UPDATE
SET calls = calls + excluded.calls, input_tokens = input_tokens + excluded.input_tokens,
    output_tokens = output_tokens + excluded.output_tokens,
    cost_usd = tether_decimal_add(spend_totals.cost_usd, excluded.cost_usd),
    unconfirmed_calls = unconfirmed_calls + excluded.unconfirmed_calls;

-- name: take_counters
DELETE FROM engine_counters WHERE owner IN (SELECT value FROM json_each(:owners))
RETURNING name, n;

-- name: count_engine
INSERT INTO engine_counters (name, owner, n) VALUES (:name, :owner, :n)
ON CONFLICT (name, owner) DO UPDATE SET n = n + excluded.n;
