"""The job page's "Fork from stage…" control in Chromium, against a real ``tether serve`` with
a worker running the five-stage pipeline of ``tests/apps/forks.py``.

The stage picker lists the job's checkpointed stages; the fork made from it runs only the
stages from the one picked (the simulated provider's bill is checked), and its page shows the
reused checkpoints and ledger rows."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest

from tether import Tether
from tether.providers.simulated import read_bill
from tests.procs import CHILD_PYTHONPATH, free_port, stop, wait_started
from tests.e2e.dashboard_site import (  # noqa: F401 - fixtures
    MARKS, ROOT, Site, browser, context, expect, shot, signed_in, wait_for)

pytestmark = MARKS


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("dashboard-fork")
    url = f"sqlite:///{tmp}/tether.db"
    app = Tether(url)
    tokens = {"alpha": app.store.create_token(name="alpha", projects=["alpha"], admin=False)[1]}
    port = free_port()
    env = {**os.environ, "TETHER_DATABASE_URL": url, "TETHER_RUN_WORKER": "true",
           "TETHER_SIM_BILL": str(tmp / "bill.jsonl"),
           "PYTHONPATH": CHILD_PYTHONPATH}
    log = tmp / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(Path(sys.executable).with_name("tether")), "serve", "--app",
                                 "tests.apps.forks:app", "--port", str(port), "--log-level",
                                 "warning"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    site = Site(f"http://127.0.0.1:{port}", tokens, {}, app)
    try:
        src = app.submit("five_stages", {"topic": "rivers", "prompt": "brief"}, project="alpha")
        site.jobs["source"] = src.id
        wait_started(lambda: app.get(src.id).terminal, proc, what="the source job to finish",
                     log=log)
        assert app.get(src.id).state == "succeeded", log.read_text()
        site.bill = tmp / "bill.jsonl"  # type: ignore[attr-defined]
        yield site
    finally:
        stop(proc, timeout=20)
        app.close()


def test_fork_from_a_stage_picked_on_the_job_page(context, site):
    src = site.jobs["source"]
    page = signed_in(context, site, "alpha")
    page.goto(f"/jobs/{src}")
    fork = page.locator("#fork-job")
    expect(fork).to_be_enabled()
    fork.click()
    expect(page.locator("#confirm-dialog")).to_be_visible()
    options = page.locator("#fork-stage option")
    expect(options).to_have_text(["1. draft", "2. outline", "3. validate", "4. review",
                                  "5. export"])
    page.select_option("#fork-stage", "validate")
    expect(page.locator("#fork-reuse")).to_have_text(
        f"Reused from job #{src}, not paid again: draft, outline.")
    assert json.loads(page.input_value("#fork-payload")) == {"topic": "rivers",
                                                            "prompt": "brief"}

    page.fill("#fork-payload", "{not json")
    page.click("#confirm-ok")
    expect(page.locator("#confirm-error")).to_contain_text("not valid JSON")
    page.fill("#fork-payload", json.dumps({"topic": "rivers", "prompt": "detailed"}))
    shot(page, "fork-dialog")
    sent = []

    def lose_the_first_answer(route):
        sent.append(route.request.headers.get("idempotency-key"))
        if len(sent) == 1:
            route.fetch()  # the server makes the fork; its answer never reaches the page
            route.abort()
        else:
            route.continue_()

    page.route(re.compile(r".*/api/v1/jobs/\d+/fork$"), lose_the_first_answer)
    page.click("#confirm-ok")
    expect(page.locator("#confirm-error")).to_contain_text("did not answer")
    page.click("#confirm-ok")  # the user tries again
    expect(page).to_have_url(re.compile(r"/jobs/(\d+)$"))
    expect(page).not_to_have_url(re.compile(rf"/jobs/{src}$"))
    fork_id = int(page.url.rsplit("/", 1)[1])
    assert len(sent) == 2 and sent[0] == sent[1] and sent[0].startswith("dashboard-fork-")
    forked_to = [e.data["job_id"] for e in site.app.events(src) if e.kind == "forked_to"]
    assert forked_to == [fork_id]  # one fork, though the request was sent twice

    expect(page.locator("#job-state")).to_have_attribute("data-state", "succeeded",
                                                         timeout=30_000)
    rows = page.locator("#checkpoints-body tr")
    expect(rows).to_have_count(5)
    expect(page.locator("#checkpoints-body .tag-reused")).to_have_text(
        [f"reused from #{src}"] * 2)
    expect(page.locator("#job-ledger .tag-reused")).to_have_count(4)
    expect(page.locator("#ledger-total")).to_contain_text("6 calls")
    expect(page.locator("#ledger-total")).to_contain_text("4 reused")
    expect(page.locator("#job-payload")).to_contain_text("detailed")
    shot(page, "fork-job-page")

    billed = Counter(e.key.split("-")[0] for e in read_bill(site.bill) if e.job_id == fork_id)
    assert billed == {"validate": 2, "review": 2, "export": 2}
    assert site.app.get(fork_id).result["prompt"] == "detailed"
