"""Callback tokens kept out of logs and error documents.

A callback URL (``/callbacks/{job_id}/{signal}/{token}``, ``routes_callbacks.py``) carries a
capability in its path. The path of such a request is written with the token replaced by
``[token]`` wherever the API writes a path: uvicorn's access log (a filter on its logger), the
``instance`` of a problem document, and the API's own error log.
"""

from __future__ import annotations

import logging
import re
from typing import Any

_TOKEN_IN_PATH = re.compile(r"(/callbacks/[^/?#\s]*/[^/?#\s]*/)[^/?#\s\"]+")


def redact(text: str) -> str:
    """``text`` with the token of every callback path in it replaced by ``[token]``."""
    return _TOKEN_IN_PATH.sub(r"\1[token]", text)


class RedactCallbackTokens(logging.Filter):
    """Rewrites the arguments of a log record (uvicorn's access log passes the path as one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.msg, str):
            record.msg = redact(record.msg)
        return True


_FILTER = RedactCallbackTokens()


def install(*loggers: Any) -> None:
    """Add the filter to ``loggers`` (default: uvicorn's access and error logs) once."""
    for name in loggers or ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
