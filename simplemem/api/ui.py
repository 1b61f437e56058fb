"""The ``/ui/`` page and the browsing routes it reads (``/v1/browse/...``).

The page is static files shipped in the package (``static/ui/``: HTML, one script, one style sheet; no
build step, nothing from another origin). Its script sends the key in the ``Authorization`` header of
each request to these routes, which resolve the tenant from the key exactly as every other route
does: a tenant key reads its own tenant only, the admin key names one (``tenant_id``). The page's
answers carry a Content-Security-Policy that allows scripts, styles and requests from this origin
only and no inline script, so stored text that looks like markup can run nothing even if it were
inserted as markup (the script inserts it as text).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from importlib.resources import files
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, status
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import ValidationError
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simplemem.api.activity import dead_letters
from simplemem.api.app import CallerDep, Service, ServiceDep, valid_path_id
from simplemem.api.auth import Caller, tenant_of
from simplemem.api.browse import count_units, list_units, provenance, session_messages
from simplemem.api.contract import MemoryIdPath
from simplemem.api.quotas import Quota
from simplemem.processors.retrieval.explain import explain
from simplemem.processors.stores.protocols import LexicalStore
from simplemem.runtime import Runtime
from simplemem.schemas.api import MAX_PAGE_OFFSET, QueryBody
from simplemem.schemas.browse import (
    AskBody,
    BrowseCounts,
    BrowseFilter,
    BrowsePage,
    Explained,
    ForgetBody,
    Forgotten,
    IngestionActivity,
    Provenance,
)
from simplemem.schemas.events import describe_errors
from simplemem.schemas.keys import MAX_ID_CHARS, TENANT_PATTERN
from simplemem.schemas.query import QueryFilters
from simplemem.schemas.stream import DeletionRecord, DeletionRequest

UI_PATH = "/ui"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
]
DELETIONS_SHOWN = 20

browse_routes = APIRouter(tags=["browse"])


def tenant_for(caller: Caller, named: str | None) -> str:
    """The tenant a browsing request reads: the key's; the admin key names one (``tenant_id``)."""
    if caller.admin:
        if not named:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT, "tenant_id: the admin key names a tenant"
            )
        valid_path_id(named, "tenant_id", tenant=True)
        return named
    return tenant_of(caller, named)


TenantParam = Annotated[
    str | None,
    Query(
        description="the admin's choice; a tenant key's own or none",
        json_schema_extra={"pattern": TENANT_PATTERN, "minLength": 1, "maxLength": MAX_ID_CHARS},
    ),
]


def _described(name: str) -> Any:
    """A filter's query parameter as the contract describes it: :class:`BrowseFilter`'s schema of the
    field (the model validates it, and the 422 names the field)."""
    schema = BrowseFilter.model_json_schema(ref_template="#/components/schemas/{model}")
    field = schema["properties"][name]
    given = next(s for s in field["anyOf"] if s.get("type") != "null")
    given = schema.get("$defs", {}).get(given.get("$ref", "").rsplit("/", 1)[-1], given)
    extra = {k: v for k, v in given.items() if k not in ("title", "description")}
    return Query(description=field.get("description"), json_schema_extra=extra)


def browse_filter(
    session: Annotated[str | None, _described("session")] = None,
    kind: Annotated[str | None, _described("kind")] = None,
    state: Annotated[str | None, _described("state")] = None,
    since: Annotated[str | None, _described("since")] = None,
    until: Annotated[str | None, _described("until")] = None,
    q: Annotated[str | None, _described("q")] = None,
) -> BrowseFilter:
    """The filters from the query string, each named in the 422 when it is wrong."""
    raw = {"session": session, "kind": kind, "state": state, "since": since, "until": until, "q": q}
    try:
        return BrowseFilter.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, describe_errors(exc)) from None


FilterDep = Annotated[BrowseFilter, Depends(browse_filter)]


async def _read(service: Service, fn: Callable[[Runtime], Any]) -> Any:
    return await anyio.to_thread.run_sync(service.backend.read, fn)


async def _walk(service: Service, fn: Callable[[LexicalStore], Any]) -> Any:
    """``fn`` on the lexical store outside the backend's lock: a filtered listing or a count may read
    the whole tenant, and ingestion and queries must not wait for it (the store serialises its own
    statements; a walk reads in batches, so a write lands between two of them)."""
    lexical = await _read(service, lambda rt: rt.lexical)
    return await anyio.to_thread.run_sync(fn, lexical)


