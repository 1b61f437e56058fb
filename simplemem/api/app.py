"""The query service's ASGI app: the memory over HTTP, per-tenant keys and quotas.

Every route resolves the caller from its key first; the tenant of a request is the key's. Blocking
work (retrieval, the embedded pipeline) runs in worker threads; the models and store clients are
loaded once, when the app starts, and shared by all requests.
"""

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
import orjson
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from simplemem.api.auth import Caller, identify, require_admin, tenant_of
from simplemem.api.backends import MemoryBackend
from simplemem.api.contract import (
    KeyIdPath,
    MessageIdPath,
    TenantIdPath,
    document,
    json_bodies,
    method_not_allowed,
)
from simplemem.api.feedback import FeedbackLog
from simplemem.api.keys import KeyStore, new_key
from simplemem.api.limits_asgi import body_limit
from simplemem.api.metrics import ServiceMetrics
from simplemem.api.quotas import SETTING, Quota, Quotas
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.schemas.api import (
    MAX_PAGE_OFFSET,
    Accepted,
    EventError,
    EventsAccepted,
    FeedbackAnswer,
    FeedbackBody,
    FeedbackRecord,
    KeyCreate,
    KeyCreated,
    MemoryPage,
    QueryBody,
)
from simplemem.schemas.events import ChatEvent, EventRejected, describe_errors, event_object, parse_event
from simplemem.schemas.keys import id_problem
from simplemem.schemas.query import QueryFilters, QueryRequest
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest

API_TITLE = "simplemem query service"


@dataclass
class Service:
    """What the routes share: settings, the memory, keys, quotas, feedback and metrics."""

    settings: Settings
    backend: MemoryBackend
    keys: KeyStore
    quotas: Quotas
    feedback: FeedbackLog
    metrics: ServiceMetrics
    tenant_erasers: list[Callable[[str], object]] = field(default_factory=list)  # what else a tenant leaves

    @property
    def admin_key(self) -> str | None:
        key = self.settings.admin_key
        return key.get_secret_value() if key is not None else None

    def caller(self, request: Request) -> Caller:
        return identify(request, self.keys, self.admin_key)

    def take(self, quota: Quota, tenant_id: str, cost: int = 1) -> None:
        self.take_all(tenant_id, {quota: cost})

    def take_all(self, tenant_id: str, costs: dict[Quota, int]) -> None:
        """Charge every cost or none; 413 for a cost over a whole quota, 429 for a used-up one."""
        quota, verdict = self.quotas.take_all(tenant_id, costs)
        if quota is None:
            return
        if verdict.never:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"this request costs {costs[quota]}, over the whole {quota.value} quota of "
                f"{self.quotas.limit(quota)} ({SETTING[quota]}): send it in smaller parts",
            )
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"the tenant's {quota.value} quota is used up; retry in {verdict.retry_after} s",
            headers={"Retry-After": str(verdict.retry_after)},
        )

    def query_request(self, tenant_id: str, body: QueryBody, as_of: datetime | None = None) -> QueryRequest:
        try:
            return QueryRequest(id=body.id, tenant_id=tenant_id, query=body.query, as_of=as_of or body.as_of)
        except ValidationError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, describe_errors(exc)) from None

    async def accept_events(self, caller: Caller, payload: Any, extra_chars: int = 0) -> EventsAccepted:
        """Validate each event on its own: a bad event gets its error, the rest goes on. ``extra_chars``
        is text the request stores besides its events' (mem0's scope), charged with them."""
        tenant = tenant_of(caller)
        raw = _event_list(payload)
        limit = self.settings.api_max_batch_events
        if len(raw) > limit:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"{len(raw)} events, over the batch limit of {limit} (SIMPLEMEM_API_MAX_BATCH_EVENTS)",
            )
        answer = EventsAccepted()
        events: list[ChatEvent] = []
        for index, item in enumerate(raw):
            try:
                event = self._event_of(item, tenant)
            except EventRejected as exc:
                answer.rejected.append(
                    EventError(index=index, message_id=_message_id(item), reason=exc.reason)
                )
                continue
            tenant_of(caller, event.tenant_id)
            events.append(event)
        if events:
            self._charge_ingest(tenant, events, extra_chars)
            await self.backend.ingest(events)
        answer.accepted = [e.message_id for e in events]
        self.metrics.events.labels("accepted").inc(len(answer.accepted))
        self.metrics.events.labels("rejected").inc(len(answer.rejected))
        return answer

    def _charge_ingest(self, tenant: str, events: list[ChatEvent], extra_chars: int) -> None:
        """Events and their text, against the request's bound and the tenant's quotas."""
        chars = sum(len(e.text) for e in events) + extra_chars
        limit = self.settings.api_max_batch_chars
        if chars > limit:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"{chars} characters of text, over the request limit of {limit} (SIMPLEMEM_API_MAX_BATCH_CHARS)",
            )
        self.take_all(tenant, {Quota.INGEST: len(events), Quota.INGEST_TEXT: chars})

    def _event_of(self, item: Any, tenant: str) -> ChatEvent:
        """One batch item as an event of the caller's tenant when it names none. The tenant is checked
        by the caller on the parsed event, so no shape of item (object, JSON string, ...) escapes it."""
        data = event_object(item)
        data.setdefault("tenant_id", tenant)
        return parse_event(
            data, max_text_chars=self.settings.max_text_chars, max_id_chars=self.settings.max_id_chars
        )

    async def delete(self, request: DeletionRequest) -> Accepted:
        outcome = await self.backend.forget(request)
        scope: dict[str, Any] = {"tenant_id": request.tenant_id, "routed": outcome}
        if request.message_ids:
            scope["message_ids"] = request.message_ids
        else:
            scope["whole_tenant"] = True
        return Accepted(detail=scope)


