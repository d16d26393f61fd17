"""The facade's argument checks: one answer (and one code) for the same input everywhere."""

import pytest

from tether.core import validate
from tether.errors import InvalidArgument, InvalidIdempotencyKey


@pytest.mark.parametrize("value", ["default", "a-b.c_d", "ü", "x" * 200, "with space"])
def test_names_that_pass(value):
    assert validate.name(value, "queue") == value


@pytest.mark.parametrize("value, words", [
    ("", "1 to 200"), ("x" * 201, "1 to 200"), ("a\nb", "control"), ("a\x00", "control"),
    (7, "must be a string"), (None, "must be a string"),
])
def test_names_that_fail_say_which_name_and_why(value, words):
    with pytest.raises(InvalidArgument, match=words) as info:
        validate.name(value, "queue")
    assert info.value.code == "invalid_argument" and str(info.value).startswith("queue name")
    assert info.value.details["argument"] == "queue"


@pytest.mark.parametrize("key", ["doc-42", "!", "~" * 200])
def test_idempotency_keys_that_pass(key):
    assert validate.idempotency_key(key) == key
    assert validate.idempotency_key(None) is None


@pytest.mark.parametrize("key", ["", "a b", "x" * 201, "tab\t", "é", 42])
def test_idempotency_keys_that_fail_are_their_own_code_and_an_invalid_argument(key):
    with pytest.raises(InvalidIdempotencyKey) as info:
        validate.idempotency_key(key)
    assert info.value.code == "invalid_idempotency_key"
    assert isinstance(info.value, InvalidArgument)


def test_text_refuses_nul_only():
    assert validate.text("any\ttext\nat all", "search") == "any\ttext\nat all"
    assert validate.text(None, "search") is None
    with pytest.raises(InvalidArgument, match="NUL"):
        validate.text("a\x00", "reason")
    with pytest.raises(InvalidArgument):
        validate.texts(type="ok", queue="\x00")


@pytest.mark.parametrize("value, expected", [(1, 1), (2**63 - 1, 2**63 - 1), ("42", 42)])
def test_job_ids_in_range(value, expected):
    assert validate.job_id(value) == expected


@pytest.mark.parametrize("value", [0, -1, 2**63, True, 1.0, "x", None])
def test_job_ids_out_of_range_or_of_the_wrong_kind(value):
    with pytest.raises(InvalidArgument):
        validate.job_id(value)


def test_flags_are_bools_only():
    assert validate.flag(False, "resume") is False
    for value in ("false", 0, None):
        with pytest.raises(InvalidArgument, match="true or false"):
            validate.flag(value, "resume")


def test_event_seqs_and_states():
    assert validate.seq(0) == 0 and validate.seq(2**63 - 1) == 2**63 - 1
    for bad in (-1, 2**63, "3", True):
        with pytest.raises(InvalidArgument):
            validate.seq(bad)
    assert validate.state("failed") == "failed" and validate.state(None) is None
    with pytest.raises(InvalidArgument, match="state must be one of"):
        validate.state("sleeping")


def test_priorities_and_attempt_counts_are_what_a_32_bit_integer_holds():
    import enum

    class Level(enum.IntEnum):
        HIGH = -5
    assert validate.priority(2**31 - 1) == 2**31 - 1 and validate.priority(-(2**31 - 1)) < 0
    assert validate.priority(Level.HIGH) == -5 and type(validate.priority(Level.HIGH)) is int
    assert validate.max_attempts(1) == 1 and validate.max_attempts(2**31 - 1) == 2**31 - 1
    for check, bad in ((validate.priority, 2**31), (validate.priority, -2**31),
                       (validate.priority, True), (validate.priority, 1.0),
                       (validate.max_attempts, 0), (validate.max_attempts, 2**31),
                       (validate.max_attempts, "3")):
        with pytest.raises(InvalidArgument) as info:
            check(bad)
        assert info.value.details["argument"] == check.__name__


def test_pages_are_counts_both_stores_hold():
    validate.page(None, 0)
    validate.page(2**63 - 1, 2**63 - 1)
    for before_id, limit, argument in ((None, -1, "limit"), (None, 2**63, "limit"),
                                       (-1, 5, "before_id"), ("5", 5, "before_id"),
                                       (None, 1.5, "limit")):
        with pytest.raises(InvalidArgument) as info:
            validate.page(before_id, limit)
        assert info.value.details["argument"] == argument


def test_a_time_is_one_a_datetime_holds():
    from datetime import UTC, datetime, timedelta, timezone

    from tether.clock import LAST_TS, to_ts
    assert to_ts(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)) == LAST_TS
    assert to_ts(datetime(2026, 1, 1)) == datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert to_ts(0) == 0.0 and to_ts(None) is None
    for bad in (LAST_TS + 1, float("inf"), float("nan"), -1e12, 10**400,
                datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))):
        with pytest.raises(ValueError, match="years 1 to 9999"):
            to_ts(bad)
