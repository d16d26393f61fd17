"""Worker processes calling one provider (``tests/provider_server.py`` at
``TETHER_TEST_PROVIDER_URL``) with the real openai SDK, under a rate-limit scope that follows
the provider's headers (``TETHER_TEST_FROM_HEADERS=0``: one that does not)."""

from __future__ import annotations

import os

import openai

from tether import Estimate, Tether

app = Tether()
app.set_rate_limit("openai/gpt-4o-mini",
                   from_headers=os.environ.get("TETHER_TEST_FROM_HEADERS", "1") == "1")
_client = openai.OpenAI(base_url=f"{os.environ.get('TETHER_TEST_PROVIDER_URL', '')}/v1",
                        api_key="sk-test", max_retries=0)


@app.job("ask", max_attempts=5)
def ask(ctx, payload):
    answer = ctx.call(key="q", provider="openai", model="gpt-4o-mini",
                      estimate=Estimate(input_tokens=1200, max_output_tokens=300),
                      fn=lambda: _client.chat.completions.with_raw_response.create(
                          model="gpt-4o-mini", max_tokens=300,
                          messages=[{"role": "user", "content": payload["q"]}]))
    return answer["choices"][0]["message"]["content"]
