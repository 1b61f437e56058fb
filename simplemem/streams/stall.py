"""A worker that stopped making progress: records waiting on its partitions, its committed offsets
not moving, and nothing it is waiting for by design.

A worker waits on purpose through a store outage (its writes retry until the store is back) and
while it restores its sessions table from the changelog. Anything else that keeps records waiting
for ``limit`` seconds is a stall: seen twice in CI, a worker that took over from a stopped one
decided nothing for five minutes and logged nothing. A stalled worker logs where each task waits
(:mod:`simplemem.streams.diagnostics`) and stops, so that its supervisor starts a new one, which resumes from
the committed offsets: a bounded delay, where the stall itself was unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping

from simplemem.streams.ownership import TopicPartition


class StallWatch:
    """Per assigned partition: since when its records wait without its committed offset moving."""

    def __init__(self, limit_seconds: float) -> None:
        self.limit = limit_seconds
        self._since: dict[TopicPartition, tuple[int, float]] = {}  # committed offset, since when

    def reset(self) -> None:
        """Offsets could not be read (Kafka unreachable: waited out by design); start afresh."""
        self._since.clear()

    def forget(self, tp: TopicPartition) -> None:
        """``tp`` was acted on: it must wait the whole limit again before it is reported again."""
        self._since.pop(tp, None)

    def observe(
        self,
        now: float,
        committed: Mapping[TopicPartition, int],
        ends: Mapping[TopicPartition, int],
        waiting_by_design: bool,
    ) -> list[TopicPartition]:
        """The partitions stalled as of ``now`` (none while the worker waits by design)."""
        stalled: list[TopicPartition] = []
        since: dict[TopicPartition, tuple[int, float]] = {}
        for tp, end in ends.items():
            offset = committed.get(tp, 0)
            if end <= offset:
                continue  # nothing waiting
            was = self._since.get(tp)
            if waiting_by_design or was is None or was[0] != offset:
                since[tp] = (offset, now)
                continue
            since[tp] = was
            if now - was[1] >= self.limit:
                stalled.append(tp)
        self._since = since
        return sorted(stalled)
