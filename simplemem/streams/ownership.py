"""Whether this worker still owns the partitions a batch came from: a fence against zombie writes.

Faust is told not to wait for in-flight batches at a rebalance (``stream_wait_empty=False``: a
batch may be waiting out a store outage). So a batch taken before a rebalance can finish after its
partition went to another worker, which has already restored the sessions table and replays the
batch itself. Had the old owner then written its session states, the changelog would hold two
writers' states for one session, and the next restore would take whichever came last: in a fault
run, turns buffered in a window vanished that way (consumed, committed, never decided). A batch
therefore carries the ownership epochs of its partitions, and the runner delivers its outputs and
writes its state only while every one of them is still this worker's, in the same epoch: a
partition lost and got back in between is not the same ownership (the other owner may have written
in the meantime). A fenced batch is dropped unacknowledged: its records are read again from the
committed offset by whoever owns the partition now.

A partition this worker keeps through a rebalance needs the same rule: Faust seeks every partition
back to its committed offset at each rebalance, so a batch dropped there is read again, but only
after the batches taken behind it. Had those been delivered, the scrubbed topic would hold a
session's later turns before its earlier ones, and the memorize step (which skips turns at or
before the last position a session applied, as replays) would skip the earlier ones for good: the
fault run's lost turns. So a batch is also fenced once the consumer generation its records were
fetched in has ended, and a batch never mixes two generations (:mod:`simplemem.streams.batching`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

TopicPartition = tuple[str, int]


class Stamp(NamedTuple):
    """A batch's partitions and the epoch each was owned in when its records arrived; and the
    consumer generation its records were fetched in (None: not known)."""

    epochs: tuple[tuple[TopicPartition, int], ...]
    generation: int | None = None

    @classmethod
    def of(cls, epochs: Mapping[TopicPartition, int], generation: int | None = None) -> Stamp:
        return cls(tuple(sorted(epochs.items())), generation)


class Ownership:
    """The partitions assigned to this worker, with an epoch per partition that changes each time
    the partition is assigned after having been someone else's."""

    def __init__(
        self,
        rebalancing: Callable[[], bool] = lambda: False,
        poll_seconds: float = 0.1,
        generation: Callable[[], int | None] = lambda: None,
    ) -> None:
        # Faust's own flag, up from the first moment of a rebalance (before its revocation signal)
        self.rebalancing = rebalancing
        self.generation = generation  # the consumer group generation now (Faust's)
        self.poll_seconds = poll_seconds
        self.owned: set[TopicPartition] = set()
        self.epochs: dict[TopicPartition, int] = {}
        self.rebalances = 0  # rebalances begun (see moment)
        self._held_before: set[TopicPartition] = set()
        self._settled = asyncio.Event()
        self._settled.set()

    def revoked(self, partitions: Iterable[TopicPartition]) -> None:
        """A rebalance starts: nothing revoked may be written for until the assignment is known."""
        self._held_before |= self.owned
        self.owned -= set(partitions)
        self.rebalances += 1
        self._settled.clear()

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        """A rebalance ends: a partition this worker held throughout keeps its epoch."""
        now = set(partitions)
        for tp in now - self._held_before:
            self.epochs[tp] = self.epochs.get(tp, 0) + 1
        self.owned = now
        self._held_before = set()
        self._settled.set()

    def moment(self) -> int:
        """Changes whenever a rebalance begins (-1 while one is under way): a state write that
        straddled one may have been overwritten by the restore of a partition this worker kept,
        which read the changelog's end before the write reached it."""
        return -1 if self.rebalancing() else self.rebalances

    def epoch(self, tp: TopicPartition) -> int:
        return self.epochs.get(tp, 0)

    def stamp(self, partitions: Iterable[TopicPartition]) -> Stamp:
        return Stamp.of({tp: self.epoch(tp) for tp in partitions})

    async def holds(self, stamp: Stamp) -> bool:
        """Whether every partition of ``stamp`` is still owned in its epoch, and its records' generation
        is the group's current one (after waiting for a rebalance in progress to end)."""
        while self.rebalancing():
            await asyncio.sleep(self.poll_seconds)
        await self._settled.wait()
        if stamp.generation is not None and stamp.generation != self.generation():
            return False
        return all(tp in self.owned and self.epoch(tp) == epoch for tp, epoch in stamp.epochs)
