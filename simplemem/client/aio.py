"""The asynchronous client of the query service: :class:`~simplemem.client.sync.Client`'s methods,
awaited."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

import simplemem.client.calls as calls
from simplemem.client.calls import Call, Event
from simplemem.client.retry import RetryPolicy
from simplemem.schemas.api import (
    Accepted,
    EventsAccepted,
    FeedbackAnswer,
    FeedbackBody,
    KeyCreated,
    MemoryPage,
)
from simplemem.schemas.browse import BrowseCounts, BrowseFilter, BrowsePage, Forgotten, Provenance
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryResult

T = TypeVar("T")


class AsyncClient:
    """A tenant's memory over HTTP, for asyncio code: ``AsyncClient(url, key)``; ``async with``."""

    def __init__(
        self,
        url: str,
        key: str,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        batch_size: int = calls.DEFAULT_BATCH,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: httpx.Limits | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        self._http = httpx.AsyncClient(
            base_url=url.rstrip("/"),
            headers=headers,
            timeout=timeout,
            transport=transport,
            limits=limits or httpx.Limits(),
        )
        self.retry = retry or RetryPolicy()
        self.batch_size = batch_size

    async def call(self, call: Call[T]) -> T:
        policy = self.retry
        retrying = AsyncRetrying(
            stop=stop_after_attempt(policy.attempts),
            wait=policy.wait,
            retry=retry_if_exception(policy.should_retry),
            reraise=True,
            sleep=policy.pause_async,
        )
        answer: T = await retrying(self._once, call)
        return answer

    async def _once(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as exc:
            raise calls.unreachable(call, exc) from exc
        return calls.answer_of(call, response)

    async def send(self, *events: Event | Iterable[Event]) -> EventsAccepted:
        answers = []
        for start, batch in calls.numbered(calls.batches(calls.flatten(events), self.batch_size)):
            answers.append((start, await self.call(calls.send(batch))))
        return calls.merged(answers)

    async def query(
        self,
        text: str,
        *,
        as_of: datetime | None = None,
        filters: QueryFilters | None = None,
        id: str | None = None,
    ) -> QueryResult:
        return await self.call(calls.query(text, as_of=as_of, filters=filters, id=id))

    async def feedback(self, body: FeedbackBody) -> FeedbackAnswer:
        return await self.call(calls.feedback(body))

    async def memories(self, offset: int = 0, limit: int | None = None) -> MemoryPage:
        return await self.call(calls.memories(offset, limit))

    async def iter_memories(self, page_size: int | None = None) -> AsyncIterator[MemoryUnit]:
        offset: int | None = 0
        while offset is not None:
            page = await self.memories(offset, page_size)
            for unit in page.memories:
                yield unit
            offset = page.next_offset

    async def forget_message(self, message_id: str) -> Accepted:
        return await self.call(calls.forget_message(message_id))

    async def browse(
        self,
        filters: BrowseFilter | None = None,
        *,
        offset: int = 0,
        limit: int | None = None,
        tenant_id: str | None = None,
    ) -> BrowsePage:
        return await self.call(calls.browse(filters, offset, limit, tenant_id))

    async def browse_counts(
        self, filters: BrowseFilter | None = None, *, tenant_id: str | None = None
    ) -> BrowseCounts:
        return await self.call(calls.browse_counts(filters, tenant_id))

    async def provenance(self, memory_id: str, *, tenant_id: str | None = None) -> Provenance:
        return await self.call(calls.provenance(memory_id, tenant_id))

    async def forget_session(self, session_id: str, *, tenant_id: str | None = None) -> Forgotten:
        return await self.call(calls.forget_session(session_id, tenant_id))

    async def forget_tenant(self, tenant_id: str) -> Accepted:
        return await self.call(calls.forget_tenant(tenant_id))

    async def create_key(self, tenant_id: str) -> KeyCreated:
        return await self.call(calls.create_key(tenant_id))

    async def revoke_key(self, key_id: str) -> None:
        await self.call(calls.revoke_key(key_id))

    async def health(self) -> dict[str, Any]:
        return await self.call(calls.health())

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
