"""A provider batch job for the crash tests (loaded by real worker processes): its adapter
SIGKILLs the process once, at the window ``TETHER_BATCH_CRASH_AT`` names (``before_upload``,
``after_upload``: accepted by the provider, its id not committed; ``poll``; ``settle``:
results fetched, settlement not committed), and leaves ``TETHER_BATCH_CRASH_FLAG`` behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anthropic
import openai

from tether import Estimate, Tether
from tether.core.batches import BatchFailure
from tether.providers.batch_anthropic import AnthropicBatches
from tether.providers.batch_openai import OpenAIBatches

app = Tether()
PROVIDER = os.environ.get("TETHER_TEST_BATCH_PROVIDER", "openai")
URL = os.environ.get("TETHER_TEST_PROVIDER_URL", "http://127.0.0.1:9")
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
EST = Estimate(input_tokens=4000, max_output_tokens=500)


def _die_once(window: str) -> None:
    flag = os.environ.get("TETHER_BATCH_CRASH_FLAG")
    if os.environ.get("TETHER_BATCH_CRASH_AT") == window and flag and not Path(flag).exists():
        Path(flag).write_text(window)
        os.kill(os.getpid(), signal.SIGKILL)


class Crashing:
    """An adapter that dies once in its window, and otherwise is the real one."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.reattach = inner, inner.name, inner.reattach
        self.first_poll_s, self.item_id = inner.first_poll_s, inner.item_id

    def submit(self, **kwargs):
        _die_once("before_upload")
        remote = self.inner.submit(**kwargs)
        _die_once("after_upload")
        return remote

    def find(self, tether_key, *, since=None):
        return self.inner.find(tether_key, since=since)

    def poll(self, remote_id):
        _die_once("poll")
        return self.inner.poll(remote_id)

    def results(self, remote_id):
        got = self.inner.results(remote_id)
        _die_once("settle")
        return got

    def cancel(self, remote_id):
        self.inner.cancel(remote_id)


if PROVIDER == "openai":
    app.add_batch_provider(Crashing(OpenAIBatches(openai.OpenAI(
        base_url=f"{URL}/v1", api_key="sk-test", max_retries=0))))
else:
    app.add_batch_provider(Crashing(AnthropicBatches(anthropic.Anthropic(
        base_url=URL, api_key="sk-ant-test", max_retries=0))))


@app.job("batch_gen", max_attempts=5)
def batch_gen(ctx, payload):
    requests = {f"q{i}": {"max_tokens": 500,
                          "messages": [{"role": "user", "content": f"question {i}"}]}
                for i in range(payload.get("items", 3))}
    answers = ctx.batch(key="gen", provider=PROVIDER, model=MODELS[PROVIDER],
                        requests=requests, estimate=EST)
    return {k: v.error_code if isinstance(v, BatchFailure) else "ok" for k, v in answers.items()}
