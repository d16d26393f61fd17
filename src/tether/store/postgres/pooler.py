"""Behind a transaction-pooling PgBouncer: how a URL says so, and what the store does then.

In transaction pooling mode (PgBouncer's ``pool_mode = transaction``) each transaction, and
each autocommit statement, may run on a different server session, and another client's work
may run on this one in between. So nothing may outlive a transaction:

* Prepared statements: psycopg prepares a statement on its fifth run, on the session; behind
  the pooler the next run may reach a session that lacks it, or holds another client's
  statement of the same name. Pooled connections never prepare (``prepare_threshold=None``).
* LISTEN holds a session: it goes on a direct connection (``listen_url=``, else the
  ``TETHER_LISTEN_URL`` environment variable). Without one the store does not LISTEN, logs one
  warning, and workers find work by polling on their interval.
* ``migrate()`` takes a transaction-level advisory lock (on every connection, pooled or not),
  so the lock is held and released by the one session that ran the transaction.
* The schema: PgBouncer 1.18 refuses the ``options`` startup parameter, so
  ``?options=-csearch_path=...`` cannot pass through it. Name the schema in PgBouncer's
  database entry (``connect_query='SET search_path TO ...'``) or as the role's default
  (``ALTER ROLE ... SET search_path``). The listener LISTENs on the channel of the schema the
  pooled connections use, whatever the direct URL's own search_path.

The URL says so with the query parameter ``pooler=transaction``
(``postgresql://app@pgbouncer:6432/db?pooler=transaction``), which tether removes before libpq
sees it; the store option ``pooler="transaction"`` does the same. A marker in the URL goes
wherever the URL goes (``TETHER_DATABASE_URL``, ``--database-url``), so a process can never
have the URL without knowing what sits behind it.
"""

from __future__ import annotations

import logging
import os
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ...errors import ConfigurationError

log = logging.getLogger("tether.store.postgres")

PARAM = "pooler"
MODES = ("transaction",)
LISTEN_URL_ENV = "TETHER_LISTEN_URL"


def split_pooler(url: str, pooler: str | None = None) -> tuple[str, str | None]:
    """``url`` without tether's ``pooler`` query parameter, and the pooling mode it or the
    ``pooler`` option names (``None``: a direct connection, or a session pooler)."""
    parts = urlsplit(url)
    items = [item for item in parts.query.split("&") if item]
    named = [unquote(item.partition("=")[2]) for item in items
             if unquote(item.partition("=")[0]) == PARAM]
    if named:  # the other parameters stay exactly as written
        url = urlunsplit(parts._replace(query="&".join(
            item for item in items if unquote(item.partition("=")[0]) != PARAM)))
        if pooler is not None and pooler != named[-1]:
            raise ConfigurationError(f"pooler={pooler!r} contradicts the URL's "
                                     f"pooler={named[-1]!r}")
        pooler = named[-1]
    if pooler is not None and pooler not in MODES:
        raise ConfigurationError(f"unsupported pooler {pooler!r}: use pooler=transaction for "
                                 "a transaction-pooling PgBouncer (a session pooler needs "
                                 "nothing)")
    return url, pooler


def listen_url(option: str | None) -> str | None:
    """The direct URL for LISTEN: the ``listen_url`` option, else ``TETHER_LISTEN_URL``."""
    return option if option is not None else (os.environ.get(LISTEN_URL_ENV) or None)


def pool_kwargs(pooler: str | None) -> dict[str, Any]:
    """Connection settings pooled connections need behind ``pooler``."""
    return {"prepare_threshold": None} if pooler == "transaction" else {}


def warn_polling() -> None:
    log.warning("the database URL goes through a transaction pooler (pooler=transaction) and "
                "no direct URL for LISTEN is set (%s, or listen_url=): LISTEN/NOTIFY is off, "
                "workers find new jobs by polling on their interval", LISTEN_URL_ENV)


def warn_if_proxied(pooler: str | None, reported_pid: int, server_pid: int) -> None:
    """A pooler hands its clients a process id of its own: a connection whose reported id
    is not its server session's goes through one. Say what to do if it pools transactions."""
    if pooler is None and reported_pid != server_pid:
        log.warning("the database URL seems to go through a connection pooler (the "
                    "connection's process id is not the server session's); if it pools "
                    "transactions (PgBouncer pool_mode = transaction) add ?pooler=transaction "
                    "to the URL and set %s to a direct URL", LISTEN_URL_ENV)


def max_size_from_env() -> int:
    """The pool's size when the code does not choose one: ``TETHER_PG_POOL_MAX`` (default 10).
    A worker's threads queue for a connection beyond it; every process holds at most this many
    plus one for LISTEN, so the fleet's total is the operator's to bound (PgBouncer beyond)."""
    raw = os.environ.get("TETHER_PG_POOL_MAX", "10")
    try:
        size = int(raw)
    except ValueError:
        size = 0
    if size < 1:
        raise ConfigurationError(f"TETHER_PG_POOL_MAX must be a positive integer, got {raw!r}")
    return size
