"""OpenTelemetry traces: a span per attempt, per stage and per provider call, and the trace
context carried from the submitter, through the store, to the worker and on to child jobs.

What is promised:

- **Off costs nothing.** tether imports no OpenTelemetry module of its own: when the application
  has not imported ``opentelemetry.trace`` (the SDK does, so does any instrumentation), no tracer
  provider can be configured and no span can be current, so every hook is a no-op after one
  dictionary lookup. With the API imported but no provider set, an attempt costs one
  ``isinstance`` check and each call and stage one method call on a shared no-op object.
- **The API only.** Spans are made through ``opentelemetry-api``; which SDK, sampler and
  exporter run is the application's choice (``pip install 'tether[otel]'`` brings the SDK and
  the OTLP exporter). tether never sets a tracer provider.
- **One trace per pipeline.** The span current when a job is submitted (``app.submit``, or a
  REST ``traceparent`` header, ``TraceContextMiddleware``) is persisted with the job as its
  W3C trace context (``jobs.trace_context``), so every attempt of the job, on any machine, is
  a child of the submitter's span. Inside an attempt the current span is the attempt's (or its
  stage's), so ``ctx.enqueue`` gives the child job that span as its parent. A job submitted
  outside any span while tracing is on gets a root ``tether.submit`` span, so its attempts
  still share one trace.
- **The ecosystem's names.** A provider call's span follows the OpenTelemetry GenAI semantic
  conventions (name ``{gen_ai.operation.name} {gen_ai.request.model}``, kind CLIENT,
  ``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``; ``gen_ai.system``,
  the name conventions before 1.37 used, is set too), plus tether's own ``tether.job.id``,
  ``tether.cost_usd``, ``tether.reserved_usd`` and ``tether.journal`` (``hit``: answered from
  the journal on replay, no provider call made; ``miss``: reserved and paid now).

A span ends when its work ends; a process killed mid-attempt exports the spans it had ended
(with a synchronous span processor: all of them), never the attempt's own span, and the next
attempt is a new span under the same parent.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from contextvars import ContextVar
from types import ModuleType
from typing import Any
from collections.abc import Iterator, Mapping

TRACER_NAME = "tether"
"""The instrumentation scope of every span tether makes."""

GEN_AI_OPERATION = "chat"
"""``gen_ai.operation.name`` of a ``ctx.call``: tether does not see the request, and chat
completion is what its calls are."""

_INHERITED: ContextVar[str | None] = ContextVar("tether_trace_context", default=None)
"""The running job's stored trace context, for the jobs it submits when no span is current
(tracing off in this worker): a child still joins the submitter's trace elsewhere."""

_ERROR_STATES = frozenset({"failed", "retry_wait", "interrupted"})


def _api() -> ModuleType | None:
    """``opentelemetry.trace`` if this process imported it, else None (then nothing can be
    traced here, and nothing is imported)."""
    return sys.modules.get("opentelemetry.trace")


def _load_api() -> ModuleType | None:
    """``opentelemetry.trace``, imported if installed (a request that carries a trace context
    is worth the one-time import); None without the API."""
    try:
        import opentelemetry.trace as api
    except ImportError:
        return None
    return api


def enabled() -> bool:
    """True when this process has a tracer provider configured (an SDK, or any non-default
    provider): only then are spans made."""
    api = _api()
    if api is None:
        return False
    provider = api.get_tracer_provider()
    return not isinstance(provider, (api.ProxyTracerProvider, api.NoOpTracerProvider))


def _tracer(api: ModuleType) -> Any:
    return api.get_tracer(TRACER_NAME)


# --- the carrier persisted with a job ----------------------------------------------------------

def encode(span_context: Any) -> str | None:
    """A span context as the JSON carrier stored in ``jobs.trace_context``: the W3C
    ``traceparent`` (and ``tracestate``, if any). None for an invalid context."""
    if not span_context.is_valid:
        return None
    carrier = {"traceparent": f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
                              f"{int(span_context.trace_flags):02x}"}
    state = span_context.trace_state.to_header() if span_context.trace_state else ""
    if state:
        carrier["tracestate"] = state
    return json.dumps(carrier, separators=(",", ":"))


def decode(stored: str | None) -> Any:
    """The OpenTelemetry ``Context`` whose (remote) span is the stored carrier's; None when
    there is none, it does not parse, or the API is not imported."""
    if not stored or _api() is None:
        return None
    try:
        carrier = json.loads(stored)
    except ValueError:
        return None
    if not isinstance(carrier, dict):
        return None
    return _extract(carrier)


