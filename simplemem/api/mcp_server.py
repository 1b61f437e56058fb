"""The MCP server (Streamable HTTP at ``/mcp/``): the memory as tools for MCP clients.

Same keys as the HTTP API: a request without a valid key is refused before the MCP layer sees it,
and each tool acts for the tenant of the key its request carries. Stateless (JSON responses, no
session kept between requests), so any replica answers any request.
"""

import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import orjson
from fastapi import FastAPI, HTTPException
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError
from starlette.datastructures import Headers
from starlette.types import ASGIApp as Asgi
from starlette.types import Receive, Scope, Send

from simplemem.api.app import Service
from simplemem.api.auth import Caller, identify_headers, tenant_of
from simplemem.api.quotas import Quota
from simplemem.schemas.api import MAX_PAGE_OFFSET, QueryBody
from simplemem.schemas.events import describe_errors
from simplemem.schemas.query import QueryFilters
from simplemem.schemas.stream import DeletionRequest

MOUNT = "/mcp"
DEFAULT_SESSION = "mcp"


def mount_mcp(service: Service) -> Any:
    """A callable mounting the MCP server at ``/mcp/`` behind the key check (``create_app``'s ``extra``)."""
    tools = MemoryTools(service)
    server = _server(tools)
    inner = server.streamable_http_app(
        streamable_http_path="/", stateless_http=True, json_response=True, host=service.settings.api_host
    )

    def add_to(app: FastAPI) -> None:
        app.mount(MOUNT, _KeyGate(inner, tools.caller))
        app.add_middleware(_ExactMount)
        app.state.lifespans.append(server.session_manager.run)

    return add_to


@contextmanager
def _as_tool_errors() -> Iterator[None]:
    """The API's refusals, as tool errors with the same reason."""
    try:
        yield
    except HTTPException as exc:
        retry = (exc.headers or {}).get("Retry-After")
        raise ToolError(
            f"{exc.status_code}: {exc.detail}" + (f" (retry after {retry} s)" if retry else "")
        ) from None
    except ValidationError as exc:
        raise ToolError(f"422: {describe_errors(exc)}") from None


class MemoryTools:
    """The tools, each acting for the tenant of the key its request carries, as the HTTP API does."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def caller(self, headers: Mapping[str, str] | None) -> Caller:
        return identify_headers(headers or {}, self.service.keys, self.service.admin_key)

    async def remember(
        self,
        text: str,
        ctx: Context,
        session_id: str = DEFAULT_SESSION,
        speaker: str = "user",
        role: str = "user",
    ) -> dict[str, Any]:
        with _as_tool_errors():
            who = self.caller(ctx.headers)
            event = {
                "tenant_id": tenant_of(who),
                "session_id": session_id,
                "message_id": f"mcp-{uuid.uuid4().hex}",
                "speaker": speaker,
                "role": role,
                "text": text,
                "ts": datetime.now(UTC).isoformat(),
                "ends_exchange": True,  # a tool call is a complete statement: decided now
            }
            answer = await self.service.accept_events(who, [event])
            if answer.rejected:
                raise ToolError(f"422: {answer.rejected[0].reason}")
            return answer.model_dump()

    async def search_memories(self, query: str, ctx: Context, k: int | None = None) -> dict[str, Any]:
        with _as_tool_errors():
            service, tenant = self.service, tenant_of(self.caller(ctx.headers))
            request = service.query_request(tenant, QueryBody(query=query))
            service.take(Quota.QUERY, tenant)
            result = await anyio.to_thread.run_sync(service.backend.query, request, QueryFilters(k=k))
            return result.to_json()

    async def list_memories(self, ctx: Context, offset: int = 0, limit: int = 50) -> dict[str, Any]:
        with _as_tool_errors():
            service, tenant = self.service, tenant_of(self.caller(ctx.headers))
            service.take(Quota.QUERY, tenant)
            size = max(1, min(limit, service.settings.api_max_page_size))
            units, total = await anyio.to_thread.run_sync(
                service.backend.memories, tenant, min(max(0, offset), MAX_PAGE_OFFSET), size
            )
            memories = [orjson.loads(u.model_dump_json(exclude={"context"})) for u in units]
            return {"memories": memories, "total": total}

    async def forget_message(self, message_id: str, ctx: Context) -> dict[str, Any]:
        with _as_tool_errors():
            who = self.caller(ctx.headers)
            tenant = tenant_of(who)
            self.service.take(Quota.FORGET, tenant)
            request = DeletionRequest(
                tenant_id=tenant,
                message_ids=[message_id],
                requested_by=who.key_id,
                requested_at=datetime.now(UTC),
            )
            return (await self.service.delete(request)).model_dump()


def _server(tools: MemoryTools) -> MCPServer[Any]:
    """The MCP server offering the memory's tools."""
    server: MCPServer[Any] = MCPServer(
        name="simplemem",
        instructions="Long-term memory of one tenant: remember what was said, search it, list it, forget it.",
    )
    server.add_tool(
        tools.remember, description="Remember a message said in a conversation (stored as a chat event)."
    )
    server.add_tool(
        tools.search_memories,
        description="Search the memory: the memories and context that answer a question.",
    )
    server.add_tool(
        tools.list_memories, description="List what is remembered, a page at a time, with provenance."
    )
    server.add_tool(tools.forget_message, description="Forget a message and every memory derived from it.")
    return server


class _KeyGate:
    """Refuses requests without a valid key (401) before the MCP layer sees them."""

    def __init__(self, app: Asgi, caller: Callable[[Mapping[str, str] | None], Caller]) -> None:
        self._app = app
        self._caller = caller

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                self._caller(Headers(scope=scope))
            except HTTPException as exc:
                body = orjson.dumps({"detail": exc.detail})
                headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
                await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self._app(scope, receive, send)


class _ExactMount:
    """``/mcp`` is served as ``/mcp/``: Starlette would answer it with a redirect whose Location is
    built from the request's Host header (a header any client sets)."""

    def __init__(self, app: Asgi) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == MOUNT:
            scope = {**scope, "path": f"{MOUNT}/", "raw_path": f"{MOUNT}/".encode()}
        await self._app(scope, receive, send)
