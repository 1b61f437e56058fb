"""The topics and their configuration: created up front (by `worker`, `publish`), verified when they exist.

The brokers run with ``auto.create.topics.enable=false`` (simplemem/infra/, docker-compose.yml): a frontend that
publishes before any worker started gets an error instead of a topic with the broker's defaults (one
partition, a day of retention). A topic that exists with another partition count or configuration
than this module declares stops the worker with the differences listed: retention and compaction
decide what the service keeps, so they are never silently different.

Durable history holds no raw PII: ``turns`` (raw input) and ``dlq`` (whose letters may quote raw input,
each capped: :data:`DLQ_RECORD_BYTES`) are deleted after ``raw_retention_seconds`` (7 days);
``scrubbed`` (scrubbed, analysed turns) is kept and is what ``replay`` re-derives memory from;
``scrubbed``, ``units`` and ``outcomes`` are compacted by key (a turn, a unit, a turn's outcome): a
forgotten message's tombstone erases its records within ``erasure_deadline_seconds``; ``deletions``
and ``consolidation`` (the decisions) keep everything; ``consolidate`` (requests) expires like raw input.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import TopicAlreadyExistsError

from simplemem.schemas.settings import Settings

log = logging.getLogger(__name__)

SEGMENTS_PER_RETENTION = 7  # raw input is deleted at most 1/7 of its retention late
MAX_RECORD_BYTES = 8 * 1024 * 1024  # a session's state with its open window stays well below this
# A dead letter's size limit on its topic: the raw input it quotes is capped well below this
# (``Settings.dlq_original_bytes``), so a dead letter for any input always fits.
DLQ_RECORD_BYTES = 1024 * 1024
DESCRIBE_ATTEMPTS, DESCRIBE_PAUSE_SECONDS = 20, 0.25  # new topics become describable within a moment


@dataclass(frozen=True)
class TopicSpec:
    name: str
    config: dict[str, str]


class TopicMismatch(RuntimeError):
    """Existing topics differ from what the service declares; the message lists every difference."""


def raw_retention(settings: Settings) -> dict[str, str]:
    """Delete raw input after ``raw_retention_seconds``. Kafka deletes whole closed segments, so a
    segment rolls every 1/SEGMENTS_PER_RETENTION of the retention: a record is gone at most that
    much (plus the broker's retention check interval) after its time."""
    ms = settings.raw_retention_seconds * 1000
    return {
        "retention.ms": str(ms),
        "retention.bytes": "-1",
        "segment.ms": str(max(1000, ms // SEGMENTS_PER_RETENTION)),
    }


def compacted(settings: Settings) -> dict[str, str]:
    """Keep the latest record per key; a tombstone (a key with no value) erases the key's records
    within ``erasure_deadline_seconds``: the cleaner must compact a record that old, and the active
    segment (never compacted) rolls at that age too."""
    ms = str(settings.erasure_deadline_seconds * 1000)
    return {"cleanup.policy": "compact", "max.compaction.lag.ms": ms, "segment.ms": ms}


def topic_specs(settings: Settings) -> list[TopicSpec]:
    forever = {"retention.ms": "-1", "retention.bytes": "-1"}
    compact = compacted(settings)
    big = {"max.message.bytes": str(MAX_RECORD_BYTES)}
    raw = raw_retention(settings)
    return [
        TopicSpec(settings.topic(settings.turns_topic), raw),
        TopicSpec(settings.topic(settings.scrubbed_topic), {**forever, **compact, **big}),
        TopicSpec(settings.topic(settings.units_topic), compact),
        TopicSpec(settings.topic(settings.outcomes_topic), compact),
        TopicSpec(settings.topic(settings.deletions_topic), forever),
        TopicSpec(settings.topic(settings.consolidation_topic), forever),
        TopicSpec(settings.topic(settings.consolidate_topic), raw),
        TopicSpec(settings.topic(settings.dlq_topic), {**raw, "max.message.bytes": str(DLQ_RECORD_BYTES)}),
    ]


def _entries(response: Any) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Topic name -> its configuration, from DescribeConfigs responses (any version); and the
    topics whose configuration could not be read (with the broker's error code)."""
    found: dict[str, dict[str, str]] = {}
    errors = []
    for resource in response.resources:
        error_code, error_message, _, name, entries = resource[:5]
        if error_code:
            errors.append(f"{name}: cannot read its configuration (error {error_code}) {error_message or ''}")
        else:
            found[name] = {entry[0]: entry[1] for entry in entries}
    return found, errors


def differences(spec: TopicSpec, partitions: int, actual: dict[str, str], settings: Settings) -> list[str]:
    """What differs between an existing topic and its declaration (empty when they agree)."""
    problems = []
    if partitions != settings.topic_partitions:
        problems.append(f"{spec.name}: {partitions} partitions, declared {settings.topic_partitions}")
    for key, want in spec.config.items():
        if actual.get(key) != want:
            problems.append(f"{spec.name}: {key}={actual.get(key)}, declared {want}")
    return problems


async def ensure_topics(settings: Settings) -> list[str]:
    """Create the missing topics and verify the others; returns the names created.

    Raises :class:`TopicMismatch` when an existing topic's partitions or configuration differ."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    created = []
    try:
        specs = topic_specs(settings)
        existing = set(await admin.list_topics())
        for spec in specs:
            if spec.name in existing:
                continue
            new = NewTopic(
                spec.name, settings.topic_partitions, settings.topic_replication, topic_configs=spec.config
            )
            try:
                await admin.create_topics([new])
                created.append(spec.name)
            except TopicAlreadyExistsError:  # another worker created it a moment ago: verified below
                pass
        await _verify(admin, specs, settings)
    finally:
        await admin.close()
    if created:
        log.info("created topics %s", ", ".join(created))
    return created


async def _describe(
    admin: AIOKafkaAdminClient, names: list[str]
) -> tuple[dict[str, int], dict[str, dict[str, str]]]:
    """Partition counts and configurations; a topic created a moment ago may not be visible to
    every broker request yet, so unreadable ones are asked again for a few seconds."""
    errors: list[str] = []
    for _ in range(DESCRIBE_ATTEMPTS):
        described = await admin.describe_topics(names)
        partitions = {d["topic"]: len(d.get("partitions") or []) for d in described}
        resources = [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        configs: dict[str, dict[str, str]] = {}
        errors = []
        for response in await admin.describe_configs(resources):
            found, failed = _entries(response)
            configs.update(found)
            errors += failed
        if not errors and all(partitions.get(n) for n in names):
            return partitions, configs
        await asyncio.sleep(DESCRIBE_PAUSE_SECONDS)
    raise TopicMismatch("\n".join(errors) or f"topics without partitions among {names}")


async def _verify(admin: AIOKafkaAdminClient, specs: list[TopicSpec], settings: Settings) -> None:
    partitions, configs = await _describe(admin, [s.name for s in specs])
    problems = [
        p for s in specs for p in differences(s, partitions.get(s.name, 0), configs.get(s.name, {}), settings)
    ]
    if problems:
        raise TopicMismatch(
            "existing topics differ from their declaration (simplemem/streams/topics.py):\n  "
            + "\n  ".join(problems)
            + "\nAlter them (kafka-configs.sh --alter, kafka-topics.sh --alter) or use another "
            "SIMPLEMEM_TOPIC_PREFIX."
        )
