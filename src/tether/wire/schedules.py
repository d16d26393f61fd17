"""The wire shapes of schedules (``/api/v1/schedules``), shared by REST and the dashboard."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..records import Schedule
from .models import BudgetLimits


class ScheduleCreate(BaseModel):
    """``POST /schedules``: create a schedule, or redefine the one of that name."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200,
                      description="1-120 of A-Z a-z 0-9 . _ : - (others: invalid_argument)")
    cron: str = Field(min_length=1, max_length=200,
                      description="five fields (minute hour day month weekday) or @daily ...")
    timezone: str = Field("UTC", min_length=1, max_length=200,
                          description="IANA zone the cron's wall-clock times are in")
    type: str = Field(min_length=1, max_length=200, description="the job type each tick enqueues")
    payload: Any = Field(None, description="any JSON value, handed to each tick's job")
    project: str | None = Field(None, min_length=1, max_length=200,
                                description="defaults to the token's only project (admin: default)")
    queue: str | None = Field(None, min_length=1, max_length=200)
    budget: BudgetLimits | None = None
    catch_up: Literal["latest", "all", "none"] = Field(
        "latest", description="ticks missed while no scheduler ran: the most recent, all, none")


class ScheduleOut(BaseModel):
    name: str
    cron: str
    timezone: str
    catch_up: str
    type: str
    project: str
    queue: str
    payload: Any = None
    budget: dict[str, Any]
    priority: int
    max_attempts: int
    paused: bool
    next_run_at: datetime | None = Field(description="the next tick to enqueue; null while paused")
    last_run_at: datetime | None = Field(description="the last tick enqueued")
    last_job_id: int | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, s: Schedule) -> ScheduleOut:
        return cls(**asdict(s))


class ScheduleList(BaseModel):
    items: list[ScheduleOut]
