"""The official `mcp` client (Streamable HTTP) against `simplemem serve`'s MCP server: it remembers a
fact and finds it; a request without a valid key is refused; another tenant's key finds nothing."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from tests.helpers.serving import ServeProcess
from tests.service_server import new_key

pytestmark = pytest.mark.slow


async def call(server: ServeProcess, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http,
        streamable_http_client(f"{server.url}/mcp/", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        result = await session.call_tool(tool, arguments)
        return result


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    data: dict[str, Any] = result.structured_content or json.loads(result.content[0].text)
    return data


def test_the_mcp_client_remembers_and_finds_a_fact(embedded_service: ServeProcess) -> None:
    import anyio

    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        key, other = new_key(api, "mcp-tenant"), new_key(api, "mcp-other")
        assert api.post("/mcp/", json={}).status_code == 401
    remembered = payload(
        anyio.run(call, embedded_service, key, "remember", {"text": "My locker code is in the red notebook."})
    )
    assert len(remembered["accepted"]) == 1
    deadline = time.monotonic() + 60
    found: dict[str, Any] = {}
    while time.monotonic() < deadline and "notebook" not in found.get("context", ""):
        found = payload(
            anyio.run(call, embedded_service, key, "search_memories", {"query": "Where is my locker code?"})
        )
        time.sleep(0.5)
    assert "red notebook" in found["context"]
    theirs = payload(
        anyio.run(call, embedded_service, other, "search_memories", {"query": "Where is my locker code?"})
    )
    assert theirs["memories"] == []
    listed: dict[str, Any] = {"total": 0}
    deadline = time.monotonic() + 60  # listed once its window closes (the session goes silent)
    while time.monotonic() < deadline and not listed["total"]:
        listed = payload(anyio.run(call, embedded_service, key, "list_memories", {}))
        time.sleep(0.5)
    assert "red notebook" in listed["memories"][0]["text"]
    forgotten = payload(
        anyio.run(call, embedded_service, key, "forget_message", {"message_id": remembered["accepted"][0]})
    )
    assert forgotten["status"] == "accepted"


def test_refusals_reach_the_client_with_their_reason(embedded_service: ServeProcess) -> None:
    """A refused tool call is a tool error carrying the API's status and reason, not "Error executing
    tool", and a malformed id is refused before it reaches the forget path."""
    import anyio

    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        key = new_key(api, "mcp-refusals")
    for message_id in ("", "two words", "line\nbreak", "x" * 300):
        result = anyio.run(call, embedded_service, key, "forget_message", {"message_id": message_id})
        assert result.is_error, message_id
        text = result.content[0].text
        assert ": 422: " in text and "message_ids" in text and "Traceback" not in text, text
    result = anyio.run(call, embedded_service, key, "remember", {"text": "x", "session_id": "has space"})
    assert result.is_error and ": 422: " in result.content[0].text and "session_id" in result.content[0].text


def test_mcp_without_its_slash_is_served_not_redirected_to_the_host_header(
    embedded_service: ServeProcess,
) -> None:
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        r = api.post("/mcp", json={}, headers={"Host": "attacker.example"})
    assert r.status_code == 401 and "location" not in r.headers


def test_no_line_of_the_servers_log_holds_a_callers_input(embedded_service: ServeProcess) -> None:
    """Argument errors quote the input back to its caller (kept), never into the log; mem0's add
    answers the scrubbed text, not the raw message."""
    import anyio

    marker = "frank.marker@example.com 212-555-0199"
    with httpx.Client(base_url=embedded_service.url, timeout=60) as api:
        key = new_key(api, "mcp-logs")
        refused = [
            anyio.run(call, embedded_service, key, "search_memories", {"query": "q", "k": marker}),
            anyio.run(
                call, embedded_service, key, "remember", {"text": marker, "session_id": f"bad id {marker}"}
            ),
            anyio.run(call, embedded_service, key, "list_memories", {"offset": marker}),
            anyio.run(call, embedded_service, key, "forget_message", {"message_id": f"bad id {marker}"}),
        ]
        assert all(r.is_error for r in refused), refused
        added = api.post(
            "/mem0/v3/memories/add/",
            json={"messages": [{"content": f"Write to me at {marker}."}], "user_id": "u"},
            headers={"Authorization": f"Bearer {key}"},
        )
        assert added.status_code == 200
        assert "frank.marker@example.com" not in added.text and "555-0199" not in added.text, added.text
    log = embedded_service.log_path.read_text(errors="replace")
    assert "frank.marker" not in log and "555-0199" not in log, [
        line for line in log.splitlines() if "marker" in line or "555-0199" in line
    ]
