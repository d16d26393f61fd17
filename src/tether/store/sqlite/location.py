"""Where a ``sqlite:///`` URL points, and whether a tether database is already there.

Only the shape that means what it says is accepted: ``sqlite:///relative/path.db``,
``sqlite:////absolute/path.db`` (three slashes, then the path) and ``sqlite:///:memory:``. A
URL with one slash (``sqlite:/tether.db``), a host (``sqlite://host/x.db``) or a query string
is refused, not guessed at: each used to name a file the user did not mean. A missing parent
directory is an error, never created: it is far more often a typo than a wish.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ...errors import ConfigurationError
from ..migrate import require_current
from .tx import translate

PREFIX = "sqlite:///"
MEMORY = ":memory:"


def path_from_url(url: str) -> str:
    """The file ``url`` names (``:memory:`` for an in-memory database)."""
    shape = ("use sqlite:///relative/path.db, or sqlite:////absolute/path.db for an "
             "absolute path")
    if not url.startswith(PREFIX):
        raise ConfigurationError(f"malformed SQLite URL {url!r}: {shape}")
    path = url[len(PREFIX):]
    if "?" in path or "#" in path:
        raise ConfigurationError(f"malformed SQLite URL {url!r}: a SQLite URL takes no "
                                 "query string or fragment")
    if not path:
        raise ConfigurationError(f"no file in SQLite URL {url!r}: {shape}")
    return path


def require_directory(path: str, url: str) -> None:
    """The directory that is to hold ``path`` must exist already."""
    if path == MEMORY:
        return
    parent = Path(path).parent
    if not parent.is_dir():
        raise ConfigurationError(f"the directory {str(parent)!r} of {url} does not exist; "
                                 "create it first (tether never creates directories)",
                                 url=url)


def require_database(path: str, url: str, folder: Path) -> None:
    """A tether database at this tether's schema must be in ``path``; nothing is created
    or written to find out (the file is opened read-write only if it exists, WAL set by no
    one: the connection runs one query and closes)."""
    if path == MEMORY:
        require_current(None, folder, f"{url} (a new in-memory database is empty)")
    if not os.path.isfile(path):
        require_directory(path, url)
        require_current(None, folder, f"{url} (no file {path!r})")
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=rw", uri=True)
    except sqlite3.Error as exc:
        raise translate(exc) from exc
    try:
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' "
                        "AND name = 'schema_migrations'").fetchone():
            applied = {r[0] for r in conn.execute("SELECT version FROM schema_migrations")}
        else:
            applied = None
    except sqlite3.Error as exc:
        raise translate(exc) from exc
    finally:
        conn.close()
    require_current(applied, folder, url)
