"""``tether project budget P``: a project's shared limits, and what its jobs have used."""

from __future__ import annotations

from datetime import datetime
from datetime import UTC
from typing import Annotated

import typer
from rich.markup import escape

from .options import (
    DatabaseUrl, Json, MaxCalls, MaxCost, MaxDuration, MaxExamples, MaxInputTokens,
    MaxOutputTokens, Soft, Thresholds, open_app, show_help_if_bare,
)
from .output import emit_json, out
from . import views
from .parse import budget_limits

project_app = typer.Typer(help="Projects: budgets shared by all of a project's jobs.")


@project_app.callback(invoke_without_command=True)
def _group(ctx: typer.Context) -> None:
    show_help_if_bare(ctx)


@project_app.command("budget")
def budget(
    project: Annotated[str, typer.Argument(help="The project.", metavar="PROJECT",
                                           show_default=False)],
    max_cost: MaxCost = None,
    max_calls: MaxCalls = None,
    max_input_tokens: MaxInputTokens = None,
    max_output_tokens: MaxOutputTokens = None,
    max_duration: MaxDuration = None,
    max_examples: MaxExamples = None,
    thresholds: Thresholds = None,
    soft: Soft = None,
    period: Annotated[str | None, typer.Option(
        "--period", help="Count the limits per calendar day, week or month.",
        show_default=False)] = None,
    timezone: Annotated[str | None, typer.Option(
        "--timezone", help="The period's time zone (an IANA name; default UTC).",
        show_default=False)] = None,
    period_resume: Annotated[bool | None, typer.Option(
        "--period-resume/--no-period-resume",
        help="Jobs paused by a period limit resume when the period rolls over.",
        show_default=False)] = None,
    resume: Annotated[bool, typer.Option(
        "--resume/--no-resume",
        help="Let the project's jobs paused by budget_exhausted continue.")] = True,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """Show a project's budget, or change its limits (limits not named stay as they were).

    Example: tether project budget research --max-cost 50 --period day --timezone Europe/Berlin
    """
    limits = budget_limits(max_cost=max_cost, max_calls=max_calls,
                           max_input_tokens=max_input_tokens, max_output_tokens=max_output_tokens,
                           max_duration=max_duration, max_examples=max_examples,
                           thresholds=thresholds, soft=soft)
    limits.update({k: v for k, v in (("period", period), ("timezone", timezone),
                                     ("period_resume", period_resume)) if v is not None})
    app = open_app(database_url)
    status = (app.set_project_budget(project, limits, resume=resume) if limits
              else app.project_budget(project))
    if as_json:
        emit_json(status)
        return
    limit = status.limits.max_cost_usd
    out().print(f"project {escape(project)}: spent ${status.used.spent_usd:.6f}"
                f" (+${status.used.reserved_usd:.6f} reserved)"
                f" of {'$' + str(limit) if limit is not None else 'no cost limit'};"
                f" {status.used.calls} calls")
    if status.period_used is not None:
        used = status.period_used
        ends = datetime.fromtimestamp(status.period_end or 0, tz=UTC)
        out().print(f"this {status.limits.period} ({status.limits.timezone or 'UTC'}, until "
                    f"{ends:%Y-%m-%d %H:%M} UTC): spent ${used.spent_usd:.6f}; "
                    f"{used.calls} calls")
    if status.limits.thresholds or status.limits.soft:
        out().print(f"alerts: {views.alerts(status.limits)}")


@project_app.command("crossings")
def crossings(
    project: Annotated[str, typer.Argument(help="The project.", metavar="PROJECT",
                                           show_default=False)],
    job_id: Annotated[int | None, typer.Option(
        "--job", metavar="ID", min=1, help="Only this job's budget.")] = None,
    scope: Annotated[str | None, typer.Option(
        "--scope", metavar="SCOPE", help="Only 'project' (its own budget) or 'job' budgets.",
        show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Most to show.")] = 50,
    as_json: Json = False,
    database_url: DatabaseUrl = None,
) -> None:
    """The budget thresholds crossed in a project, newest first (docs/alerts.md).

    Example: tether project crossings research --scope project
    """
    found = open_app(database_url).budget_crossings(project, job_id=job_id, scope=scope,
                                                    limit=limit)
    if as_json:
        emit_json([c.to_dict() for c in found])
        return
    if not found:
        out().print(f"project {escape(project)}: no threshold crossed")
    for c in found:
        budget = "project" if c.scope == "project" else f"job {c.budget}"
        period = f" in {c.period}" if c.period else ""
        out().print(f"{c.crossed_at:%Y-%m-%d %H:%M:%S} {budget}: {c.threshold:.0%} of "
                    f"{c.limit_name} {c.limit} reached{period} (used {c.used}) by job "
                    f"{c.job_id}")
