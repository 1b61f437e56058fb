"""mem0-compatible endpoints: what ``mem0ai``'s ``MemoryClient`` (2.2.1) calls, under ``/mem0``.

``MemoryClient(api_key=<a tenant key>, host="http://<service>/mem0")`` works unmodified for its
start-up key check, ``add``, ``search``, ``get_all``, ``get``, ``update``, ``delete``, ``delete_all``
and ``history``. Everything happens inside the key's tenant; ``user_id``/``agent_id``/``run_id``/``app_id``
name a session there (:mod:`simplemem.api.directory`), wherever the request gives them (the body's top
level, the query string or ``filters``: :func:`simplemem.api.mem0_scope.requested_scope`, which every
route reads its scope from). Differences, by design:

- ``add`` stores the messages as chat events; memories are derived from them by the pipeline (mem0's
  ``infer``, custom instructions and categories are ignored). Until their window is decided, turns
  are answerable from the recent-turn buffer (ids ``buffer:<message id>``, not gettable).
- A memory's id is the unit's id. ``update`` re-sends the message the memory came from with the new
  text (an edit: every memory of that message is replaced). ``delete`` forgets that message and
  everything derived from it; ``delete_all`` the messages of the matching sessions (a scope is
  required). Both go to the forget path, as the API's DELETE routes do.
- ``history`` holds one ADD entry (the memory as derived); expiration dates, metadata updates,
  projects, webhooks, exports and entities are not supported (404).
"""

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request, status
from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, field_validator

from simplemem.api.app import Service, valid_path_id
from simplemem.api.auth import Caller, tenant_of
from simplemem.api.contract import MemoryIdPath
from simplemem.api.directory import SCOPE_FIELDS, Scope, SessionDirectory
from simplemem.api.mem0_scope import Mem0Filters, ScopeId, ScopeIds, requested_scope
from simplemem.api.quotas import Quota
from simplemem.schemas.api import QueryBody
from simplemem.schemas.events import MAX_SPEAKER_CHARS
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import Count, QueryFilters
from simplemem.schemas.settings import get_settings
from simplemem.schemas.stream import DeletionRequest
from simplemem.schemas.timebounds import check_time, earliest_unix_time
from simplemem.schemas.window import BufferedTurn

PREFIX = "/mem0"
ORG_ID = "simplemem"
DEFAULT_TOP_K = 10
ROLES = {"user", "assistant", "system", "tool"}


class Mem0Message(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str = "user"
    content: str


class AddBody(ScopeIds):
    model_config = ConfigDict(extra="allow")  # mem0's options we do not use are accepted, ignored

    messages: list[Mem0Message] = Field(min_length=1)
    timestamp: StrictInt | StrictFloat | None = Field(
        None, description="Unix time in seconds", json_schema_extra=earliest_unix_time()
    )
    metadata: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _bounded(cls, value: float | None) -> float | None:
        """Before the earliest accepted year: refused (the contract's minimum). After the latest
        accepted time (``SIMPLEMEM_MAX_FUTURE_DAYS`` from now): the message is said now, as mem0
        stamps one without a time."""
        if value is None:
            return value
        latest = datetime.now(UTC) + timedelta(days=get_settings().max_future_days)
        if value > latest.timestamp():
            return None
        try:
            when = datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):
            raise ValueError("not a Unix time in seconds within the calendar") from None
        check_time(when)
        return value


class SearchBody(ScopeIds):
    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1)
    filters: Mem0Filters | None = None
    top_k: Count | None = None
    threshold: float | None = Field(None, strict=True)


class ListBody(ScopeIds):
    model_config = ConfigDict(extra="allow")

    filters: Mem0Filters | None = None


class UpdateBody(ScopeIds):
    model_config = ConfigDict(extra="allow")

    text: str | None = None


ScopeQuery = Annotated[ScopeIds, Query()]
"""The entity ids of a request's query string: every mem0 route reads them (see :func:`requested_scope`)."""
NO_SCOPE = ScopeIds()


def as_mem0(
    unit: MemoryUnit, scopes: dict[str, Scope], score: float | None = None, default: Scope | None = None
) -> dict[str, Any]:
    """A unit as mem0 shows a memory. ``default`` is the request's own scope: its fields are shown as
    the request gave them (the directory keeps them scrubbed), and it stands for the scope of a
    recent turn (not yet a stored unit, so its session is unknown here), which passed it."""
    request = default or Scope()
    shown = scopes.get(unit.session_id or "", request).model_dump()
    shown.update({f: v for f, v in request.model_dump().items() if v is not None})
    item: dict[str, Any] = {
        "id": unit.id,
        "memory": unit.text,
        **shown,
        "metadata": {"kind": unit.kind.value, "event_time": unit.event_time, "source_ids": unit.source_ids},
        "categories": [],
        "created_at": unit.stated_at,
        "updated_at": unit.stated_at,
    }
    if score is not None:
        item["score"] = score
    return item


