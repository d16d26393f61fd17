-- OpenTelemetry: the W3C trace context of the submitter (src/tether/tracing.py), as a JSON
-- carrier ({"traceparent": ..., "tracestate": ...}), so a worker on another machine parents the
-- job's attempts under the span that submitted it. NULL: submitted outside any trace.
ALTER TABLE jobs ADD COLUMN trace_context text;
