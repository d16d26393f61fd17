"""``Tether``'s provider batches: the adapters ``ctx.batch`` and the workers' batch poller use,
and a job's batches as status pages show them.

Adapters are made on first use from the official SDKs' own configuration (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ...), with the SDKs' retries off (retries are
tether's), or registered with ``add_batch_provider`` (a custom client, a third provider). The
simulated provider's batches live in ``TETHER_SIM_BATCH_DIR`` (default: ``tether-sim-batches``
in the system's temporary directory) and are billed on ``TETHER_SIM_BILL`` when it is set (the
bill the simulated provider's calls use), else on ``bill.jsonl`` there.
"""

from __future__ import annotations

import builtins
import os
import tempfile
import threading
from collections.abc import Iterable

from ..core import validate
from ..errors import ConfigurationError, JobNotFound
from ..providers.batches import BatchAdapter, SimulatedBatches
from ..records import ProviderBatch
from .host import FacadeHost


class BatchesPart(FacadeHost):
    """Batch adapters by provider, and reads of jobs' batches (a part of ``Tether``)."""

    def add_batch_provider(self, adapter: BatchAdapter) -> None:
        """Send ``adapter.name``'s batches through ``adapter`` (replacing the default)."""
        self._adapters()[adapter.name] = adapter

    def batch_adapter(self, provider: str) -> BatchAdapter:
        adapters = self._adapters()
        if provider not in adapters:
            with _making:
                if provider not in adapters:
                    adapters[provider] = _default_adapter(provider)
        return adapters[provider]

    def batches(self, job_id: int, *,
                projects: Iterable[str] | None = None) -> builtins.list[ProviderBatch]:
        """The job's provider batches, oldest first (``projects``: the job must be in one)."""
        job = self.store.get_job(validate.job_id(job_id))
        if job is None or (projects is not None and job.project not in set(projects)):
            raise JobNotFound(f"job {job_id} not found", job_id=job_id)
        return self.store.batches(job.id)

    def _adapters(self) -> dict[str, BatchAdapter]:
        adapters: dict[str, BatchAdapter] | None = self.__dict__.get("_batch_adapters")
        if adapters is None:
            adapters = self.__dict__.setdefault("_batch_adapters", {})
        return adapters


_making = threading.Lock()


def _default_adapter(provider: str) -> BatchAdapter:
    if provider == "simulated":
        return SimulatedBatches(os.environ.get("TETHER_SIM_BATCH_DIR") or os.path.join(
            tempfile.gettempdir(), "tether-sim-batches"),
            bill=os.environ.get("TETHER_SIM_BILL") or None)
    if provider == "openai":
        import openai

        from ..providers.batch_openai import OpenAIBatches
        return OpenAIBatches(openai.OpenAI(max_retries=0))
    if provider == "openai:background":
        import openai

        from ..providers.background_openai import OpenAIBackground
        return OpenAIBackground(openai.OpenAI(max_retries=0))
    if provider == "anthropic":
        import anthropic

        from ..providers.batch_anthropic import AnthropicBatches
        return AnthropicBatches(anthropic.Anthropic(max_retries=0))
    raise ConfigurationError(f"no batch adapter for provider {provider!r}; register one with "
                             "app.add_batch_provider(adapter)")
