"""The ``pooler`` URL marker: read, removed before libpq sees it, and checked."""

from __future__ import annotations

import pytest

from tether.errors import ConfigurationError

pytest.importorskip("psycopg")

from tether.store.postgres.pooler import listen_url, pool_kwargs, split_pooler  # noqa: E402


def test_the_marker_is_read_and_removed_and_other_parameters_stay_as_written():
    url = "postgresql://app@pgb:6432/db?options=-csearch_path%3Dt&pooler=transaction&sslmode=disable"
    assert split_pooler(url) == (
        "postgresql://app@pgb:6432/db?options=-csearch_path%3Dt&sslmode=disable", "transaction")
    assert split_pooler("postgresql://app@pgb:6432/db?pooler=transaction") == (
        "postgresql://app@pgb:6432/db", "transaction")


def test_without_the_marker_the_url_is_untouched_and_the_option_decides():
    url = "postgresql://app@db:5432/db?options=-csearch_path%3Dt"
    assert split_pooler(url) == (url, None)
    assert split_pooler(url, "transaction") == (url, "transaction")


@pytest.mark.parametrize("url, option", [
    ("postgresql://h/db?pooler=statement", None),
    ("postgresql://h/db?pooler=", None),
    ("postgresql://h/db", "session"),
])
def test_an_unsupported_pooling_mode_is_refused(url, option):
    with pytest.raises(ConfigurationError, match="pooler=transaction"):
        split_pooler(url, option)


def test_the_option_and_the_url_must_agree():
    with pytest.raises(ConfigurationError, match="contradicts"):
        split_pooler("postgresql://h/db?pooler=transaction", "session")


def test_pooled_connections_never_prepare():
    assert pool_kwargs("transaction") == {"prepare_threshold": None}
    assert pool_kwargs(None) == {}


def test_the_listen_url_option_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("TETHER_LISTEN_URL", "postgresql://direct/db")
    assert listen_url(None) == "postgresql://direct/db"
    assert listen_url("postgresql://other/db") == "postgresql://other/db"
    monkeypatch.setenv("TETHER_LISTEN_URL", "")
    assert listen_url(None) is None