def valid_path_id(value: str, field: str, *, tenant: bool = False) -> None:
    """422 naming ``field`` for an id in a path that no store could hold."""
    problem = id_problem(value, tenant=tenant)
    if problem is None and value.startswith("."):
        problem = "must not start with '.' in a path"
    if problem is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{field}: {problem}")


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _message_id(item: Any) -> str | None:
    return _str(item.get("message_id")) if isinstance(item, dict) else None


def _event_list(payload: Any) -> list[Any]:
    """One event, a JSON array of events, or ``{"events": [...]}``."""
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("events"), list) and "message_id" not in payload:
        return list(payload["events"])
    if isinstance(payload, dict):
        return [payload]
    raise HTTPException(
        status.HTTP_422_UNPROCESSABLE_CONTENT, "send an event, a list of events or {events: [...]}"
    )


async def service_of(request: Request) -> Service:
    """The app's :class:`Service` (``app.state.service``): what every route depends on."""
    service: Service = request.app.state.service
    return service


ServiceDep = Annotated[Service, Depends(service_of)]


def caller_of(request: Request, service: ServiceDep) -> Caller:
    """The caller, from the request's key. Synchronous on purpose: FastAPI runs it in a worker
    thread, as the key store may block."""
    return service.caller(request)


CallerDep = Annotated[Caller, Depends(caller_of)]

memory_routes = APIRouter()  # what the tenant's memory takes in and answers
forget_routes = APIRouter()  # the right to be forgotten: a message, a whole tenant
key_routes = APIRouter()  # the admin's key management
ops_routes = APIRouter()  # health and metrics, without a key


@memory_routes.post("/v1/events", status_code=status.HTTP_202_ACCEPTED, response_model=EventsAccepted)
async def post_events(request: Request, caller: CallerDep, service: ServiceDep) -> EventsAccepted:
    """One event, or a batch: each event accepted or rejected with its reason."""
    try:
        payload = orjson.loads(await request.body())
    except orjson.JSONDecodeError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"invalid JSON: {exc}") from None
    return await service.accept_events(caller, payload)


@memory_routes.post("/v1/query")
async def post_query(body: QueryBody, caller: CallerDep, service: ServiceDep) -> dict[str, object]:
    """The memories and context for a question: the contract of ``simplemem query --json``."""
    tenant = tenant_of(caller, body.tenant_id)
    request = service.query_request(tenant, body)
    service.take(Quota.QUERY, tenant)
    filters = QueryFilters.model_validate(body.model_dump(include=set(QueryFilters.model_fields)))
    result = await anyio.to_thread.run_sync(service.backend.query, request, filters)
    return result.to_json()


