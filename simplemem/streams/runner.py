"""How an agent works through its batches, whatever its step: the order that makes replays safe.

For each batch: the step computes (``prepare`` then ``finish``), its outputs are delivered and
acknowledged by Kafka, then its state is written (``Handled.commit``; the memorize step's returns
once Kafka holds the states, :mod:`simplemem.streams.changelog`), and only then is the batch
acknowledged (its offsets may be committed). A crash anywhere before the acknowledgement replays
the batch; the steps skip what they had applied.

A record that makes the step fail (a poison record: unparseable, too large to forward, a bug on
one input) must not stop the partition: the batch is then redone one record at a time and each
record that still fails becomes a dead letter, so the rest goes on. Shutdown (cancellation, or a
store wait cancelled by :class:`simplemem.processors.stores.retry.WriteCancelled`) is never treated as a poison
record: the batch is left unacknowledged and replayed by the next owner of the partition.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from simplemem.streams.gaps import Item

log = logging.getLogger(__name__)

P = TypeVar("P")

# One record to send: the topic's short name (as in Settings: "units", "dlq"...), key, value
# (None: a tombstone, on a compacted topic); and a partition, where the key's hash would not place
# it beside its session (the scrubbed topic's per-turn keys).
Output = tuple[str, bytes | None, bytes | None] | tuple[str, bytes | None, bytes | None, int]
Deliver = Callable[[Sequence[Output]], Awaitable[None]]


@dataclass
class Batch:
    """Records an agent took at once; ``ack`` lets their offsets be committed."""

    items: list[Item]
    ack: Callable[[], Awaitable[None]]
    # whether this worker still owns the batch's partitions (simplemem.streams.ownership); None: always
    still_ours: Callable[[], Awaitable[bool]] | None = None
    # changes when a rebalance begins (Ownership.moment); None: never
    moment: Callable[[], int] | None = None

    async def owned(self) -> bool:
        return self.still_ours is None or await self.still_ours()

    def now(self) -> int:
        return 0 if self.moment is None else self.moment()


@dataclass
class Handled:
    """What a step made of some records: outputs to deliver, then the state write to run (awaited
    when it is a coroutine: the batch is acknowledged once the state is durable)."""

    outputs: list[Output] = field(default_factory=list)
    commit: Callable[[], Awaitable[None] | None] = lambda: None

    async def write_state(self) -> None:
        done = self.commit()
        if inspect.isawaitable(done):
            await done


class BatchStep(Protocol[P]):
    """What an agent does with its batches, as the runner drives it (both halves run off the event loop)."""

    async def prepare(self, items: list[Item]) -> P:
        """The first half; may run while the previous batch's ``finish`` is delivered."""
        ...

    async def finish(self, prepared: P) -> Handled: ...

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        """The dead letter (and failed outcome) for a record the step cannot process."""
        ...


class AgentRunner(Generic[P]):
    """Drives a :class:`BatchStep` over batches. ``overlap``: prepare batch N+1 while N is finished."""

    def __init__(
        self,
        step: BatchStep[P],
        deliver: Deliver,
        *,
        overlap: bool = False,
        done: Callable[[list[Item]], None] = lambda items: None,
    ) -> None:
        self.step = step
        self.deliver = deliver
        self.overlap = overlap
        self.done = done  # told of each batch once it is acknowledged
        self.in_flight = 0  # batches taken and not finished (the resync leaves a busy agent alone)
        self.poisoned = 0
        self.fenced = 0  # batches dropped because a rebalance gave their partitions away

    async def run(self, batches: AsyncIterator[Batch]) -> None:
        previous: asyncio.Future[None] | None = None
        try:
            async for batch in batches:
                self.in_flight += 1
                prepared: P | Exception
                try:
                    prepared = await self.step.prepare(batch.items)
                except Exception as exc:  # redone record by record in complete()
                    prepared = exc
                if previous is not None:
                    await previous
                previous = asyncio.ensure_future(self.complete(batch, prepared))
                if not self.overlap:
                    await previous
            if previous is not None:
                await previous
        finally:
            if previous is not None and not previous.done():
                previous.cancel()  # shutting down: left unacknowledged, so it is replayed

    async def complete(self, batch: Batch, prepared: P | Exception) -> None:
        """Finish, deliver, write state, acknowledge; a failure redoes the batch record by record.
        Nothing is delivered, written or acknowledged once the batch's partitions are another
        worker's (:mod:`simplemem.streams.ownership`): the new owner reads the records again."""
        try:
            await self._complete(batch, prepared)
        finally:
            self.in_flight -= 1

    async def _complete(self, batch: Batch, prepared: P | Exception) -> None:
        try:
            if isinstance(prepared, Exception):
                raise prepared
            handled = await self.step.finish(prepared)
            if not await self._still_ours(batch):
                return
            await self.deliver(handled.outputs)
            if not await self._still_ours(batch):
                return
            if not await self._write_state(batch, handled):
                return
        except Exception:
            log.exception("a batch of %d records failed; redoing it record by record", len(batch.items))
            if not await self.isolate(batch):
                return
        await batch.ack()
        self.done(batch.items)

    async def _write_state(self, batch: Batch, handled: Handled) -> bool:
        """The state write; False (the batch stays unacknowledged, and is read again from the
        committed offset) if a rebalance began meanwhile: its restore may have put older states
        over the ones just written."""
        moment = batch.now()
        await handled.write_state()
        if batch.now() == moment:
            return True
        self.fenced += 1
        log.warning("a rebalance began while a batch's states were written; left unacknowledged (read again)")
        return False

    async def _still_ours(self, batch: Batch) -> bool:
        if await batch.owned():
            return True
        self.fenced += 1
        log.warning(
            "a batch of %d records was taken before a rebalance; dropped unacknowledged "
            "(its partitions' owner reads it again from the committed offset, in order)",
            len(batch.items),
        )
        return False

    async def isolate(self, batch: Batch) -> bool:
        """Each record alone, its state written before the next; the ones that fail are dead
        letters. False if the partitions were lost on the way (the rest is left to the new owner)."""
        for item in batch.items:
            try:
                handled = await self.step.finish(await self.step.prepare([item]))
                if not await self._still_ours(batch):
                    return False
                await self.deliver(handled.outputs)
            except Exception as exc:
                if not await self._still_ours(batch):
                    return False
                log.warning("record %s is a dead letter: %s", item.source, exc)
                self.poisoned += 1
                await self.deliver(self.step.poison(item, exc))
                continue
            if not await self._still_ours(batch):
                return False
            if not await self._write_state(batch, handled):
                return False
        return True
