"""The examples limit is part of the reservation check: a call holds room for one example
while it is in flight, and none is reserved once the limit is full."""

from decimal import Decimal

from tether.core.budget import Budget, Counters, Reservation, exceeded_limit

CALL = Reservation(cost_usd=Decimal("0.01"), input_tokens=10, output_tokens=10)
LIMITS = Budget(max_examples=2)


def test_a_call_fits_while_examples_and_calls_in_flight_leave_room() -> None:
    assert exceeded_limit(LIMITS, Counters(examples=1), CALL) is None
    assert exceeded_limit(LIMITS, Counters(reserved_calls=1), CALL) is None


def test_a_call_is_refused_once_examples_fill_the_limit() -> None:
    assert exceeded_limit(LIMITS, Counters(examples=2), CALL) == "max_examples"


def test_calls_in_flight_hold_their_examples_room() -> None:
    assert exceeded_limit(LIMITS, Counters(examples=1, reserved_calls=1), CALL) == "max_examples"


def test_no_examples_limit_refuses_nothing() -> None:
    assert exceeded_limit(Budget(), Counters(examples=10**6, reserved_calls=10**6), CALL) is None
