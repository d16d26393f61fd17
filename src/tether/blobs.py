"""Blob stores: where stage outputs live, content-addressed (sha256 of the canonical JSON).

* ``DatabaseBlobStore`` (default) commits the blob row in its own transaction;
* ``FileBlobStore(root)`` writes a temporary file, fsyncs it, renames it into place and fsyncs
  the folder, so the file is whole and durable before anything refers to it.

Either way a blob is durable before ``put`` returns, so a checkpoint row committed after it
never names a blob that is not there.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol

from .errors import StorageFull, StoreError


class BlobRows(Protocol):
    """The store methods a ``DatabaseBlobStore`` uses."""

    def put_blob(self, sha256: str, data: bytes) -> None: ...
    def get_blob(self, sha256: str) -> bytes | None: ...


class BlobStore(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, sha256: str) -> bytes: ...


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DatabaseBlobStore:
    def __init__(self, store: BlobRows) -> None:
        self.store = store

    def put(self, data: bytes) -> str:
        sha = digest(data)
        self.store.put_blob(sha, data)
        return sha

    def get(self, sha256: str) -> bytes:
        data = self.store.get_blob(sha256)
        if data is None:
            raise StoreError(f"blob {sha256} is missing from the database")
        return data


class FileBlobStore:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, sha: str) -> Path:
        return self.root / sha[:2] / sha

    def put(self, data: bytes) -> str:
        sha = digest(data)
        path = self._path(sha)
        if path.exists():
            return sha
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
            dir_fd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise StorageFull(f"cannot write blob {sha[:12]}: {exc}") from exc
        return sha

    def get(self, sha256: str) -> bytes:
        try:
            data = self._path(sha256).read_bytes()
        except FileNotFoundError:
            raise StoreError(f"blob {sha256} is missing from {self.root}") from None
        if digest(data) != sha256:
            raise StoreError(f"blob {sha256} is corrupt")
        return data