def _extract(carrier: Mapping[str, str]) -> Any:
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    ctx = TraceContextTextMapPropagator().extract(carrier)
    api = _api()
    if api is None or not api.get_current_span(ctx).get_span_context().is_valid:
        return None
    return ctx


def submit_context(what: str | None = None) -> str | None:
    """The trace context a job submitted now carries: the current span's; inside an attempt
    with tracing off, the running job's own; else, with tracing on, a new root
    ``tether.submit`` span's (ended at once: it marks the moment of submission). None when
    nothing is traced."""
    api = _api()
    if api is not None:
        current = api.get_current_span().get_span_context()
        if current.is_valid:
            return encode(current)
    inherited = _INHERITED.get()
    if inherited is not None:
        return inherited
    if api is None or not enabled():
        return None
    attributes = {"tether.job.type": what} if what else {}
    span = _tracer(api).start_span("tether.submit", kind=api.SpanKind.PRODUCER,
                                   attributes=attributes)
    span.end()
    return encode(span.get_span_context())


# --- spans of an attempt -----------------------------------------------------------------------

class _NoCall:
    """The call span when tracing is off: every method does nothing."""

    __slots__ = ()

    def __enter__(self) -> _NoCall:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def hit(self) -> None:
        pass

    def cached(self) -> None:
        pass

    def reserved(self, reserved_usd: Any) -> None:
        pass

    def settled(self, op: Any) -> None:
        pass


NO_CALL = _NoCall()


class AttemptTrace:
    """An attempt's spans when tracing is off (and the interface of ``_LiveAttempt``, when
    it is on): nothing is made. With a stored trace context, the jobs the attempt submits
    still inherit that context (``submit_context``)."""

    def __init__(self, inherited: str | None = None) -> None:
        self._inherited = _INHERITED.set(inherited) if inherited is not None else None

    def call(self, job_id: int, stage: str | None, key: str, provider: str, model: str,
             max_output_tokens: Any) -> Any:
        return NO_CALL

    @contextmanager
    def stage(self, job_id: int, name: str) -> Iterator[_StageHandle]:
        yield _NO_STAGE

    def end(self, state: str | None, error_code: str | None = None) -> None:
        if self._inherited is not None:
            _INHERITED.reset(self._inherited)
            self._inherited = None


class _StageHandle:
    __slots__ = ("span",)

    def __init__(self, span: Any = None) -> None:
        self.span = span

    def reused(self, value: bool) -> None:
        if self.span is not None:
            self.span.set_attribute("tether.checkpoint", "hit" if value else "miss")


_NO_STAGE = _StageHandle()
NO_TRACE = AttemptTrace()


def attempt(job: Any, lease_attempt: int) -> AttemptTrace:
    """The trace of one attempt of ``job``, started: its span is current in this thread
    until ``end``. The span's parent is the job's stored trace context (the submitter's span),
    or none (a new trace) when it has none."""
    if not enabled():
        return AttemptTrace(job.trace_context) if job.trace_context else NO_TRACE
    api = _api()
    assert api is not None  # enabled() saw it
    return _LiveAttempt(api, job, lease_attempt)


class _LiveAttempt(AttemptTrace):
    """An attempt's spans when a tracer provider is configured."""

    def __init__(self, api: ModuleType, job: Any, attempt: int) -> None:
        super().__init__(None)
        from opentelemetry import context
        self._api, self._context = api, context
        self._tracer = _tracer(api)
        self.span = self._tracer.start_span(
            f"tether.attempt {job.type}", context=decode(job.trace_context),
            kind=api.SpanKind.CONSUMER,
            attributes={"tether.job.id": job.id, "tether.job.type": job.type,
                        "tether.project": job.project, "tether.queue": job.queue,
                        "tether.attempt": attempt})
        self._inner = api.set_span_in_context(self.span)
        self._token = context.attach(self._inner)

    def _parent(self) -> Any:
        """The current context if a span is current (this thread, or a copy of its context);
        otherwise (a thread job code started itself) the attempt's innermost open span."""
        if self._api.get_current_span().get_span_context().is_valid:
            return None
        return self._inner

    def call(self, job_id: int, stage: str | None, key: str, provider: str, model: str,
             max_output_tokens: Any) -> _LiveCall:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": GEN_AI_OPERATION, "gen_ai.provider.name": provider,
            "gen_ai.system": provider, "gen_ai.request.model": model,
            "tether.job.id": job_id, "tether.call.key": key}
        if isinstance(max_output_tokens, int):
            attributes["gen_ai.request.max_tokens"] = max_output_tokens
        if stage is not None:
            attributes["tether.stage"] = stage
        span = self._tracer.start_span(f"{GEN_AI_OPERATION} {model}", context=self._parent(),
                                       kind=self._api.SpanKind.CLIENT, attributes=attributes)
        return _LiveCall(self._api, self._context, span)

    @contextmanager
    def stage(self, job_id: int, name: str) -> Iterator[_StageHandle]:
        span = self._tracer.start_span(f"tether.stage {name}", context=self._parent(),
                                       attributes={"tether.job.id": job_id,
                                                   "tether.stage": name})
        outer = self._inner
        self._inner = self._api.set_span_in_context(span)
        token = self._context.attach(self._inner)
        try:
            yield _StageHandle(span)
        except BaseException as exc:
            _record_error(self._api, span, exc)
            raise
        finally:
            self._context.detach(token)
            self._inner = outer
            span.end()

    def end(self, state: str | None, error_code: str | None = None) -> None:
        """End the attempt's span with its outcome (None: the lease was lost, nothing was
        written) and restore this thread's context."""
        span = self.span
        span.set_attribute("tether.outcome", state or "lease_lost")
        if error_code:
            span.set_attribute("error.type", error_code)
        if state in _ERROR_STATES:
            span.set_status(self._api.Status(self._api.StatusCode.ERROR, error_code))
        self._context.detach(self._token)
        span.end()


