"""Submitting a job with a singleton or debounce key (``core/flowkeys.py``).

The database decides, not the submitter: ``insert_flow_job`` inserts nothing when a unique
partial index already counts a job of the key (``jobs_singleton``: a live job;
``jobs_debounce``: a pending one), and on PostgreSQL a concurrent insert of the same key waits
for the other transaction and then inserts nothing. The submit then answers with that job
(a singleton), or replaces its payload (debounced). Should that job have left the state the
index counts in between (finished, or claimed), the insert is tried again: it now succeeds.
"""

from __future__ import annotations

from typing import Any

from ..core.flowkeys import DEBOUNCE, SINGLETON
from ..errors import JobStateError, TetherError
from ..records import Job
from .base import NewJob
from .profiles import Profiles
from .rows import as_datetime, load_json, new_job, to_job
from .tx import Row, Tx, present

_TRIES = 8


class FlowKeys(Profiles):
    """One job with a flow key, inside a submit's transaction."""

    def _submit_flow(self, tx: Tx, spec: NewJob, now: float,
                     values: dict[str, Any]) -> tuple[Job, bool]:
        """``(job, created)``: the new job, or the live singleton of its key, or the pending
        debounced job of its key with this submit's payload. ``values`` are the bound values
        of ``insert_job`` for ``spec``."""
        keyed = {"project": spec.project, "type": spec.type, "flow_key": spec.flow_key}
        run_after = values["run_after_seconds"]
        if spec.flow_mode == DEBOUNCE and run_after is None:
            run_after = now + spec.flow_window_s
        for _ in range(_TRIES):
            row = tx.one("insert_flow_job", now=now, **{**values, "run_after_seconds": run_after},
                         flow_mode=spec.flow_mode, flow_key=spec.flow_key)
            if row is not None:
                job = new_job(spec, int(row["id"]), as_datetime(row["created_at"]),
                              as_datetime(row["run_after"]),
                              None if row["payload"] == "null" else load_json(row["payload"]))
                tx.many("insert_event", [self._event_row(
                    job.id, 1, now, "submitted", None, "queued", None,
                    {"type": job.type, "queue": job.queue, "idempotency_key": job.idempotency_key,
                     "flow_mode": spec.flow_mode, "flow_key": spec.flow_key})])
                return job, True
            if spec.idempotency_key is not None:
                found = self._jobs_by_keys(tx, [spec])  # type: ignore[attr-defined]
                if found:
                    return self._existing(spec, found), False  # type: ignore[attr-defined]
            if spec.flow_mode == DEBOUNCE:
                replaced = tx.one("flow_replace_pending", now=now, **keyed,
                                  payload=values["payload"],
                                  input_config_hash=spec.input_config_hash,
                                  estimated_cost_usd=spec.estimated_cost_usd)
                if replaced is not None:
                    tx.many("insert_event", [self._event_row(
                        int(replaced["id"]), int(replaced["event_seq"]), now, "debounced",
                        None, None, None, {"flow_key": spec.flow_key,
                                           "input_config_hash": spec.input_config_hash})])
                    return to_job(present(tx.one("get_job", id=int(replaced["id"])))), False
            else:
                live = tx.one("flow_live_job", **keyed)
                if live is not None:
                    return to_job(live), False
        raise TetherError(  # pragma: no cover - the key's job changed state _TRIES times over
            f"could not submit {spec.type!r} with flow key {spec.flow_key!r}: its job kept "
            "changing state")


def check_singleton_free(tx: Tx, row: Row) -> None:
    """Before a failed singleton job is queued again (retry, requeue): ``JobStateError`` when
    another job of its key is live, which the key allows only one of."""
    if row.get("flow_mode") != SINGLETON or row["state"] != "failed":
        return
    live = tx.one("flow_live_job", project=row["project"], type=row["type"],
                  flow_key=row["flow_key"])
    if live is not None:
        raise JobStateError(
            f"job {row['id']} is a singleton of key {row['flow_key']!r}, and job {live['id']} "
            "of that key is live: cancel it (or wait for it) to run this one again",
            job_id=row["id"], state=row["state"])
