-- Running totals of spend and engine counters (store/totals.py).

-- name: count_spend
INSERT INTO spend_totals AS t (project, provider, model, calls, input_tokens, output_tokens,
                               cost_usd, unconfirmed_calls)
VALUES (%(project)s, %(provider)s, %(model)s, %(calls)s, %(input_tokens)s, %(output_tokens)s,
        %(cost_usd)s::numeric, %(unconfirmed_calls)s)
ON CONFLICT (project, provider, model) DO UPDATE
SET calls = t.calls + excluded.calls, input_tokens = t.input_tokens + excluded.input_tokens,
    output_tokens = t.output_tokens + excluded.output_tokens,
    cost_usd = t.cost_usd + excluded.cost_usd,
    unconfirmed_calls = t.unconfirmed_calls + excluded.unconfirmed_calls;

-- name: take_counters
DELETE FROM engine_counters WHERE owner = ANY (%(owners)s::text[])
RETURNING name, n;

-- name: count_engine
INSERT INTO engine_counters AS c (name, owner, n) VALUES (%(name)s, %(owner)s, %(n)s)
ON CONFLICT (name, owner) DO UPDATE SET n = c.n + excluded.n;