@memory_routes.post("/v1/feedback", response_model=FeedbackAnswer)
async def post_feedback(body: FeedbackBody, caller: CallerDep, service: ServiceDep) -> FeedbackAnswer:
    """Log a wrong answer as a classifier miss and answer again at ``k_max``."""
    tenant = tenant_of(caller)
    request = service.query_request(tenant, QueryBody(query=body.query, as_of=body.as_of))
    service.take(Quota.QUERY, tenant)
    k_max = RetrievalConfig.from_settings(service.settings).k_max
    retry = await anyio.to_thread.run_sync(service.backend.query, request, QueryFilters(k=k_max))
    scrubbed = await anyio.to_thread.run_sync(service.backend.scrub, body.query)
    record = FeedbackRecord(
        tenant_id=tenant,
        query=scrubbed,
        as_of=body.as_of,
        complexity=body.complexity if body.complexity is not None else retry.complexity,
        k=body.k if body.k is not None else retry.k,
        retried_k=k_max,
        note=await anyio.to_thread.run_sync(service.backend.scrub, body.note) if body.note else None,
        logged_at=datetime.now(UTC),
    )
    await anyio.to_thread.run_sync(service.feedback.add, record)
    return FeedbackAnswer(logged=True, retry=retry)


@memory_routes.get("/v1/memories", response_model=MemoryPage)
async def get_memories(
    caller: CallerDep,
    service: ServiceDep,
    offset: Annotated[int, Query(ge=0, le=MAX_PAGE_OFFSET)] = 0,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> MemoryPage:
    """What the tenant's memory holds, with provenance (source messages, session, time)."""
    tenant = tenant_of(caller)
    service.take(Quota.QUERY, tenant)
    size = min(limit or service.settings.api_page_size, service.settings.api_max_page_size)
    units, total = await anyio.to_thread.run_sync(service.backend.memories, tenant, offset, size)
    following = offset + len(units)
    return MemoryPage(
        memories=units,
        offset=offset,
        next_offset=following if units and following < total else None,
        total=total,
    )


@forget_routes.delete("/v1/messages/{message_id}", status_code=status.HTTP_202_ACCEPTED)
async def delete_message(message_id: MessageIdPath, caller: CallerDep, service: ServiceDep) -> Accepted:
    """Forget a message and everything derived from it (routed to the forget path)."""
    tenant = tenant_of(caller)
    valid_path_id(message_id, "message id")
    service.take(Quota.FORGET, tenant)
    request = DeletionRequest(
        tenant_id=tenant,
        message_ids=[message_id],
        requested_by=caller.key_id,
        requested_at=datetime.now(UTC),
    )
    return await service.delete(request)


@forget_routes.delete("/v1/tenants/{tenant_id}", status_code=status.HTTP_202_ACCEPTED)
async def delete_tenant(tenant_id: TenantIdPath, caller: CallerDep, service: ServiceDep) -> Accepted:
    """Forget a whole tenant and revoke its keys (admin)."""
    require_admin(caller)
    valid_path_id(tenant_id, "tenant id", tenant=True)
    request = DeletionRequest(
        tenant_id=tenant_id, whole_tenant=True, requested_by="admin", requested_at=datetime.now(UTC)
    )
    accepted = await service.delete(request)
    for erase in service.tenant_erasers:  # the mem0 scopes: its end users' ids
        await anyio.to_thread.run_sync(erase, tenant_id)
    revoked = await anyio.to_thread.run_sync(_revoke_all, service.keys, tenant_id)
    accepted.detail["revoked_keys"] = revoked
    return accepted


@key_routes.post("/v1/admin/keys", status_code=status.HTTP_201_CREATED, response_model=KeyCreated)
async def create_key(body: KeyCreate, caller: CallerDep, service: ServiceDep) -> KeyCreated:
    """A new key for a tenant (admin); the key is shown only in this answer."""
    require_admin(caller)
    key, record = new_key(body.tenant_id)
    await anyio.to_thread.run_sync(service.keys.add, record)
    return KeyCreated(key_id=record.key_id, tenant_id=record.tenant_id, key=key)


@key_routes.get("/v1/admin/keys")
async def list_keys(
    caller: CallerDep, service: ServiceDep, tenant_id: str | None = None
) -> list[dict[str, object]]:
    require_admin(caller)
    records = await anyio.to_thread.run_sync(service.keys.list, tenant_id)
    return [r.public() for r in records]


@key_routes.delete("/v1/admin/keys/{key_id}")
async def revoke_key(key_id: KeyIdPath, caller: CallerDep, service: ServiceDep) -> dict[str, object]:
    require_admin(caller)
    if not await anyio.to_thread.run_sync(service.keys.revoke, key_id):
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such key")
    return {"key_id": key_id, "revoked": True}


@ops_routes.get("/healthz", responses={503: {"description": "a store is down (each store's state)"}})
async def healthz(service: ServiceDep) -> JSONResponse:
    """Each store with its state; 503 when one is down."""
    stores = await service.backend.health()
    ok = all(s["state"] == "up" for s in stores.values())
    body = {"status": "ok" if ok else "degraded", "mode": service.backend.mode, "stores": stores}
    return JSONResponse(body, status_code=200 if ok else 503)


@ops_routes.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}, "description": "Prometheus text"}
    },
)
async def metrics(service: ServiceDep) -> Response:
    data, content_type = service.metrics.exposition()
    return Response(data, media_type=content_type)


