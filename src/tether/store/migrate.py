"""Versioned migrations: ``migrations/NNNN_name.sql`` per backend, applied once each, in order."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import NoDatabase

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def discover(folder: Path) -> list[Migration]:
    found = []
    for path in sorted(folder.iterdir()):
        m = _FILE.match(path.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), path.read_text()))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations in {folder} are not numbered 1..n: {versions}")
    return found


def require_current(applied: set[int] | None, folder: Path, where: str) -> None:
    """Refuse a database that is not a tether database at this tether's schema: ``applied``
    holds its migration versions (None: it has no ``schema_migrations`` table). Only
    ``tether db migrate`` (or a store opened to create) changes that, never a reader."""
    fix = "run `tether db migrate` with this URL to create it"
    if not applied:
        raise NoDatabase(f"no tether database at {where}: {fix}", url=where)
    missing = sorted({m.version for m in discover(folder)} - applied)
    if missing:
        raise NoDatabase(f"the tether database at {where} lacks migration"
                         f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}: "
                         "run `tether db migrate` with this URL to upgrade it", url=where)
