"""The reused migrated schemas of ``tests.pg``: a schema goes back to the pool only as migrating
left it (rows, sequences, planner estimates), and not at all when the test left a connection
open or changed anything but rows, so that no test sees another's leftovers."""

from __future__ import annotations

import psycopg
import pytest

from tether import Tether
from tests import pg
from tests.conftest import PG_URL, require_postgres

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _own_pool(monkeypatch):
    require_postgres()
    monkeypatch.setattr(pg, "_free", [])


def _take():
    """(the fixture generator, the URL it handed out)."""
    gen = pg.migrated_schema_url(PG_URL)
    url = next(gen)
    return gen, url


def _give_back(gen) -> None:
    with pytest.raises(StopIteration):
        next(gen)


def _state(url: str) -> tuple:
    schema = url.rsplit("application_name=", 1)[1]
    with psycopg.connect(PG_URL) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s ORDER BY 1", (schema,))]
        rows = {t: conn.execute(f'SELECT count(*) FROM "{schema}"."{t}"').fetchone()[0]
                for t in tables}
        seqs = conn.execute("SELECT sequencename, last_value FROM pg_sequences "
                            "WHERE schemaname = %s ORDER BY 1", (schema,)).fetchall()
        fingerprint = conn.execute(pg._FINGERPRINT, {"s": schema}).fetchone()[0]
    return rows, seqs, fingerprint


def _use(url: str) -> Tether:
    app = Tether(url)
    app.register("t", lambda ctx, payload: payload)
    for i in range(3):
        app.submit("t", {"i": i})
    return app


def test_a_schema_comes_back_as_migrating_left_it():
    gen, url = _take()
    fresh = _state(url)
    app = _use(url)
    assert _state(url)[0] != fresh[0]
    app.close()
    _give_back(gen)
    assert [s.url for s in pg._free] == [url]
    assert _state(url) == fresh
    again, url_again = _take()
    assert url_again == url
    _give_back(again)


def test_a_connection_left_open_keeps_the_schema_out_of_the_pool():
    gen, url = _take()
    app = _use(url)
    _give_back(gen)
    app.close()
    assert pg._free == []


def test_a_schema_changed_beyond_its_rows_is_not_reused():
    gen, url = _take()
    schema = url.rsplit("application_name=", 1)[1]
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE INDEX extra ON "{schema}".jobs (id)')
    _give_back(gen)
    assert pg._free == []