@browse_routes.get("/v1/browse/whoami")
async def whoami(caller: CallerDep, service: ServiceDep) -> dict[str, object]:
    """Who the key is (the page's sign-in): its tenant, or the admin with the tenants to pick from."""
    body: dict[str, object] = {
        "admin": caller.admin,
        "tenant_id": caller.tenant_id,
        "mode": service.backend.mode,
    }
    if caller.admin:
        stored = await _read(service, lambda rt: rt.lexical.tenants())
        keyed = await anyio.to_thread.run_sync(service.keys.list, None)
        body["tenants"] = sorted({*stored, *(r.tenant_id for r in keyed if not r.revoked)})
    return body


@browse_routes.get("/v1/browse", response_model=BrowsePage)
async def browse(
    caller: CallerDep,
    service: ServiceDep,
    flt: FilterDep,
    tenant_id: TenantParam = None,
    offset: Annotated[int, Query(ge=0, le=MAX_PAGE_OFFSET)] = 0,
    limit: Annotated[int | None, Query(ge=1)] = None,
) -> BrowsePage:
    """The tenant's memories, filtered (session, kind, state, dates, text), a page at a time."""
    tenant = tenant_for(caller, tenant_id)
    service.take(Quota.QUERY, tenant)
    size = min(limit or service.settings.api_page_size, service.settings.api_max_page_size)
    page: BrowsePage = await _walk(service, lambda lexical: list_units(lexical, tenant, flt, offset, size))
    return page


@browse_routes.get("/v1/browse/counts", response_model=BrowseCounts)
async def counts(
    caller: CallerDep, service: ServiceDep, flt: FilterDep, tenant_id: TenantParam = None
) -> BrowseCounts:
    """How many memories match, by state, kind and session (reads every memory of the tenant)."""
    tenant = tenant_for(caller, tenant_id)
    service.take(Quota.QUERY, tenant)
    found: BrowseCounts = await _walk(service, lambda lexical: count_units(lexical, tenant, flt))
    return found


@browse_routes.get("/v1/browse/memories/{memory_id}", response_model=Provenance)
async def memory_provenance(
    memory_id: MemoryIdPath, caller: CallerDep, service: ServiceDep, tenant_id: TenantParam = None
) -> Provenance:
    """A memory with its scrubbed source messages, the other memories of those messages, what it
    superseded or was superseded by, and an abstract's members."""
    tenant = tenant_for(caller, tenant_id)
    valid_path_id(memory_id, "memory id")
    service.take(Quota.QUERY, tenant)
    found: Provenance | None = await _read(service, lambda rt: provenance(rt.lexical, tenant, memory_id))
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such memory")
    return found


@browse_routes.post("/v1/browse/ask", response_model=Explained)
async def ask(body: AskBody, caller: CallerDep, service: ServiceDep) -> Explained:
    """What ``POST /v1/query`` answers for the question (the context an agent gets) and why each
    memory is in it."""
    tenant = tenant_for(caller, body.tenant_id)
    request = service.query_request(tenant, QueryBody(query=body.query, as_of=body.as_of))
    service.take(Quota.QUERY, tenant)
    result = await anyio.to_thread.run_sync(service.backend.query, request, QueryFilters())
    why = await _read(service, lambda rt: explain(rt.retriever, request, result))
    return Explained(
        tenant_id=tenant,
        result=result,
        budget_tokens=service.settings.context_tokens,
        semantic_weight=why.weight,
        reasons=why.reasons,
        names=why.names,
        date_range=why.date_range,
    )


