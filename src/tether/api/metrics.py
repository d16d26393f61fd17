"""Prometheus metrics, computed from the facade at scrape time (no SQL of our own).

Always present:
  tether_jobs{queue,state}                 jobs by queue and state (gauge; a queue's finished
                                           jobs beyond 50,000 a state are estimated)
  tether_queue_paused{queue}               1 when the queue is paused
  tether_type_paused{type}                 1 when the job type is paused (types registered
                                           by the serving app or ever paused)
  tether_flow_running{scope,name,key}      jobs holding a slot under a concurrency limit of
                                           a queue or type, per key (key "": in all)
  tether_flow_limit{scope,name,key}        that limit (per key; key "": the total)
  tether_workers                           workers that have not stopped
  tether_worker_leases                     leases those workers hold
  tether_jobs_unserved{queue,type,version} queued jobs no live worker serves (no running
                                           worker's app registers the type at that version
                                           on that queue; version "" is unversioned)
  tether_budget_paused_jobs                jobs paused with error_code budget_exhausted
  tether_period_budget_paused_jobs         jobs paused by a period limit until it resets
  tether_scrape_errors_total               scrapes that could not read the store

Per shared rate-limit scope in use (calls in the last minute, or a provider's headroom):
  tether_rate_limit_calls{scope}           calls granted in the last 60 seconds
  tether_rate_limit_tokens{scope}          their tokens (reserved, or used once settled)
  tether_provider_requests_left{scope}     what the provider last said remains, less the
  tether_provider_tokens_left{scope}       calls (tokens) granted since or in flight then;
                                           absent when not told or refilled since
  tether_provider_retry_after_seconds{scope}  what a refusal's Retry-After still asks

Per project whose jobs have spent (the projects of the running totals), from its budget:
  tether_project_spent_usd{project}        spent to date (settled and unconfirmed calls)
  tether_project_reserved_usd{project}     reserved for the project's calls in flight
  tether_project_budget_limit_usd{project} all-time cost limit (a budget without a period)
  tether_project_period_used_usd{project,period}       what the period's cost limit is
                                           checked against: settled in it plus in flight
  tether_project_period_limit_usd{project,period}      the period's cost limit
  tether_project_period_end_timestamp_seconds{project,period}  when the period resets

When the facade offers them (the budgets/ledger work adds these):
  app.spend_totals() -> tether_provider_calls_total, tether_provider_tokens_total{direction},
                        tether_spend_usd_total, tether_provider_unconfirmed_calls_total
                        (by provider, model)
  app.engine_stats() -> tether_claims_total, tether_claim_latency_seconds (histogram),
                        tether_lease_expiries_total, tether_budget_pauses_total,
                        tether_budget_thresholds_total
"""

from __future__ import annotations

import logging
from typing import Any
from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric,
)
from prometheus_client.registry import Collector

from ..app import Tether
from ..store.accounting import in_period

log = logging.getLogger("tether.api")

PAUSED_SCAN_LIMIT = 10_000


