"""/metrics carries the engine-wide series (claims, claim latency, lease expiries, budget
pauses) read from the store, so every process reports the same totals."""

from fastapi.testclient import TestClient

from tether import Estimate, Metered, Tether, Usage
from tether.api.server import create_app


def metric(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} not in /metrics")


def test_engine_series_count_what_happened(sqlite_url):
    app = Tether(sqlite_url)
    app.register("ok", lambda ctx, p: p)
    app.register("spend", lambda ctx, p: [ctx.call(
        key=f"k{i}", provider="simulated", model="sim-small",
        estimate=Estimate(input_tokens=10, max_output_tokens=10),
        fn=lambda: Metered("x", Usage(10, 10))) for i in range(3)])
    app.submit("ok", {})
    app.submit("spend", {}, budget={"max_calls": 1})
    app.worker(concurrency=1, poll_interval=0.01).run(install_signals=False,
                                                       stop_when_idle=True)
    text = TestClient(create_app(app, auth=False)).get("/metrics").text
    assert metric(text, "tether_claims_total") == 2
    assert metric(text, "tether_budget_pauses_total") == 1
    assert metric(text, "tether_lease_expiries_total") == 0
    assert metric(text, "tether_claim_latency_seconds_count") == 2
    app.close()
