"""Records a stream must not skip: a guard against offsets that never reach an agent.

faust-streaming 0.15 can drop records it fetched just before a rebalance's seek to the committed
offsets (seen here after a SIGKILL and restart: a partition resumed a few records past its committed
offset). It then treats the hole as a gap in the log and commits past it, which would lose turns.
The guard knows where each partition must resume (the group's committed offset when the partition
is first seen after an assignment: its committed offset, or its first offset if nothing was
committed) and which offset comes next; a hole is re-read from Kafka with a plain consumer and handed
to the agent before the records that follow it. Faust never delivered those records, so it would
never let its commit pass them: once the batch is done, :meth:`GapGuard.filled` lists the ranges for
the agent to mark as consumed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import SourceRef
from simplemem.streams.kafka_io import committed_offset, fetch_range, first_offset
from simplemem.streams.metrics import REFETCHED

log = logging.getLogger(__name__)


Hole = tuple[str, int, int, int]  # topic, partition, first and last offset re-read


@dataclass(frozen=True)
class Item:
    """One record as an agent sees it: where it is, its key and value."""

    source: SourceRef
    key: bytes | None
    value: bytes


Committed = Callable[[str, int], Awaitable[int | None]]  # where a partition resumes, None if unknown
Fetch = Callable[[str, int, int, int], Awaitable[list[Item]]]  # records of [first, end) of a partition


class GapGuard:
    """One per agent: each agent's partitions resume and advance on their own."""

    def __init__(self, committed: Committed, fetch: Fetch) -> None:
        self.committed = committed
        self.fetch = fetch
        self.expected: dict[tuple[str, int], int] = {}
        self.refetched = 0
        self._filled: list[Hole] = []

    @classmethod
    def for_group(cls, settings: Settings, group: str) -> GapGuard:
        """A guard reading the group's committed offsets and the skipped records from Kafka."""

        async def committed(topic: str, partition: int) -> int | None:
            offset = await committed_offset(settings, group, topic, partition)
            if offset is not None:
                return offset
            return await first_offset(settings, topic, partition)  # nothing committed: from the start

        async def fetch(topic: str, partition: int, first: int, end: int) -> list[Item]:
            records = await fetch_range(settings, topic, partition, first, end)
            return [
                Item(SourceRef(topic=r.topic, partition=r.partition, offset=r.offset), r.key, r.value or b"")
                for r in records
            ]

        return cls(committed, fetch)

    def reset(self) -> None:
        """After a rebalance: every partition resumes from its committed offset again."""
        self.expected.clear()

    async def complete(self, items: list[Item]) -> list[Item]:
        """``items`` with any skipped records put back in front of their successors."""
        out: list[Item] = []
        for item in items:
            src = item.source
            tp = (src.topic, src.partition)
            if tp not in self.expected:
                committed = await self.committed(*tp)
                if committed is not None:
                    self.expected[tp] = committed
            want = self.expected.get(tp)
            if want is not None and src.offset > want:
                missing = await self.fetch(src.topic, src.partition, want, src.offset)
                log.warning(
                    "%s/%d: re-read %d skipped records %d..%d", *tp, len(missing), want, src.offset - 1
                )
                self.refetched += len(missing)
                REFETCHED.inc(len(missing))
                self._filled.append((src.topic, src.partition, want, src.offset - 1))
                out.extend(missing)
            out.append(item)
            self.expected[tp] = max(src.offset + 1, want or 0)
        return out

    def filled(self) -> list[Hole]:
        """The ranges (topic, partition, first, last) re-read since the last call."""
        done, self._filled = self._filled, []
        return done
