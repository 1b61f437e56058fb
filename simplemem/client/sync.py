"""The synchronous client of the query service (``simplemem serve``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx
from tenacity import Retrying, retry_if_exception, stop_after_attempt

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
DEFAULT_TIMEOUT = 30.0


class Client:
    """A tenant's memory over HTTP: ``Client(url, key)``; the key decides the tenant.

    Refusals raise :class:`~simplemem.client.errors.ServiceError` subclasses carrying the service's
    reason; 429 and 503 are retried after their ``Retry-After`` (``retry=RetryPolicy(attempts=1)``
    turns that off). Close it, or use it in a ``with`` block.
    """

    def __init__(
        self,
        url: str,
        key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        batch_size: int = calls.DEFAULT_BATCH,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        self._http = httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )
        self.retry = retry or RetryPolicy()
        self.batch_size = batch_size

    def call(self, call: Call[T]) -> T:
        """One request, retried as the policy says; its answer read or its refusal raised."""
        policy = self.retry
        retrying = Retrying(
            stop=stop_after_attempt(policy.attempts),
            wait=policy.wait,
            retry=retry_if_exception(policy.should_retry),
            reraise=True,
            sleep=policy.pause,
        )
        return retrying(self._once, call)

    def _once(self, call: Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, json=call.json, params=call.params)
        except httpx.TransportError as exc:
            raise calls.unreachable(call, exc) from exc
        return calls.answer_of(call, response)

    def send(self, *events: Event | Iterable[Event]) -> EventsAccepted:
        """Turns, one or many (in requests of ``batch_size``); each accepted or rejected with its
        reason, indexed in the order given."""
        answers = []
        for start, batch in calls.numbered(calls.batches(calls.flatten(events), self.batch_size)):
            answers.append((start, self.call(calls.send(batch))))
        return calls.merged(answers)

    def query(
        self,
        text: str,
        *,
        as_of: datetime | None = None,
        filters: QueryFilters | None = None,
        id: str | None = None,
    ) -> QueryResult:
        """The memories and the context for a question (``as_of``: as the memory stood then)."""
        return self.call(calls.query(text, as_of=as_of, filters=filters, id=id))

    def feedback(self, body: FeedbackBody) -> FeedbackAnswer:
        """Report a wrong answer: logged for tuning, and answered again at ``k_max``."""
        return self.call(calls.feedback(body))

    def memories(self, offset: int = 0, limit: int | None = None) -> MemoryPage:
        return self.call(calls.memories(offset, limit))

    def iter_memories(self, page_size: int | None = None) -> Iterator[MemoryUnit]:
        """Every memory of the tenant, page by page."""
        offset: int | None = 0
        while offset is not None:
            page = self.memories(offset, page_size)
            yield from page.memories
            offset = page.next_offset

    def forget_message(self, message_id: str) -> Accepted:
        """Forget a message and everything derived from it."""
        return self.call(calls.forget_message(message_id))

    def browse(
        self,
        filters: BrowseFilter | None = None,
        *,
        offset: int = 0,
        limit: int | None = None,
        tenant_id: str | None = None,
    ) -> BrowsePage:
        """A page of the tenant's memories, filtered (``/ui/``'s listing); ``tenant_id``: the admin's choice."""
        return self.call(calls.browse(filters, offset, limit, tenant_id))

    def browse_counts(
        self, filters: BrowseFilter | None = None, *, tenant_id: str | None = None
    ) -> BrowseCounts:
        """How many memories match, by state, kind and session (the service reads every one)."""
        return self.call(calls.browse_counts(filters, tenant_id))

    def provenance(self, memory_id: str, *, tenant_id: str | None = None) -> Provenance:
        """A memory with the scrubbed messages it came from and the memories related to it."""
        return self.call(calls.provenance(memory_id, tenant_id))

    def forget_session(self, session_id: str, *, tenant_id: str | None = None) -> Forgotten:
        """Forget every message a session's memories cite, and its turns not decided yet."""
        return self.call(calls.forget_session(session_id, tenant_id))

    def forget_tenant(self, tenant_id: str) -> Accepted:
        """Forget a whole tenant and revoke its keys (the admin's key)."""
        return self.call(calls.forget_tenant(tenant_id))

    def create_key(self, tenant_id: str) -> KeyCreated:
        """A new key for a tenant (the admin's key)."""
        return self.call(calls.create_key(tenant_id))

    def revoke_key(self, key_id: str) -> None:
        self.call(calls.revoke_key(key_id))

    def health(self) -> dict[str, Any]:
        return self.call(calls.health())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