@browse_routes.post("/v1/browse/forget", status_code=status.HTTP_202_ACCEPTED, response_model=Forgotten)
async def forget(body: ForgetBody, caller: CallerDep, service: ServiceDep) -> Forgotten:
    """Forget a message, or a session (every message its memories cite, and its turns not decided
    yet), through the same forget path as ``DELETE /v1/messages/{id}``."""
    tenant = tenant_for(caller, body.tenant_id)
    if (body.message_id is None) == (body.session_id is None):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "message_id or session_id: name one")
    service.take(Quota.FORGET, tenant)
    if body.message_id is not None:
        ids = [body.message_id]
    else:
        session = body.session_id
        ids = await _read(service, lambda rt: _session_ids(rt, tenant, session))
        if not ids:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "session_id: no memory or pending turn in it")
    request = DeletionRequest(
        tenant_id=tenant, message_ids=ids, requested_by=caller.key_id, requested_at=datetime.now(UTC)
    )
    routed = await service.backend.forget(request)
    records = await _read(service, lambda rt: rt.tombstones.records(tenant))
    done = next((r for r in records if r.request.requested_at == request.requested_at), None)
    return Forgotten(
        tenant_id=tenant,
        message_ids=ids,
        routed=routed,
        requested_at=request.requested_at.isoformat(),
        record=done,
    )


def _session_ids(rt: Runtime, tenant: str, session: str | None) -> list[str]:
    assert session is not None
    pending = [t.message_id for t in rt.buffer.recent(tenant) if t.session_id == session]
    return list(dict.fromkeys([*session_messages(rt.lexical, tenant, session), *pending]))


@browse_routes.get("/v1/browse/deletions")
async def deletions(
    caller: CallerDep, service: ServiceDep, tenant_id: TenantParam = None
) -> list[DeletionRecord]:
    """The tenant's deletion log, newest first: what each forget removed and rewrote (ids, no content)."""
    tenant = tenant_for(caller, tenant_id)
    service.take(Quota.QUERY, tenant)
    records: list[DeletionRecord] = await _read(service, lambda rt: rt.tombstones.records(tenant))
    return sorted(records, key=lambda r: r.request.requested_at, reverse=True)[:DELETIONS_SHOWN]


@browse_routes.get("/v1/browse/activity")
async def activity(
    caller: CallerDep, service: ServiceDep, tenant_id: TenantParam = None
) -> dict[str, object]:
    """What the service measures that concerns the tenant: its ingestion accounting and time to
    memory (``ingestion``, kept in the store folder or Redis: every process of a deployment counts
    there), its memory, deletions, quota use and the stores' health; for the admin also this
    process's event counts (all tenants)."""
    tenant = tenant_for(caller, tenant_id)
    service.take(Quota.QUERY, tenant)

    def tenant_side(rt: Runtime) -> dict[str, object]:
        records = rt.tombstones.records(tenant)
        return {
            "memories": rt.lexical.count(tenant),
            "vectors": rt.vectors.count(tenant),
            "pending turns (not yet decided)": len(rt.buffer.recent(tenant)),
            "deletions": len(records),
            "memories removed by deletions": sum(r.units_deleted for r in records),
        }

    quota: dict[str, object] = {}
    for kind in Quota:
        left, amount, per = service.quotas.use(kind, tenant)
        quota[kind.value] = f"{amount - left} used of {per}"
    health = await service.backend.health()
    ingestion: IngestionActivity = await _read(service, lambda rt: rt.activity.read(tenant))
    sections: dict[str, dict[str, object]] = {
        f"tenant {tenant}": await _read(service, tenant_side),
        "quota use (this window)": quota,
        "stores": {name: s.get("state", "?") for name, s in health.items()},
    }
    if service.backend.mode == "services":
        everyone = "dead letters (every tenant)" if caller.admin else "dead letters"
        sections[everyone] = await dead_letters(service.settings, None if caller.admin else tenant)
    if caller.admin:
        sections["events through this process (every tenant)"] = {
            result: int(service.metrics.events.labels(result)._value.get())
            for result in ("accepted", "rejected")
        }
    return {"mode": service.backend.mode, "ingestion": ingestion.model_dump(), "sections": sections}


def _with_headers(app: ASGIApp) -> ASGIApp:
    """The page's security headers on every answer under ``/ui/``."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *PAGE_HEADERS]
            await send(message)

        await app(scope, receive, send_with)

    return wrapped


def mount_ui(app: FastAPI) -> None:
    """The browsing routes and the page's files, in one place."""
    app.include_router(browse_routes)
    static = StaticFiles(directory=str(files("simplemem.api") / "static" / "ui"), html=True)

    @app.get(UI_PATH, include_in_schema=False)
    async def to_page() -> RedirectResponse:
        return RedirectResponse(UI_PATH + "/")

    app.mount(UI_PATH, _with_headers(static), name="ui")
