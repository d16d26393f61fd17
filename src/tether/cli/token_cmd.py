"""``tether token``: API tokens for the REST API, MCP over HTTP and the dashboard.

``create --project P [--project Q]`` makes a token scoped to those projects; ``create --admin``
makes an unrestricted operator token. The secret is printed once, on stdout, and only its hash
is stored: a lost secret cannot be recovered, only revoked and replaced.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from .options import DatabaseUrl, Json, open_app
from .output import EXIT_NOT_FOUND, CliError, emit_json, note, out, when

token_app = typer.Typer(name="token", no_args_is_help=True,
                        help="Create, list and revoke API tokens (bearer secrets).")


def _check_project(name: str) -> str:
    if not name or len(name) > 200 or not name.isprintable():
        raise CliError(f"project must be a non-empty printable name of at most 200 characters, "
                       f"got {name!r}", code="invalid_project")
    return name


@token_app.command("create")
def create(
    project: Annotated[list[str] | None, typer.Option(
        "--project", metavar="PROJECT",
        help="A project the token may see and act on (repeat for several).")] = None,
    admin: Annotated[bool, typer.Option(
        "--admin", help="An operator token: every project, queues, workers and metrics.")] = False,
    name: Annotated[str | None, typer.Option(
        "--name", help="A label shown by `tether token list`.")] = None,
    database_url: DatabaseUrl = None,
    json_out: Json = False,
) -> None:
    """Create a token and print its secret (shown this once)."""
    projects = [_check_project(p) for p in (project or [])]
    if admin == bool(projects):
        raise CliError("pass --project PROJECT (repeatable) or --admin, not both and not neither",
                       code="usage_error")
    app = open_app(database_url)
    info, secret = app.store.create_token(name=name, projects=projects, admin=admin)
    if json_out:
        emit_json({**info.to_dict(), "secret": secret})
        return
    typer.echo(secret)
    scope = "admin (all projects)" if info.admin else ", ".join(info.projects)
    note(f"token {info.id} for {scope}: the secret above is shown only now; "
         "send it as 'Authorization: Bearer <secret>'")


@token_app.command("list")
def list_tokens(database_url: DatabaseUrl = None, json_out: Json = False) -> None:
    """List tokens (never their secrets), revoked ones included."""
    app = open_app(database_url)
    tokens = app.store.list_tokens()
    if json_out:
        emit_json([t.to_dict() for t in tokens])
        return
    table = Table("ID", "NAME", "SCOPE", "CREATED", "REVOKED")
    for t in tokens:
        scope = "admin" if t.admin else ", ".join(t.projects)
        table.add_row(t.id, t.name or "", scope, when(t.created_at), when(t.revoked_at))
    out().print(table)


@token_app.command("revoke")
def revoke(
    token_id: Annotated[str, typer.Argument(metavar="ID", help="The token id (from `list`).")],
    database_url: DatabaseUrl = None,
) -> None:
    """Revoke a token: requests bearing it are refused from now on."""
    app = open_app(database_url)
    if not app.store.revoke_token(token_id):
        raise CliError(f"no live token with id {token_id!r}", code="token_not_found",
                       exit_code=EXIT_NOT_FOUND)
    note(f"token {token_id} revoked")
