"""OpenTelemetry SDK set-ups for the tracing tests: an in-memory exporter in the test process,
and a file of finished spans (one JSON object a line) in worker processes.

A process has one global tracer provider, set once. ``in_memory`` installs the test process's
on first use: it hands out the SDK's tracers only while a test records
(``exporter.recording = True``), and no-op tracers otherwise, so the suite's other tests,
run after a tracing test in the same process, make no span and store no trace context.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterable

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SPANS_FILE_ENV = "TETHER_TEST_SPANS"


class _Gated(InMemorySpanExporter):
    def __init__(self) -> None:
        super().__init__()
        self.recording = False


class _Switch(trace.TracerProvider):
    """The SDK's tracers while the exporter records, no-op tracers otherwise."""

    def __init__(self, exporter: _Gated) -> None:
        self.exporter = exporter
        self.sdk = TracerProvider()
        self.sdk.add_span_processor(SimpleSpanProcessor(exporter))

    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        if self.exporter.recording:
            return self.sdk.get_tracer(*args, **kwargs)
        return trace.NoOpTracer()


_exporter = _Gated()
_installed = threading.Lock()


def in_memory() -> _Gated:
    """The test process's exporter (the global provider installed on first use), cleared."""
    with _installed:
        if not isinstance(trace.get_tracer_provider(), _Switch):
            trace.set_tracer_provider(_Switch(_exporter))
    _exporter.clear()
    return _exporter


def spans_to_file(path: str | Path) -> None:
    """This process's spans, each written (and flushed) to ``path`` as it ends: a process
    SIGKILLed later has still exported every span it had ended."""
    out = open(path, "a", buffering=1)
    exporter: SpanExporter = ConsoleSpanExporter(
        out=out, formatter=lambda span: span.to_json(indent=None) + "\n")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)


def configure_from_env() -> None:
    """``spans_to_file`` when ``TETHER_TEST_SPANS`` names a file (worker processes)."""
    path = os.environ.get(SPANS_FILE_ENV)
    if path:
        spans_to_file(path)


def as_dicts(spans: Iterable[ReadableSpan]) -> list[dict[str, Any]]:
    """Finished spans as the file exporter writes them."""
    return [json.loads(s.to_json(indent=None)) for s in spans]


def read_file(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]


def hex_id(value: int, width: int) -> str:
    """An id as the JSON form writes it (``0x`` and zero-padded hex)."""
    return f"0x{value:0{width}x}"
