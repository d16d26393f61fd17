"""``tether worker``: run jobs; ``tether workers``: see who is running them.

A worker claims the jobs of its app's job types from the store (only those: other types wait
for their own app's workers), runs them and renews its leases.
SIGTERM or Ctrl-C drains it: it stops claiming, lets running calls finish, hands its leases
back and exits 0.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.markup import escape

from . import system_views
from .options import AppSpec, DatabaseUrl, Json, open_app
from .output import CliError, emit_json, err, out, show


def worker(
    app_spec: AppSpec = None,
    concurrency: Annotated[int, typer.Option(
        "--concurrency", "-c", min=1, help="Jobs run at the same time.")] = 4,
    queues: Annotated[str | None, typer.Option(
        "--queues", "-q", metavar="A,B",
        help="Only these queues (comma-separated) [default: all].")] = None,
    lease_ttl: Annotated[float | None, typer.Option(
        "--lease-ttl", envvar="TETHER_LEASE_TTL", min=1.0, metavar="SECONDS",
        help="How long a claim lasts without a heartbeat [default: 30].")] = None,
    poll_interval: Annotated[float, typer.Option(
        "--poll-interval", min=0.01, metavar="SECONDS",
        help="How often an idle worker looks for work.")] = 0.5,
    prefetch: Annotated[int | None, typer.Option(
        "--prefetch", min=0, metavar="N",
        help="Most jobs held claimed beyond the busy slots while jobs are short; 0 turns "
             "fetch-ahead off [default: 32 per slot, at most 512].")] = None,
    database_url: DatabaseUrl = None,
) -> None:
    """Run a worker until SIGTERM or Ctrl-C (then drain and exit 0).

    Example: tether worker --app myproject.jobs:app --concurrency 8 --queues default,bulk
    """
    from ..worker import process

    app = open_app(database_url, app_spec, require_app=True, purpose="a worker",
                   create=True)
    names = [q.strip() for q in queues.split(",") if q.strip()] if queues else None
    if queues is not None and not names:
        raise CliError("--queues: name at least one queue")
    w = app.worker(concurrency=concurrency, queues=names, lease_ttl=lease_ttl,
                   poll_interval=poll_interval, prefetch=prefetch)
    logging.getLogger("tether.cli").info("worker %s started", w.id)
    err().print(f"[dim]worker {escape(w.id)} started: concurrency {concurrency}, "
                f"queues {escape(','.join(names)) if names else 'all'}, "
                f"lease ttl {w.lease_ttl:g}s, types {escape(', '.join(w.types()))}[/]")
    process.tune()
    w.run()
    err().print(f"[dim]worker {escape(w.id)} stopped after {w.completed} job(s)[/]")


def workers(
    all_: Annotated[bool, typer.Option("--all", help="Include stopped workers.")] = False,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """List workers with their heartbeats and leases."""
    found = open_app(database_url).workers(include_stopped=all_)
    if as_json:
        emit_json(found)
    elif not found:
        out().print("no workers", style="dim")
    else:
        show(system_views.worker_table, found)


def rate_limits(as_json: Json = False, database_url: DatabaseUrl = None) -> None:
    """List the shared rate-limit scopes in use: calls and tokens in the last minute, and what
    each scope's provider last said is left (from its rate-limit headers or a 429)."""
    found = open_app(database_url).rate_scopes()
    if as_json:
        emit_json(found)
    elif not found:
        out().print("no rate-limit scope in use", style="dim")
    else:
        show(system_views.rate_scope_table, found)
