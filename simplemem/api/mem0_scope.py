"""The scope a mem0 request names, read from every place a mem0 client can put it.

mem0's clients name the end user, agent, run or app of a request in several places: top-level fields
of the body (``add``, the v1/v2 API's ``search`` and ``get_all``), the query string (``delete_all``,
the v1 listings) and ``filters`` (flat or an ``AND`` of conditions). A route that read only one of
them would answer for the whole tenant when a client used another, so every mem0 route asks
:func:`requested_scope` for its scope: the ids given anywhere narrow the request, two different
values of one field or a value that is not an id are 422, and nothing is ever widened.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import orjson
from fastapi import HTTPException, status
from pydantic import BaseModel, ConfigDict, Field

from simplemem.api.directory import SCOPE_FIELDS, Scope
from simplemem.schemas.keys import MAX_ID_CHARS, has_control_characters

FILTERS = "filters"

ScopeId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="an end user's, agent's, run's or app's id (printable text): narrows the request",
    ),
]


class Condition(BaseModel):
    """One condition of a mem0 filter: entity ids (other fields and operators are not supported)."""

    model_config = ConfigDict(extra="forbid")

    user_id: ScopeId | None = None
    agent_id: ScopeId | None = None
    run_id: ScopeId | None = None
    app_id: ScopeId | None = None


class Mem0Filters(Condition):
    """mem0's ``filters``: flat entity ids, or an ``AND`` of conditions (with them, if any)."""

    AND: list[Condition] | None = None


class ScopeIds(BaseModel):
    """The entity ids a mem0 request may carry at its top level (body) or in its query string."""

    user_id: ScopeId | None = None
    agent_id: ScopeId | None = None
    run_id: ScopeId | None = None
    app_id: ScopeId | None = None


def requested_scope(*sources: Mapping[str, Any] | None) -> Scope:
    """The one scope that ``sources`` (a request's body, its query parameters, ...) name together:
    their top-level ``user_id``/``agent_id``/``run_id``/``app_id`` and their ``filters``. An empty
    scope means the request named none (the whole tenant); a 422 names the field that is wrong."""
    found: dict[str, str] = {}
    for source in sources:
        if not source:
            continue
        for field in SCOPE_FIELDS:
            _add(found, field, source.get(field), field)
        filters = source.get(FILTERS)
        if isinstance(filters, str):  # a query string carries filters as JSON text
            filters = _json_filters(filters)
        for field, value in _filter_conditions(filters):
            _add(found, field, value, f"filters.{field}")
    return Scope(**found)


def scope_problem(value: object) -> str | None:
    """Why ``value`` cannot be one field of a scope, or None. A scope's ids are the client's end-user
    names (an e-mail address, "Dr Ana Reyes"): any printable text, bounded like every other id."""
    if not isinstance(value, str):
        return "must be a string"
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_CHARS:
        return f"over {MAX_ID_CHARS} characters"
    if has_control_characters(value):
        return "must not contain control characters"
    return None


def _add(found: dict[str, str], field: str, value: object, where: str) -> None:
    if value is None:
        return
    problem = scope_problem(value)
    if problem is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{where}: {problem}")
    assert isinstance(value, str)
    if found.setdefault(field, value) != value:  # well formed, but the request contradicts itself
        raise HTTPException(
            status.HTTP_409_CONFLICT, f"{where}: two different values for {field} in one request"
        )


def _json_filters(text: str) -> object:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "filters: not a JSON object") from None


def _filter_conditions(filters: object) -> list[tuple[str, object]]:
    """mem0's filter as (field, value) conditions: flat fields or an ``AND`` of them (other operators:
    422, as a filter that cannot be honoured must not be ignored)."""
    if filters is None or filters == {}:
        return []
    if not isinstance(filters, dict):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "filters: an object or {AND: [...]}")
    parts = filters.get("AND", [])
    if not isinstance(parts, list):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "filters: an object or {AND: [...]}")
    flat = {key: value for key, value in filters.items() if key != "AND"}
    conditions: list[tuple[str, object]] = []
    for part in [*parts, flat]:
        if not isinstance(part, dict):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "filters: each condition is an object")
        for key, value in part.items():
            if key not in SCOPE_FIELDS or not isinstance(value, str):
                raise HTTPException(
                    status.HTTP_422_UNPROCESSABLE_CONTENT,
                    f"filters: only {', '.join(SCOPE_FIELDS)} with a string value are supported",
                )
            conditions.append((key, value))
    return conditions
