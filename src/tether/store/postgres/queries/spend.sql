-- Spend reports grouped in the database (store/spend.py).

-- Spend report (store/spend.py): the ledger grouped by the dimensions switched on, each other
-- dimension a constant NULL, so one statement serves every grouping. Calendar buckets are
-- taken in the report's zone (:tz, 'UTC' by default); numeric sums are exact.
-- Rows a fork carried (reused_from) are left out: the job that paid counts those calls.
-- name: spend_report
SELECT CASE WHEN %(by_project)s::boolean THEN project END AS project,
       CASE WHEN %(by_provider)s::boolean THEN provider END AS provider,
       CASE WHEN %(by_model)s::boolean THEN model END AS model,
       CASE WHEN %(by_job_type)s::boolean THEN (SELECT j.type FROM jobs j WHERE j.id = l.job_id)
           END AS job_type,
       CASE WHEN %(by_stage)s::boolean THEN stage END AS stage,
       CASE WHEN %(by_day)s::boolean THEN to_char(local_ts, 'YYYY-MM-DD') END AS day,
       CASE WHEN %(by_week)s::boolean THEN to_char(date_trunc('week', local_ts), 'YYYY-MM-DD')
           END AS week,
       CASE WHEN %(by_month)s::boolean THEN to_char(local_ts, 'YYYY-MM') END AS month,
       count(*) AS calls, count(*) FILTER (WHERE NOT confirmed) AS unconfirmed_calls,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(cost_usd) AS cost_usd, sum(reserved_usd) AS reserved_usd
FROM (SELECT *, created_at AT TIME ZONE %(tz)s::text AS local_ts
      FROM cost_ledger
      WHERE (%(projects)s::text[] IS NULL OR project = ANY (%(projects)s::text[]))
        AND (%(since)s::timestamptz IS NULL OR created_at >= %(since)s::timestamptz)
        AND (%(until)s::timestamptz IS NULL OR created_at < %(until)s::timestamptz)
        AND reused_from IS NULL) AS l
GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