def as_pending(turn: BufferedTurn, scopes: dict[str, Scope]) -> dict[str, Any]:
    """A message accepted and not decided yet, as mem0 shows a memory, marked ``PENDING``: its
    memories exist within ``SIMPLEMEM_PAUSE_SECONDS`` (or at once for a complete exchange)."""
    scope = scopes.get(turn.session_id, Scope())
    return {
        "id": turn.message_id,
        "memory": turn.text,
        **scope.model_dump(),
        "metadata": {"status": "PENDING", "source_ids": [turn.message_id]},
        "categories": [],
        "status": "PENDING",
        "created_at": turn.ts.isoformat(),
        "updated_at": turn.ts.isoformat(),
    }


def mount_mem0(service: Service, directory: SessionDirectory) -> Any:
    """A callable adding the mem0 routes to the app (``create_app``'s ``extra``)."""

    service.tenant_erasers.append(lambda tenant: directory.forget(tenant, Scope()))

    def add_to(app: FastAPI) -> None:
        app.state.mem0 = Mem0Context(service, directory)
        app.include_router(router)

    return add_to


async def _run(fn: Any, *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args)


@dataclass
class Mem0Context:
    """What the mem0 routes share (``app.state.mem0``): the service and the directory of the
    sessions that mem0's ``user_id``/``agent_id``/``run_id`` name."""

    service: Service
    directory: SessionDirectory

    async def scopes(self, tenant: str) -> dict[str, Scope]:
        """Every session of the tenant, with the scope that named it."""
        scopes: dict[str, Scope] = await _run(self.directory.sessions, tenant, Scope())
        return scopes

    async def unit_or_404(
        self, tenant: str, memory_id: str, quota: Quota = Quota.QUERY, scope: Scope | None = None
    ) -> MemoryUnit:
        found = await self.unit_or_pending(tenant, memory_id, quota, scope)
        if isinstance(found, BufferedTurn):
            raise HTTPException(status.HTTP_409_CONFLICT, PENDING_DETAIL)
        return found

    async def unit_or_pending(
        self, tenant: str, memory_id: str, quota: Quota = Quota.QUERY, scope: Scope | None = None
    ) -> MemoryUnit | BufferedTurn:
        """The memory, or the first memory derived from the message of that id (what ``add``
        returned), or that message while it is accepted and not decided yet; else a 404. A request
        that names a scope reaches only what lies within it (else the same 404)."""
        found = await self._unit_or_pending(tenant, memory_id, quota)
        if scope is not None and not scope.empty:
            session = found.session_id
            scopes = await self.scopes(tenant)
            if session is None or session not in scopes or not scopes[session].matches(scope):
                raise HTTPException(status.HTTP_404_NOT_FOUND, "Memory not found")
        return found

    async def _unit_or_pending(self, tenant: str, memory_id: str, quota: Quota) -> MemoryUnit | BufferedTurn:
        valid_path_id(memory_id, "memory_id")
        self.service.take(quota, tenant)
        backend = self.service.backend
        found = await _run(backend.units, tenant, [memory_id])
        if not found:  # the id add returned is a message's: a memory derived from it answers
            derived = await _run(backend.units_of_messages, tenant, [memory_id])
            found = sorted(derived, key=lambda u: (u.superseded_by is not None, u.id))
        if found:
            unit: MemoryUnit = found[0]
            return unit
        pending: BufferedTurn | None = await _run(backend.pending, tenant, memory_id)
        if pending is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, "Memory not found")
        return pending

    async def scoped_units(self, tenant: str, scope: Scope) -> tuple[list[MemoryUnit], dict[str, Scope]]:
        """Every memory of the sessions in ``scope`` (all of the tenant's for an empty one), page by page."""
        scopes = await self.scopes(tenant)
        wanted = {sid for sid, s in scopes.items() if s.matches(scope)}
        units: list[MemoryUnit] = []
        offset, size = 0, self.service.settings.api_max_page_size
        while True:
            page, total = await _run(self.service.backend.memories, tenant, offset, size)
            units += [u for u in page if scope.empty or u.session_id in wanted]
            offset += len(page)
            if not page or offset >= total:
                return units, scopes

    async def accept(
        self, caller: Caller, events: list[dict[str, Any]], scope: Scope | None = None
    ) -> list[str]:
        """The events' ids, all accepted; mem0 has no partial answer, so the first rejection is a 422.
        ``scope`` (add's) is recorded only once a message of it is accepted, its ids charged to the
        ingestion text quota with the messages: a refused or empty request stores nothing."""
        extra = sum(len(getattr(scope, f) or "") for f in SCOPE_FIELDS) if scope is not None else 0
        answer = await self.service.accept_events(caller, events, extra_chars=extra)
        if scope is not None and not scope.empty and answer.accepted:
            await _run(self.directory.record, tenant_of(caller), scope)
        if answer.rejected:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, answer.rejected[0].reason)
        return answer.accepted


