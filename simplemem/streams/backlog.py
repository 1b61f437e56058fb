"""How far the scrub stage has got on each partition of the turns topic, for the idle timer.

A pause is a silence of the caller, not of the worker: while turns of a partition wait to be scrubbed
(a bulk import, a replay, a worker catching up), a session on it only looks silent to the memory
stage, and an idle check sent then would decide its window before turns already published. The
timer holds those sessions' checks until the scrub stage has caught up with the partition's end.
"""

from __future__ import annotations

from collections.abc import Iterable

from simplemem.streams.gaps import Item


class ScrubBacklog:
    def __init__(self) -> None:
        self.finished: dict[int, int] = {}  # partition -> the last offset the scrub stage finished

    def done(self, items: Iterable[Item]) -> None:
        """A batch is delivered and acknowledged."""
        for item in items:
            p, offset = item.source.partition, item.source.offset
            self.finished[p] = max(self.finished.get(p, -1), offset)

    def behind(self, partition: int, end: int | None) -> bool:
        """Turns wait on ``partition`` (``end``: its end offset as last fetched). Unknown either way
        (nothing scrubbed since the worker started, nothing fetched yet): not held."""
        last = self.finished.get(partition)
        return end is not None and last is not None and end > last + 1

    def reset(self) -> None:
        """After a rebalance the partitions are others; they are learnt again batch by batch."""
        self.finished.clear()
