-- Spend reports grouped in the database (store/spend.py).

-- Spend report (store/spend.py): the ledger grouped by the dimensions switched on, each other
-- dimension a constant NULL, so one statement serves every grouping. local_ts shifts a call's
-- time into the report's zone (tether_utc_offset is registered on every connection by
-- sqlite/functions.py; UTC skips it); tether_decimal_sum sums the decimal
-- text of money exactly (sum() would add floats).
-- Rows a fork carried (reused_from) are left out: the job that paid counts those calls.
-- The window is two plain ranges (an open end is infinite) so cost_ledger_created serves it:
-- SQLite cannot use an index for "(:since IS NULL OR created_at >= :since)".
-- name: spend_report
SELECT CASE WHEN :by_project THEN project END AS project,
       CASE WHEN :by_provider THEN provider END AS provider,
       CASE WHEN :by_model THEN model END AS model,
       CASE WHEN :by_job_type THEN (SELECT j.type FROM jobs j WHERE j.id = l.job_id) END
           AS job_type,
       CASE WHEN :by_stage THEN stage END AS stage,
       CASE WHEN :by_day THEN strftime('%Y-%m-%d', local_ts, 'unixepoch') END AS day,
       CASE WHEN :by_week THEN date(local_ts, 'unixepoch', 'weekday 0', '-6 days') END AS week,
       CASE WHEN :by_month THEN strftime('%Y-%m', local_ts, 'unixepoch') END AS month,
       count(*) AS calls, sum(1 - confirmed) AS unconfirmed_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       tether_decimal_sum(cost_usd) AS cost_usd, tether_decimal_sum(reserved_usd) AS reserved_usd
FROM (SELECT *, CASE WHEN :tz = 'UTC' THEN created_at
                     ELSE created_at + tether_utc_offset(created_at, :tz) END AS local_ts
      FROM cost_ledger
      WHERE (:projects IS NULL OR project IN (SELECT value FROM json_each(:projects)))
        AND created_at >= coalesce(:since, -9e999) AND created_at < coalesce(:until, 9e999)
        AND reused_from IS NULL) AS l
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
