"""Turning command-line text into the values the facade takes: payloads, durations, times, limits.

Every parser raises ``CliError`` (exit 2) with a message that names the flag, never a traceback;
a click parser (``parse_usd``) raises ``ValueError`` and click names the flag.
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime, UTC
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from .output import CliError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?[smhdw])+$")


def parse_duration(text: str, *, flag: str = "duration") -> float:
    """``30d``, ``12h``, ``15m``, ``45s``, ``2w``, combinations such as ``1h30m``, or plain
    seconds (``90``). Returns seconds."""
    raw = text.strip().lower().replace(" ", "")
    try:
        seconds = float(raw)
    except ValueError:
        if not _WHOLE.match(raw):
            raise CliError(f"{flag}: {text!r} is not a duration (use e.g. 30d, 12h, 15m, 90s)",
                           code="invalid_duration") from None
        seconds = sum(float(n) * _UNITS[u] for n, u in _PART.findall(raw))
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise CliError(f"{flag}: {text!r} must be a finite, non-negative duration",
                       code="invalid_duration")
    return seconds


def parse_when(text: str, *, flag: str = "--run-after") -> float:
    """An absolute or relative time as unix seconds: ISO 8601 (``2026-05-01T12:00:00+02:00``;
    without an offset it is UTC), a relative duration from now (``10m``, ``+2h``), or unix
    seconds (``1767225600``)."""
    raw = text.strip()
    if raw.startswith("+"):
        return time.time() + parse_duration(raw[1:], flag=flag)
    if _WHOLE.match(raw.lower()):
        return time.time() + parse_duration(raw, flag=flag)
    try:
        return float(raw)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise CliError(f"{flag}: {text!r} is not a time (use ISO 8601, e.g. 2026-05-01T12:00Z, "
                       "a delay such as 10m, or unix seconds)", code="invalid_time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def parse_json(text: str, *, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                       f"{exc.colno}", code="invalid_payload") from None
    except RecursionError:
        raise CliError(f"{what} is nested too deeply", code="invalid_payload") from None


def read_payload(payload: str | None, payload_file: Path | None) -> Any:
    """The job payload from ``--payload JSON`` or ``--payload-file F`` (``-`` is stdin);
    neither gives ``{}``."""
    if payload is not None and payload_file is not None:
        raise CliError("give --payload or --payload-file, not both")
    if payload_file is not None:
        if str(payload_file) == "-":
            return parse_json(sys.stdin.read(), what="the payload on stdin")
        try:
            text = payload_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise CliError(f"--payload-file: cannot read {payload_file}: {exc.strerror}",
                           code="invalid_payload") from None
        except UnicodeDecodeError:
            raise CliError(f"--payload-file: {payload_file} is not UTF-8 text",
                           code="invalid_payload") from None
        return parse_json(text, what=f"--payload-file {payload_file}")
    if payload is not None:
        return parse_json(payload, what="--payload")
    return {}


def parse_usd(text: str) -> Decimal:
    """``2.50`` or ``$2.50`` as a ``Decimal``. A click parser: its ``ValueError`` becomes
    click's usage error naming the flag (``Invalid value for '--max-cost': ...``)."""
    try:
        return Decimal(text.strip().lstrip("$"))
    except InvalidOperation:
        raise ValueError(f"{text!r} is not an amount in USD (e.g. 2.50)") from None


def budget_limits(*, max_cost: Decimal | None = None, max_calls: int | None = None,
                  max_input_tokens: int | None = None, max_output_tokens: int | None = None,
                  max_duration: str | None = None, max_examples: int | None = None,
                  thresholds: str | None = None, soft: bool | None = None) -> dict[str, Any]:
    """The budget limits named on the command line, keyed as ``Budget`` fields."""
    limits: dict[str, Any] = {
        "max_cost_usd": max_cost,
        "max_calls": max_calls,
        "max_input_tokens": max_input_tokens,
        "max_output_tokens": max_output_tokens,
        "max_duration_s": (parse_duration(max_duration, flag="--max-duration")
                           if max_duration is not None else None),
        "max_examples": max_examples,
        "thresholds": parse_thresholds(thresholds) if thresholds is not None else None,
        "soft": soft,
    }
    return {k: v for k, v in limits.items() if v is not None}


def parse_thresholds(text: str) -> list[str]:
    """``0.5,0.8,1`` (or ``50%,80%``) as the fractions a budget alerts at; ``none``: none.
    Checked by ``Budget`` (each above 0, at most 10), which names the field."""
    if text.strip().lower() in ("", "none"):
        return []
    out = []
    for part in text.split(","):
        part = part.strip()
        if part.endswith("%"):
            try:
                part = str(Decimal(part[:-1]) / 100)
            except InvalidOperation:
                raise CliError(f"--thresholds: {part!r} is not a percentage") from None
        out.append(part)
    return out
