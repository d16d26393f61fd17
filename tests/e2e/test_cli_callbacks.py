"""``tether job callback`` and the callbacks ``tether job status`` shows, on both backends: the
URL is printed once, answers the job once, and status lists every callback with its state and
expiry, never its URL. A job not waiting for a signal exits 2 (invalid_transition)."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest

from tests.contract.test_waits import run_next
from tests.e2e.clitools import run_main
from tests.e2e.test_cli_signals import flat

PUBLIC = "https://tether.example.com"


@pytest.fixture
def asking(app, clock, monkeypatch):
    clock.advance(time.time() + 60 - clock.time())
    monkeypatch.setenv("TETHER_PUBLIC_URL", PUBLIC)
    app.public_url = PUBLIC

    @app.job("ask")
    def ask(ctx, payload):
        return ctx.wait_for_signal("approve", timeout=600, callback=lambda made: None)
    return app


def test_a_callback_made_on_the_command_line_answers_the_job_once(capsys, asking,
                                                                  database_url):
    app = asking
    job = app.submit("ask")
    run_next(app)
    r = run_main(capsys, "job", "callback", str(job.id), "--expires-in", "900",
                 db=database_url)
    assert r.code == 0, r
    (url,) = [w for w in r.out.split() if w.startswith(PUBLIC)]
    assert url.startswith(f"{PUBLIC}/callbacks/{job.id}/approve/tcb_")
    assert "single use" in r.out

    r = run_main(capsys, "job", "status", str(job.id), db=database_url)
    rows = [line for line in flat(r.out).splitlines() if "callback URL" in line]
    assert len(rows) == 2 and all("unused" in row for row in rows)
    assert "made by job" in flat(r.out) and "made by cli" in flat(r.out)
    assert url.rsplit("/", 1)[1] not in r.out
    r = run_main(capsys, "job", "status", str(job.id), "--json", db=database_url)
    assert sorted(c["issued_by"] for c in r.json()["waiting_for"]["callbacks"]) == ["cli", "job"]

    _, _, job_id, signal, raw = urlsplit(url).path.split("/")
    app.answer_callback(int(job_id), signal, raw, {"approved": True})
    assert run_next(app).result == {"approved": True}
    r = run_main(capsys, "job", "callback", str(job.id), db=database_url)
    assert r.code == 2 and "invalid_transition" in r.err
