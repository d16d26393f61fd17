"""The CLI's pieces without a database: parsers, money formatting, colour, optional commands."""

from __future__ import annotations

import sys
import time
import types

import pytest
import typer

from tether.cli.output import CliError, usd
from tether.cli.parse import budget_limits, parse_duration, parse_usd, parse_when
from tether.cli.plugins import register_plugins
from tests.e2e.clitools import tether


@pytest.mark.parametrize("text, seconds", [
    ("30d", 30 * 86400), ("12h", 43200), ("15m", 900), ("45s", 45), ("2w", 14 * 86400),
    ("1h30m", 5400), ("1d12h", 129600), ("90", 90), ("0.5h", 1800), ("0s", 0), (" 10M ", 600),
])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "3x", "h", "10 fortnights", "-5m", "1h-", "inf", "nan"])
def test_parse_duration_rejects(text):
    with pytest.raises(CliError) as exc:
        parse_duration(text, flag="--older-than")
    assert exc.value.code == "invalid_duration" and "--older-than" in exc.value.message


def test_parse_when():
    assert parse_when("2030-01-02T03:04:05+02:00") == parse_when("2030-01-02T01:04:05Z")
    assert parse_when("2030-01-02T01:04:05") == parse_when("2030-01-02T01:04:05Z")
    assert parse_when("1893553445") == 1893553445.0
    now = time.time()
    assert abs(parse_when("10m") - (now + 600)) < 5
    assert abs(parse_when("+2h") - (now + 7200)) < 5
    with pytest.raises(CliError):
        parse_when("next tuesday")


def test_budget_limits_keeps_only_named_limits():
    assert budget_limits() == {}
    limits = budget_limits(max_cost=parse_usd(" $2.50"), max_calls=0, max_duration="1h")
    assert limits == {"max_cost_usd": __import__("decimal").Decimal("2.50"), "max_calls": 0,
                      "max_duration_s": 3600.0}


@pytest.mark.parametrize("value, text", [
    (None, "-"), ("0", "$0"), ("2", "$2.00"), ("1234.5", "$1,234.50"), ("0.5", "$0.50"),
    ("0.0123", "$0.0123"), ("0.01", "$0.01"), ("0.00029150", "$0.0003"), ("0.0000042", "$0.000004"),
])
def test_usd(value, text):
    assert usd(value) == text


def test_colour_follows_no_color(tmp_path):
    db = f"sqlite:///{tmp_path}/c.db"
    assert tether("submit", "echo", db=db).code == 0
    coloured = tether("job", "list", db=db, env={"FORCE_COLOR": "1", "NO_COLOR": ""})
    assert "\x1b[36m" in coloured.out, "queued is cyan on a colour terminal"
    plain = tether("job", "list", db=db, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\x1b[3" not in plain.out and "queued" in plain.out
    piped = tether("job", "list", db=db, env={"NO_COLOR": ""})
    assert "\x1b[" not in piped.out, "no escapes when stdout is not a terminal"


def _module(monkeypatch, name, **attrs):
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr("importlib.util.find_spec", lambda n: object() if n in sys.modules
                        else None)
    return module


def test_optional_commands_are_added_when_present(monkeypatch):
    monkeypatch.setattr("tether.cli.plugins.PLUGINS", ("fake.prices", "fake.demo"))
    prices = typer.Typer()

    @prices.command("show")
    def show() -> None:
        """Show prices."""

    def demo() -> None:
        """Run the demo."""

    _module(monkeypatch, "fake.prices", prices_app=prices)
    _module(monkeypatch, "fake.demo", demo=demo)
    root = typer.Typer()
    assert register_plugins(root) == ["fake.prices", "fake.demo"]
    names = {g.name for g in root.registered_groups} | {c.name for c in root.registered_commands}
    assert names == {"prices", "demo"}


def test_missing_or_broken_optional_commands_leave_the_cli_working(monkeypatch, capsys):
    monkeypatch.setattr("tether.cli.plugins.PLUGINS", ("fake.missing", "fake.broken"))
    real_find_spec = __import__("importlib").util.find_spec

    def find_spec(name):
        if name == "fake.missing":
            return None
        if name == "fake.broken":
            raise ImportError("cannot import name 'x'")
        return real_find_spec(name)

    monkeypatch.setattr("importlib.util.find_spec", find_spec)
    root = typer.Typer()
    assert register_plugins(root) == []
    err = capsys.readouterr().err
    assert "commands from broken are unavailable" in err and "missing" not in err
