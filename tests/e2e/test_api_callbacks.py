"""Callback URLs over real HTTP, on both backends: a job waiting with a callback URL is
answered by a plain POST without any API token, once; a used, expired (row backdated), or
another job's or signal's URL is refused with a problem document; the confirmation page
spends nothing; the token appears in no server log line.

One API server per backend, with a worker beside it, runs ``ask_by_link`` from
``tests/e2e/api_app.py``: its ``wait_for_signal(callback=)`` "mails" the URL by appending it
to a file, the outbox, which the test reads as the recipient would.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from types import SimpleNamespace
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from tether import Tether
from tests.e2e.api_harness import BACKENDS, backend_url, run_server
from tests.procs import free_port

APP = "tests.e2e.api_app:app"


@pytest.fixture(scope="module", params=BACKENDS)
def api(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"api-callbacks-{request.param}")
    url = backend_url(request.param, d)
    local = Tether(url)
    _, p1 = local.store.create_token(name="p1", projects=["p1"], admin=False)
    _, p2 = local.store.create_token(name="p2", projects=["p2"], admin=False)
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    with run_server(url, d, app_spec=APP, run_worker=True, port=port, log_level="info",
                    env={"TETHER_PUBLIC_URL": public}) as srv:
        with srv.client(p1) as c1, srv.client(p2) as c2, srv.client() as anyone:
            yield SimpleNamespace(srv=srv, local=local, p1=c1, p2=c2, anyone=anyone,
                                  backend=request.param, url=url, dir=d)
    local.close()


def until(client: httpx.Client, job_id: int, check, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if check(job):
            return job
        assert time.monotonic() < deadline, f"job {job_id} stuck: {job}"
        time.sleep(0.05)


def ask(api, **payload) -> tuple[int, str]:
    """A job waiting with a callback URL, and the URL as its mail delivered it."""
    outbox = api.dir / f"outbox-{uuid.uuid4().hex[:8]}.txt"
    r = api.p1.post("/api/v1/jobs", json={"type": "ask_by_link", "project": "p1",
                                          "payload": {"outbox": str(outbox), **payload}})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    until(api.p1, job_id, lambda j: j["state"] == "waiting")
    (link,) = outbox.read_text().split()
    assert link.startswith(f"{api.srv.url}/callbacks/{job_id}/")
    return job_id, link


def path(link: str) -> str:
    return urlsplit(link).path


def refused(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    body = r.json()
    assert body["code"] == code and body["type"] == f"urn:tether:problem:{code}"
    assert body["instance"].endswith("/[token]"), "the token is not echoed"


def test_a_plain_post_answers_the_job_once_and_the_job_resumes_with_the_payload(api):
    job_id, link = ask(api, prompt="Ship release 7?")
    job = api.p1.get(f"/api/v1/jobs/{job_id}").json()
    (shown,) = job["waiting_for"]["callbacks"]
    assert (shown["state"], shown["issued_by"], shown["signal"]) == ("unused", "job", "approve")
    assert "url" not in shown and path(link).rsplit("/", 1)[1] not in str(job)

    r = httpx.post(link, json={"approved": True, "by": "ops@example.com"})
    assert r.status_code == 200, r.text
    assert r.json() == {"job_id": job_id, "signal": "approve", "callback": shown["id"],
                        "state": r.json()["state"]}
    assert "payload" not in r.json(), "the token holder sees nothing of the job"
    done = until(api.p1, job_id, lambda j: j["terminal"])
    assert done["state"] == "succeeded"
    assert done["result"] == {"answer": {"approved": True, "by": "ops@example.com"}}

    refused(httpx.post(link, json={"approved": False}), 410, "callback_used")
    (seen,) = api.p1.get(f"/api/v1/jobs/{job_id}/callbacks").json()["items"]
    assert seen["state"] == "used" and seen["used_at"] is not None and seen["url"] is None


def backdate(api, callback_id: str) -> None:
    """Move the callback's expiry an hour into the past, as the store's clock would see it."""
    if api.backend == "sqlite":
        from tether.store.sqlite.store import path_from_url
        with sqlite3.connect(path_from_url(api.url)) as conn:
            conn.execute("UPDATE wait_callbacks SET expires_at = ? WHERE id = ?",
                         (time.time() - 3600, callback_id))
        return
    from tether.store.postgres.store import conninfo_from_url
    with psycopg.connect(conninfo_from_url(api.url)) as conn:
        conn.execute("UPDATE wait_callbacks SET expires_at = now() - interval '1 hour' "
                     "WHERE id = %s", (callback_id,))


def test_an_expired_url_is_refused_and_the_job_keeps_waiting(api):
    job_id, link = ask(api)
    (made,) = api.p1.get(f"/api/v1/jobs/{job_id}/callbacks").json()["items"]
    backdate(api, made["id"])
    refused(httpx.post(link, json=1), 410, "callback_expired")
    job = api.p1.get(f"/api/v1/jobs/{job_id}").json()
    assert job["state"] == "waiting"
    assert job["waiting_for"]["callbacks"][0]["state"] == "expired"


def test_another_jobs_or_signals_or_a_malformed_token_is_refused_and_not_spent(api):
    first, link = ask(api)
    other, _ = ask(api, signal="deploy")
    token = path(link).rsplit("/", 1)[1]
    for p in (f"/callbacks/{other}/approve/{token}",   # another job
              f"/callbacks/{first}/deploy/{token}",    # another signal
              f"/callbacks/{first}/approve/tcb_0123_short",
              f"/callbacks/{first}/approve/{token[:-2]}xx"):
        refused(api.anyone.post(p, json="mine"), 404, "callback_not_found")
    r = api.anyone.post(f"/callbacks/{first}/approve/{token}", content=b"{not json")
    assert r.status_code == 400 and r.json()["code"] == "bad_request"
    assert api.p1.get(f"/api/v1/jobs/{other}").json()["state"] == "waiting"
    assert httpx.post(link).status_code == 200, "still unspent: an empty body is null"
    assert until(api.p1, first, lambda j: j["terminal"])["result"] == {"answer": None}


def test_the_confirmation_page_spends_nothing_and_its_form_answers(api):
    job_id, link = ask(api, prompt="Refund order <42>?")
    for _ in range(2):  # a mail scanner, then the person
        page = httpx.get(link)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "Refund order &lt;42&gt;?" in page.text and '<form method="post">' in page.text
        assert page.headers["referrer-policy"] == "no-referrer"
        assert "default-src 'none'" in page.headers["content-security-policy"]
    r = httpx.post(link, data={"approved": "false", "value": '{"reason": "fraud"}'})
    assert r.status_code == 200 and "Thank you" in r.text
    done = until(api.p1, job_id, lambda j: j["terminal"])
    assert done["result"] == {"answer": {"approved": False, "value": {"reason": "fraud"}}}
    again = httpx.get(link)
    assert again.status_code == 410 and "Already answered" in again.text


def test_a_principal_who_may_see_the_job_makes_a_url_others_get_404(api):
    job_id, _ = ask(api)
    r = api.p1.post(f"/api/v1/jobs/{job_id}/callbacks", json={"expires_in_s": 600})
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["url"].startswith(f"{api.srv.url}/callbacks/{job_id}/approve/tcb_")
    assert made["issued_by"].startswith("token:") and made["state"] == "unused"
    r = api.p2.post(f"/api/v1/jobs/{job_id}/callbacks", json={})
    assert r.status_code == 404 and r.json()["code"] == "job_not_found"
    assert api.p2.get(f"/api/v1/jobs/{job_id}/callbacks").status_code == 404
    assert api.anyone.get(f"/api/v1/jobs/{job_id}/callbacks").status_code == 401
    assert httpx.post(made["url"], json="from the operator's link").status_code == 200
    assert until(api.p1, job_id, lambda j: j["terminal"])["result"] == {
        "answer": "from the operator's link"}
    r = api.p1.post(f"/api/v1/jobs/{job_id}/callbacks")
    assert r.status_code == 409 and r.json()["code"] == "invalid_transition"


def test_no_token_reaches_the_servers_log(api):
    _, link = ask(api)
    token = path(link).rsplit("/", 1)[1]
    httpx.get(link)
    httpx.post(link, json=1)
    httpx.post(link, json=2)
    log = api.srv.log.read_text()
    assert "/callbacks/" in log and "[token]" in log, "the access log is on"
    assert token not in log


def test_a_signal_name_with_spaces_and_unicode_travels_percent_encoded(api):
    job_id, link = ask(api, signal="ok to ship ✓")
    assert f"/callbacks/{job_id}/ok%20to%20ship%20%E2%9C%93/tcb_" in link
    r = httpx.post(link, json="yes")
    assert r.status_code == 200 and r.json()["signal"] == "ok to ship ✓"
    assert until(api.p1, job_id, lambda j: j["terminal"])["result"] == {"answer": "yes"}
