"""REST and OpenTelemetry: the W3C ``traceparent`` (and ``tracestate``) of ``POST /api/v1/jobs``
becomes the job's trace parent, persisted with it, so the attempt span a worker makes later
is the caller's child.

A real server (``python -m tether.api``, no tracer provider configured in it: it only
carries the context) on each backend; the job then runs in this process, whose SDK records
the attempt's span.
"""

from __future__ import annotations

import json

import pytest

from tether import Tether
from tether.job import Lease
from tether.worker.executor import execute
from tests.e2e.api_harness import BACKENDS, backend_url, run_server
from tests.otel import as_dicts, in_memory

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{SPAN_ID}-01"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("api-tracing")
    url = backend_url(request.param, d)
    local = Tether(url)

    @local.job("traced")
    def traced(ctx, payload):
        return payload

    local.migrate()
    with run_server(url, d, insecure=True) as srv, srv.client() as client:
        yield client, local
    local.close()


def submit(client, headers):
    r = client.post("/api/v1/jobs", json={"type": "traced", "payload": {"n": 1}},
                    headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_traceparent_becomes_the_parent_of_the_jobs_attempt_span(api):
    client, local = api
    job_id = submit(client, {"traceparent": TRACEPARENT, "tracestate": "vendor=abc"})
    assert json.loads(local.get(job_id).trace_context) == {"traceparent": TRACEPARENT,
                                                           "tracestate": "vendor=abc"}
    exporter = in_memory()
    exporter.recording = True
    try:
        (c,) = local.store.claim("w", queues=None, limit=1, lease_ttl=30)
        assert c.job.id == job_id
        execute(local, c.job, Lease(c.job.id, c.attempt))
        (finished,) = exporter.get_finished_spans()
        (span,) = as_dicts([finished])
    finally:
        exporter.recording = False
        exporter.clear()
    assert (span["name"], span["context"]["trace_id"], span["parent_id"]) == (
        "tether.attempt traced", f"0x{TRACE_ID}", f"0x{SPAN_ID}")
    assert finished.context.trace_state.to_header() == "vendor=abc"
    assert span["attributes"]["tether.job.id"] == job_id


@pytest.mark.parametrize("headers", [
    {},
    {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},  # invalid id
    {"traceparent": "not a trace context"},
    {"tracestate": "vendor=abc"},  # a state without a parent carries nothing
])
def test_a_request_without_a_valid_traceparent_submits_a_job_without_one(api, headers):
    client, local = api
    assert local.get(submit(client, headers)).trace_context is None
