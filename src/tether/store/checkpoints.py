"""Checkpoints (the manifest of finished stages) and in-database blobs.

The rule that makes a crash harmless: a stage's output blob is durable *before* the manifest
row that names it commits. A crash in between leaves an unreferenced blob (pruned later) and
an unfinished stage, which the next attempt simply runs again.
"""

from __future__ import annotations

from typing import Any

from ..records import Checkpoint
from .rows import to_checkpoint
from .transitions import Transitions
from .tx import present


class Checkpoints(Transitions):
    """Blobs and the manifest of finished stages."""

    def _blob_param(self, data: bytes) -> Any:
        return data

    def put_blob(self, sha256: str, data: bytes) -> None:
        """Commit a blob in its own transaction (so it is durable before any manifest row)."""
        with self._write() as tx:
            tx.run("put_blob", sha256=sha256, data=self._blob_param(data), size=len(data),
                   now=self._now(tx, None))

    def get_blob(self, sha256: str) -> bytes | None:
        with self._read() as tx:
            row = tx.one("get_blob", sha256=sha256)
        return None if row is None else bytes(row["data"])

    def get_checkpoint(self, job_id: int, stage: str) -> Checkpoint | None:
        with self._read() as tx:
            row = tx.one("get_checkpoint", job_id=job_id, stage=stage)
        return to_checkpoint(row) if row else None

    def checkpoints(self, job_id: int) -> list[Checkpoint]:
        with self._read() as tx:
            return [to_checkpoint(r) for r in tx.all("list_checkpoints", job_id=job_id)]

    def save_checkpoint(self, job_id: int, attempt: int, *, stage: str, position: int,
                        blob: str, size: int, now: float | None = None,
                        version: str | None = None) -> Checkpoint:
        """Record a finished stage (of ``version``) under the lease, with its
        ``stage_completed`` event."""
        with self._write() as tx:
            now = self._now(tx, now)
            self._held(tx, job_id, attempt)
            tx.run("insert_checkpoint", job_id=job_id, stage=stage, position=position, blob=blob,
                   size=size, attempt=attempt, now=now, version=version)
            self._note(tx, job_id, "stage_completed", now, attempt,
                       {"stage": stage, "position": position, "blob": blob, "size": size})
            return to_checkpoint(present(tx.one("get_checkpoint", job_id=job_id, stage=stage)))
