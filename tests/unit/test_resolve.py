"""The batch resolver gives each job exactly what resolving it alone with the full encoder
gives: the same input_config_hash (idempotent repeats keep matching across versions) and the
same errors."""

from decimal import Decimal

import pytest

from tether import Budget, InvalidPayload, UnknownJobType
from tether.core.pricing import load_profile
from tether.core.serialize import config_hash
from tether.errors import InvalidArgument
from tether.registry import JobType, Registry
from tether.submission import Resolver


def registry():
    reg = Registry()
    reg.add(JobType(name="typed", fn=lambda ctx, p: None, queue="q-ü", priority=4,
                    max_attempts=7, budget=Budget(max_calls=3)))
    return reg


def expected_hash(type, payload, project, queue, priority, max_attempts, budget):
    return config_hash({"type": type, "payload": payload, "project": project, "queue": queue,
                        "priority": priority, "max_attempts": max_attempts,
                        "budget": budget.to_dict()})


@pytest.mark.parametrize("payload", [None, 0, -1.5, 1e20, "ü\u2028\"\\", [1, [2, {"z": 1, "a": None}]],
                                     {"b": {"y": 1, "x": 2}, "a": [True, False]}, {}, [], ""])
def test_the_hash_is_the_full_encoders(payload):
    r = Resolver(registry(), load_profile(None), strict=False)
    plain = r.one("plain", payload, project="prj", priority=-2)
    assert plain.input_config_hash == expected_hash("plain", payload, "prj", "default", -2, 3,
                                                    Budget())
    typed = r.one("typed", payload, budget={"max_cost_usd": "1.50"})
    assert typed.input_config_hash == expected_hash(
        "typed", payload, "default", "q-ü", 4, 7,
        Budget(max_calls=3, max_cost_usd=Decimal("1.50")))
    assert (typed.queue, typed.priority, typed.max_attempts) == ("q-ü", 4, 7)


def test_a_batch_resolves_as_its_jobs_one_by_one():
    items = [{"type": "typed", "payload": {"i": i}, "budget": {"max_calls": i % 3 + 1}}
             for i in range(20)] + [{"type": "plain", "payload": i, "queue": "q"} for i in range(5)]
    profile = load_profile(None)
    batch = Resolver(registry(), profile, strict=False).many(items)
    alone = [Resolver(registry(), profile, strict=False).many([it])[0] for it in items]
    assert batch == alone


def test_bad_input_in_a_batch_raises_what_a_single_submit_raises():
    r = Resolver(registry(), load_profile(None), strict=True)
    with pytest.raises(UnknownJobType):
        r.many([{"type": "typed"}, {"type": "nope"}])
    for bad in ({"project": ""}, {"queue": "a\nb"}):
        with pytest.raises(InvalidArgument):
            r.many([{"type": "typed", **bad}])
    for bad, error in (({"priority": True}, InvalidArgument),
                       ({"max_attempts": 0}, InvalidArgument), ({"budget": 3}, InvalidPayload),
                       ({"run_after": "soon"}, InvalidPayload),
                       ({"payload": float("nan")}, InvalidPayload)):
        with pytest.raises(error):
            r.many([{"type": "typed", **bad}])


def test_options_resolved_once_per_shape_still_check_each_job():
    """Jobs sharing a shape reuse its resolution; what is not part of it (payload, key,
    start time) is checked for every job, and a value equal to a cached one but of another
    type (True == 1) is not taken for it."""
    r = Resolver(registry(), load_profile(None), strict=False)
    ok = {"type": "typed", "priority": 1, "max_attempts": 2, "budget": Budget(max_calls=1)}
    for bad, error in (({"priority": True}, InvalidArgument),
                       ({"max_attempts": True}, InvalidArgument),
                       ({"idempotency_key": ""}, InvalidArgument),
                       ({"payload": float("nan")}, InvalidPayload),
                       ({"run_after": "soon"}, InvalidPayload)):
        with pytest.raises(error):
            r.many([ok, ok, {**ok, **bad}])
    first, second = r.many([{**ok, "payload": 1}, {**ok, "payload": 2}])
    assert (first.priority, first.max_attempts, first.budget) == (1, 2, Budget(max_calls=1))
    assert first.input_config_hash != second.input_config_hash
    assert second == Resolver(registry(), load_profile(None), strict=False).one(
        "typed", 2, priority=1, max_attempts=2, budget=Budget(max_calls=1))


def test_a_record_built_without_init_equals_the_constructed_one():
    """``rows.record`` must name every field: the jobs a batch resolves and returns are built
    with it, and compared, copied and serialised like any other."""
    import dataclasses

    from tether.store.base import NewJob
    spec = Resolver(registry(), load_profile(None), strict=False).one("typed", {"a": 1})
    assert set(vars(spec)) == {f.name for f in dataclasses.fields(NewJob)}
    assert spec == NewJob(**vars(spec)) and hash(spec) == hash(NewJob(**vars(spec)))
    assert dataclasses.replace(spec, priority=9).priority == 9
