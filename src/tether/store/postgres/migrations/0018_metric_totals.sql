-- Totals that /metrics, Tether.spend_totals and Tether.engine_stats report, kept as the events
-- happen: a scrape reads a few rows instead of counting the whole history (millions of ledger
-- rows and attempts), and pruning history no longer lowers a total (Prometheus counters).
-- Both start from what the history holds when this migration runs.

-- Spend per project, provider and model, written in the transaction of the ledger rows it
-- counts, after the project's accumulator row: that row's lock already orders every writer of
-- a project's totals. Reused rows (a fork's carried calls, cost 0) are not counted.
CREATE TABLE spend_totals (
    project            text NOT NULL,
    provider           text NOT NULL,
    model              text NOT NULL,
    calls              bigint NOT NULL DEFAULT 0,
    input_tokens       bigint NOT NULL DEFAULT 0,
    output_tokens      bigint NOT NULL DEFAULT 0,
    cost_usd           numeric NOT NULL DEFAULT 0,
    unconfirmed_calls  bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (project, provider, model)
);
INSERT INTO spend_totals (project, provider, model, calls, input_tokens, output_tokens,
                          cost_usd, unconfirmed_calls)
SELECT project, provider, model, count(*), sum(input_tokens), sum(output_tokens),
       sum(cost_usd), count(*) FILTER (WHERE NOT confirmed)
FROM cost_ledger WHERE reused_from IS NULL
GROUP BY project, provider, model;

-- Engine events by name ('claims', 'lease_expiries', 'budget_pauses') and owner: a worker's
-- claims are its own row, so workers never wait on each other's counts. The total of a name
-- is the sum over its owners.
CREATE TABLE engine_counters (
    name   text NOT NULL,
    owner  text NOT NULL,
    n      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (name, owner)
);
INSERT INTO engine_counters (name, owner, n)
SELECT name, '', n FROM (
    SELECT 'claims' AS name, count(*) AS n FROM job_attempts
    UNION ALL SELECT 'lease_expiries', count(*) FROM job_attempts WHERE outcome = 'lease_expired'
    UNION ALL SELECT 'budget_pauses', count(*) FROM job_attempts
              WHERE outcome = 'budget_exhausted'
) history WHERE n > 0;