class _LiveCall:
    """One provider call's span, current while the call runs (so the provider SDK's own
    instrumentation and HTTP spans nest under it)."""

    __slots__ = ("_api", "_context", "span", "_token")

    def __init__(self, api: ModuleType, context: ModuleType, span: Any) -> None:
        self._api, self._context, self.span = api, context, span

    def __enter__(self) -> _LiveCall:
        self._token = self._context.attach(self._api.set_span_in_context(self.span))
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is not None:
            _record_error(self._api, self.span, exc)
        self._context.detach(self._token)
        self.span.end()

    def hit(self) -> None:
        """Answered from the journal: recorded by an earlier attempt, no provider call."""
        self.span.set_attribute("tether.journal", "hit")

    def cached(self) -> None:
        """Answered from the project's call cache: no provider call, nothing reserved."""
        self.span.set_attributes({"tether.journal": "miss", "tether.cache": "hit"})

    def reserved(self, reserved_usd: Any) -> None:
        """Reserved now: the provider will be called (and paid)."""
        self.span.set_attributes({"tether.journal": "miss",
                                  "tether.reserved_usd": float(reserved_usd)})

    def settled(self, op: Any) -> None:
        """Settled (a ``CallSettle``): the usage the provider reported and what it cost."""
        usage = op.usage
        self.span.set_attributes({"gen_ai.usage.input_tokens": usage.input_tokens,
                                  "gen_ai.usage.output_tokens": usage.output_tokens,
                                  "tether.cost_usd": float(op.price.cost(usage))})


def _record_error(api: ModuleType, span: Any, exc: BaseException) -> None:
    """A span ended by an exception: ``error.type`` is its tether error code (a control
    signal such as a cancel or a budget pause says why the work stopped, without marking the
    span failed); any other exception sets the span's status to ERROR."""
    code = getattr(exc, "code", None) or type(exc).__qualname__
    span.set_attribute("error.type", code)
    if isinstance(exc, Exception):
        span.record_exception(exc)
        span.set_status(api.Status(api.StatusCode.ERROR, str(exc)[:200]))


# --- REST: the caller's traceparent ------------------------------------------------------------

class TraceContextMiddleware:
    """ASGI middleware: a request's W3C ``traceparent`` (and ``tracestate``) header becomes the
    current trace context while the request is handled, so ``POST /api/v1/jobs`` persists the
    caller's span as the job's parent. A span already current (OpenTelemetry's own ASGI
    instrumentation, outside this) wins. Without ``opentelemetry-api`` installed the header
    is ignored."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        carrier = _trace_headers(scope) if scope.get("type") == "http" else None
        if not carrier:
            await self.app(scope, receive, send)
            return
        api = _load_api()
        if api is None or api.get_current_span().get_span_context().is_valid:
            await self.app(scope, receive, send)
            return
        ctx = _extract(carrier)
        if ctx is None:
            await self.app(scope, receive, send)
            return
        from opentelemetry import context
        token = context.attach(ctx)
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)


def _trace_headers(scope: Any) -> dict[str, str] | None:
    carrier: dict[str, str] = {}
    for name, value in scope.get("headers") or ():
        if name in (b"traceparent", b"tracestate"):
            carrier[name.decode()] = value.decode("latin-1")
    return carrier if "traceparent" in carrier else None
