"""One vocabulary of error codes (issue 21, defect 7): the same bad input gives the same code
through the library, the CLI and REST, on both backends, and every code the package can
raise is in docs/errors.md.

The CLI runs in this process (``tether.cli.main.main``): argv of a real process cannot carry
NUL, which is one of the inputs. REST is a real server on the same database.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tether import Tether
from tether import errors
from tether.wire.problems import HTTP_CODES, STATUS_BY_CODE
from tests.e2e.api_harness import BACKENDS, backend_url, run_server
from tests.e2e.clitools import run_main

ROOT = Path(__file__).resolve().parents[2]
DEEP = "[" * 100_000 + "]" * 100_000


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture(scope="module", params=BACKENDS)
def sides(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"codes-{request.param}")
    url = backend_url(request.param, d)
    lib = Tether(url)
    _, admin = lib.store.create_token(name="admin", projects=[], admin=True)
    job = lib.submit("echo", {"n": 1})
    with run_server(url, d) as srv, srv.client(admin) as http:
        yield SimpleNamespace(lib=lib, http=http, url=url, job=job)
    lib.close()


# (label, library call, CLI argv, REST request (method, path, kwargs), code, CLI exit)
CASES = [
    ("bad queue name", lambda lib, j: lib.submit("echo", {}, queue="a\nb"),
     ["submit", "echo", "--queue", "a\nb"],
     ("POST", "/api/v1/jobs", {"json": {"type": "echo", "queue": "a\nb"}}),
     "invalid_argument", 2),
    ("bad project name", lambda lib, j: lib.submit("echo", {}, project="a\tb"),
     ["submit", "echo", "--project", "a\tb"],
     ("POST", "/api/v1/jobs", {"json": {"type": "echo", "project": "a\tb"}}),
     "invalid_argument", 2),
    ("bad idempotency key", lambda lib, j: lib.submit("echo", {}, idempotency_key="a b"),
     ["submit", "echo", "-k", "a b"],
     ("POST", "/api/v1/jobs", {"json": {"type": "echo"}, "headers": {"Idempotency-Key": "a b"}}),
     "invalid_idempotency_key", 2),
    ("NUL in a payload", lambda lib, j: lib.submit("echo", {"t": "a\x00b"}),
     ["submit", "echo", "-p", '{"t": "a\\u0000b"}'],
     ("POST", "/api/v1/jobs", {"json": {"type": "echo", "payload": {"t": "a\x00b"}}}),
     "invalid_payload", 2),
    ("JSON nested too deeply", lambda lib, j: lib.submit("echo", nested(100_000)),
     ["submit", "echo", "-p", DEEP],
     ("POST", "/api/v1/jobs", {"content": ('{"type": "echo", "payload": ' + DEEP + "}").encode(),
                               "headers": {"content-type": "application/json"}}),
     "invalid_payload", 2),
    ("NUL in a type filter", lambda lib, j: lib.list(type="a\x00b"),
     ["job", "list", "--type", "a\x00b"],
     ("GET", "/api/v1/jobs", {"params": {"type": "a\x00b"}}),
     "invalid_argument", 2),
    ("NUL in a queue filter", lambda lib, j: lib.list(queue="\x00"),
     ["job", "list", "--queue", "\x00"],
     ("GET", "/api/v1/jobs", {"params": {"queue": "\x00"}}),
     "invalid_argument", 2),
    ("NUL in a cancel reason", lambda lib, j: lib.cancel(j.id, reason="x\x00"),
     ["job", "cancel", "{job}", "--reason", "x\x00"],
     ("POST", "/api/v1/jobs/{job}/cancel", {"json": {"reason": "x\x00"}}),
     "invalid_argument", 2),
    ("pausing a queue nobody declared", lambda lib, j: lib.pause_queue("no-such-queue"),
     ["queue", "pause", "no-such-queue"],
     ("POST", "/api/v1/queues/no-such-queue/pause", {}),
     "queue_not_found", 3),
    ("a job that does not exist", lambda lib, j: lib.get(987654),
     ["job", "status", "987654"],
     ("GET", "/api/v1/jobs/987654", {}),
     "job_not_found", 3),
]


@pytest.mark.parametrize("label,call,argv,request_,code,exit_code", CASES,
                         ids=[c[0] for c in CASES])
def test_the_same_bad_input_gives_the_same_code_everywhere(sides, capsys, monkeypatch, label,
                                                           call, argv, request_, code,
                                                           exit_code):
    monkeypatch.setenv("NO_COLOR", "1")
    before = [(j.id, j.state) for j in sides.lib.list(limit=500)]

    with pytest.raises(errors.TetherError) as info:
        call(sides.lib, sides.job)
    assert info.value.code == code, info.value

    r = run_main(capsys, *[a.replace("{job}", str(sides.job.id)) for a in argv], db=sides.url)
    assert r.code == exit_code, r
    assert "Traceback" not in r.err and r.err.strip().endswith(f"({code})"), r

    method, path, kwargs = request_
    resp = sides.http.request(method, path.replace("{job}", str(sides.job.id)), **kwargs)
    assert resp.headers["content-type"] == "application/problem+json", resp.text
    assert resp.json()["code"] == code and resp.status_code == STATUS_BY_CODE[code], resp.text

    assert [(j.id, j.state) for j in sides.lib.list(limit=500)] == before, "nothing changed"


def test_ids_out_of_range_are_invalid_argument_in_the_library_and_cli(sides, capsys):
    for bad in (0, -1, 2**63):
        with pytest.raises(errors.InvalidArgument):
            sides.lib.get(bad)
        with pytest.raises(errors.InvalidArgument):
            sides.lib.cancel(bad)
    with pytest.raises(errors.InvalidArgument):
        sides.lib.events(sides.job.id, after=2**63)
    with pytest.raises(errors.InvalidArgument):
        sides.lib.list(state="sleeping")
    r = run_main(capsys, "job", "status", str(2**63), db=sides.url)
    assert r.code == 2 and r.err.strip().endswith("(invalid_argument)"), r
    # REST refuses the same path value as a request shape (pydantic bounds), like MCP
    resp = sides.http.get(f"/api/v1/jobs/{2**63}")
    assert resp.status_code == 422 and resp.json()["code"] == "validation_error"


# --- the table in docs/errors.md covers every code -------------------------------------------

_LITERALS = [
    re.compile(r'^\s+code = "([a-z_]+)"', re.M),                  # exception classes
    re.compile(r'Problem\(\s*\d{3},\s*"([a-z_]+)"'),               # interface problems
    re.compile(r'problem_response\(\s*\d{3},\s*"([a-z_]+)"'),
    re.compile(r'\bcode="([a-z_]+)"'),                             # CLI errors
    re.compile(r'error_code="([a-z_]+)"'),                         # job outcomes
    re.compile(r'_fail\("([a-z_]+)"'),                             # MCP tool errors
]


def _codes_in_source() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "src" / "tether").rglob("*.py"):
        text = path.read_text()
        for pattern in _LITERALS:
            found.update(pattern.findall(text))
    return found


def test_every_code_the_package_raises_is_in_docs_errors_md():
    documented = set(re.findall(r"`([a-z_]+)`", (ROOT / "docs" / "errors.md").read_text()))
    codes = (_codes_in_source() | set(errors.ERROR_CODES) | set(STATUS_BY_CODE)
             | set(HTTP_CODES.values()))
    assert {"invalid_argument", "invalid_idempotency_key", "too_many_waits"} <= codes
    assert codes - documented == set()


def test_every_problem_code_has_one_http_status():
    for code in set(HTTP_CODES.values()) | {c for c, cls in errors.ERROR_CODES.items()
                                           if issubclass(cls, errors.TetherError)
                                           and not issubclass(cls, errors.JobError)}:
        assert code in STATUS_BY_CODE, code
    assert STATUS_BY_CODE["invalid_argument"] == 422
    assert STATUS_BY_CODE["invalid_idempotency_key"] == 400
    assert STATUS_BY_CODE["invalid_payload"] == 422


def test_a_result_holding_nul_fails_its_job_as_invalid_result_on_both_backends(database_url):
    """Refused where JSON is canonicalised, before any store write: on PostgreSQL the result
    never reaches jsonb (which would answer a store error), on SQLite it is not stored."""
    app = Tether(database_url)

    @app.job("nul_result", max_attempts=1)
    def nul_result(ctx, payload):
        return {"text": "a\x00b"}

    try:
        job = app.run("nul_result", {}, timeout=30)
    finally:
        app.close()
    assert job.state == "failed" and job.error_code == "invalid_result", job
    assert "NUL" in job.error_summary and job.result is None
