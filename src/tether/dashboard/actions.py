"""Which operator actions each job state allows, derived from the one state machine.

The browser greys out buttons and counts bulk targets with this table; the store still
decides under its row lock, so a stale table can only cause a refused request, never a
wrong transition.
"""

from __future__ import annotations

from ..core.states import OPERATOR_ACTIONS, JobState, operator_target
from ..errors import JobStateError


def allowed_actions() -> dict[str, list[str]]:
    """``{action: [states in which the action is accepted]}`` for every operator action."""
    table: dict[str, list[str]] = {}
    for action in OPERATOR_ACTIONS:
        states = []
        for state in JobState:
            try:
                operator_target(action, state)
            except JobStateError:
                continue
            states.append(str(state))
        table[action] = states
    return table
