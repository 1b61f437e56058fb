"""Records of a Faust stream in batches that the agent acknowledges itself.

Faust's ``take`` acknowledges a batch even when its body fails, and can acknowledge events that
arrive while a batch is processed; here a batch is acknowledged only through :attr:`Batch.ack`,
after the agent finished it. A batch is what is buffered (up to ``size``); a small one waits up to
``linger`` seconds for more, since spaCy and MiniLM work better on batches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from simplemem.schemas.stream import SourceRef
from simplemem.streams.gaps import GapGuard, Hole, Item
from simplemem.streams.ownership import Ownership, Stamp, TopicPartition
from simplemem.streams.runner import Batch

log = logging.getLogger(__name__)


class ManualStream(Protocol):
    """The part of a Faust stream in manual-acknowledgement mode (``stream.noack()``) used here."""

    channel: Any  # its ``queue`` tells whether more records are buffered

    def events(self) -> AsyncIterator[Any]: ...

    async def ack(self, event: Any) -> bool: ...


MarkGap = Callable[[Hole], Awaitable[None]]


def _generation(event: Any) -> int | None:
    """The consumer group generation Faust fetched the record in."""
    generation: int | None = getattr(event.message, "generation_id", None)
    return generation


def item_of(event: Any) -> Item:
    m = event.message
    return Item(SourceRef(topic=m.topic, partition=m.partition, offset=m.offset), m.key, m.value or b"")


class Batcher:
    def __init__(
        self, size: int, linger: float, guard: GapGuard, mark_gap: MarkGap, ownership: Ownership | None = None
    ) -> None:
        self.size = size
        self.linger = linger
        self.guard = guard
        self.mark_gap = mark_gap  # tells the consumer that a re-read range is done (see gaps.py)
        self.ownership = ownership  # fences batches whose partitions were lost meanwhile (ownership.py)
        self._queue: Any = None  # the stream's buffer, once the agent runs

    def queued(self) -> bool:
        """Whether records wait in the stream's buffer for this agent."""
        return self._queue is not None and not self._queue.empty()

    async def batches(self, stream: ManualStream) -> AsyncIterator[Batch]:
        buffered = self._queue = stream.channel.queue
        loop = asyncio.get_running_loop()
        events: list[Any] = []
        epochs: dict[TopicPartition, int] = {}  # each partition's epoch when its first record came
        started = 0.0
        async for event in stream.events():
            if events and _generation(event) != _generation(events[0]):
                # fetched before a rebalance: left unacknowledged, read again from the committed offset
                log.warning("%d records fetched before a rebalance dropped (read again)", len(events))
                events, epochs = [], {}
            if not events:
                started = loop.time()
            events.append(event)
            if self.ownership is not None:
                tp = (event.message.topic, event.message.partition)
                epochs.setdefault(tp, self.ownership.epoch(tp))
            if len(events) < self.size:
                while buffered.empty() and loop.time() - started < self.linger:
                    await asyncio.sleep(0.005)
                if not buffered.empty():
                    continue
            items = await self.guard.complete([item_of(e) for e in events])
            ack = partial(self._acknowledge, stream, events, self.guard.filled())
            moment = None if self.ownership is None else self.ownership.moment
            yield Batch(items, ack, self._fence(Stamp.of(epochs, _generation(events[0]))), moment)
            events, epochs = [], {}

    def _fence(self, stamp: Stamp) -> Callable[[], Awaitable[bool]] | None:
        ownership = self.ownership
        return None if ownership is None else partial(ownership.holds, stamp)

    async def _acknowledge(self, stream: ManualStream, events: list[Any], holes: list[Hole]) -> None:
        for hole in holes:
            await self.mark_gap(hole)
        for event in events:
            await stream.ack(event)
