"""Property-based tests of the whole HTTP API from its own OpenAPI document (Schemathesis): over a
bounded run against a real embedded `simplemem serve`, no request gets a 5xx and every documented
response matches its schema. The next 500 is found here, not by a user."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error, response_schema_conformance

from tests.helpers.serving import ServeProcess
from tests.service_server import new_key

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 60
REQUESTS: list[int] = []  # the status of every request the run made (its count is reported)


@pytest.fixture(scope="module")
def fuzz_target(embedded_service: ServeProcess) -> tuple[str, dict[str, str]]:
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        return embedded_service.url, {"Authorization": f"Bearer {new_key(api, 'fuzz')}"}


def fuzz(case: Any, url: str, headers: dict[str, str]) -> None:
    response = case.call_and_validate(
        base_url=url, headers=headers, checks=[not_a_server_error, response_schema_conformance]
    )
    REQUESTS.append(response.status_code)


def test_no_request_gets_a_5xx_or_an_answer_off_its_schema(fuzz_target: tuple[str, dict[str, str]]) -> None:
    url, headers = fuzz_target
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10, "the OpenAPI document lists the routes"
    for operation in operations:
        run = settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,  # the same requests every run: a failure here is reproducible
            database=None,
        )(given(case=operation.as_strategy())(lambda case: fuzz(case, url, headers)))
        run()
    assert len(REQUESTS) >= 100, len(REQUESTS)  # not a run that silently generated nothing
    print(f"fuzz run: {len(REQUESTS)} requests over {len(operations)} operations, none 5xx")
