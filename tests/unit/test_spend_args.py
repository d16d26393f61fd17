"""What a spend report may be asked (``tether.core.spend``): the grouping, the window edges,
the zone, and money as canonical text."""

from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from tether.core.spend import SpendRow, money_text, parse_by, parse_time, total, zone
from tether.errors import InvalidArgument

NOW = datetime(2026, 5, 1, 12, tzinfo=timezone.utc).timestamp()


def test_by_takes_text_or_a_sequence_in_order():
    assert parse_by("model, project") == ("model", "project")
    assert parse_by(["day", "job_type", "stage"]) == ("day", "job_type", "stage")
    assert parse_by("") == parse_by(()) == ()
    for bad in ("model,model", "colour", ["project", 3], "project;model"):
        with pytest.raises(InvalidArgument):
            parse_by(bad)


@pytest.mark.parametrize("value, expected", [
    (None, None),
    ("7d", NOW - 7 * 86400),
    ("1h30m", NOW - 5400),
    ("2W", NOW - 14 * 86400),
    ("2026-04-30", datetime(2026, 4, 30, tzinfo=timezone.utc).timestamp()),
    ("2026-04-30T10:00:00+02:00", datetime(2026, 4, 30, 8, tzinfo=timezone.utc).timestamp()),
    (datetime(2026, 4, 30), datetime(2026, 4, 30, tzinfo=timezone.utc).timestamp()),
    (datetime(2026, 4, 30, tzinfo=timezone(timedelta(hours=-5))),
     datetime(2026, 4, 30, 5, tzinfo=timezone.utc).timestamp()),
    (1_700_000_000, 1_700_000_000.0),
])
def test_times_absolute_or_back_from_now(value, expected):
    assert parse_time(value, now=NOW, what="since") == expected


@pytest.mark.parametrize("value", ["yesterday", "7", "-7d", "7 days", "", True, float("nan"),
                                   1e300, "9" * 5000 + "d", "99999999999d", [1]])
def test_anything_else_is_refused_naming_the_argument(value):
    with pytest.raises(InvalidArgument) as info:
        parse_time(value, now=NOW, what="until")
    assert info.value.details["argument"] == "until"


def test_zones_are_iana_names_and_utc_is_the_default():
    assert zone(None) is None and zone("UTC") is None
    assert zone("Europe/Paris") == "Europe/Paris" and zone("Etc/UTC") == "Etc/UTC"
    for bad in ("localtime", "Mars/Olympus", "europe/paris", "", "../etc/passwd", "a\x00b"):
        with pytest.raises(InvalidArgument):
            zone(bad)


def test_money_is_plain_decimal_text_and_totals_are_exact():
    assert money_text(Decimal("1E-7")) == "0.0000001"
    assert money_text(Decimal("0E-8")) == "0"
    assert money_text(Decimal("2.500")) == "2.5" and money_text(Decimal("1E+2")) == "100"
    rows = [SpendRow(model="a", calls=1, cost_usd=Decimal("0.1"), input_tokens=3),
            SpendRow(model="b", calls=2, cost_usd=Decimal("0.2"), unconfirmed_calls=1)]
    t = total(rows)
    assert t.cost_usd == Decimal("0.3") and t.calls == 3 and t.input_tokens == 3
    assert t.unconfirmed_calls == 1 and t.model is None
    assert rows[0].to_dict(("model",)) == {
        "model": "a", "calls": 1, "unconfirmed_calls": 0, "input_tokens": 3,
        "output_tokens": 0, "cost_usd": "0.1", "reserved_usd": "0"}


def test_the_mcp_tools_default_grouping_is_the_facades():
    from tether.core.spend import DEFAULT_BY
    from tether.mcp.spend_tools import _DEFAULT_BY
    assert _DEFAULT_BY == list(DEFAULT_BY)
