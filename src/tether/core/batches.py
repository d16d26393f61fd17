"""Provider batches, the pure parts: what one item of a batch asks and what it came back as,
the key a batch carries to its provider, and when a sweep polls a batch again.

A provider batch (``ctx.batch``) is many requests sent as one upload at the provider's batch
price (OpenAI's Batch API, Anthropic's Message Batches). tether reserves every item's worst
case before the upload, journals the batch, waits without a lease, and settles each item from
the provider's results at the batch price (``job/batches.py``, ``store/batches.py``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any
from collections.abc import Iterable

from .usage import Usage

POLL_FIRST_S = 30.0
"""A batch is first polled this long after its upload; each poll that finds it still running
doubles the wait, up to ``POLL_MAX_S`` (providers promise results within 24 hours)."""
POLL_MAX_S = 600.0
CLAIM_S = 120.0
"""A sweep that takes a due batch moves its next poll this far out first, so another worker's
sweep does not poll it at the same time; the poll then sets the real next time."""


def next_poll(polls: int, now: float, *, first: float = POLL_FIRST_S,
              cap: float = POLL_MAX_S) -> float:
    """When a batch polled ``polls`` times so far is polled next."""
    return now + min(cap, first * (2 ** min(polls, 20)))


def tether_key(job_id: int, key: str, hashes: dict[str, str]) -> str:
    """What a batch carries to its provider (OpenAI: ``metadata``) so that a worker that died
    after the upload but before the provider's batch id was committed finds it again: the job,
    the batch's key and a digest of its items' requests."""
    digest = hashlib.sha256("\n".join(f"{k}={h}" for k, h in sorted(hashes.items()))
                            .encode()).hexdigest()[:16]
    return f"tether:{job_id}:{key}:{digest}"


def item_ids(keys: Iterable[str], allowed: re.Pattern[str] | None) -> dict[str, str]:
    """Each item key -> the id its provider gets for it (``custom_id``): the key itself where
    the provider's rule ``allowed`` takes it (None: any key), else the key's letters, digits,
    ``_`` and ``-`` (``_`` for any other character) cut to 40, then ``-`` and 16 hex digits
    of its SHA-256: at most 57 characters of ``[A-Za-z0-9_-]``, the same for the same key
    at the upload and at the results, and still readable in the provider's console.
    ``ValueError``, before anything is reserved or sent: an id the rule still refuses, or
    two keys that would be sent as one id."""
    out: dict[str, str] = {}
    owner: dict[str, str] = {}
    for key in keys:
        sent = key
        if allowed is not None and not allowed.fullmatch(key):
            sent = (re.sub(r"[^A-Za-z0-9_-]", "_", key)[:40] + "-"
                    + hashlib.sha256(key.encode()).hexdigest()[:16])
            if not allowed.fullmatch(sent):
                raise ValueError(f"item key {key!r}: the provider refuses it and its mapped id "
                                 f"{sent!r} (ids must match {allowed.pattern})")
        if sent in owner:
            raise ValueError(f"items {owner[sent]!r} and {key!r} would both be sent as "
                             f"{sent!r}; rename one")
        owner[sent] = key
        out[key] = sent
    return out


@dataclass(frozen=True)
class RemoteStatus:
    """A poll's answer: ``ended`` once the provider has results (or gave up: expired,
    cancelled); item counts as the provider reports them."""

    state: str
    ended: bool
    done: int = 0
    failed: int = 0
    total: int = 0


@dataclass(frozen=True)
class ItemResult:
    """One item as the provider's results give it: an answer with its usage, or a failure
    (``error_code`` as ``classify.py`` names it, ``billed``: the provider charged for it)."""

    ok: bool
    value: Any = None
    usage: Usage | None = None
    error_code: str | None = None
    error_summary: str | None = None
    retryable: bool = False
    billed: bool = False


@dataclass(frozen=True)
class BatchFailure:
    """An item of a batch that got no answer, in ``ctx.batch``'s results in its place."""

    key: str
    error_code: str
    error_summary: str | None = None
    retryable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "error_code": self.error_code,
                "error_summary": self.error_summary, "retryable": self.retryable}


@dataclass(frozen=True)
class Resend:
    """Which failed items of a batch ``ctx.batch`` sends again, and how often.

    Each round is a new provider batch of the items that failed the round before and that the
    policy allows (key ``<key>#resend<n>``): reserved at the batch price, journaled, waited on
    and settled as the first, so a replay returns every round's recorded answers and never
    sends a round twice. ``codes`` None allows the failures classified retryable (rate limits,
    overloads and server errors, items a batch left unprocessed when it expired or was
    cancelled); a set allows exactly those error codes. A failure the provider billed stays
    spent; its resend is paid again."""

    rounds: int = 1
    codes: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 0:
            raise ValueError(f"Resend rounds must be a whole number >= 0, not {self.rounds!r}")
        if self.codes is not None:
            object.__setattr__(self, "codes", frozenset(self.codes))

    def allows(self, failure: BatchFailure) -> bool:
        return failure.retryable if self.codes is None else failure.error_code in self.codes


def resend_key(key: str, round_: int) -> str:
    """The key of a batch's ``round_``-th resend."""
    return f"{key}#resend{round_}"


@dataclass(frozen=True)
class BatchItem:
    """One request of a batch as job code gave it, with its hash and worst case."""

    key: str
    request: Any
    request_hash: str
    reserved_usd: Any
    input_tokens: int
    output_tokens: int
    extra: dict[str, Any] = field(default_factory=dict)
