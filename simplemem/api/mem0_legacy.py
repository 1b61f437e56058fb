"""The routes of the older mem0 clients, under ``/mem0`` beside :mod:`simplemem.api.mem0`.

TypeScript ``mem0ai`` 2.x (2.4.6, what LangChain.js ``Mem0Memory`` in ``@langchain/community``,
``@mastra/mem0`` and ``@mem0/community`` install) adds with ``POST /v1/memories/``, searches with
``POST /v1/memories/search/`` (``/v2/memories/search/`` with ``api_version: "v2"``), lists with
``GET /v1/memories/?user_id=...`` (``POST /v2/memories/``), puts the entity ids at the top level
of a body or query, and expects bare arrays back (a page object when it asks for ``page`` and
``page_size``). Its ``GET /v1/ping/``, get, update, delete, delete-all and history are the 3.x
routes of :mod:`simplemem.api.mem0`, which these reuse: the same tenant checks, quotas and memory
shapes. ``org_id`` and ``project_id`` echo what ping answered and are ignored: the key decides the
tenant; ``user_id``, ``agent_id``, ``run_id`` and ``app_id``, at the top level, in the query or in ``filters``, narrow the
scope inside it (:func:`legacy_scope`).
"""

from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from simplemem.api import mem0
from simplemem.api.directory import SCOPE_FIELDS, Scope
from simplemem.api.mem0 import AddBody, CallerDep, ListBody, Mem0Dep, SearchBody
from simplemem.api.mem0_scope import Mem0Filters, requested_scope
from simplemem.schemas.query import Count

router = APIRouter(prefix=mem0.PREFIX, tags=["mem0-compatible (older clients)"])


def legacy_scope(top: Mapping[str, Any], filters: Mapping[str, Any] | None = None) -> Scope:
    """The scope a call names: the entity ids at the top level of its body or query and in its
    ``filters``, read by the one function every mem0 route reads its scope with
    (:func:`simplemem.api.mem0_scope.requested_scope`: they narrow, two values of one id are 409)."""
    return requested_scope(top, {"filters": dict(filters)} if filters else None)


def as_filters(scope: Scope) -> dict[str, Any]:
    """A scope as the 3.x routes' ``filters``."""
    return scope.model_dump(exclude_none=True)


class LegacySearch(BaseModel):
    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1)
    filters: Mem0Filters | None = None
    top_k: Count | None = None
    limit: Count | None = Field(None, description="the 1.x name of top_k")
    threshold: float | None = Field(None, strict=True)


class LegacyList(BaseModel):
    model_config = ConfigDict(extra="allow")

    filters: Mem0Filters | None = None


def _filters(body: LegacySearch | LegacyList) -> dict[str, Any] | None:
    return body.filters.model_dump(exclude_none=True) if body.filters is not None else None


def _top(body: BaseModel) -> dict[str, Any]:
    """The body's top-level fields, the extra ones included (``app_id``)."""
    return {**(body.model_extra or {}), **{f: getattr(body, f, None) for f in SCOPE_FIELDS}}


@router.post("/v1/memories/")
async def add_v1(body: AddBody, caller: CallerDep, memory: Mem0Dep) -> list[dict[str, Any]]:
    """Messages in; what was added, as a bare array (each also with mem0 1.x's ``data``)."""
    scope = legacy_scope(_top(body))
    added = await mem0.add(body.model_copy(update=scope.model_dump()), caller, memory)
    return [{**item, "data": {"memory": item["memory"]}} for item in added["results"]]


@router.post("/v1/memories/search/")
async def search_v1(body: LegacySearch, caller: CallerDep, memory: Mem0Dep) -> list[dict[str, Any]]:
    scope = legacy_scope(_top(body), _filters(body))
    return await _search(body, scope, caller, memory)


@router.post("/v2/memories/search/")
async def search_v2(body: LegacySearch, caller: CallerDep, memory: Mem0Dep) -> list[dict[str, Any]]:
    scope = legacy_scope(_top(body), _filters(body))
    return await _search(body, scope, caller, memory)


async def _search(body: LegacySearch, scope: Scope, caller: Any, memory: Any) -> list[dict[str, Any]]:
    query = SearchBody(
        query=body.query, filters=as_filters(scope), top_k=body.top_k or body.limit, threshold=body.threshold
    )
    found = await mem0.search(query, caller, memory)
    results: list[dict[str, Any]] = found["results"]
    return results


Page = Annotated[int | None, Query(ge=1)]
PageSize = Annotated[int | None, Query(ge=1, le=1000)]


@router.get("/v1/memories/", response_model=None)
async def list_v1(
    request: Request, caller: CallerDep, memory: Mem0Dep, page: Page = None, page_size: PageSize = None
) -> list[dict[str, Any]] | dict[str, Any]:
    """The scope's memories: a bare array, or a page object when ``page`` and ``page_size`` are given."""
    scope = legacy_scope(dict(request.query_params))
    return await _list(scope, caller, memory, page, page_size)


@router.post("/v2/memories/", response_model=None)
async def list_v2(
    body: LegacyList, caller: CallerDep, memory: Mem0Dep, page: Page = None, page_size: PageSize = None
) -> list[dict[str, Any]] | dict[str, Any]:
    scope = legacy_scope(_top(body), _filters(body))
    return await _list(scope, caller, memory, page, page_size)


async def _list(
    scope: Scope, caller: Any, memory: Any, page: int | None, page_size: int | None
) -> list[dict[str, Any]] | dict[str, Any]:
    paged = page is not None and page_size is not None
    size = page_size if paged and page_size else 1000
    listed = await mem0.get_all(ListBody(filters=as_filters(scope)), caller, memory, page or 1, size)
    if paged:
        return listed
    results: list[dict[str, Any]] = listed["results"]
    return results


def mount_mem0_legacy(app: FastAPI) -> None:
    """Adds the older clients' routes (after :func:`simplemem.api.mem0.mount_mem0`, whose context
    they share)."""
    app.include_router(router)
