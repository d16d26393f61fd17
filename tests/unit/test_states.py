import itertools

import pytest

from tether import JobStateError
from tether.core.states import (
    TERMINAL, TRANSITIONS, JobState, check_transition, expiry_target, finish_target,
    operator_target,
)

S = JobState

# docs/design.md's state machine, extra transitions included (test_docs.py reads it there).
EXPECTED = {
    (S.QUEUED, S.LEASED), (S.QUEUED, S.CANCELLED), (S.QUEUED, S.PAUSED),
    (S.LEASED, S.RUNNING), (S.LEASED, S.QUEUED), (S.LEASED, S.CANCELLING),
    (S.LEASED, S.PAUSING), (S.LEASED, S.FAILED),
    (S.RUNNING, S.SUCCEEDED), (S.RUNNING, S.FAILED), (S.RUNNING, S.RETRY_WAIT),
    (S.RUNNING, S.PAUSING), (S.RUNNING, S.PAUSED), (S.RUNNING, S.CANCELLING),
    (S.RUNNING, S.QUEUED), (S.RUNNING, S.INTERRUPTED), (S.RUNNING, S.WAITING),
    (S.WAITING, S.QUEUED), (S.WAITING, S.CANCELLED), (S.WAITING, S.PAUSED),
    (S.RETRY_WAIT, S.QUEUED), (S.RETRY_WAIT, S.CANCELLED), (S.RETRY_WAIT, S.PAUSED),
    (S.PAUSING, S.PAUSED), (S.PAUSING, S.CANCELLING), (S.PAUSING, S.SUCCEEDED),
    (S.PAUSING, S.FAILED),
    (S.PAUSED, S.QUEUED), (S.PAUSED, S.CANCELLED),
    (S.CANCELLING, S.CANCELLED),
    (S.INTERRUPTED, S.QUEUED), (S.INTERRUPTED, S.CANCELLED),
    (S.FAILED, S.QUEUED),
}


@pytest.mark.parametrize("src,dst", list(itertools.product(JobState, JobState)))
def test_every_pair(src, dst):
    if (src, dst) in EXPECTED:
        check_transition(src, dst)
    else:
        with pytest.raises(JobStateError) as info:
            check_transition(src, dst)
        assert info.value.code == "invalid_transition"


def test_table_is_exactly_the_expected_edges():
    edges = {(s, d) for s, ds in TRANSITIONS.items() for d in ds}
    assert edges == EXPECTED


def test_succeeded_and_cancelled_absorb_failed_only_leaves_by_retry():
    assert not TRANSITIONS[S.SUCCEEDED] and not TRANSITIONS[S.CANCELLED]
    assert TRANSITIONS[S.FAILED] == {S.QUEUED}
    assert TERMINAL == {S.SUCCEEDED, S.FAILED, S.CANCELLED}


@pytest.mark.parametrize("state,action,expected", [
    (S.QUEUED, "cancel", S.CANCELLED), (S.RUNNING, "cancel", S.CANCELLING),
    (S.LEASED, "cancel", S.CANCELLING), (S.PAUSED, "cancel", S.CANCELLED),
    (S.PAUSING, "cancel", S.CANCELLING), (S.INTERRUPTED, "cancel", S.CANCELLED),
    (S.RUNNING, "pause", S.PAUSING), (S.QUEUED, "pause", S.PAUSED),
    (S.PAUSED, "resume", S.QUEUED), (S.FAILED, "retry", S.QUEUED),
    (S.INTERRUPTED, "requeue", S.QUEUED), (S.WAITING, "cancel", S.CANCELLED),
    (S.WAITING, "pause", S.PAUSED),
])
def test_operator_targets(state, action, expected):
    assert operator_target(action, state) == expected


@pytest.mark.parametrize("state,action", [
    (S.SUCCEEDED, "cancel"), (S.CANCELLED, "cancel"), (S.CANCELLING, "cancel"),
    (S.QUEUED, "resume"), (S.SUCCEEDED, "retry"), (S.RUNNING, "retry"), (S.PAUSED, "pause"),
    (S.CANCELLING, "pause"), (S.QUEUED, "requeue"), (S.WAITING, "resume"),
    (S.WAITING, "retry"), (S.WAITING, "requeue"),
])
def test_operator_rejects(state, action):
    with pytest.raises(JobStateError):
        operator_target(action, state)


def test_finish_sees_cancel():
    for want in (S.SUCCEEDED, S.FAILED, S.RETRY_WAIT, S.PAUSED, S.QUEUED):
        assert finish_target(S.CANCELLING, want) == S.CANCELLED
    assert finish_target(S.PAUSING, S.RETRY_WAIT) == S.PAUSED
    assert finish_target(S.PAUSING, S.WAITING) == S.PAUSED
    assert finish_target(S.CANCELLING, S.WAITING) == S.CANCELLED
    assert finish_target(S.PAUSING, S.SUCCEEDED) == S.SUCCEEDED
    assert finish_target(S.RUNNING, S.SUCCEEDED) == S.SUCCEEDED


def test_expiry_targets():
    assert expiry_target(S.RUNNING, safe_to_retry=True, attempts_left=True) == (S.QUEUED, None)
    assert expiry_target(S.RUNNING, safe_to_retry=False, attempts_left=True) == (
        S.INTERRUPTED, "interrupted")
    assert expiry_target(S.LEASED, safe_to_retry=False, attempts_left=True) == (S.QUEUED, None)
    assert expiry_target(S.RUNNING, safe_to_retry=True, attempts_left=False) == (
        S.FAILED, "interrupted")
    assert expiry_target(S.CANCELLING, safe_to_retry=True, attempts_left=True)[0] == S.CANCELLED
    assert expiry_target(S.PAUSING, safe_to_retry=True, attempts_left=False)[0] == S.PAUSED
