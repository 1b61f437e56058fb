"""Property-based tests of the whole HTTP API from its own OpenAPI document (Schemathesis, every
check: no 5xx, every status, content type, header and body as documented, schema-valid requests
accepted and schema-violating ones refused), in embedded and in services mode, with a tenant's key
and with the admin's; and of the MCP tools from their own input schemas. Bounded (a fixed number of
derandomized cases per operation) so that a failure here is reproducible. The next 500 is found
here, not by a user."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simplemem.schemas.settings import REPO_ROOT
from tests.helpers.serving import ServeProcess
from tests.service_server import ADMIN, new_key
from tests.services import drop_stream_env, require, stream_env

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 25
MCP_EXAMPLES_PER_TOOL = 60
ADMIN_PATHS = r"^/v1/(admin|tenants)"
# Checks' settings: a 413 (a batch over its limit) refuses schema-violating data as a 422 does.
CONFIG = """
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]
"""


def schemathesis(url: str, key: str, paths: str, exclude: bool, workdir: Path) -> int:
    """One `st run` over the operations whose path matches (or, ``exclude``, does not match) ``paths``;
    returns how many cases it generated. Fails the test with Schemathesis's report on any failure."""
    config = workdir / "schemathesis.toml"
    config.write_text(CONFIG)
    select = "--exclude-path-regex" if exclude else "--include-path-regex"
    command = [
        str(Path(sys.executable).parent / "st"),
        "--config-file",
        str(config),
        "run",
        f"{url}/openapi.json",
        "--checks",
        "all",
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(EXAMPLES_PER_OPERATION),
        "--generation-deterministic",
        "--seed",
        "58",
        "--header",
        f"Authorization: Bearer {key}",
        select,
        paths,
        "--no-color",
    ]
    env = {
        **os.environ,
        "SCHEMATHESIS_TELEMETRY": "false",  # no report to its vendor (nor network)
        "SCHEMATHESIS_HOOKS": "tests.fuzz_hooks",
        "PYTHONPATH": str(REPO_ROOT),
    }
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=workdir, timeout=1800)
    report = done.stdout + done.stderr
    assert done.returncode == 0, report[-20_000:]
    generated = re.search(r"(\d+) generated", report)
    assert generated, report[-5_000:]
    return int(generated.group(1))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def argument(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value for one tool argument: most often of its declared type, else any JSON value."""
    types = [s.get("type") for s in schema.get("anyOf", [schema])]
    typed: list[st.SearchStrategy[Any]] = []
    if "string" in types:
        typed.append(st.text(max_size=300) | st.from_regex(r"[A-Za-z0-9_.:@-]{1,40}", fullmatch=True))
    if "integer" in types:
        typed.append(st.integers(min_value=-(2**70), max_value=2**70))
    if "null" in types:
        typed.append(st.none())
    return st.one_of(*typed, JSON_VALUES) if typed else JSON_VALUES


def tool_calls(tool: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments for a tool: its declared ones (each maybe left out) and maybe one it does not know."""
    properties: dict[str, Any] = tool["inputSchema"].get("properties", {})
    fields = {name: st.one_of(st.just(None), argument(schema)) for name, schema in properties.items()}
    extra = st.dictionaries(st.sampled_from(["surprise", "tenant_id"]), JSON_VALUES, max_size=1)

    def build(values: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if v is not None} | more

    return st.builds(build, st.fixed_dictionaries(fields), extra)


def mcp(api: httpx.Client, method: str, params: dict[str, Any]) -> httpx.Response:
    message = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
    return api.post("/mcp/", json=message, headers={"Accept": "application/json, text/event-stream"})


def fuzz_mcp(url: str, key: str) -> int:
    """Every tool with generated arguments: each call answers 200 with a result (an error result for
    bad arguments), never a 5xx or an internal error. Returns the number of calls."""
    counted: list[int] = []
    with httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {key}"}) as api:
        listed = mcp(api, "tools/list", {})
        assert listed.status_code == 200, listed.text
        tools = listed.json()["result"]["tools"]
        assert {t["name"] for t in tools} >= {
            "remember",
            "search_memories",
            "list_memories",
            "forget_message",
        }
        for tool in tools:
            run_tool(api, tool, counted)
    return len(counted)


def run_tool(api: httpx.Client, tool: dict[str, Any], counted: list[int]) -> None:
    """One tool's generated calls (counted in ``counted``)."""
    name = tool["name"]

    @settings(
        max_examples=MCP_EXAMPLES_PER_TOOL,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments=tool_calls(tool))
    def call(arguments: dict[str, Any]) -> None:
        counted.append(1)
        answer = mcp(api, "tools/call", {"name": name, "arguments": arguments})
        assert answer.status_code == 200, (name, arguments, answer.status_code, answer.text[:500])
        body = answer.json()
        assert "result" in body or body["error"]["code"] != -32603, (name, arguments, body)
        if "result" in body and body["result"].get("isError"):
            text = body["result"]["content"][0]["text"]
            assert "unexpected" not in text.lower() and "Traceback" not in text, (name, text)

    call()


def fuzz_everything(url: str, workdir: Path, tenant: str) -> dict[str, int]:
    with httpx.Client(base_url=url, timeout=60) as api:
        key = new_key(api, tenant)
    cases = {
        "tenant key": schemathesis(url, key, ADMIN_PATHS, exclude=True, workdir=workdir),
        "admin key": schemathesis(url, ADMIN, ADMIN_PATHS, exclude=False, workdir=workdir),
    }
    with httpx.Client(base_url=url, timeout=60) as api:  # the admin's run may have revoked the first
        cases["MCP tool calls"] = fuzz_mcp(url, new_key(api, f"{tenant}-mcp"))
    assert cases["tenant key"] >= 500 and cases["admin key"] >= 100 and cases["MCP tool calls"] >= 200, cases
    return cases


def test_no_request_gets_a_5xx_or_an_answer_off_its_document_embedded(
    embedded_service: ServeProcess, tmp_path: Path
) -> None:
    cases = fuzz_everything(embedded_service.url, tmp_path, "fuzz")
    print(f"embedded fuzz: {json.dumps(cases)} cases, none 5xx, no conformance failure")


@pytest.fixture(scope="module")
def services_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    from simplemem.schemas.settings import settings_for

    env = stream_env("fuzz", tmp_path_factory.mktemp("fuzz-faust"), 2, 1800, SIMPLEMEM_ADMIN_KEY=ADMIN)
    settings = settings_for(env)
    require(settings, kafka=True)
    server = ServeProcess(env, tmp_path_factory.mktemp("fuzz-logs") / "serve.log").start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()
        drop_stream_env(settings)


@pytest.mark.integration
def test_no_request_gets_a_5xx_or_an_answer_off_its_document_services(
    services_server: ServeProcess, tmp_path: Path
) -> None:
    cases = fuzz_everything(services_server.url, tmp_path, "fuzz")
    print(f"services fuzz: {json.dumps(cases)} cases, none 5xx, no conformance failure")
