"""Stages and blobs: a finished stage's output is checkpointed; a resumed job skips it.

Blobs are content-addressed (sha256 of the canonical JSON). Two blob stores:

* ``DatabaseBlobStore`` (default) commits the blob row in its own transaction;
* ``FileBlobStore(root)`` writes a temporary file, fsyncs it, renames it into place and fsyncs
  the folder, so the file is whole and durable before anything refers to it.

Either way the manifest row (``checkpoints``) commits after the blob is durable, so a crash in
between leaves the stage unfinished and resumable, never half-committed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .core.serialize import dumps_back, loads
from .errors import StorageFull, StoreError

if TYPE_CHECKING:  # pragma: no cover
    from .context import JobContext


class BlobStore(Protocol):
    def put(self, data: bytes) -> str: ...
    def get(self, sha256: str) -> bytes: ...


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class DatabaseBlobStore:
    def __init__(self, store: Any) -> None:
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


def run_stage(ctx: "JobContext", name: str, fn: Callable[[], Any]) -> Any:
    """Return the checkpointed output of stage ``name``, running ``fn`` only if it has none."""
    ctx.check()
    store = ctx.store
    position = ctx.next_position()
    done = store.get_checkpoint(ctx.id, name)
    if done is not None:
        ctx.stats["stages_reused"] += 1
        return loads(ctx.app.blobs.get(done.blob))
    ctx.set_stage(name)
    value = fn()
    ctx.check()
    text, output = dumps_back(value, what=f"output of stage {name!r}")
    data = text.encode()
    sha = ctx.app.blobs.put(data)
    store.save_checkpoint(ctx.id, ctx.attempt, stage=name, position=position, blob=sha,
                          size=len(data))
    ctx.stats["stages_run"] += 1
    return output
