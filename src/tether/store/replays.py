"""What a replay that found a change writes (``job/replay.py``): the operator's decision it
reads, and a changed call or stage reused or paid again, each recorded as an event.

``call_repaid`` is the one record of "a key paid again on purpose": a replay's ``repay`` and a
retry from a stage (``forks.py``) both write it, and the invariant checker accepts a second
payment of a key only after one."""

from __future__ import annotations

from typing import Any

from .rows import load_json
from .transitions import Transitions
from .tx import Row


def superseded(old: Row) -> dict[str, Any]:
    """What a ``call_repaid`` event keeps of the journal entry ``old`` it replaces: its stage,
    fingerprint, answer, usage, cost and attempt (the entry itself is overwritten or dropped;
    its ledger row stays as it was)."""
    return {"key": old["key"], "stage": old["stage"],
            "recorded_fingerprint": old.get("fingerprint"), "result": load_json(old["result"]),
            "usage": load_json(old["usage"]), "cost_usd": str(old["cost_usd"]),
            "attempt": int(old["attempt"])}


class Replays(Transitions):
    """Decisions about calls and stages that changed since they were recorded."""

    def replay_decision(self, job_id: int) -> str | None:
        """``reuse`` or ``repay`` when the job's last resume carried that decision and it has
        not waited, paused or ended since; otherwise None."""
        with self._read() as tx:
            row = tx.one("replay_decision", job_id=job_id)
        if row is None or row["kind"] != "resume":
            return None
        data = load_json(row["data"]) or {}
        return data.get("on_change")

    def change_call(self, job_id: int, attempt: int, *, key: str, decision: str,
                    fingerprint: str, differs: dict[str, Any]) -> None:
        """A ``done`` call ``key`` changed. ``reuse``: its answer stands for the new request
        (``fingerprint`` recorded; event ``call_reused``). ``repay``: it is paid again; the
        entry is reserved anew as a failed one is, and its old answer, cost and fingerprint
        are kept in a ``call_repaid`` event (the old ledger row stays as it was)."""
        with self._write() as tx:
            now = self._now(tx, None)
            self._held(tx, job_id, attempt)
            data: dict[str, Any] = {"key": key, "differs": differs, "fingerprint": fingerprint}
            if decision == "reuse":
                tx.run("journal_refingerprint", job_id=job_id, key=key,
                       fingerprint=fingerprint, now=now)
                self._note(tx, job_id, "call_reused", now, attempt, data)
                return
            old = tx.one("journal_get", job_id=job_id, key=key)
            if old is not None:
                data.update(superseded(old))
            tx.run("journal_supersede", job_id=job_id, key=key, now=now)
            self._note(tx, job_id, "call_repaid", now, attempt, data)

    def change_stage(self, job_id: int, attempt: int, *, stage: str, decision: str,
                     version: str | None, differs: dict[str, Any]) -> None:
        """Stage ``stage``'s checkpoint was written by another version. ``reuse``: it stands
        for ``version`` (event ``stage_reused``). ``repay``: it is dropped and the stage runs
        again (event ``stage_rerun`` naming the old output's blob)."""
        with self._write() as tx:
            now = self._now(tx, None)
            self._held(tx, job_id, attempt)
            data: dict[str, Any] = {"stage": stage, "differs": differs, "version": version}
            if decision == "reuse":
                tx.run("checkpoint_version", job_id=job_id, stage=stage, version=version)
                self._note(tx, job_id, "stage_reused", now, attempt, data)
                return
            old = tx.one("get_checkpoint", job_id=job_id, stage=stage)
            if old is not None:
                data.update(blob=old["blob"], size=int(old["size"]))
            tx.run("drop_checkpoint", job_id=job_id, stage=stage)
            self._note(tx, job_id, "stage_rerun", now, attempt, data)

    def patches(self, job_id: int, attempt: int) -> tuple[dict[str, bool], bool]:
        """The job's ``patched`` markers (name: answer), and whether an attempt before
        ``attempt`` recorded progress: a journaled call, a checkpoint or a wait (or a fork
        carried one). ``job/patches.py`` says what the answers mean."""
        with self._read() as tx:
            rows = tx.all("patch_markers", job_id=job_id)
            row = tx.one("earlier_progress", job_id=job_id, attempt=attempt)
        markers: dict[str, bool] = {}
        for r in rows:
            data = load_json(r["data"]) or {}
            markers.setdefault(str(data.get("name")), bool(data.get("patched")))
        return markers, bool(row and row["progressed"])
