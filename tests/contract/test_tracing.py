"""OpenTelemetry traces in one process, on every backend: the spans of an attempt, its stages
and its calls, their parents and attributes exactly; the submitter's context persisted with
the job; a child job parented under the span that enqueued it; a journal hit on replay.

The test process's global tracer provider is the SDK's with an in-memory exporter
(``tests/otel.py``). The multi-process show (SIGKILL, two workers, one trace) is
``tests/integration/test_otel_trace.py``; the REST ``traceparent`` is
``tests/e2e/test_api_tracing.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from opentelemetry import trace

from tether import BudgetExhausted, Estimate, JobState, Metered, TransientError, Usage
from tether.job import Lease
from tether.worker.executor import execute
from tests.otel import as_dicts, hex_id, in_memory

ROOT = Path(__file__).resolve().parents[2]
ESTIMATE = Estimate(input_tokens=10, max_output_tokens=5)


@pytest.fixture
def spans():
    exporter = in_memory()
    exporter.recording = True
    yield exporter
    exporter.recording = False
    exporter.clear()


def claim_and_run(app):
    (c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
    execute(app, c.job, Lease(c.job.id, c.attempt))
    return app.get(c.job.id)


def sim_call(ctx, key, usage=Usage(10, 5)):
    return ctx.call(key=key, provider="simulated", model="sim-small", estimate=ESTIMATE,
                    fn=lambda: Metered({"k": key}, usage))


def finished(exporter):
    """The finished spans as dicts, with ``parent`` resolved to the parent's name (or the
    raw id when the parent is not among them)."""
    out = as_dicts(exporter.get_finished_spans())
    names = {s["context"]["span_id"]: s["name"] for s in out}
    for s in out:
        s["parent"] = names.get(s["parent_id"], s["parent_id"])
    return out


def call_attributes(app, job_id, key, stage, journal, usage=Usage(10, 5)):
    """What a settled (``miss``) or replayed (``hit``) call's span says, exactly."""
    price = app.price_profile.price("simulated", "sim-small")
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "simulated",
             "gen_ai.system": "simulated", "gen_ai.request.model": "sim-small",
             "gen_ai.request.max_tokens": 5, "tether.job.id": job_id, "tether.call.key": key,
             "tether.stage": stage, "tether.journal": journal}
    if journal == "miss":
        attrs.update({"tether.reserved_usd": float(price.reservation(ESTIMATE).cost_usd),
                      "gen_ai.usage.input_tokens": usage.input_tokens,
                      "gen_ai.usage.output_tokens": usage.output_tokens,
                      "tether.cost_usd": float(price.cost(usage))})
    if stage is None:
        del attrs["tether.stage"]
    return attrs


def attempt_attributes(job, attempt, outcome, **extra):
    return {"tether.job.id": job.id, "tether.job.type": job.type,
            "tether.project": job.project, "tether.queue": job.queue,
            "tether.attempt": attempt, "tether.outcome": outcome, **extra}