async def mem0_of(request: Request) -> Mem0Context:
    """The app's :class:`Mem0Context`: what the mem0 routes depend on."""
    context: Mem0Context = request.app.state.mem0
    return context


Mem0Dep = Annotated[Mem0Context, Depends(mem0_of)]


def caller_of(request: Request, mem0: Mem0Dep) -> Caller:
    """The caller, from the request's key (in a worker thread, as the key store may block)."""
    return mem0.service.caller(request)


CallerDep = Annotated[Caller, Depends(caller_of)]

router = APIRouter(prefix=PREFIX, tags=["mem0-compatible"])
PENDING_DETAIL = "this message is accepted and not decided yet: its memories exist within seconds"


@router.get("/v1/ping/")
async def ping(caller: CallerDep) -> dict[str, Any]:
    # The client insists on an organisation and a project: the deployment and the key's tenant.
    tenant = tenant_of(caller)
    return {"status": "ok", "org_id": ORG_ID, "project_id": tenant, "user_email": None}


@router.post("/v3/memories/add/")
async def add(body: AddBody, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope(_fields(body), _fields(ids))
    events = _events_of(body, scope, tenant, scope.session_id())
    accepted = await mem0.accept(caller, events, scope)
    results = [
        # the memory as it is kept: scrubbed (a phone number or card echoed back would sit in logs)
        {
            "id": mid,
            "event": "ADD",
            "memory": await _run(mem0.service.backend.scrub, e["text"]),
            "status": "PENDING",
        }
        for mid, e in zip(accepted, events, strict=True)
    ]
    return {"results": results, "status": "PENDING"}


def _fields(model: BaseModel) -> dict[str, Any]:
    """A request model's fields, the extra ones a client sent included (mem0's options)."""
    return model.model_dump(exclude_none=True)


def _events_of(body: AddBody, scope: Scope, tenant: str, session: str) -> list[dict[str, Any]]:
    """mem0's messages as chat events of one session; unknown roles are the user's."""
    ts = datetime.fromtimestamp(body.timestamp, UTC) if body.timestamp else datetime.now(UTC)
    events: list[dict[str, Any]] = []
    for message in body.messages:
        role = message.role if message.role in ROLES else "user"
        named = (scope.user_id if role == "user" else scope.agent_id) or ""
        # an id may be longer than a speaker's name, or only spaces: the role speaks then
        speaker = named.strip()[:MAX_SPEAKER_CHARS].strip() or str(role)
        events.append(
            {
                "tenant_id": tenant,
                "session_id": session,
                "message_id": f"mem0-{uuid.uuid4().hex}",
                "speaker": speaker,
                "role": role,
                "text": message.content,
                "ts": ts.isoformat(),
            }
        )
    if events:  # mem0's add is a complete exchange: decided now, not after a pause
        events[-1]["ends_exchange"] = True
    return events


@router.post("/v3/memories/search/")
async def search(
    body: SearchBody, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope(_fields(body), _fields(ids))
    scopes = await mem0.scopes(tenant)
    wanted = [sid for sid, s in scopes.items() if s.matches(scope)]
    if not scope.empty and not wanted:
        return {"results": []}
    service = mem0.service
    request = service.query_request(tenant, QueryBody(query=body.query))
    service.take(Quota.QUERY, tenant)
    top_k = body.top_k or DEFAULT_TOP_K
    filters = QueryFilters(k=top_k, sessions=[] if scope.empty else wanted)
    result = await _run(service.backend.query, request, filters)
    by_id = {u.id: u for u in await _run(service.backend.units, tenant, [m.id for m in result.memories])}
    hits = []
    for m in result.memories[:top_k]:
        if body.threshold is not None and m.score < body.threshold:
            continue
        unit = by_id.get(m.id) or MemoryUnit(
            id=m.id, tenant_id=tenant, text=m.text, source_ids=m.source_ids, stated_at=m.stated_at
        )
        hits.append(as_mem0(unit, scopes, m.score, default=scope))
    return {"results": hits}


@router.post("/v3/memories/")
async def get_all(
    body: ListBody,
    caller: CallerDep,
    mem0: Mem0Dep,
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 100,
    ids: ScopeQuery = NO_SCOPE,
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope(_fields(body), _fields(ids))
    mem0.service.take(Quota.QUERY, tenant)
    units, scopes = await mem0.scoped_units(tenant, scope)
    chosen = units[(page - 1) * page_size : page * page_size]
    more = page * page_size < len(units)
    return {
        "count": len(units),
        "next": f"?page={page + 1}&page_size={page_size}" if more else None,
        "previous": f"?page={page - 1}&page_size={page_size}" if page > 1 else None,
        "results": [as_mem0(u, scopes, default=scope) for u in chosen],
    }


@router.get("/v1/memories/{memory_id}/")
async def get_one(
    memory_id: MemoryIdPath, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    found = await mem0.unit_or_pending(tenant, memory_id, scope=requested_scope(_fields(ids)))
    scopes = await mem0.scopes(tenant)
    return as_pending(found, scopes) if isinstance(found, BufferedTurn) else as_mem0(found, scopes)


@router.get("/v1/memories/{memory_id}/history/")
async def history(
    memory_id: MemoryIdPath, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE
) -> list[dict[str, Any]]:
    tenant = tenant_of(caller)
    found = await mem0.unit_or_pending(tenant, memory_id, scope=requested_scope(_fields(ids)))
    if isinstance(found, BufferedTurn):
        entry = {
            "id": memory_id,
            "memory_id": memory_id,
            "event": "ADD",
            "old_memory": None,
            "status": "PENDING",
        }
        return [{**entry, "new_memory": found.text, "created_at": found.ts.isoformat()}]
    entry = {"id": found.id, "memory_id": found.id, "event": "ADD", "old_memory": None}
    return [{**entry, "new_memory": found.text, "created_at": found.stated_at}]


@router.put("/v1/memories/{memory_id}/")
async def update(
    memory_id: MemoryIdPath, body: UpdateBody, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope(_fields(body), _fields(ids))
    unit = await mem0.unit_or_404(tenant, memory_id, scope=scope)
    if body.text is None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "only the text of a memory can be updated")
    if len(unit.source_ids) != 1 or unit.session_id is None:
        raise HTTPException(status.HTTP_409_CONFLICT, "this memory comes from several messages")
    edit = {
        "tenant_id": tenant,
        "session_id": unit.session_id,
        "message_id": unit.source_ids[0],
        "speaker": unit.speaker or "user",
        "role": "user",
        "text": body.text,
        "ts": unit.stated_at,
    }
    await mem0.accept(caller, [edit])
    return {"id": memory_id, "message": "Memory updated: its message was re-sent with the new text"}


@router.delete("/v1/memories/{memory_id}/")
async def delete(
    memory_id: MemoryIdPath, caller: CallerDep, mem0: Mem0Dep, ids: ScopeQuery = NO_SCOPE
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope(_fields(ids))
    found = await mem0.unit_or_pending(tenant, memory_id, Quota.FORGET, scope=scope)
    messages = [memory_id] if isinstance(found, BufferedTurn) else found.source_ids
    await mem0.service.delete(_forget(tenant, messages, caller))  # a pending message: never indexed
    return {"message": "Memory deleted successfully!"}


@router.delete("/v1/memories/")
async def delete_all(
    caller: CallerDep,
    mem0: Mem0Dep,
    user_id: Annotated[ScopeId | None, Query()] = None,
    agent_id: Annotated[ScopeId | None, Query()] = None,
    run_id: Annotated[ScopeId | None, Query()] = None,
    app_id: Annotated[ScopeId | None, Query()] = None,
) -> dict[str, Any]:
    tenant = tenant_of(caller)
    scope = requested_scope({"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "app_id": app_id})
    if scope.empty:  # a tenant key may not wipe the tenant here: that is the admin's DELETE /v1/tenants
        raise HTTPException(status.HTTP_403_FORBIDDEN, "name user_id, agent_id, run_id or app_id")
    mem0.service.take(Quota.FORGET, tenant)
    units, _ = await mem0.scoped_units(tenant, scope)
    sources = sorted({s for u in units for s in u.source_ids})
    if sources:
        await mem0.service.delete(_forget(tenant, sources, caller))
    await _run(mem0.directory.forget, tenant, scope)  # the end user's ids go with their memories
    return {"message": "Memories deleted successfully!"}


def _forget(tenant: str, message_ids: list[str], caller: Caller) -> DeletionRequest:
    return DeletionRequest(
        tenant_id=tenant, message_ids=message_ids, requested_by=caller.key_id, requested_at=datetime.now(UTC)
    )
