"""The engine's storage logic, written once over named SQL; backends supply SQL and transactions.

Each backend (``sqlite/``, ``postgres/``) keeps its statements in ``queries/`` (one
``<concept>.sql`` per module below that runs them) and provides ``_write()``/``_read()``
transactions whose handle (``tx.Tx``) runs a statement by name. The rules live in one module
per concept, each a class on ``transitions.Transitions``:

* ``jobs.py``: submit, idempotency, reads of jobs, events and attempts
* ``leases.py``: claim, start, heartbeat (lease renewal), lease expiry
* ``outcomes.py``: the end of an attempt (``finish``, ``finish_many``)
* ``waits.py``: waiting for children, timers and signals; waking
* ``callbacks.py``: callback URLs, made for a signal wait and used once to answer it
* ``batches.py``: provider batches reserved before the upload, settled after
* ``calls.py``: a call reserved before it is made, settled after (``account``)
* ``accounting.py``: accumulators, calls left open, examples, project budgets
* ``journal.py``: reads of the journal and the ledger, the call cache
* ``spend.py``: spend reports, the ledger grouped and summed
* ``checkpoints.py``: stage checkpoints and blobs
* ``control.py``: operator actions, retry promotion, pruning
* ``forks.py``: a fork from a stage, a retry from a stage
* ``feed.py``: the live streams' reads (every project's events after a position)
* ``ratelimits.py``, ``admin.py``, ``profiles.py``: rate limits; workers, queues, tokens;
  price profiles
* ``schedules.py``: schedules and the scheduler step (due ticks become jobs)
* ``webhooks.py``: webhook subscriptions, the outbox step, deliveries and their attempts
"""

from __future__ import annotations

from .admin import Admin
from .batches import Batches
from .callbacks import Callbacks
from .calls import Calls
from .checkpoints import Checkpoints
from .control import Control
from .feed import Feed
from .forks import Forks
from .jobs import Jobs
from .journal import Journal
from .leases import Leases
from .outcomes import Outcomes
from .ratelimits import RateLimits
from .replays import Replays
from .schedules import Schedules
from .spend import Spend
from .flow import Flow
from .webhooks import Webhooks


class SQLStore(Forks, Schedules, Webhooks, Jobs, Leases, Outcomes, Batches, Callbacks, Calls,
               Journal, Spend, Checkpoints, Control, RateLimits, Admin, Flow, Feed, Replays):
    """Store logic shared by every SQL backend; each backend adds its transactions, clock,
    lifecycle (``migrate``, ``close`` ...), ``transaction`` and ``wait_for_work``."""
