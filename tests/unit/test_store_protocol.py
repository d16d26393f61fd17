"""Both backends implement exactly the ``Store`` protocol: every public method of each is
declared there with the same signature (parameter names, kinds, defaults, annotations, and
the return annotation), and every declared member exists on both, so callers never need to
ask which backend they hold."""

import ast
import inspect

import pytest

from tether.store import base
from tether.store.base import Store
from tether.store.open import open_store
from tether.store.postgres.store import PostgresStore
from tether.store.sqlite.store import SQLiteStore

BACKENDS = [SQLiteStore, PostgresStore]

TUNING = {
    SQLiteStore: {"reader_cache_kib", "writer_cache_kib", "wake_poll_s"},
    PostgresStore: {"listener"},
}
"""Public attributes outside the protocol: one backend's own knobs and diagnostics (SQLite's
page caches and wake-up poll, PostgreSQL's LISTEN connection), read only by its own tests."""


def _declared(cls) -> dict[str, object]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


PROTOCOL_METHODS = {n for n, v in _declared(Store).items() if inspect.isfunction(v)}
PROTOCOL_ATTRS = set(Store.__annotations__)


def _signature(fn) -> tuple[list[tuple[str, object, object, str]], str]:
    """Parameters (name, kind, default, annotation) and return annotation; a generator made a
    context manager by ``@contextmanager`` is annotated ``Iterator[X]`` where the protocol
    says ``AbstractContextManager[X]``."""
    sig = inspect.signature(fn)
    params = [(p.name, p.kind, p.default, str(p.annotation)) for p in sig.parameters.values()]
    returns = str(sig.return_annotation)
    if inspect.isgeneratorfunction(inspect.unwrap(fn)) and returns.startswith("Iterator["):
        returns = "AbstractContextManager[" + returns[len("Iterator["):]
    return params, returns


def test_the_protocol_declares_what_the_engine_uses():
    assert len(PROTOCOL_METHODS) >= 57
    assert {"account", "journal", "ledger", "release", "settle_rate", "wait_for_work",
            "check_integrity", "finish_many", "transaction"} <= PROTOCOL_METHODS
    assert PROTOCOL_ATTRS == {"url", "group_commit"}
    submit = inspect.signature(Store.submit).parameters
    assert "profile" in submit and "conn" in submit
    assert "start" in inspect.signature(Store.claim).parameters


@pytest.mark.parametrize("cls", BACKENDS, ids=lambda c: c.__name__)
def test_every_public_method_is_declared_with_the_same_signature(cls):
    members = _declared(cls)
    methods = {n for n, v in members.items() if callable(v) and not isinstance(v, type)}
    assert methods - PROTOCOL_METHODS == set(), "public methods the protocol does not declare"
    assert PROTOCOL_METHODS - methods == set(), "declared methods this backend lacks"
    for name in sorted(PROTOCOL_METHODS):
        assert _signature(getattr(cls, name)) == _signature(getattr(Store, name)), name


@pytest.mark.parametrize("cls", BACKENDS, ids=lambda c: c.__name__)
def test_public_attributes_are_declared_or_named_as_the_backends_own(cls):
    members = _declared(cls)
    attrs = {n for n, v in members.items() if not callable(v) or isinstance(v, property)}
    assert attrs - PROTOCOL_ATTRS == TUNING[cls]
    assert isinstance(cls.group_commit, bool)


def test_an_open_sqlite_store_is_a_store(tmp_path):
    store = open_store(f"sqlite:///{tmp_path}/t.db")
    try:
        assert isinstance(store, Store) and isinstance(store, SQLiteStore)
        store.check_integrity()
        assert store.group_commit is True
        assert store.wait_for_work(0.0) is False
    finally:
        store.close()


def test_an_open_postgres_store_is_a_store(pg_url):
    store = open_store(pg_url)
    try:
        assert isinstance(store, Store) and isinstance(store, PostgresStore)
        store.check_integrity()
        assert store.group_commit is False
        assert store.wait_for_work(0.0) in (True, False)
    finally:
        store.close()


def test_the_protocol_module_imports_no_backend():
    """Only ``open.py`` knows the backends; ``base.py`` importing one closes an import loop
    (backend -> shared logic -> base -> backend)."""
    tree = ast.parse(inspect.getsource(base))
    imported = {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for a in node.names}
    assert not {m for m in imported if "sqlite" in m or "postgres" in m or m == "open"}
