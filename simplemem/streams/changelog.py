"""Session states written to the ``sessions`` table only once Kafka holds them in its changelog.

A Faust table's ``table[key] = value`` changes the worker's copy at once and queues the changelog
record in Faust's producer buffer, sent later. Faust flushes that buffer before it commits offsets
and before a restore reads the changelog's end, but its flush gives up as soon as no record leaves
the buffer for 0.1 s (a record can wait there behind the batches before it on its partition; a slow
or busy broker makes that longer), so:

- offsets could be committed while the states their records produced were still in the buffer: a
  worker killed then would lose those states, and the turns waiting in their windows with them;
- a rebalance could restore the partitions a worker kept from a changelog that lacked its latest
  states, over the newer copies it held.

Here a batch's states are sent directly to the changelog and acknowledged by Kafka (waiting out a
broker outage) before the worker's copy changes, and the agent acknowledges the batch after that:
whatever its offsets commit, the changelog already holds. A restore that began while the states
were on their way may still put older ones over them; the runner then leaves the batch
unacknowledged, and it is read again (:meth:`simplemem.streams.runner.AgentRunner.complete`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

log = logging.getLogger(__name__)


class AcknowledgedWrites:
    """Writes to a Faust table (key and value bytes; ``None`` removes the key) that return once Kafka
    acknowledged their changelog records."""

    def __init__(self, table: Any, unavailable: tuple[type[BaseException], ...], max_delay: float) -> None:
        self.table = table  # a faust.Table: its changelog topic, serializers and local store
        self.unavailable = unavailable  # errors that mean the broker cannot be reached now
        self.max_delay = max_delay

    async def __call__(self, changes: Mapping[bytes, bytes | None]) -> None:
        if not changes:
            return
        delay = 0.5
        while True:
            try:
                await self._send(changes)
                break
            except self.unavailable as exc:
                log.warning(
                    "Kafka unavailable while writing %d session states (%s); retrying", len(changes), exc
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.max_delay)
        data = self.table.data  # the worker's copy, written without a second changelog record
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value

    async def _send(self, changes: Mapping[bytes, bytes | None]) -> None:
        """The records as the table itself would write them (same serializers, same partitioner),
        sent now rather than through the producer buffer."""
        table = self.table
        topic = table.changelog_topic
        pending = [
            await topic.send(
                key=key,
                value=value,
                key_serializer=table.key_serializer,
                value_serializer=table.value_serializer if value is not None else "raw",
                force=True,
            )
            for key, value in changes.items()
        ]
        await asyncio.gather(*pending)
