"""The request bodies of a fork and of a retry from a stage (REST; MCP takes the same fields)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .models import BudgetLimits


class ForkRequest(BaseModel):
    """``POST /jobs/{id}/fork``: the stage the fork starts at; its own payload and limits."""

    model_config = ConfigDict(extra="forbid")

    from_stage: str = Field(min_length=1, max_length=200,
                            description="the first stage the fork runs; the source's finished "
                                        "stages before it are reused, not run or paid again")
    payload: Any = Field(None, description="the fork's payload; absent or null: the source's")
    budget: BudgetLimits | None = Field(None, description="the fork's limits; absent: the "
                                                          "source's limits")


class RetryRequest(BaseModel):
    """``POST /jobs/{id}/retry``: optionally the stage to run again from."""

    model_config = ConfigDict(extra="forbid")

    from_stage: str | None = Field(None, min_length=1, max_length=200,
                                   description="drop the job's checkpoints from this stage on "
                                               "and the finished calls of those stages (made "
                                               "and paid again)")