def test_stages_calls_and_a_child_job_form_one_trace_under_the_submitter(app, spans):
    def plan(ctx, payload):
        return ctx.map(lambda k: sim_call(ctx, k), ["p1", "p2"], concurrency=2)

    def write(ctx, outs):
        sim_call(ctx, "w1", Usage(7, 3))
        ctx.enqueue("child", {"n": len(outs)}, key="notify")
        return {"n": len(outs)}

    app.pipeline("pipe", [plan, write])

    @app.job("child")
    def child(ctx, payload):
        return payload

    with trace.get_tracer("test").start_as_current_span("caller") as caller:
        job = app.submit("pipe", {})
    sc = caller.get_span_context()
    assert json.loads(job.trace_context) == {
        "traceparent": f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"}
    assert app.get(job.id).trace_context == job.trace_context
    assert claim_and_run(app).state == JobState.SUCCEEDED
    (kid,) = app.list(type="child")
    assert claim_and_run(app).state == JobState.SUCCEEDED

    got = finished(spans)
    assert {s["context"]["trace_id"] for s in got} == {hex_id(sc.trace_id, 32)}
    shape = sorted((s["name"], s["parent"], s["kind"], s["status"]["status_code"])
                   for s in got)
    assert shape == sorted([
        ("caller", None, "SpanKind.INTERNAL", "UNSET"),
        ("tether.attempt pipe", "caller", "SpanKind.CONSUMER", "UNSET"),
        ("tether.stage plan", "tether.attempt pipe", "SpanKind.INTERNAL", "UNSET"),
        ("chat sim-small", "tether.stage plan", "SpanKind.CLIENT", "UNSET"),
        ("chat sim-small", "tether.stage plan", "SpanKind.CLIENT", "UNSET"),
        ("tether.stage write", "tether.attempt pipe", "SpanKind.INTERNAL", "UNSET"),
        ("chat sim-small", "tether.stage write", "SpanKind.CLIENT", "UNSET"),
        ("tether.attempt child", "tether.stage write", "SpanKind.CONSUMER", "UNSET"),
    ])
    attrs = {(s["name"], s["attributes"].get("tether.call.key")): s["attributes"] for s in got}
    assert attrs[("tether.attempt pipe", None)] == attempt_attributes(job, 1, "succeeded")
    assert attrs[("tether.attempt child", None)] == attempt_attributes(kid, 1, "succeeded")
    assert attrs[("tether.stage plan", None)] == {
        "tether.job.id": job.id, "tether.stage": "plan", "tether.checkpoint": "miss"}
    for key in ("p1", "p2"):
        assert attrs[("chat sim-small", key)] == call_attributes(app, job.id, key, "plan",
                                                                 "miss")
    assert attrs[("chat sim-small", "w1")] == call_attributes(app, job.id, "w1", "write",
                                                              "miss", Usage(7, 3))
    ledger = {r.key: r for r in app.ledger(job.id)}
    for key in ("p1", "p2", "w1"):
        span = attrs[("chat sim-small", key)]
        assert span["tether.cost_usd"] == float(ledger[key].cost_usd)
        assert span["gen_ai.usage.output_tokens"] == ledger[key].output_tokens


def test_a_replayed_call_is_a_journal_hit_and_each_attempt_is_a_child_of_the_submitter(
        app, clock, spans):
    paid = []

    @app.job("flaky", max_attempts=3)
    def flaky(ctx, payload):
        sim_call(ctx, "k0")
        if ctx.attempt == 1:
            raise TransientError("upstream hiccup", status=503)
        paid.append(ctx.attempt)
        return sim_call(ctx, "k1")

    with trace.get_tracer("test").start_as_current_span("caller"):
        job = app.submit("flaky", {})
    assert claim_and_run(app).state == JobState.RETRY_WAIT
    clock.advance(3600)
    app.store.promote_due()
    assert claim_and_run(app).state == JobState.SUCCEEDED

    got = finished(spans)
    attempts = sorted((s for s in got if s["name"] == "tether.attempt flaky"),
                      key=lambda s: s["attributes"]["tether.attempt"])
    assert [(s["parent"], s["status"]["status_code"]) for s in attempts] == [
        ("caller", "ERROR"), ("caller", "UNSET")]
    assert attempts[0]["attributes"] == attempt_attributes(
        job, 1, "retry_wait", **{"error.type": "transient"})
    assert attempts[1]["attributes"] == attempt_attributes(job, 2, "succeeded")
    calls = [(s["parent_id"], s["attributes"]) for s in got if s["name"] == "chat sim-small"]
    ids = [a["context"]["span_id"] for a in attempts]
    assert sorted(calls, key=lambda c: (ids.index(c[0]), c[1]["tether.call.key"])) == [
        (ids[0], call_attributes(app, job.id, "k0", None, "miss")),
        (ids[1], call_attributes(app, job.id, "k0", None, "hit")),
        (ids[1], call_attributes(app, job.id, "k1", None, "miss")),
    ]
    assert paid == [2] and len(app.ledger(job.id)) == 2


def test_a_call_refused_by_the_budget_says_why_without_failing_its_span(app, spans):
    @app.job("thrifty")
    def thrifty(ctx, payload):
        sim_call(ctx, "k0")
        return sim_call(ctx, "k1")

    job = app.submit("thrifty", {}, budget={"max_calls": 1})
    assert claim_and_run(app).state == JobState.PAUSED
    got = {(s["name"], s["attributes"].get("tether.call.key")): s for s in finished(spans)}
    refused = got[("chat sim-small", "k1")]
    assert refused["attributes"]["error.type"] == BudgetExhausted.code
    assert "tether.journal" not in refused["attributes"]
    assert refused["status"]["status_code"] == "UNSET"
    attempt = got[("tether.attempt thrifty", None)]
    assert attempt["attributes"] == attempt_attributes(
        job, 1, "paused", **{"error.type": "budget_exhausted"})
    assert attempt["parent"] == "tether.submit"  # submitted outside any span: the next test


def test_a_job_submitted_outside_any_span_gets_a_root_submit_span(app, spans):
    @app.job("plain")
    def plain(ctx, payload):
        return 1

    app.submit("plain", {})
    claim_and_run(app)
    got = {s["name"]: s for s in finished(spans)}
    root = got["tether.submit"]
    assert (root["parent_id"], root["kind"]) == (None, "SpanKind.PRODUCER")
    assert root["attributes"] == {"tether.job.type": "plain"}
    assert got["tether.attempt plain"]["parent_id"] == root["context"]["span_id"]
    assert got["tether.attempt plain"]["context"]["trace_id"] == root["context"]["trace_id"]


OFF = r"""
import json, sys
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from tether import Tether, tracing
from tether.job import Lease
from tether.worker.executor import execute

app = Tether("sqlite:///" + sys.argv[1])
seen = {}

@app.job("parent")
def parent(ctx, payload):
    seen["trace"] = type(ctx.trace).__name__
    return ctx.enqueue("kid", {}, key="k").id

@app.job("kid")
def kid(ctx, payload):
    return 1

remote = SpanContext(0xabc, 0xdef, is_remote=True, trace_flags=TraceFlags(1))
with trace.use_span(NonRecordingSpan(remote)):
    job = app.submit("parent", {})
(c,) = app.store.claim("w", queues=None, limit=1, lease_ttl=30)
execute(app, c.job, Lease(c.job.id, c.attempt))
child = app.get(app.get(job.id).result)
print(json.dumps([tracing.enabled(), seen["trace"], job.trace_context, child.trace_context,
                  tracing._INHERITED.get()]))
"""


def test_without_a_tracer_provider_no_span_is_made_and_the_context_still_carries(tmp_path):
    """The API imported, no SDK configured: attempts make no spans, yet the submitter's
    context is persisted and a child job inherits it, so a traced worker elsewhere still
    joins the trace; the thread's context is left as it was found."""
    proc = subprocess.run([sys.executable, "-c", OFF, str(tmp_path / "t.db")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    carrier = json.dumps({"traceparent": f"00-{0xabc:032x}-{0xdef:016x}-01"},
                         separators=(",", ":"))
    assert json.loads(proc.stdout) == [False, "AttemptTrace", carrier, carrier, None]
