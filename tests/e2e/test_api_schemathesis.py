"""schemathesis against the live server's own OpenAPI: no 5xx, and every response (status,
content type, body) matches the document. One test per operation and generation mode (valid
and invalid input), a few examples each, so the whole module stays well under a minute."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance, response_schema_conformance, status_code_conformance,
)

from tether import Tether
from tether.api import create_app
from tests.e2e.api_harness import run_server

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
EXAMPLES = int(os.environ.get("TETHER_SCHEMATHESIS_EXAMPLES", "10"))


def _cases() -> list[tuple[str, GenerationMode]]:
    """Every operation with valid input; those that take input also with invalid input."""
    doc = create_app(Tether("sqlite:///:memory:"), dashboard=False).openapi()
    out = []
    for path, item in doc["paths"].items():
        for method, op in item.items():
            label = f"{method.upper()} {path}"
            out.append(pytest.param(label, GenerationMode.POSITIVE, id=f"{label}-valid"))
            if op.get("parameters") or op.get("requestBody"):
                out.append(pytest.param(label, GenerationMode.NEGATIVE, id=f"{label}-invalid"))
    return out


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    d = tmp_path_factory.mktemp("api-schemathesis")
    url = f"sqlite:///{d}/tether.db"
    local = Tether(url)
    _, token = local.store.create_token(name="admin", projects=[], admin=True)
    with run_server(url, d, app_spec="tests.e2e.api_app:app") as srv:
        with srv.client(token) as c:
            for i in range(3):  # jobs for reads, control actions and pages to hit
                c.post("/api/v1/jobs", json={"type": "echo", "payload": {"i": i}})
        schema = schemathesis.openapi.from_url(f"{srv.url}/openapi.json")
        operations = {}
        for result in schema.get_all_operations():
            op = result.ok()
            operations[f"{op.method.upper()} {op.path}"] = op
        yield srv, token, operations
    local.close()


@pytest.mark.parametrize("label,mode", _cases())
def test_operation_conforms_to_the_openapi_document(live, label, mode):
    srv, token, operations = live
    op = operations[label]
    headers = {"Authorization": f"Bearer {token}"}

    @given(case=op.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))
    def check(case):
        case.call_and_validate(base_url=srv.url, headers=headers, checks=CHECKS)

    check()
