"""A worker running beside the API in the same process (``TETHER_RUN_WORKER=true``).

It runs in a background thread for the app given with ``--app``; ``stop()`` drains it the way
SIGTERM drains a standalone worker (running jobs stop at a safe boundary and hand their leases
back), and the server calls it on shutdown.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ..app import Tether

log = logging.getLogger("tether.api")

TRUE = {"1", "true", "yes", "on"}


def wanted(flag: bool | None) -> bool:
    """An explicit flag wins; otherwise ``TETHER_RUN_WORKER``."""
    if flag is not None:
        return flag
    return os.environ.get("TETHER_RUN_WORKER", "").strip().lower() in TRUE


class BackgroundWorker:
    def __init__(self, app: Tether, **options: Any) -> None:
        self.worker = app.worker(**options)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tether-api-worker", daemon=True)
        self._thread.start()
        log.info("worker %s running beside the API", self.worker.id)

    def _run(self) -> None:
        try:
            self.worker.run(install_signals=False)
        except Exception:  # logged; the API keeps serving
            log.exception("the in-process worker stopped with an error")

    def stop(self, timeout: float = 30.0) -> None:
        self.worker.stop()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("worker %s did not drain within %.0fs", self.worker.id, timeout)