ROUTERS = (memory_routes, forget_routes, key_routes, ops_routes)


def create_app(service: Service, extra: list[Any] | None = None) -> FastAPI:
    """The ASGI app; ``extra`` are routers and mounts added by the compatibility layers."""
    # /docs and /redoc load Swagger UI and ReDoc from the fastapi-offline package, not a CDN
    app = FastAPIOffline(
        title=API_TITLE, version="1", lifespan=_lifespan, responses=REFUSALS, redirect_slashes=False
    )
    app.state.service = service
    app.state.lifespans = []
    for router in ROUTERS:
        app.include_router(router)
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(StarletteHTTPException, method_not_allowed)
    for item in extra or []:
        item(app)
    app.add_middleware(_Wrapped, wrap=lambda inner: json_bodies(inner, exempt=("/mcp",)))
    app.add_middleware(_Wrapped, wrap=lambda inner: body_limit(inner, service.settings.api_max_body_bytes))
    document(app, service.settings.api_max_batch_events)
    app.add_middleware(_Wrapped, wrap=service.metrics.middleware)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    """The backend's models and store clients load once, at start; the lifespans the compatibility
    layers registered run inside."""
    service: Service = app.state.service
    await service.backend.start()
    try:
        async with _nested(app.state.lifespans):
            yield
    finally:
        await service.backend.stop()


async def _invalid_request(request: Request, exc: Exception) -> Response:
    """A 422 as every other refusal: one line naming each failing field. The offending input is not
    echoed back (text that is not UTF-8, a lone surrogate, could not be encoded), and the line is
    ASCII-escaped, so any message encodes."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    parts = []
    for error in errors:
        loc = [str(p) for p in error.get("loc", ()) if p != "body"] or ["body"]
        parts.append(f"{'.'.join(loc)}: {error.get('msg', 'invalid')}")
    body = json.dumps({"detail": "; ".join(parts) or "invalid request"}, ensure_ascii=True)
    return Response(body, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT, media_type="application/json")


class Refusal(BaseModel):
    """The body of every 4xx: what was wrong, naming the field."""

    detail: str


REFUSALS: dict[int | str, dict[str, Any]] = {
    code: {"model": Refusal, "description": text}
    for code, text in {
        401: "no key, or an unknown or revoked one",
        403: "the key may not do this (another tenant, not the admin)",
        404: "no such memory",
        409: "the request contradicts itself (two values for one field) or the memory's state (named)",
        413: "over a size limit (named)",
        422: "a field is invalid (named)",
        429: "the tenant's quota is used up (Retry-After)",
    }.items()
}


class _Wrapped:
    """Adapts a function-style ASGI middleware to Starlette's ``add_middleware``."""

    def __init__(self, app: Any, wrap: Any) -> None:
        self._app = wrap(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self._app(scope, receive, send)


def _revoke_all(keys: KeyStore, tenant_id: str) -> int:
    return sum(keys.revoke(r.key_id) for r in keys.list(tenant_id) if not r.revoked)


@asynccontextmanager
async def _nested(contexts: list[Any]) -> AsyncIterator[None]:
    """Enter the lifespans the compatibility layers registered (the MCP session manager)."""
    from contextlib import AsyncExitStack

    async with AsyncExitStack() as stack:
        for make in contexts:
            await stack.enter_async_context(make())
        yield
