"""Which PostgreSQL failures are transient, and retrying them without doing anything twice.

A worker must outlive a database restart: a job that already made its side effect must still
get its outcome recorded once the server is back, or another worker would run it again. So
store operations that fail with a lost connection, a server shutting down or starting up, a
pool timeout, a deadlock or a serialization failure are retried with backoff for a bounded
window; after it, they raise ``StoreError`` and the worker loop backs off on its own.

The one subtle case is a failure *during COMMIT*: the transaction may or may not have
committed. Such an operation is retried only if running it twice is harmless (``claim``,
``start``, ``finish``, ... are compare-and-sets on the lease; reads change nothing);
anything else (a submit without idempotency key, an appended event) raises ``StoreError``
rather than risk a duplicate. A failure before COMMIT never committed, so it is always retried.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from typing import Any
from collections.abc import Callable, Iterable

import psycopg
from psycopg_pool import PoolTimeout

from ...errors import InvalidPayload, StorageFull, StoreError, TetherError

log = logging.getLogger("tether.store.postgres")

# 08: connection exceptions; 57P01-3: admin/crash shutdown, cannot connect now; 53300: too
# many connections; 40001/40P01: serialization failure, deadlock (the transaction rolled back).
_TRANSIENT_STATES = ("57P01", "57P02", "57P03", "53300", "40001", "40P01")


class TransientStoreError(StoreError):
    """A store operation failed for a reason that may pass (the database went away)."""

    code = "store_unavailable"

    def __init__(self, message: str, *, during_commit: bool = False) -> None:
        super().__init__(message)
        self.during_commit = during_commit


def translate(exc: BaseException, *, conn: Any = None,
              during_commit: bool = False) -> TetherError:
    """A psycopg (or pool) failure as a tether error (``StoreError``, transient ones marked)."""
    if isinstance(exc, TetherError):
        return exc
    state = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, PoolTimeout):
        return TransientStoreError(f"no PostgreSQL connection available: {exc}")
    broken = conn is not None and getattr(conn, "broken", False)
    if broken or state.startswith("08") or state in _TRANSIENT_STATES or (
            isinstance(exc, psycopg.OperationalError) and not state):
        return TransientStoreError(f"PostgreSQL unavailable: {_first_line(exc)}",
                                   during_commit=during_commit)
    if state == "22P05":  # e.g. "\u0000" in JSON: text that PostgreSQL cannot store
        return InvalidPayload(f"PostgreSQL cannot store this value: {_first_line(exc)}")
    if state == "53100":
        return StorageFull(f"PostgreSQL could not write: {_first_line(exc)}")
    return StoreError(f"PostgreSQL error: {_first_line(exc)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def retrying(fn: Callable[..., Any], *, idempotent: bool) -> Callable[..., Any]:
    """Wrap a store method: transient failures are retried until ``self.retry_timeout``."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("conn") is not None:  # the caller's transaction is theirs to retry
            return fn(self, *args, **kwargs)
        deadline = time.monotonic() + self.retry_timeout
        delay = 0.05
        while True:
            try:
                return fn(self, *args, **kwargs)
            except TransientStoreError as exc:
                if exc.during_commit and not idempotent:
                    raise StoreError(f"{fn.__name__}: connection lost while committing; "
                                     f"the outcome is unknown ({exc})") from exc
                if time.monotonic() + delay > deadline:
                    raise
                log.warning("%s: %s; retrying in %.2fs", fn.__name__, exc, delay)
                self._recover()
                time.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, 1.0)

    wrapper.__tether_retrying__ = True  # type: ignore[attr-defined]
    return wrapper


def retry_transient(*, idempotent: Iterable[str], never: Iterable[str]) -> Callable[[type], type]:
    """Class decorator: every public method (inherited ones included) is wrapped by
    ``retrying``, except those in ``never``; those in ``idempotent`` are retried even when
    the connection broke during COMMIT."""
    idempotent, never = set(idempotent), set(never)

    def decorate(cls: type) -> type:
        for name in dir(cls):
            if name.startswith("_") or name in never:
                continue
            fn = getattr(cls, name)
            if not callable(fn) or isinstance(fn, type) or getattr(fn, "__tether_retrying__",
                                                                   False):
                continue
            setattr(cls, name, retrying(fn, idempotent=name in idempotent))
        return cls

    return decorate
