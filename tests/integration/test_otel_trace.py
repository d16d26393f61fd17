"""One trace across processes: a two-stage job with three calls, its worker SIGKILLed after
the first call, the call replayed from the journal by the next worker, and a child job.

The test process submits inside its own span (the SDK's in-memory exporter); each real
worker process writes the spans it ends to a file (``tests/apps/traced.py``,
``tests/otel.py``). Together they must form exactly one trace, with every parent link, name
and attribute asserted. The killed attempt's own span and its open stage's span were never
ended, so never exported: the call it had finished is there, under a parent that is not.
"""

from __future__ import annotations

import json
import os
import signal

import pytest
from opentelemetry import trace

from tether import JobState, Tether
from tests.apps import traced
from tests.otel import as_dicts, hex_id, in_memory, read_file
from tests.procs import start_worker, stop, wait_until

pytestmark = pytest.mark.slow
APP = "tests.apps.traced:app"


def expire_lease(app: Tether, backend: str, job_id: int) -> None:
    """The killed worker's lease, backdated: the next worker's rescuer takes the job back at
    once (what the lease TTL would do, without waiting for it)."""
    with app.store._write() as tx:
        if backend == "sqlite":
            tx.conn.execute("UPDATE jobs SET lease_expires_at = 0 WHERE id = ?", (job_id,))
        else:
            tx.conn.execute("UPDATE jobs SET lease_expires_at = now() - interval '1 hour' "
                            "WHERE id = %s", (job_id,))


def ordered(rows):
    """Span views in a stable order (their attribute dicts are not comparable)."""
    return sorted(rows, key=lambda r: (r[0], r[1], json.dumps(r[4], sort_keys=True)))


def test_a_killed_and_resumed_pipeline_and_its_child_are_one_trace(backend, database_url,
                                                                   tmp_path, request):
    exporter = in_memory()
    exporter.recording = True
    app = Tether(database_url)
    app.registry = traced.app.registry
    request.addfinalizer(app.close)
    ready, first, second = tmp_path / "ready", tmp_path / "w1.jsonl", tmp_path / "w2.jsonl"
    try:
        with trace.get_tracer("test").start_as_current_span("publish article") as root:
            job = app.submit("traced_pipeline", {"ready": str(ready)})
        w1 = start_worker(database_url, app=APP, concurrency=2, log=tmp_path / "w1.log",
                          env={"TETHER_TEST_SPANS": str(first)})
        try:
            wait_until(ready.exists, timeout=60, what="the first call, then a pause to be killed")
            os.kill(w1.pid, signal.SIGKILL)
            assert w1.wait(10) == -signal.SIGKILL
        finally:
            stop(w1)
        expire_lease(app, backend, job.id)
        w2 = start_worker(database_url, app=APP, concurrency=2, log=tmp_path / "w2.log",
                          env={"TETHER_TEST_SPANS": str(second)})
        try:
            wait_until(lambda: app.get(job.id).terminal, timeout=60, what="the resumed job")
            (child,) = app.list(type="traced_child")
            wait_until(lambda: app.get(child.id).terminal, timeout=60, what="the child job")
        finally:
            stop(w2)
        ours = as_dicts(exporter.get_finished_spans())
    finally:
        exporter.recording = False
        exporter.clear()

    done = app.get(job.id)
    assert (done.state, done.attempt_count) == (JobState.SUCCEEDED, 2)
    assert app.get(child.id).state == JobState.SUCCEEDED
    ledger = {r.key: r for r in app.ledger(job.id)}
    assert sorted(ledger) == ["body", "outline", "review"], "the replayed call was paid once"

    killed, resumed = read_file(first), read_file(second)
    everything = ours + killed + resumed
    sc = root.get_span_context()
    assert {s["context"]["trace_id"] for s in everything} == {hex_id(sc.trace_id, 32)}
    names = {s["context"]["span_id"]: s["name"] for s in everything}
    assert len(names) == len(everything) == 9

    def view(spans):
        return ordered((s["name"], names.get(s["parent_id"], "(not exported)"),
                        s["kind"].removeprefix("SpanKind."), s["status"]["status_code"],
                        s["attributes"]) for s in spans)

    price = app.price_profile.price("simulated", "sim-small")
    reserved = float(price.reservation(traced.ESTIMATE).cost_usd)

    def call(key, stage, journal):
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "simulated",
                 "gen_ai.system": "simulated", "gen_ai.request.model": "sim-small",
                 "gen_ai.request.max_tokens": 20, "tether.job.id": job.id,
                 "tether.call.key": key, "tether.stage": stage, "tether.journal": journal}
        if journal == "miss":
            usage = traced.USAGE[key]
            attrs.update({"tether.reserved_usd": reserved,
                          "gen_ai.usage.input_tokens": usage.input_tokens,
                          "gen_ai.usage.output_tokens": usage.output_tokens,
                          "tether.cost_usd": float(ledger[key].cost_usd)})
            assert ledger[key].cost_usd == price.cost(usage)
        return attrs

    def attempt(of, number):
        return {"tether.job.id": of.id, "tether.job.type": of.type, "tether.project": "default",
                "tether.queue": "default", "tether.attempt": number,
                "tether.outcome": "succeeded"}

    def stage(name):
        return {"tether.job.id": job.id, "tether.stage": name, "tether.checkpoint": "miss"}

    assert view(ours) == [("publish article", "(not exported)", "INTERNAL", "UNSET", {})]
    assert [s["parent_id"] for s in ours] == [None]
    # the killed worker: its first call, ended and exported; its stage and attempt never ended
    assert view(killed) == [("chat sim-small", "(not exported)", "CLIENT", "UNSET",
                             call("outline", "draft", "miss"))]
    assert view(resumed) == ordered([
        ("tether.attempt traced_pipeline", "publish article", "CONSUMER", "UNSET",
         attempt(job, 2)),
        ("tether.stage draft", "tether.attempt traced_pipeline", "INTERNAL", "UNSET",
         stage("draft")),
        ("chat sim-small", "tether.stage draft", "CLIENT", "UNSET",
         call("outline", "draft", "hit")),
        ("chat sim-small", "tether.stage draft", "CLIENT", "UNSET",
         call("body", "draft", "miss")),
        ("tether.stage review", "tether.attempt traced_pipeline", "INTERNAL", "UNSET",
         stage("review")),
        ("chat sim-small", "tether.stage review", "CLIENT", "UNSET",
         call("review", "review", "miss")),
        ("tether.attempt traced_child", "tether.stage review", "CONSUMER", "UNSET",
         attempt(child, 1)),
    ])
    assert sum(s["attributes"].get("tether.cost_usd", 0) for s in everything) == pytest.approx(
        float(sum(r.cost_usd for r in ledger.values())))