class TetherCollector(Collector):
    """Reads the facade on every scrape; a store failure is counted, never raised."""

    def __init__(self, app: Tether) -> None:
        self.app = app
        self.errors = 0

    def collect(self) -> Iterable[Metric]:
        try:
            metrics = list(self._jobs()) + list(self._workers()) + list(self._budget_paused())
            metrics += list(self._spend()) + list(self._engine()) + list(self._budgets())
            metrics += (list(self._batches()) + list(self._rate_limits())
                        + list(self._flow()))
        except Exception:  # a scrape must answer even when the store is down
            log.exception("metrics scrape failed")
            self.errors += 1
            metrics = []
        errors = CounterMetricFamily("tether_scrape_errors",
                                     "Scrapes that failed to read the store")
        errors.add_metric([], self.errors)
        return [*metrics, errors]

    def _jobs(self) -> Iterable[Metric]:
        jobs = GaugeMetricFamily("tether_jobs", "Jobs by queue and state",
                                 labels=["queue", "state"])
        paused = GaugeMetricFamily("tether_queue_paused", "1 when the queue is paused",
                                   labels=["queue"])
        for queue in self.app.queues(estimate=True):
            paused.add_metric([queue.name], 1.0 if queue.paused else 0.0)
            for state, n in sorted(queue.counts.items()):
                jobs.add_metric([queue.name, state], n)
        return [jobs, paused]

    def _flow(self) -> Iterable[Metric]:
        paused = GaugeMetricFamily("tether_type_paused", "1 when the job type is paused",
                                   labels=["type"])
        for name, flag in self.app.paused_types().items():
            paused.add_metric([name], 1.0 if flag else 0.0)
        labels = ["scope", "name", "key"]
        running = GaugeMetricFamily("tether_flow_running", "Jobs holding a slot under a "
                                    "concurrency limit (key \"\": in all)", labels=labels)
        limit = GaugeMetricFamily("tether_flow_limit", "The concurrency limit (key \"\": "
                                  "the total)", labels=labels)
        for u in self.app.flow_usage():
            at = [u.scope, u.name, u.key or ""]
            running.add_metric(at, u.running)
            if u.limit is not None:
                limit.add_metric(at, u.limit)
        return [paused, running, limit]

    def _workers(self) -> Iterable[Metric]:
        workers = self.app.workers()
        count = GaugeMetricFamily("tether_workers", "Workers that have not stopped")
        count.add_metric([], len(workers))
        leases = GaugeMetricFamily("tether_worker_leases", "Job leases held by live workers")
        leases.add_metric([], sum(w.leases for w in workers))
        unserved = GaugeMetricFamily("tether_jobs_unserved", "Queued jobs whose type and "
                                     "version no live worker serves on their queue",
                                     labels=["queue", "type", "version"])
        for (queue, type, version), n in self.app.unserved_counts().items():
            unserved.add_metric([queue, type, version], n)
        return [count, leases, unserved]

    def _batches(self) -> Iterable[Metric]:
        n = GaugeMetricFamily("tether_provider_batches_open", "Provider batches not settled "
                              "yet (ctx.batch, background calls)", labels=["provider"])
        usd = GaugeMetricFamily("tether_provider_batches_reserved_usd", "Money those "
                                "batches hold reserved", labels=["provider"])
        for provider, (count, reserved) in sorted(self.app.store.open_batches().items()):
            n.add_metric([provider], count)
            usd.add_metric([provider], float(reserved))
        return [n, usd]

    def _rate_limits(self) -> Iterable[Metric]:
        def gauge(name: str, doc: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=["scope"])

        calls = gauge("tether_rate_limit_calls", "Calls granted under a shared rate-limit "
                      "scope in the last 60 seconds")
        tokens = gauge("tether_rate_limit_tokens", "Their tokens (reserved, or used once "
                       "settled)")
        requests_left = gauge("tether_provider_requests_left", "Requests the provider last "
                              "said remain, less the calls granted since or in flight then")
        tokens_left = gauge("tether_provider_tokens_left", "Tokens the provider last said "
                            "remain, less those granted since or in flight then")
        retry = gauge("tether_provider_retry_after_seconds", "What a refusal's Retry-After "
                      "still asks the scope to wait")
        for scope in self.app.rate_scopes():
            calls.add_metric([scope.scope], scope.calls)
            tokens.add_metric([scope.scope], scope.tokens)
            told = scope.to_dict()["provider"]
            if told is None:
                continue
            if told["requests_left"] is not None:
                requests_left.add_metric([scope.scope], told["requests_left"])
            if told["tokens_left"] is not None:
                tokens_left.add_metric([scope.scope], told["tokens_left"])
            retry.add_metric([scope.scope], told["retry_in_s"])
        return [calls, tokens, requests_left, tokens_left, retry]

    def _budget_paused(self) -> Iterable[Metric]:
        n, period, before = 0, 0, None
        for _ in range(PAUSED_SCAN_LIMIT // 500):
            page = self.app.list(state="paused", before_id=before, limit=500)
            n += sum(1 for job in page if job.error_code == "budget_exhausted")
            period += sum(1 for job in page if job.error_code == "period_budget_exhausted")
            if len(page) < 500:
                break
            before = page[-1].id
        gauge = GaugeMetricFamily("tether_budget_paused_jobs",
                                  "Jobs paused because a budget limit was reached")
        gauge.add_metric([], n)
        periodic = GaugeMetricFamily("tether_period_budget_paused_jobs", "Jobs paused by a "
                                     "project's period limit until the period resets")
        periodic.add_metric([], period)
        return [gauge, periodic]

    def _budgets(self) -> Iterable[Metric]:
        def gauge(name: str, doc: str, *labels: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(name, doc, labels=["project", *labels])

        spent = gauge("tether_project_spent_usd", "USD a project's calls spent to date")
        reserved = gauge("tether_project_reserved_usd", "USD reserved for a project's calls "
                         "in flight")
        limit = gauge("tether_project_budget_limit_usd", "A project's all-time cost limit")
        p_used = gauge("tether_project_period_used_usd", "What a project's cost limit for the "
                       "current period is checked against: settled in it plus in flight",
                       "period")
        p_limit = gauge("tether_project_period_limit_usd", "A project's cost limit per period",
                        "period")
        p_end = gauge("tether_project_period_end_timestamp_seconds", "When a project's "
                      "current budget period ends (unix time)", "period")
        for project in self.app.spent_projects():
            status = self.app.project_budget(project)
            spent.add_metric([project], float(status.used.spent_usd))
            reserved.add_metric([project], float(status.used.reserved_usd))
            cap = status.limits.max_cost_usd
            if status.period_used is None:
                if cap is not None:
                    limit.add_metric([project], float(cap))
                continue
            key = [project, str(status.limits.period)]
            checked = in_period(status.used, status.period_used)
            p_used.add_metric(key, float(checked.spent_usd + checked.reserved_usd))
            if cap is not None:
                p_limit.add_metric(key, float(cap))
            p_end.add_metric(key, float(status.period_end or 0))
        return [spent, reserved, limit, p_used, p_limit, p_end]

    def _spend(self) -> Iterable[Metric]:
        if not hasattr(self.app, "spend_totals"):
            return []
        labels = ["provider", "model"]
        calls = CounterMetricFamily("tether_provider_calls", "Provider calls recorded in the "
                                    "ledger", labels=labels)
        tokens = CounterMetricFamily("tether_provider_tokens", "Provider tokens recorded in the "
                                     "ledger", labels=[*labels, "direction"])
        spend = CounterMetricFamily("tether_spend_usd", "USD recorded in the cost ledger",
                                    labels=labels)
        unconfirmed = CounterMetricFamily(
            "tether_provider_unconfirmed_calls", "Calls whose outcome a crash left unknown "
            "(their reservation counts as spent)", labels=labels)
        for row in self.app.spend_totals():
            key = [str(row.get("provider", "")), str(row.get("model", ""))]
            calls.add_metric(key, float(row.get("calls") or 0))
            tokens.add_metric([*key, "input"], float(row.get("input_tokens") or 0))
            tokens.add_metric([*key, "output"], float(row.get("output_tokens") or 0))
            spend.add_metric(key, float(row.get("cost_usd") or 0))
            unconfirmed.add_metric(key, float(row.get("unconfirmed_calls") or 0))
        return [calls, tokens, spend, unconfirmed]

    def _engine(self) -> Iterable[Metric]:
        if not hasattr(self.app, "engine_stats"):
            return []
        stats: Mapping[str, Any] = self.app.engine_stats() or {}
        out: list[Metric] = []
        for key, name, doc in (
            ("claims_total", "tether_claims", "Jobs claimed by workers (attempts started)"),
            ("lease_expiries_total", "tether_lease_expiries", "Leases that expired"),
            ("budget_pauses_total", "tether_budget_pauses", "Jobs paused by a budget limit"),
            ("budget_thresholds_total", "tether_budget_thresholds",
             "Budget thresholds crossed (each once per budget and period)"),
        ):
            if key in stats:
                metric = CounterMetricFamily(name, doc)
                metric.add_metric([], float(stats[key]))
                out.append(metric)
        latency = stats.get("claim_latency_seconds")
        if isinstance(latency, dict) and "buckets" in latency:
            hist = HistogramMetricFamily("tether_claim_latency_seconds",
                                         "Time from eligible (run_after) to claim")
            buckets = sorted(((float(le), float(n)) for le, n in latency["buckets"].items()),
                             key=lambda b: b[0])
            rendered = [(("+Inf" if le == float("inf") else repr(le)), n) for le, n in buckets]
            if not rendered or rendered[-1][0] != "+Inf":
                rendered.append(("+Inf", float(latency.get("count", 0))))
            hist.add_metric([], rendered, sum_value=float(latency.get("sum", 0)))
            out.append(hist)
        return out


def registry_for(app: Tether) -> CollectorRegistry:
    """A private registry (never the global one) holding this app's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(TetherCollector(app))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
