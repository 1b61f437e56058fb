"""The ``deletions`` topic: forget requests, kept forever (ids only), keyed by tenant.

It is the durable record of what was forgotten in services mode: Redis (where the workers look
tombstones up) may run without persistence, so a worker re-adds every request to the tombstone set
when it starts, and ``replay`` adds its tenant's requests to the target store's set before it
re-derives anything.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import ValidationError

from simplemem.processors.stores.tombstones import Tombstones
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import tenant_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest
from simplemem.streams.kafka_io import iter_topic, producer


def deletion_key(request: DeletionRequest) -> bytes:
    """A tenant's requests share a key, so they are read in the order they were made."""
    return tenant_key(request.tenant_id)


async def publish_deletion(settings: Settings, request: DeletionRequest) -> None:
    """Send one request and wait for Kafka's acknowledgement."""
    prod = producer(settings)
    await prod.start()
    try:
        await (
            await prod.send(
                settings.topic(settings.deletions_topic), dumps(request), key=deletion_key(request)
            )
        )
    finally:
        await prod.stop()


def requests_on_topic(settings: Settings, tenant_id: str | None = None) -> Iterator[DeletionRequest]:
    """Every request on the topic (or the tenant's), oldest first per tenant."""
    for record in iter_topic(settings, settings.topic(settings.deletions_topic)):
        if record.value is None:
            continue
        try:
            request = DeletionRequest.model_validate_json(record.value)
        except ValidationError:
            continue  # dead-lettered by the forget agent when it read it
        if tenant_id is None or request.tenant_id == tenant_id:
            yield request


def seed_tombstones(settings: Settings, tombstones: Tombstones, tenant_id: str | None = None) -> int:
    """Add the topic's requests (or the tenant's) to ``tombstones``; returns how many."""
    count = 0
    for request in requests_on_topic(settings, tenant_id):
        tombstones.add(request)
        count += 1
    return count
