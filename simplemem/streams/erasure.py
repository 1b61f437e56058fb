"""Forgetting reaches the durable history: tombstones for forgotten turns on the compacted scrubbed topic.

A turn is keyed there by :func:`simplemem.schemas.keys.turn_key` and placed on its session's partition. A forgotten
message's tombstone goes to every partition (the request names the message, not its session; a
tombstone where the key never was is itself removed by the cleaner). A forgotten tenant's keys are
found by reading the topic once. Kafka's cleaner then erases the records within
``erasure_deadline_seconds`` (:func:`simplemem.streams.topics.compacted`).
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import SessionKey, turn_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest, ScrubbedRecord
from simplemem.streams.kafka_io import iter_topic, session_partition
from simplemem.streams.runner import Output

SCRUBBED = "scrubbed"
COMPACTED = (SCRUBBED, "units", "outcomes")  # the topics whose tombstones erase
# Kafka compacts closed segments only, and closes one at the first write after it is
# ``max.compaction.lag.ms`` old: a partition nobody writes to would keep a forgotten turn (and its
# tombstone) in its open segment for good. A tombstone under this key, to every partition every half
# deadline (:func:`roll_markers`), is that write; the cleaner removes it like any tombstone.
ROLL_KEY = orjson.dumps({"segment_roll": True})


def roll_markers(settings: Settings) -> list[Output]:
    return [(topic, ROLL_KEY, None, p) for topic in COMPACTED for p in range(settings.topic_partitions)]


def turn_output(record: ScrubbedRecord, settings: Settings) -> Output:
    """A scrubbed turn as the scrub stage sends it: keyed by the turn, beside its session."""
    assert record.message is not None, "idle checks are sent by the timer, keyed by their session"
    key = turn_key(record.tenant_id, record.message.message_id)
    return (SCRUBBED, key, dumps(record), session_partition(record.session_key, settings.topic_partitions))


def turn_tombstones(records: Iterable[ScrubbedRecord], settings: Settings) -> list[Output]:
    """Tombstones for turns the memorize stage dropped as forgotten (in flight when the request came)."""
    out: list[Output] = []
    for r in records:
        if r.message is not None:
            key = turn_key(r.tenant_id, r.message.message_id)
            out.append((SCRUBBED, key, None, session_partition(r.session_key, settings.topic_partitions)))
    return out


def request_tombstones(request: DeletionRequest, settings: Settings) -> list[Output]:
    """Tombstones erasing what ``request`` forgets from the scrubbed topic."""
    if request.whole_tenant:
        return [
            (SCRUBBED, key, None, partition) for key, partition in tenant_keys(settings, request.tenant_id)
        ]
    return [
        (SCRUBBED, turn_key(request.tenant_id, m), None, p)
        for m in request.message_ids
        for p in range(settings.topic_partitions)
    ]


def tenant_keys(settings: Settings, tenant_id: str) -> list[tuple[bytes, int]]:
    """Every key of the tenant's records on the scrubbed topic (its turns and its sessions' idle
    checks), with the partition holding it; read by key alone."""
    found: dict[tuple[bytes, int], None] = {}
    for record in iter_topic(settings, settings.topic(settings.scrubbed_topic)):
        if record.key is not None and record.value is not None and _tenant_of(record.key) == tenant_id:
            found[(record.key, record.partition)] = None
    return list(found)


def _tenant_of(key: bytes) -> str | None:
    try:
        parts = orjson.loads(key)
    except orjson.JSONDecodeError:
        return None
    if isinstance(parts, dict):
        tenant = parts.get("tenant_id")
        return tenant if isinstance(tenant, str) else None
    try:
        return SessionKey.decode(key).tenant_id
    except ValueError:
        return None
