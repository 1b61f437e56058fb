"""The routes as calls: what each client method sends and how its answer is read, shared by the
synchronous and the asynchronous client (they differ only in how they send)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

from simplemem.client.errors import ServiceError, Unavailable, error_for
from simplemem.client.retry import retry_after_seconds
from simplemem.schemas.api import (
    Accepted,
    EventError,
    EventsAccepted,
    FeedbackAnswer,
    FeedbackBody,
    KeyCreate,
    KeyCreated,
    MemoryPage,
    QueryBody,
)
from simplemem.schemas.browse import BrowseCounts, BrowseFilter, BrowsePage, ForgetBody, Forgotten, Provenance
from simplemem.schemas.events import Turn
from simplemem.schemas.query import QueryFilters, QueryResult

T = TypeVar("T")
Event = Turn | Mapping[str, Any]
"""A turn to send: a :class:`Turn` (or a ``ChatEvent``), or its JSON object as a mapping."""
DEFAULT_BATCH = 100  # events a request carries when sending many (the service takes up to 1000)


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its answer."""

    method: str
    path: str
    read: Callable[[Any], T]
    json: Any = None
    params: dict[str, Any] = field(default_factory=dict)


def _model(kind: type[BaseModel]) -> Callable[[Any], Any]:
    return kind.model_validate


def event_json(event: Event) -> Any:
    """The event as JSON; a :class:`Turn` without its defaults (the service fills them in)."""
    if isinstance(event, BaseModel):
        return event.model_dump(mode="json", exclude_defaults=True)
    return dict(event)


def send(events: list[Event]) -> Call[EventsAccepted]:
    return Call("POST", "/v1/events", _model(EventsAccepted), json=[event_json(e) for e in events])


def flatten(items: tuple[Event | Iterable[Event], ...]) -> Iterator[Event]:
    """``send(a, b)``, ``send([a, b])`` and ``send(generator)`` alike."""
    for item in items:
        if isinstance(item, BaseModel | Mapping):
            yield item
        else:
            yield from item


def numbered(batches: Iterable[list[Event]]) -> Iterator[tuple[int, list[Event]]]:
    """Each batch with the index of its first event in the whole sequence."""
    start = 0
    for batch in batches:
        yield start, batch
        start += len(batch)


def batches(events: Iterable[Event], size: int) -> Iterator[list[Event]]:
    batch: list[Event] = []
    for event in events:
        batch.append(event)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def merged(answers: Iterable[tuple[int, EventsAccepted]]) -> EventsAccepted:
    """Batches' answers as one, each rejection at its index in the whole sequence."""
    total = EventsAccepted()
    for start, answer in answers:
        total.accepted += answer.accepted
        total.rejected += [
            EventError(index=start + r.index, message_id=r.message_id, reason=r.reason)
            for r in answer.rejected
        ]
    return total


def query(
    text: str, *, as_of: datetime | None = None, filters: QueryFilters | None = None, id: str | None = None
) -> Call[QueryResult]:
    body = QueryBody(id=id, query=text, as_of=as_of, **(filters or QueryFilters()).model_dump())
    return Call(
        "POST", "/v1/query", _model(QueryResult), json=body.model_dump(mode="json", exclude_none=True)
    )


def feedback(body: FeedbackBody) -> Call[FeedbackAnswer]:
    return Call(
        "POST", "/v1/feedback", _model(FeedbackAnswer), json=body.model_dump(mode="json", exclude_none=True)
    )


def memories(offset: int, limit: int | None) -> Call[MemoryPage]:
    params: dict[str, Any] = {"offset": offset} | ({"limit": limit} if limit else {})
    return Call("GET", "/v1/memories", _model(MemoryPage), params=params)


def forget_message(message_id: str) -> Call[Accepted]:
    return Call("DELETE", f"/v1/messages/{_segment(message_id)}", _model(Accepted))


def forget_tenant(tenant_id: str) -> Call[Accepted]:
    return Call("DELETE", f"/v1/tenants/{_segment(tenant_id)}", _model(Accepted))


def browse(
    filters: BrowseFilter | None, offset: int, limit: int | None, tenant_id: str | None
) -> Call[BrowsePage]:
    params = _browse_params(filters, tenant_id) | {"offset": offset} | ({"limit": limit} if limit else {})
    return Call("GET", "/v1/browse", _model(BrowsePage), params=params)


def browse_counts(filters: BrowseFilter | None, tenant_id: str | None) -> Call[BrowseCounts]:
    return Call("GET", "/v1/browse/counts", _model(BrowseCounts), params=_browse_params(filters, tenant_id))


def provenance(memory_id: str, tenant_id: str | None) -> Call[Provenance]:
    params = {"tenant_id": tenant_id} if tenant_id else {}
    return Call("GET", f"/v1/browse/memories/{_segment(memory_id)}", _model(Provenance), params=params)


def forget_session(session_id: str, tenant_id: str | None) -> Call[Forgotten]:
    body = ForgetBody(session_id=session_id, tenant_id=tenant_id)
    return Call(
        "POST", "/v1/browse/forget", _model(Forgotten), json=body.model_dump(mode="json", exclude_none=True)
    )


def _browse_params(filters: BrowseFilter | None, tenant_id: str | None) -> dict[str, Any]:
    """The filters as the query string carries them (only those given); the admin's tenant."""
    params = (filters or BrowseFilter()).model_dump(mode="json", exclude_none=True)
    return params | ({"tenant_id": tenant_id} if tenant_id else {})


def create_key(tenant_id: str) -> Call[KeyCreated]:
    body = KeyCreate(tenant_id=tenant_id).model_dump()
    return Call("POST", "/v1/admin/keys", _model(KeyCreated), json=body)


def revoke_key(key_id: str) -> Call[Any]:
    return Call("DELETE", f"/v1/admin/keys/{_segment(key_id)}", lambda data: data)


def health() -> Call[dict[str, Any]]:
    return Call("GET", "/healthz", lambda data: data)


def _segment(value: str) -> str:
    """An id as one path segment (ids may hold ``/``, ``#``...)."""
    from urllib.parse import quote

    return quote(value, safe="")


def answer_of(call: Call[T], response: httpx.Response) -> T:
    """The answer read, or the service's refusal raised with its reason."""
    if response.status_code >= 400:
        raise refusal(call, response)
    try:
        return call.read(response.json())
    except ValueError as exc:  # not JSON (a proxy's page), or off the schema (pydantic's error is one)
        reason = f"an answer the client cannot read: {str(exc)[:300]}"
        raise ServiceError(response.status_code, reason, method=call.method, path=call.path) from exc


def refusal(call: Call[Any], response: httpx.Response) -> ServiceError:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    reason = detail if isinstance(detail, str) else (str(detail) if detail else response.text[:500])
    wait = retry_after_seconds(response.headers.get("Retry-After"))
    return error_for(response.status_code, reason, method=call.method, path=call.path, retry_after=wait)


def unreachable(call: Call[Any], error: httpx.TransportError) -> ServiceError:
    """A request that never got an answer; only a failed connection is safe to retry blindly (the
    service did not see the request), so only it is :class:`Unavailable` without a status."""
    if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout):
        return Unavailable(None, f"cannot connect: {error}", method=call.method, path=call.path)
    return ServiceError(None, f"{type(error).__name__}: {error}", method=call.method, path=call.path)
